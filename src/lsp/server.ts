import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type CodeAction,
  CodeActionKind,
  type CompletionItem,
  CompletionItemKind,
  type Connection,
  type Diagnostic as LspDiagnostic,
  DiagnosticSeverity,
  InsertTextFormat,
  MarkupKind,
  MessageType,
  type Range,
  SemanticTokensRequest,
  ShowMessageNotification,
  TextDocumentSyncKind,
  TextDocuments,
  type WorkspaceEdit,
  createConnection,
} from "vscode-languageserver/node";
import { TextDocument } from "vscode-languageserver-textdocument";
import type { Paths } from "../config/paths.js";
import { log as rootLog } from "../log/logger.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import { CONFIG_FILE, MAX_CONFIG_BYTES } from "../repo/layout.js";
import type { LintOptions } from "../repo/lint.js";
import { type FixData, fixesFor } from "./actions.js";
import { type Completion, MAX_COMPLETIONS, type ModelSource, complete, definition, hover } from "./features.js";
import { formatEdits } from "./format.js";
import { type LspFramingError, framedInput } from "./framing.js";
import { guardUntilInitialized } from "./lifecycle.js";
import {
  DEFAULT_SETTINGS,
  type GpuCount,
  type LintFacts,
  type LspSettings,
  lintOptionsOf,
  readSettings,
} from "./settings.js";
import { ModelTensorReader } from "./model-tensors.js";
import { SEMANTIC_TOKENS_LEGEND, encodeSemanticTokens, semanticTokens } from "./semantic-tokens.js";
import { Navigation } from "./navigation.js";
import { type RunVerdicts, VerdictWatch, verdictDiagnostics } from "./verdict.js";
import { Workspace, locateConfig } from "./workspace.js";

const log = rootLog.child("lsp");

export interface LspServerOptions {
  /** Where the server reads and writes LSP messages (stdio for `triton-dev lsp`). */
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** The run's state folder, for the live server's verdict; undefined: no verdicts. */
  paths?: Paths;
  lint?: LintOptions;
  /** Watch repositories for changes made outside the editor (default on). */
  watch?: boolean;
  /** How often the run's state is read (ms). */
  verdictIntervalMs?: number;
  /** Settings before the editor sends any (`--disable-auto-complete-config`). */
  settings?: Partial<LspSettings>;
  /** This machine's GPUs, for the "auto" GPU setting (absent: unknown, no GPU check). */
  gpuCount?: GpuCount;
  /** The runtimes the `runtime` setting may name. */
  runtimeKinds?: readonly string[];
  /** What lint knows of each of them (runtimes/kinds.ts `lintFacts`). */
  lintFacts?: LintFacts;
}

export interface LspServer {
  connection: Connection;
  /** Resolves when the client has asked the server to exit (or the stream closed). */
  closed: Promise<void>;
}

const toPath = (uri: string): string | undefined => {
  try {
    return uri.startsWith("file:") ? fileURLToPath(uri) : undefined;
  } catch {
    return undefined;
  }
};
const toUri = (file: string): string => pathToFileURL(file).href;

/** A config's own model and the models its text names (ensemble steps): what a request about it may read. */
function modelsNamedIn(file: string, text: string): string[] {
  const own = locateConfig(file)?.model;
  const named = [...text.matchAll(/\bmodel_name\s*:\s*"([^"\n]*)"/g)].map((m) => m[1]!);
  return own ? [own, ...named] : named;
}

