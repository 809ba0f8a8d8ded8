-- A Neovim session against `triton-dev lsp`, run headless by neovim.integration.test.ts: the
-- README's setup (vim.lsp.start_client, which Neovim 0.7 has; 0.8+ also has vim.lsp.start), then
-- what a user does: open a config, see the diagnostic, take its quick fix, complete a field, hover.
-- Each step is written to NVIM_TRANSCRIPT as one line of JSON.
local cmd = vim.fn.json_decode(os.getenv("TRITON_DEV_LSP_CMD"))
local file = os.getenv("NVIM_CONFIG_FILE")
local out = assert(io.open(os.getenv("NVIM_TRANSCRIPT"), "w"))
local function say(step, data)
  out:write(vim.fn.json_encode({ step = step, data = data }) .. "\n")
  out:flush()
end
local function finish(code)
  out:close()
  vim.cmd((code == 0 and "qa!") or ("cq! " .. code))
end

-- The README's setup for Neovim 0.7 (its cmd here names the built CLI).
vim.cmd([[autocmd BufRead,BufNewFile config.pbtxt setfiletype pbtxt]])
local triton_dev
vim.api.nvim_create_autocmd("FileType", {
  pattern = "pbtxt",
  callback = function(args)
    triton_dev = triton_dev or vim.lsp.start_client({ name = "triton-dev", cmd = cmd })
    vim.lsp.buf_attach_client(args.buf, triton_dev)
  end,
})

vim.cmd("edit " .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
say("opened", { file = file, filetype = vim.bo.filetype })

local ok = vim.wait(30000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
local diags = vim.diagnostic.get(buf)
say("diagnostics", vim.tbl_map(function(d)
  return { lnum = d.lnum, col = d.col, code = d.code, source = d.source, message = d.message }
end, diags))
if not ok then return finish(2) end

-- The quick fix of the first diagnostic, as `:lua vim.lsp.buf.code_action()` would offer it.
local client = vim.lsp.get_active_clients()[1]
local d = diags[1]
local params = {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } },
  -- What vim.lsp.buf.code_action() sends in 0.7: the line's diagnostics in LSP form.
  context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf, d.lnum) },
}
local res = client.request_sync("textDocument/codeAction", params, 10000, buf)
local action = res and res.result and res.result[1]
say("code_action", action and { title = action.title } or vim.NIL)
if not action then return finish(3) end
vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
ok = vim.wait(30000, function() return #vim.diagnostic.get(buf) == 0 end, 50)
say("after_fix", { line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1], diagnostics = #vim.diagnostic.get(buf) })
if not ok then return finish(4) end

-- Typing inside dynamic_batching { }: completion offers that message's fields.
local last = vim.api.nvim_buf_line_count(buf)
vim.api.nvim_buf_set_lines(buf, last, last, false, { "dynamic_batching {", "  max_q", "}" })
vim.wait(300)
local cparams = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = last + 1, character = 7 } }
res = client.request_sync("textDocument/completion", cparams, 10000, buf)
local items = (res and res.result) or {}
items = items.items or items
say("completion", vim.tbl_map(function(i) return i.label end, items))
if #items == 0 then return finish(5) end
-- The item the typed word selects, as the completion menu filters it.
local chosen = vim.tbl_filter(function(i) return vim.startswith(i.label, "max_q") end, items)[1]
if not chosen then return finish(6) end
vim.lsp.util.apply_text_edits({ chosen.textEdit }, buf, client.offset_encoding)
say("completed", { line = vim.api.nvim_buf_get_lines(buf, last + 1, last + 2, false)[1] })

-- Hover on the field the fix named.
res = client.request_sync("textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  position = { line = d.lnum, character = d.col + 3 },
}, 10000, buf)
local value = res and res.result and res.result.contents and res.result.contents.value or ""
say("hover", { first_line = vim.split(value, "\n")[1], text = value })

-- From an ensemble step to the step model's config, as `gd` (vim.lsp.buf.definition) jumps.
local pipeline = vim.fn.fnamemodify(file, ":h:h") .. "/sentiment_pipeline/config.pbtxt"
vim.cmd("edit " .. vim.fn.fnameescape(pipeline))
local pbuf = vim.api.nvim_get_current_buf()
vim.wait(5000, function() return #vim.lsp.buf_get_clients(pbuf) > 0 end, 50)
local row
for i, l in ipairs(vim.api.nvim_buf_get_lines(pbuf, 0, -1, false)) do
  if l:find('model_name: "bert_tokenizer"', 1, true) then row = i - 1 break end
end
res = client.request_sync("textDocument/definition", {
  textDocument = { uri = vim.uri_from_bufnr(pbuf) },
  position = { line = row, character = 22 },
}, 10000, pbuf)
local loc = res and res.result
if loc and loc[1] then loc = loc[1] end
if not loc then return finish(7) end
vim.lsp.util.jump_to_location(loc, client.offset_encoding)
say("definition", { file = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] })

-- Navigation, as a user reaches it in 0.7: each list command fills the quickfix list.
local models = vim.fn.fnamemodify(file, ":h:h")
local rel = function(f) return vim.fn.fnamemodify(f, ":p"):sub(#models + 2) end
local shown = {}
local show_message = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, result, ctx, config)
  table.insert(shown, result.message)
  return show_message(err, result, ctx, config)
