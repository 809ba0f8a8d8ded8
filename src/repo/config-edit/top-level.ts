/**
 * Top-level textual edits for `perf --compare`'s variants. They read text that may not parse yet
 * (a `--compare config=FILE` is linted after), so they scan brackets, strings and comments
 * themselves instead of asking the parser.
 */
import { positionAt } from "../textproto.js";
import { ConfigEditError } from "./types.js";

interface Span {
  start: number;
  end: number;
}

function skipString(text: string, i: number): number {
  const q = text[i];
  let j = i + 1;
  while (j < text.length && text[j] !== q) j += text[j] === "\\" ? 2 : 1;
  return j + 1;
}

function skipComment(text: string, i: number): number {
  const nl = text.indexOf("\n", i);
  return nl < 0 ? text.length : nl;
}

function skipSpace(text: string, i: number): number {
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (text[i] === "#") i = skipComment(text, i);
    else return i;
  }
}

/** From an opening { or [ to just past its match, ignoring brackets in strings and comments. */
function matchBracket(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length;) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      i = skipString(text, i);
      continue;
    }
    if (c === "#") {
      i = skipComment(text, i);
      continue;
    }
    if (c === "{" || c === "[" || c === "<") depth++;
    else if (c === "}" || c === "]" || c === ">") {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  const at = positionAt(text, open);
  throw new ConfigEditError(`config.pbtxt:${at.line}:${at.column}: this ${text[open]} is never closed`, "syntax", {
    line: at.line,
    column: at.column,
    hint: "Run `triton-dev lint` to find it.",
  });
}

/** Spans of every top-level occurrence of field `key` (key, optional colon, value). */
export function findTopLevelField(text: string, key: string): Span[] {
  const spans: Span[] = [];
  let depth = 0;
  for (let i = 0; i < text.length;) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      i = skipString(text, i);
      continue;
    }
    if (c === "#") {
      i = skipComment(text, i);
      continue;
    }
    if (c === "{" || c === "[" || c === "<") {
      depth++;
      i++;
      continue;
    }
    if (c === "}" || c === "]" || c === ">") {
      depth--;
      i++;
      continue;
    }
    if (depth === 0 && /[A-Za-z_]/.test(c) && (i === 0 || !/[A-Za-z0-9_]/.test(text[i - 1]!))) {
      let j = i;
      while (j < text.length && /[A-Za-z0-9_]/.test(text[j]!)) j++;
      if (text.slice(i, j) === key) {
        let k = skipSpace(text, j);
        if (text[k] === ":") k = skipSpace(text, k + 1);
        let end: number;
        if (text[k] === "{" || text[k] === "[" || text[k] === "<") end = matchBracket(text, k);
        else if (text[k] === '"' || text[k] === "'") end = skipString(text, k);
        else {
          end = k;
          while (end < text.length && !/[\s#]/.test(text[end]!)) end++;
        }
        spans.push({ start: i, end });
        i = end;
        continue;
      }
      i = j;
      continue;
    }
    i++;
  }
  return spans;
}

/** Cut spans out, with the rest of their line when nothing else is on it. */
function cut(text: string, spans: readonly Span[]): string {
  let out = text;
  for (const s of [...spans].sort((a, b) => b.start - a.start)) {
    let { start, end } = s;
    const lineStart = out.lastIndexOf("\n", start - 1) + 1;
    const nl = out.indexOf("\n", end);
    const lineEnd = nl < 0 ? out.length : nl;
    if (out.slice(lineStart, start).trim() === "" && out.slice(end, lineEnd).trim() === "") {
      start = lineStart;
      end = nl < 0 ? out.length : nl + 1;
    }
    out = out.slice(0, start) + out.slice(end);
  }
  return out;
}

/** Remove every top-level `key`. */
export function removeField(text: string, key: string): string {
  return cut(text, findTopLevelField(text, key));
}

/** Replace every top-level `key` with `replacement` (at the first one's place), or append it. */
export function setField(text: string, key: string, replacement: string): string {
  const spans = findTopLevelField(text, key);
  if (spans.length === 0) return text.replace(/\s*$/, "") + "\n\n" + replacement + "\n";
  const first = spans[0]!;
  const rest = spans.slice(1);
  const withoutRest = cut(text, rest);
  return withoutRest.slice(0, first.start) + replacement + withoutRest.slice(first.end);
}

export function renameConfig(text: string, name: string): string {
  const spans = findTopLevelField(text, "name");
  const line = `name: ${JSON.stringify(name)}`;
  if (spans.length === 0) return `${line}\n${text}`;
  return setField(text, "name", line);
}
