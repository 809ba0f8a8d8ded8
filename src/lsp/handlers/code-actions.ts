import fs from "node:fs";
import { type CodeAction, CodeActionKind, type WorkspaceEdit } from "vscode-languageserver/node";
import type { TextDocument } from "vscode-languageserver-textdocument";
import { type Fix, type FixData, fixesFor } from "../actions.js";
import { toUri } from "../publish.js";
import { type HandlerContext, docOf } from "./context.js";

/** A fix as the editor's edit; undefined for a folder rename the client cannot make or whose target exists. */
function editOf(fix: Fix, uri: string, doc: TextDocument, renames: boolean): WorkspaceEdit | undefined {
  if (fix.kind === "replace")
    return {
      changes: {
        [uri]: [{ range: { start: doc.positionAt(fix.start), end: doc.positionAt(fix.end) }, newText: fix.text }],
      },
    };
  if (!renames || fs.existsSync(fix.to)) return undefined;
  return {
    documentChanges: [
      ...(fix.alsoReplace
        ? [
            {
              textDocument: { uri, version: doc.version },
              edits: [
                {
                  range: {
                    start: doc.positionAt(fix.alsoReplace.start),
                    end: doc.positionAt(fix.alsoReplace.end),
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

/** textDocument/codeAction: the quick fixes lint's hints carry on each diagnostic (actions.ts). */
export function listenForCodeActions(ctx: HandlerContext): void {
  ctx.connection.onCodeAction((params) => {
    const d = docOf(ctx.documents, params.textDocument.uri);
    if (!d) return [];
    const text = d.doc.getText();
    const actions: CodeAction[] = [];
    for (const diag of params.context.diagnostics) {
      const data = diag.data as FixData | undefined;
      if (!data || typeof data.code !== "string") continue;
      const at = diag.range?.start ?? params.range.start;
      for (const fix of fixesFor(data, text, d.doc.offsetAt(at))) {
        const edit = editOf(fix, params.textDocument.uri, d.doc, ctx.client.renames);
        if (!edit) continue;
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
}
