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

vim.lsp.stop_client(client.id)
vim.wait(5000, function() return vim.tbl_isempty(vim.lsp.get_active_clients()) end, 50)
say("stopped", { clients = #vim.lsp.get_active_clients() })
finish(0)
