;;; session.el --- An Emacs session against `triton-dev lsp' -*- lexical-binding: t -*-
;; Run by emacs.integration.test.ts as `emacs --batch -l session.el': the README's eglot setup,
;; then what a user does: open a config, see flymake's diagnostics, take the quick fix, complete a
;; field, read the hover, format the buffer, and see a setting sent from the project
;; (eglot-workspace-configuration) reach the server. Each step is one line of JSON in
;; EMACS_TRANSCRIPT. Batch Emacs runs no command loop, so `tick' runs what it would after each
;; command (post-command-hook: eglot-ensure's connect, flymake's deferred start) and lets the
;; server's messages and the timers in.

(require 'package)
(package-initialize)
(require 'json)
(require 'eglot)

(defvar session-cmd (append (json-read-from-string (getenv "TRITON_DEV_LSP_CMD")) nil))
(defvar session-file (getenv "EMACS_CONFIG_FILE"))
(defvar session-gpu-file (getenv "EMACS_GPU_CONFIG_FILE"))
(defvar session-out (getenv "EMACS_TRANSCRIPT"))

(defun say (step data)
  (with-temp-buffer
    (insert (json-encode `((step . ,step) (data . ,data))) "\n")
    (append-to-file (point-min) (point-max) session-out)))

(defun finish (code)
  (kill-emacs code))

(defun tick ()
  (run-hooks 'post-command-hook)
  (accept-process-output nil 0.05)
  ;; The user pauses: what Emacs runs when idle (flymake's check after a change, eldoc).
  (dolist (timer (copy-sequence timer-idle-list))
    (timer-event-handler timer)))

(defun wait-for (pred seconds)
  "Tick until PRED holds or SECONDS pass; PRED's value."
  (let ((end (+ (float-time) seconds)) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) end))
      (tick))
    v))

(defun diags ()
  (mapcar (lambda (d)
            (let ((lsp (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data d)))))
              `((line . ,(line-number-at-pos (flymake-diagnostic-beg d)))
                (col . ,(save-excursion (goto-char (flymake-diagnostic-beg d)) (current-column)))
                (code . ,(plist-get lsp :code))
                (type . ,(symbol-name (flymake-diagnostic-type d)))
                (text . ,(flymake-diagnostic-text d)))))
          (flymake-diagnostics)))

;; The README's setup: a mode for config.pbtxt, eglot started in it.
(define-derived-mode pbtxt-mode prog-mode "pbtxt"
  "Triton's config.pbtxt."
  (setq-local comment-start "# ")
  ;; Formatting indents as the editor says: two spaces a level.
  (setq-local indent-tabs-mode nil)
  (setq-local tab-width 2))
(add-to-list 'auto-mode-alist '("config\\.pbtxt\\'" . pbtxt-mode))
(add-to-list 'eglot-server-programs `(pbtxt-mode . ,session-cmd))
(add-hook 'pbtxt-mode-hook #'eglot-ensure)
;; A project's settings, as .dir-locals.el would give them: lint as if this machine had no GPU.
(setq-default eglot-workspace-configuration '(:triton-dev (:gpu :json-false)))
(setq eglot-sync-connect t)
;; No lock or backup files beside the config: they would be files of the model folder.
(setq create-lockfiles nil make-backup-files nil)

(condition-case err
    (progn
      (find-file session-file)
      (say "opened" `((mode . ,(symbol-name major-mode))))
      (unless (wait-for (lambda () (eglot-current-server)) 60) (finish 2))
      (unless (wait-for (lambda () (flymake-diagnostics)) 60)
        (say "diagnostics" [])
        (finish 3))
      (say "diagnostics" (vconcat (diags)))

      ;; The quick fix at the diagnostic, as M-x eglot-code-action-quickfix offers it.
      (goto-char (flymake-diagnostic-beg (car (flymake-diagnostics))))
      (let ((line (line-number-at-pos)))
        (eglot-code-actions (point) nil "quickfix" t)
        (wait-for (lambda () (null (flymake-diagnostics))) 30)
        (say "after_fix" `((line . ,(save-excursion (goto-char (point-min)) (forward-line (1- line))
                                                 (buffer-substring-no-properties (point) (line-end-position))))
                           (diagnostics . ,(length (flymake-diagnostics))))))

      ;; Typing in a new dynamic_batching block, then M-TAB (completion-at-point).
      (goto-char (point-max))
      (insert "dynamic_batching {\n  max_q")
      (save-excursion (insert "\n}\n"))
      (tick)
      (let ((capf (eglot-completion-at-point)))
        (say "completion" (vconcat (all-completions "" (nth 2 capf)))))
      (completion-at-point)
      (tick)
      (insert "100")
      (say "completed" `((line . ,(buffer-substring-no-properties (line-beginning-position) (line-end-position)))))

      ;; Hover on max_batch_size, as eldoc asks eglot for it.
      (goto-char (point-min))
      (search-forward "max_batch_size")
      (backward-char 3)
      ;; (eldoc's own call shows it only in a window on screen, which batch Emacs has not: the
      ;; same request, rendered by eglot as eldoc would show it.)
      (let* ((h (jsonrpc-request (eglot--current-server-or-lose) :textDocument/hover
                                 (eglot--TextDocumentPositionParams)))
             (info (and h (eglot--hover-info (plist-get h :contents) (plist-get h :range)))))
        (say "hover" `((first_line . ,(car (split-string (or info "") "\n"))))))

      ;; M-x eglot-format-buffer on a badly spaced line.
      (goto-char (point-min))
      (search-forward "backend: \"python\"")
      (replace-match "backend :   \"python\"   ")
      (tick)
      (eglot-format-buffer)
      (say "formatted" `((line . ,(save-excursion (goto-char (point-min)) (re-search-forward "^backend")
                                                  (buffer-substring-no-properties (line-beginning-position) (line-end-position))))
                         (text . ,(buffer-substring-no-properties (point-min) (point-max)))))
      (save-buffer)

      ;; The project's setting reached the server: KIND_GPU warns as on a machine without a GPU.
      (find-file session-gpu-file)
      (wait-for (lambda () (and (eglot-managed-p) (flymake-diagnostics))) 60)
      (say "gpu" (vconcat (diags)))
      ;; The setting changed (as after editing .dir-locals.el), then M-x eglot-signal-didChangeConfiguration.
      (setq-default eglot-workspace-configuration '(:triton-dev (:gpu t)))
      (eglot-signal-didChangeConfiguration (eglot-current-server))
      (wait-for (lambda () (null (flymake-diagnostics))) 30)
      (say "gpu_setting_changed" (vconcat (diags)))

      (let* ((server (eglot-current-server))
             (proc (jsonrpc--process server)))
        (eglot-shutdown server)
        (wait-for (lambda () (not (process-live-p proc))) 10)
        (say "stopped" `((running . ,(if (process-live-p proc) t :json-false))
                         (managed . ,(if (eglot-managed-p) t :json-false)))))
      (finish 0))
  (error (say "error" `((message . ,(error-message-string err))))
         (finish 9)))
