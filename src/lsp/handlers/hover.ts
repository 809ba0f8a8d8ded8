import { MarkupKind } from "vscode-languageserver/node";
import { hover } from "../features.js";
import { type HandlerContext, configRequest } from "./context.js";

/** textDocument/hover: the schema's documentation (features.ts), a tensor's uses (navigation.ts). */
export function listenForHover(ctx: HandlerContext): void {
  ctx.connection.onHover(async (params) => {
    const d = await configRequest(ctx, params.textDocument.uri);
    if (!d) return null;
    const offset = d.doc.offsetAt(params.position);
    const h = await ctx.navigation.hover(d.file, d.doc.getText(), offset, await hover(d.doc.getText(), offset, d.src));
    if (!h) return null;
    return {
      contents: { kind: MarkupKind.Markdown, value: h.markdown },
      range: { start: d.doc.positionAt(h.start), end: d.doc.positionAt(h.end) },
    };
  });
}
