import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type Connection,
  type Diagnostic as LspDiagnostic,
  DiagnosticSeverity,
  type Range,
  type TextDocuments,
} from "vscode-languageserver/node";
import type { TextDocument } from "vscode-languageserver-textdocument";
import type { Diagnostic } from "../repo/diagnostics.js";
import { CONFIG_FILE, MAX_CONFIG_BYTES } from "../repo/layout.js";
import type { FixData } from "./actions.js";

export const toPath = (uri: string): string | undefined => {
  try {
    return uri.startsWith("file:") ? fileURLToPath(uri) : undefined;
  } catch {
    return undefined;
  }
};
export const toUri = (file: string): string => pathToFileURL(file).href;

/** Text of a file for positions: the editor's when open, else the file's if it is a small text file. */
export function readSmall(file: string): string | undefined {
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

/**
 * What the editor is shown for each file: lint's findings and the running server's verdict, kept
 * apart (each is replaced whole by its own source) and sent together.
 */
export class DiagnosticsPublisher {
  private readonly lintByFile = new Map<string, Diagnostic[]>();
  private readonly verdictByFile = new Map<string, Diagnostic[]>();

  constructor(
    private readonly connection: Connection,
    private readonly documents: TextDocuments<TextDocument>,
  ) {}

  /** The editor's text of a file when open, else the saved file's (small text files only). */
  textOf(file: string): string | undefined {
    return this.documents.get(toUri(file))?.getText() ?? readSmall(file);
  }

  /** Lint's findings for a file (empty: none), sent at once. */
  setLint(file: string, ds: Diagnostic[]): void {
    if (ds.length) this.lintByFile.set(file, ds);
    else this.lintByFile.delete(file);
    this.send(file);
  }

  /** The verdict's findings by file, in place of the last ones; every file in either is sent again. */
  setVerdicts(next: Map<string, Diagnostic[]>): void {
    const before = [...this.verdictByFile.keys()];
    this.verdictByFile.clear();
    for (const [f, ds] of next) this.verdictByFile.set(f, ds);
    for (const f of new Set([...before, ...next.keys()])) this.send(f);
  }

  send(file: string): void {
    const all = [...(this.lintByFile.get(file) ?? []), ...(this.verdictByFile.get(file) ?? [])];
    const isConfig = path.basename(file) === CONFIG_FILE;
    const text = all.length ? this.textOf(file) : undefined;
    const diagnostics: LspDiagnostic[] = all.map((d) => ({
      range: rangeOf(d, text, isConfig),
      severity: d.severity === "error" ? DiagnosticSeverity.Error : DiagnosticSeverity.Warning,
      code: d.code,
      source: d.code.startsWith("triton-") ? "triton" : "triton-dev",
      message: d.hint ? `${d.message}\nhint: ${d.hint}` : d.message,
      data: { code: d.code, ...(d.hint ? { hint: d.hint } : {}), file: d.file } satisfies FixData,
    }));
    // Stamped with the version of the open text they are about, so an editor can drop stale ones.
    const version = this.documents.get(toUri(file))?.version;
    void this.connection.sendDiagnostics({
      uri: toUri(file),
      ...(version !== undefined ? { version } : {}),
      diagnostics,
    });
  }
}
