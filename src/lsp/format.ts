import { TextSyntaxError, parseTree, tokenize } from "../repo/textproto.js";

/**
 * Formatting that changes only whitespace: each line indented by its nesting (two spaces a
 * level), trailing blanks removed, `name :  value` spaced as `name: value`, runs of spaces
 * between tokens made one, runs of blank lines kept to one, one line break at the end, and the
 * file's own line breaks (CRLF stays CRLF). Comments, the order of fields and every token stay as
 * written; a text that does not parse is left alone (a half-typed file is not the formatter's to
 * guess at).
 */

/** A text edit as LSP has it (line and UTF-16 character), without the protocol's types. */
export interface LineEdit {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  newText: string;
}

interface Formatted {
  eol: "\n" | "\r\n";
  /** Each line of the text without its break. */
  lines: string[];
  /** What each line becomes; null: the line goes, with its break. */
  out: Array<string | null>;
  /** Whether the text ends with a line break. */
  endsWithBreak: boolean;
}

function formatLines(text: string, indentUnit: string): Formatted | undefined {
  try {
    parseTree(text);
  } catch (err) {
    if (err instanceof TextSyntaxError) return undefined;
    throw err;
  }
  const tokens = tokenize(text);
  // The first line break is the file's: an editor on Windows writes CRLF throughout.
  const eol = text[text.indexOf("\n") - 1] === "\r" ? "\r\n" : "\n";
  // Depth at the start of each line, and whether the line starts with a closer.
  const rawLines = text.split("\n");
  const endsWithBreak = rawLines.length > 1 && rawLines[rawLines.length - 1] === "";
  if (endsWithBreak) rawLines.pop();
  const lineStarts: number[] = [];
  let off = 0;
  for (const l of rawLines) {
    lineStarts.push(off);
    off += l.length + 1;
  }
  const depthAtLine: number[] = new Array<number>(rawLines.length).fill(0);
  let depth = 0;
  let t = 0;
  for (let li = 0; li < rawLines.length; li++) {
    const start = lineStarts[li]!;
    const end = start + rawLines[li]!.length;
    // Closers that begin the line take the line out one level.
    let lineDepth = depth;
    let first = true;
    while (t < tokens.length && tokens[t]!.pos.offset < end + 1 && tokens[t]!.type !== "eof") {
      const tok = tokens[t]!;
      if (tok.pos.offset >= start) {
        const ty = tok.type;
        if (ty === "{" || ty === "<" || ty === "[") depth++;
        else if (ty === "}" || ty === ">" || ty === "]") {
          depth--;
          if (first) lineDepth = depth;
        }
        first = false;
      }
      t++;
    }
    depthAtLine[li] = Math.max(0, lineDepth);
  }

  const lines = rawLines.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  const out: Array<string | null> = [];
  let blank = 0;
  let kept = 0;
  for (let li = 0; li < lines.length; li++) {
    const body = lines[li]!.trim();
    if (body === "") {
      blank++;
      out.push(blank > 1 || kept === 0 ? null : "");
      continue;
    }
    blank = 0;
    kept++;
    out.push(indentUnit.repeat(depthAtLine[li]!) + normaliseSpacing(body));
  }
  // Blank lines at the end go: the text ends with the last line's break.
  for (let li = out.length - 1; li >= 0 && (out[li] === "" || out[li] === null); li--) out[li] = null;
  return { eol, lines, out, endsWithBreak };
}

export function formatConfig(text: string, indentUnit = "  "): string | undefined {
  const f = formatLines(text, indentUnit);
  if (!f) return undefined;
  const kept = f.out.filter((l): l is string => l !== null);
  return kept.length ? kept.join(f.eol) + f.eol : "";
}

/**
 * The edits that format `text`: one per line that changes (a line that goes is deleted with its
 * break), so the editor keeps its cursor, marks and undo steps on every other line. Undefined:
 * the text does not parse.
 */
export function formatEdits(text: string, indentUnit = "  "): LineEdit[] | undefined {
  const f = formatLines(text, indentUnit);
  if (!f) return undefined;
  const edits: LineEdit[] = [];
  const n = f.lines.length;
  const lastKept = f.out.reduce<number>((k, l, i) => (l !== null ? i : k), -1);
  for (let li = 0; li < n; li++) {
    const to = f.out[li]!;
    const from = f.lines[li]!;
    if (to === null) {
      // The last lines deleted past the last kept one: from that line's end, taking their breaks.
      if (!f.endsWithBreak && lastKept >= 0 && li === lastKept + 1) {
        edits.push({
          range: {
            start: { line: lastKept, character: f.lines[lastKept]!.length },
            end: { line: n - 1, character: f.lines[n - 1]!.length },
          },
          newText: f.eol,
        });
        break;
      }
      const withBreak = li + 1 < n || f.endsWithBreak;
      // (An empty last line without a break is nothing to delete.)
      if (withBreak || from.length > 0)
        edits.push({
          range: {
            start: { line: li, character: 0 },
            end: withBreak ? { line: li + 1, character: 0 } : { line: li, character: from.length },
          },
          newText: "",
        });
      continue;
    }
    if (to !== from)
      edits.push({
        range: { start: { line: li, character: 0 }, end: { line: li, character: from.length } },
        newText: to,
      });
  }
  if (lastKept === n - 1 && !f.endsWithBreak)
    edits.push({
      range: {
        start: { line: n - 1, character: f.lines[n - 1]!.length },
        end: { line: n - 1, character: f.lines[n - 1]!.length },
      },
      newText: f.eol,
    });
  return edits;
}

/**
 * Spacing between the tokens of one line, outside strings and comments: none before a colon, one
 * after it, one between tokens. The spaces before a trailing comment stay (they align comments).
 */
function normaliseSpacing(line: string): string {
  let out = "";
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      out += c;
      if (c === "\\") {
        out += line[++i] ?? "";
        continue;
      }
      if (c === quote) quote = undefined;
      continue;
    }
    if (c === "#") return out + line.slice(i);
    if (c === " " || c === "\t") {
      let j = i;
      while (j < line.length && (line[j] === " " || line[j] === "\t")) j++;
      const next = line[j];
      if (next === "#") {
        out += line.slice(i, j);
      } else if (next !== ":" && next !== undefined) out += " ";
      i = j - 1;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    out += c;
    if (c === ":" && line[i + 1] !== undefined && line[i + 1] !== " " && line[i + 1] !== "\t") out += " ";
  }
  return out;
}
