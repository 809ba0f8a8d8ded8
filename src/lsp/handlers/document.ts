import { SemanticTokensRequest } from "vscode-languageserver/node";
import { formatEdits } from "../format.js";
import { encodeSemanticTokens, semanticTokens } from "../semantic-tokens.js";
import { type HandlerContext, docOf } from "./context.js";

/** The requests answered from the config's own text alone: formatting (format.ts) and semantic tokens. */
export function listenForDocumentText(ctx: HandlerContext): void {
  ctx.connection.onDocumentFormatting((params) => {
    const d = docOf(ctx.documents, params.textDocument.uri);
    if (!d) return [];
    const text = d.doc.getText();
    const unit = params.options.insertSpaces ? " ".repeat(Math.min(8, params.options.tabSize || 2)) : "\t";
    return formatEdits(text, unit) ?? [];
  });

  ctx.connection.onRequest(SemanticTokensRequest.type, (params) => {
    const d = docOf(ctx.documents, params.textDocument.uri);
    return { data: d ? encodeSemanticTokens(semanticTokens(d.doc.getText())) : [] };
  });
}
