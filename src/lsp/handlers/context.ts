import path from "node:path";
import type { Connection, TextDocuments } from "vscode-languageserver/node";
import type { TextDocument } from "vscode-languageserver-textdocument";
import { CONFIG_FILE, MAX_CONFIG_BYTES } from "../../repo/layout.js";
import type { ModelSource } from "../features.js";
import { modelsNamedIn } from "../model-source.js";
import type { Navigation } from "../navigation.js";
import { toPath } from "../publish.js";
import type { Workspace } from "../workspace.js";

/** What the request handlers share, built once by `startLspServer`. */
export interface HandlerContext {
  connection: Connection;
  documents: TextDocuments<TextDocument>;
  workspace: Workspace;
  navigation: Navigation;
  /** The repository around a config, for the schema's features (see model-source.ts). */
  sourceFor(file: string): { src: ModelSource; repo: string | undefined };
  /** The editor's text of a file when open, else the saved file's. */
  textOf(file: string): string | undefined;
  /** What the client said it supports at initialize. */
  client: { snippets: boolean; renames: boolean };
}

/** The config.pbtxt a document is, by its URI; undefined for any other file. */
export const isConfigDoc = (uri: string): string | undefined => {
  const p = toPath(uri);
  return p && path.basename(p) === CONFIG_FILE ? p : undefined;
};

/** The open document, unless it is too large to be a config (then no feature reads it). */
export function docOf(
  documents: TextDocuments<TextDocument>,
  uri: string,
): { doc: TextDocument; file: string } | undefined {
  const doc = documents.get(uri);
  const file = isConfigDoc(uri);
  if (!doc || !file || doc.getText().length > MAX_CONFIG_BYTES) return undefined;
  return { doc, file };
}

/**
 * The open config a request is about and its repository, with the models it names read first;
 * undefined when the document is no config a feature reads.
 */
export async function configRequest(
  ctx: HandlerContext,
  uri: string,
): Promise<{ doc: TextDocument; file: string; src: ModelSource } | undefined> {
  const d = docOf(ctx.documents, uri);
  if (!d) return undefined;
  const s = ctx.sourceFor(d.file);
  if (s.repo) await ctx.workspace.need(s.repo, modelsNamedIn(d.file, d.doc.getText()));
  return { ...d, src: s.src };
}
