import { TextDocument } from "vscode-languageserver-textdocument";
import { definition } from "../features.js";
import { toUri } from "../publish.js";
import { type HandlerContext, configRequest } from "./context.js";

/** textDocument/definition: a step's model or a tensor's config (features.ts), then navigation.ts's own. */
export function listenForDefinition(ctx: HandlerContext): void {
  ctx.connection.onDefinition(async (params) => {
    const d = await configRequest(ctx, params.textDocument.uri);
    if (!d) return null;
    const offset = d.doc.offsetAt(params.position);
    const loc = definition(d.doc.getText(), offset, d.src, d.file);
    const target =
      loc &&
      (ctx.documents.get(toUri(loc.file)) ??
        TextDocument.create(toUri(loc.file), "pbtxt", 0, ctx.textOf(loc.file) ?? ""));
    const first =
      loc && target
        ? { uri: toUri(loc.file), range: { start: target.positionAt(loc.start), end: target.positionAt(loc.end) } }
        : null;
    return ctx.navigation.definitions(d.file, d.doc.getText(), offset, first);
  });
}