/** Text of a file for positions: the editor's when open, else the file's if it is a small text file. */
function readSmall(file: string): string | undefined {
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || st.size > MAX_CONFIG_BYTES) return undefined;
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** The span a finding covers: its position to the end of the word or string there (other files: the line). */
function rangeOf(d: Diagnostic, text: string | undefined, isConfig: boolean): Range {
  const line = Math.max(0, d.line - 1);
  const character = Math.max(0, d.column - 1);
  if (!text || !isConfig)
    return { start: { line, character }, end: { line, character: Number.MAX_SAFE_INTEGER >>> 0 } };
  const lines = text.split("\n", line + 1);
  const l = lines[line] ?? "";
  let e = character;
  const q = l[e];
  if (q === '"' || q === "'") {
    e++;
    while (e < l.length && l[e] !== q) e++;
    e = Math.min(l.length, e + 1);
  } else {
    while (e < l.length && /[A-Za-z0-9_.\-+]/.test(l[e]!)) e++;
  }
  if (e === character) e = Math.min(Math.max(l.length, character + 1), character + 1);
  return { start: { line, character }, end: { line, character: e } };
}

const COMPLETION_KINDS: Record<Completion["kind"], CompletionItemKind> = {
  field: CompletionItemKind.Field,
  message: CompletionItemKind.Module,
  enum: CompletionItemKind.EnumMember,
  value: CompletionItemKind.Value,
  model: CompletionItemKind.Reference,
  tensor: CompletionItemKind.Variable,
};

/**
 * `triton-dev lsp`: a Language Server for config.pbtxt. Diagnostics are lint's, on the editor's
 * unsaved text, with the files around it (ensembles, model files) as saved; completion, hover and
 * go-to-definition come from the ModelConfig schema and the repository's other models; a
 * running `triton-dev up` adds Triton's own verdict on the models it serves.
 */
