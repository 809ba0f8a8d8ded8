import path from "node:path";
import { UserError } from "../errors.js";
import type { RuleCode } from "./rules/codes.js";

export type Severity = "error" | "warning";

/**
 * One finding about a model repository, shaped like a compiler message so that editors, the TUI
 * and the reload watcher can all point at the exact spot. `line` and `column` are 1-based; a
 * finding about a whole file or folder points at 1:1.
 */
export interface Diagnostic {
  severity: Severity;
  /** Absolute path of the file (or folder) the finding is about. */
  file: string;
  line: number;
  column: number;
  message: string;
  /** What to do about it, one sentence. */
  hint?: string;
  /** The model the finding belongs to, when there is one. */
  model?: string;
  /**
   * Stable identifier of the rule, for filtering and tests (e.g. `dims-invalid`): one of the code
   * tables' (rules/codes.ts), whichever command reports it, so `lint --list-rules` lists it.
   */
  code: RuleCode;
}

/**
 * Thrown only by the throwing parse entry points: carries the diagnostics that made the input
 * unusable, so callers never have to parse error text.
 */
export class DiagnosticError extends UserError {
  override name = "DiagnosticError";
  readonly diagnostics: Diagnostic[];
  constructor(diagnostics: Diagnostic[]) {
    const first = diagnostics[0];
    super(first ? `${first.file}:${first.line}:${first.column}: ${first.message}` : "invalid model configuration", {
      hint: first?.hint,
    });
    this.diagnostics = diagnostics;
  }
}

/** Longer runs without a space are cut in messages: see clipLongRuns. */
const MAX_RUN = 200;
const LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1},}`, "g");

/**
 * Messages and hints quote names and values from the user's files; a corrupted or generated file
 * can hold a name or number a megabyte long, which would make one diagnostic a megabyte too.
 * Such runs keep their start and say how long they were.
 */
export function clipLongRuns(text: string): string {
  return text.length <= MAX_RUN
    ? text
    : text.replace(LONG_RUN, (run) => `${run.slice(0, 60)}…(${run.length} characters)`);
}

/** A path as the user would type it: relative to `cwd` when inside it, else absolute. */
export function displayPath(file: string, cwd: string): string {
  const rel = path.relative(cwd, file);
  if (rel === "") return ".";
  if (rel.startsWith("..") || path.isAbsolute(rel)) return file;
  return rel;
}

/** `path:line:col: error: message` and, when there is a hint, an indented `hint:` line. */
export function formatDiagnostic(d: Diagnostic, cwd: string = process.cwd()): string {
  const head = `${displayPath(d.file, cwd)}:${d.line}:${d.column}: ${d.severity}: ${d.message}`;
  return d.hint ? `${head}\n  hint: ${d.hint}` : head;
}

/** One line saying why a model was refused: how many errors, and the first of them. */
export function refusalSummary(diagnostics: readonly Diagnostic[], cwd: string = process.cwd()): string {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const first = errors[0] ? formatDiagnostic(errors[0], cwd).split("\n")[0] : "no details";
  return `lint found ${errors.length} error(s); the first: ${first}`;
}

const SEVERITY_ORDER: Record<Severity, number> = { error: 0, warning: 1 };

/** Errors before warnings, then by file and position, so output is stable run to run. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
    (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
    a.line - b.line ||
    a.column - b.column ||
    (a.message < b.message ? -1 : a.message > b.message ? 1 : 0)
  );
}

export function countBySeverity(ds: readonly Diagnostic[]): { errors: number; warnings: number } {
  let errors = 0;
  let warnings = 0;
  for (const d of ds) {
    if (d.severity === "error") errors++;
    else warnings++;
  }
  return { errors, warnings };
}

/** Drops exact repeats (the same rule can be reached from two ensembles). */
export function dedupeDiagnostics(ds: readonly Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  const out: Diagnostic[] = [];
  for (const d of ds) {
    const key = `${d.severity}|${d.file}|${d.line}|${d.column}|${d.code}|${d.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}