end
local function back_to_pipeline()
  vim.cmd("cclose")
  vim.api.nvim_set_current_buf(pbuf)
end
local function quickfix(run, title)
  vim.fn.setqflist({}, "r", { title = "", items = {} })
  run()
  vim.wait(30000, function() return vim.fn.getqflist({ title = 0 }).title:find(title, 1, true) ~= nil end, 50)
  local items = vim.tbl_map(function(i)
    return { file = rel(vim.api.nvim_buf_get_name(i.bufnr)), lnum = i.lnum, col = i.col, text = i.text }
  end, vim.fn.getqflist())
  back_to_pipeline()
  return items
end
local function cursor_on(needle, delta)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(pbuf, 0, -1, false)) do
    local c = l:find(needle, 1, true)
    if c then
      vim.api.nvim_win_set_cursor(0, { i, c - 1 + (delta or 0) })
      return i - 1, c - 1 + (delta or 0)
    end
  end
end
vim.api.nvim_set_current_buf(pbuf)

-- The outline (:lua vim.lsp.buf.document_symbol()).
say("document_symbols", quickfix(vim.lsp.buf.document_symbol, "Symbols in"))

-- K on a tensor name in an ensemble map: its type, dims and the steps that use it.
local hrow, hcol = cursor_on('"TEXT_INPUT"', 2)
res = client.request_sync("textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(pbuf) },
  position = { line = hrow, character = hcol },
}, 10000, pbuf)
value = res and res.result and res.result.contents and res.result.contents.value or ""
say("hover_tensor", { text = value })

-- :lua vim.lsp.buf.references() on the tensor, then on a model name.
say("references_tensor", quickfix(vim.lsp.buf.references, "References"))
cursor_on('"bert_tokenizer"', 2)
say("references_model", quickfix(vim.lsp.buf.references, "References"))

-- :lua vim.lsp.buf.rename("TEXT") on the tensor: the ensemble and the step model's config change.
cursor_on('"TEXT_INPUT"', 2)
local tokenizer = models .. "/bert_tokenizer/config.pbtxt"
local tbuf = vim.fn.bufnr(tokenizer)
vim.lsp.buf.rename("TEXT")
ok = vim.wait(30000, function()
  return vim.fn.join(vim.api.nvim_buf_get_lines(tbuf, 0, -1, false), "\n"):find('name: "TEXT"', 1, true) ~= nil
end, 50)
local function lines_with(buf, needle)
  return vim.tbl_filter(function(l) return l:find(needle, 1, true) ~= nil end, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
end
vim.cmd("silent wall")
-- Both files say TEXT now: the ensemble has nothing to report.
local clean = vim.wait(30000, function() return #vim.diagnostic.get(pbuf) == 0 end, 50)
say("rename_tensor", {
  pipeline = lines_with(pbuf, "TEXT"),
  tokenizer = lines_with(tbuf, "TEXT"),
  diagnostics = #vim.diagnostic.get(pbuf),
  clean = clean,
})
if not ok then return finish(8) end

-- Renaming a model: its config's name and the step's model_name; Neovim 0.7 cannot move folders,
-- so the server says which folder to move.
cursor_on('"sentiment_classifier"', 2)
vim.lsp.buf.rename("sentiment_model")
local classifier = models .. "/sentiment_classifier/config.pbtxt"
ok = vim.wait(30000, function()
  local b = vim.fn.bufnr(classifier)
  return b > 0 and #lines_with(b, 'name: "sentiment_model"') > 0 and #shown > 0
end, 50)
say("rename_model", {
  pipeline = lines_with(pbuf, "sentiment_"),
  classifier = lines_with(vim.fn.bufnr(classifier), 'name: "'),
  messages = shown,
  folder_still_there = vim.fn.isdirectory(models .. "/sentiment_classifier"),
})
if not ok then return finish(9) end

-- :lua vim.lsp.buf.workspace_symbol("mask") across the repository.
say("workspace_symbols", quickfix(function() vim.lsp.buf.workspace_symbol("mask") end, "Symbols matching"))

-- Folding ranges (0.7 has no LSP folding of its own: the answer as its client receives it).
res = client.request_sync("textDocument/foldingRange", { textDocument = { uri = vim.uri_from_bufnr(pbuf) } }, 10000, pbuf)
say("folding", res and res.result or vim.NIL)

-- Semantic tokens (0.7 does not ask for them itself: the answer as its client receives it, with
-- the legend the server announced to it).
res = client.request_sync("textDocument/semanticTokens/full", { textDocument = { uri = vim.uri_from_bufnr(pbuf) } }, 10000, pbuf)
say("semantic_tokens", {
  data = res and res.result and res.result.data or vim.NIL,
  legend = client.server_capabilities.semanticTokensProvider.legend.tokenTypes,
  lines = vim.api.nvim_buf_get_lines(pbuf, 0, -1, false),
})

vim.lsp.stop_client(client.id)
vim.wait(5000, function() return vim.tbl_isempty(vim.lsp.get_active_clients()) end, 50)
say("stopped", { clients = #vim.lsp.get_active_clients() })
finish(0)