export function startLspServer(o: LspServerOptions): LspServer {
  // Framing errors end the server (see framing.ts): `closed` rejects with what was wrong.
  let fatal: (err: LspFramingError) => void = () => {};
  const { connection, initialized } = guardUntilInitialized(
    createConnection(
      framedInput(o.input, (err) => fatal(err)),
      o.output,
    ),
  );
  const documents = new TextDocuments(TextDocument);
  let snippets = false;
  let renames = false;
  const lintByFile = new Map<string, Diagnostic[]>();
  const verdictByFile = new Map<string, Diagnostic[]>();

  const textOf = (file: string): string | undefined => documents.get(toUri(file))?.getText() ?? readSmall(file);

  const send = (file: string) => {
    const all = [...(lintByFile.get(file) ?? []), ...(verdictByFile.get(file) ?? [])];
    const isConfig = path.basename(file) === CONFIG_FILE;
    const text = all.length ? textOf(file) : undefined;
    const diagnostics: LspDiagnostic[] = all.map((d) => ({
      range: rangeOf(d, text, isConfig),
      severity: d.severity === "error" ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
      code: d.code,
      source: d.code.startsWith("triton-") ? "triton" : "triton-dev",
      message: d.hint ? `${d.message}\nhint: ${d.hint}` : d.message,
      data: { code: d.code, ...(d.hint ? { hint: d.hint } : {}), file: d.file } satisfies FixData,
    }));
    // Stamped with the version of the open text they are about, so an editor can drop stale ones.
    const version = documents.get(toUri(file))?.version;
    void connection.sendDiagnostics({ uri: toUri(file), ...(version !== undefined ? { version } : {}), diagnostics });
  };

  const workspace = new Workspace({
    ...(o.lint ? { lint: o.lint } : {}),
    watch: o.watch ?? true,
    publish: (file, ds) => {
      if (ds.length) lintByFile.set(file, ds);
      else lintByFile.delete(file);
      send(file);
    },
  });

  const tensors = new ModelTensorReader();
  const navigation = new Navigation({ connection, documents, workspace });
  const sourceFor = (file: string): { src: ModelSource; repo: string | undefined } | undefined => {
    const at = locateConfig(file);
    if (!at) {
      // A config in no repository: the schema's completion and hover, no other model.
      const alone: ModelSource = {
        self: "",
        names: () => [],
        config: () => undefined,
        layout: () => undefined,
        runs: () => undefined,
        tensors: async () => undefined,
      };
      return { src: alone, repo: undefined };
    }
    const { repo } = at;
    const src: ModelSource = {
      self: at.model,
      names: () => workspace.modelNames(repo),
      config: (name) => {
        const f = path.join(repo, name, CONFIG_FILE);
        const text = documents.get(toUri(f))?.getText() ?? workspace.model(repo, name)?.layout.configText;
        return text === undefined ? undefined : { file: f, text };
      },
      layout: (name) => workspace.model(repo, name)?.layout,
      runs: (name) => {
        const c = workspace.model(repo, name)?.parsed?.config;
        return c ? c.backend || c.platform || undefined : undefined;
      },
      tensors: async (name) => {
        const m = workspace.model(repo, name);
        return m ? tensors.read(m.layout, m.parsed?.config) : undefined;
      },
    };
    return { src, repo };
  };

  // The live server's verdict.
  let verdictFiles = new Set<string>();
  let lastVerdicts: RunVerdicts | undefined;
  const applyVerdicts = () => {
    const next = new Map<string, Diagnostic[]>();
    const v = lastVerdicts;
    const real = (f: string): string | undefined => {
      try {
        return fs.realpathSync(f);
      } catch {
        // A file deleted while open has no real path.
        return undefined;
      }
    };
    // Only the run that serves a repository being edited here.
    const served = v ? real(v.modelsDir) : undefined;
    if (v && served !== undefined && workspace.repositories().some((r) => real(r) === served)) {
      for (const verdict of v.verdicts.values()) {
        // Triton's reasons name the user's files as the run recorded the repository.
        const modelDir = path.join(v.modelsDir, verdict.model);
        const configFile = path.join(modelDir, CONFIG_FILE);
        for (const d of verdictDiagnostics(verdict, modelDir, v.server, textOf(configFile))) {
          const list = next.get(d.file) ?? [];
          list.push(d);
          next.set(d.file, list);
        }
      }
      // The editor may name the repository by another path (a link): the same files, its names.
      for (const [file, ds] of [...next]) {
        const target = real(file);
        for (const doc of documents.all()) {
          const p = toPath(doc.uri);
          if (!p || p === file || target === undefined) continue;
          if (real(p) === target)
            next.set(
              p,
              ds.map((d) => ({ ...d, file: p })),
            );
        }
      }
    }
    const before = verdictFiles;
    verdictByFile.clear();
    for (const [f, ds] of next) verdictByFile.set(f, ds);
    verdictFiles = new Set(next.keys());
    for (const f of new Set([...before, ...verdictFiles])) send(f);
  };
  const verdicts = o.paths
    ? new VerdictWatch({
        paths: o.paths,
        ...(o.verdictIntervalMs ? { intervalMs: o.verdictIntervalMs } : {}),
        onChange: (v) => {
          lastVerdicts = v;
          applyVerdicts();
        },
      })
    : undefined;

  // The editor's settings: read at initialize and whenever they change; lint runs with what they give.
  let settings: LspSettings = { ...DEFAULT_SETTINGS, ...o.settings };
  let lintKey = "";
  const applySettings = async (raw: unknown, atStart: boolean) => {
    const r = readSettings(raw, settings, o.runtimeKinds ?? []);
    for (const p of r.problems) {
      log.warn(p);
      // A notification: the editor shows it, nothing waits for an answer.
      void connection.sendNotification(ShowMessageNotification.type, { type: MessageType.Warning, message: p });
    }
    settings = r.settings;
    const lint = { ...o.lint, ...(await lintOptionsOf(settings, o.gpuCount, o.lintFacts)) };
    const key = JSON.stringify(lint);
    if (key === lintKey) return;
    lintKey = key;
    if (atStart) await workspace.setLint(lint);
    else
      void workspace
        .setLint(lint)
        .then(() => lastVerdicts && applyVerdicts())
        .catch((err) => log.error("applying settings failed", { error: String(err) }));
  };
  connection.onDidChangeConfiguration((p) => applySettings(p.settings, false));

  connection.onInitialize(async (params) => {
    await applySettings(params.initializationOptions, true);
    snippets = params.capabilities.textDocument?.completion?.completionItem?.snippetSupport === true;
    renames = params.capabilities.workspace?.workspaceEdit?.resourceOperations?.includes("rename") === true;
    initialized();
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        completionProvider: { triggerCharacters: [":", '"', " ", "{"] },
        hoverProvider: true,
        definitionProvider: true,
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
        documentFormattingProvider: true,
        semanticTokensProvider: { legend: SEMANTIC_TOKENS_LEGEND, full: true },
        ...navigation.initialize(params),
      },
      serverInfo: { name: "triton-dev" },
    };
  });
  connection.onInitialized(() => verdicts?.start());

  const isConfigDoc = (uri: string): string | undefined => {
    const p = toPath(uri);
    return p && path.basename(p) === CONFIG_FILE ? p : undefined;
  };

  documents.onDidChangeContent((e) => {
    const p = isConfigDoc(e.document.uri);
    if (!p) return;
    void workspace
      .setBuffer(p, e.document.getText())
      .then(() => {
        // Each change of an open config is answered, clean or not: the editor then knows it was checked.
        if (documents.get(e.document.uri)) send(p);
        if (lastVerdicts) applyVerdicts();
      })
      .catch((err) => log.error("answering a change failed", { file: p, error: String(err) }));
  });
  documents.onDidClose((e) => {
    const p = isConfigDoc(e.document.uri);
    if (p)
      void workspace
        .setBuffer(p, undefined)
        .catch((err) => log.error("answering a close failed", { file: p, error: String(err) }));
  });

  /** The open document, unless it is too large to be a config (then no feature reads it). */
  const docOf = (uri: string): { doc: TextDocument; file: string } | undefined => {
    const doc = documents.get(uri);
    const file = isConfigDoc(uri);
    if (!doc || !file || doc.getText().length > MAX_CONFIG_BYTES) return undefined;
    return { doc, file };
  };

  connection.onCompletion(async (params) => {
    const d = docOf(params.textDocument.uri);
    const s = d && sourceFor(d.file);
    if (!d || !s) return [];
    if (s.repo) await workspace.need(s.repo, modelsNamedIn(d.file, d.doc.getText()));
    const text = d.doc.getText();
    const items = await complete(text, d.doc.offsetAt(params.position), s.src, { snippets });
    const list = items.map((c, i): CompletionItem => ({
      label: c.label,
      kind: COMPLETION_KINDS[c.kind],
      ...(c.detail ? { detail: c.detail } : {}),
      ...(c.documentation ? { documentation: { kind: MarkupKind.Markdown, value: c.documentation } } : {}),
      sortText: String(i).padStart(4, "0"),
      filterText: c.insert.startsWith('"') ? c.insert : c.label,
      textEdit: {
        range: { start: d.doc.positionAt(c.start), end: d.doc.positionAt(c.end) },
        newText: c.insert,
      },
      insertTextFormat: c.snippet ? InsertTextFormat.Snippet : InsertTextFormat.PlainText,
      ...(c.retrigger ? { command: { title: "suggest", command: "editor.action.triggerSuggest" } } : {}),
    }));
    return { isIncomplete: items.length >= MAX_COMPLETIONS, items: list };
  });

  connection.onHover(async (params) => {
    const d = docOf(params.textDocument.uri);
    const s = d && sourceFor(d.file);
    if (!d || !s) return null;
    if (s.repo) await workspace.need(s.repo, modelsNamedIn(d.file, d.doc.getText()));
    const offset = d.doc.offsetAt(params.position);
    const h = await navigation.hover(d.file, d.doc.getText(), offset, await hover(d.doc.getText(), offset, s.src));
    if (!h) return null;
    return {
      contents: { kind: MarkupKind.Markdown, value: h.markdown },
      range: { start: d.doc.positionAt(h.start), end: d.doc.positionAt(h.end) },
    };
  });

  connection.onDefinition(async (params) => {
    const d = docOf(params.textDocument.uri);
    const s = d && sourceFor(d.file);
    if (!d || !s) return null;
    if (s.repo) await workspace.need(s.repo, modelsNamedIn(d.file, d.doc.getText()));
    const offset = d.doc.offsetAt(params.position);
    const loc = definition(d.doc.getText(), offset, s.src, d.file);
    const target =
      loc &&
      (documents.get(toUri(loc.file)) ?? TextDocument.create(toUri(loc.file), "pbtxt", 0, textOf(loc.file) ?? ""));
    const first =
      loc && target
        ? { uri: toUri(loc.file), range: { start: target.positionAt(loc.start), end: target.positionAt(loc.end) } }
        : null;
    return navigation.definitions(d.file, d.doc.getText(), offset, first);
  });

  connection.onCodeAction((params) => {
    const d = docOf(params.textDocument.uri);
    if (!d) return [];
    const text = d.doc.getText();
    const actions: CodeAction[] = [];
    for (const diag of params.context.diagnostics) {
      const data = diag.data as FixData | undefined;
      if (!data || typeof data.code !== "string") continue;
      const at = diag.range?.start ?? params.range.start;
      for (const fix of fixesFor(data, text, d.doc.offsetAt(at))) {
        let edit: WorkspaceEdit;
        if (fix.kind === "replace") {
          edit = {
            changes: {
              [params.textDocument.uri]: [
                { range: { start: d.doc.positionAt(fix.start), end: d.doc.positionAt(fix.end) }, newText: fix.text },
              ],
            },
          };
        } else {
          if (!renames || fs.existsSync(fix.to)) continue;
          edit = {
            documentChanges: [
              ...(fix.alsoReplace
                ? [
                    {
                      textDocument: { uri: params.textDocument.uri, version: d.doc.version },
                      edits: [
                        {
                          range: {
                            start: d.doc.positionAt(fix.alsoReplace.start),
                            end: d.doc.positionAt(fix.alsoReplace.end),
                          },
                          newText: fix.alsoReplace.text,
                        },
                      ],
                    },
                  ]
                : []),
              { kind: "rename", oldUri: toUri(fix.from), newUri: toUri(fix.to) },
            ],
          };
        }
        actions.push({
          title: fix.title,
          kind: CodeActionKind.QuickFix,
          diagnostics: [diag],
          ...(fix.kind === "replace" && fix.preferred ? { isPreferred: true } : {}),
          edit,
        });
      }
    }
    return actions;
  });

  connection.onDocumentFormatting((params) => {
    const d = docOf(params.textDocument.uri);
    if (!d) return [];
    const text = d.doc.getText();
    const unit = params.options.insertSpaces ? " ".repeat(Math.min(8, params.options.tabSize || 2)) : "\t";
    return formatEdits(text, unit) ?? [];
  });

  connection.onRequest(SemanticTokensRequest.type, (params) => {
    const d = docOf(params.textDocument.uri);
    return { data: d ? encodeSemanticTokens(semanticTokens(d.doc.getText())) : [] };
  });

  let resolveClosed: () => void = () => {};
  let rejectClosed: (err: unknown) => void = () => {};
  const closed = new Promise<void>((resolve, reject) => {
    resolveClosed = resolve;
    rejectClosed = reject;
  });
  fatal = (err) => {
    log.debug("stopping: the editor's input cannot be read", { error: err.message });
    verdicts?.stop();
    void workspace
      .close()
      .catch(() => undefined)
      .then(() => {
        connection.dispose();
        rejectClosed(err);
      });
  };
  const shutdown = async () => {
    verdicts?.stop();
    await workspace.close().catch((err) => log.warn("closing the workspace failed", { error: String(err) }));
    resolveClosed();
  };
  connection.onShutdown(() => shutdown());
  connection.onExit(() => void shutdown());
  connection.onDidChangeWatchedFiles((p) => {
    for (const c of p.changes) {
      const f = toPath(c.uri);
      const at = f ? locateConfig(f) : undefined;
      if (at) void workspace.changed(at.repo, at.model);
    }
  });
  navigation.listen();
  documents.listen(connection);
  connection.listen();
  return { connection, closed };
}
