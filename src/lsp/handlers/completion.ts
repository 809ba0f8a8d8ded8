import { type CompletionItem, CompletionItemKind, InsertTextFormat, MarkupKind } from "vscode-languageserver/node";
import { type Completion, MAX_COMPLETIONS, complete } from "../features.js";
import { type HandlerContext, configRequest } from "./context.js";

const COMPLETION_KINDS: Record<Completion["kind"], CompletionItemKind> = {
  field: CompletionItemKind.Field,
  message: CompletionItemKind.Module,
  enum: CompletionItemKind.EnumMember,
  value: CompletionItemKind.Value,
  model: CompletionItemKind.Reference,
  tensor: CompletionItemKind.Variable,
};

/** textDocument/completion: the schema's fields and values, the repository's models and tensors (features.ts). */
export function listenForCompletion(ctx: HandlerContext): void {
  ctx.connection.onCompletion(async (params) => {
    const d = await configRequest(ctx, params.textDocument.uri);
    if (!d) return [];
    const text = d.doc.getText();
    const items = await complete(text, d.doc.offsetAt(params.position), d.src, { snippets: ctx.client.snippets });
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
}
