import { TextSyntaxError, parseTree, tokenize } from "../repo/textproto.js";

/**
 * Formatting that changes only whitespace: each line indented by its nesting (two spaces a
 * level), trailing blanks removed, `name:value` given its space, runs of blank lines kept to one,
 * one newline at the end. Comments, the order of fields and every token stay as written; a text
 * that does not parse is left alone (a half-typed file is not the formatter's to guess at).
 */

export function formatConfig(text: string, indentUnit = "  "): string | undefined {
  try {
    parseTree(text);
  } catch (err) {
    if (err instanceof TextSyntaxError) return undefined;
    throw err;
  }
  const tokens = tokenize(text);
  // Depth at the start of each line, and whether the line starts with a closer.
  const lines = text.split("\n");
  const lineStarts: number[] = [];
  let off = 0;
  for (const l of lines) {
    lineStarts.push(off);
    off += l.length + 1;
  }
  const depthAtLine: number[] = new Array<number>(lines.length).fill(0);
  let depth = 0;
  let t = 0;
  for (let li = 0; li < lines.length; li++) {
    const start = lineStarts[li]!;
    const end = start + lines[li]!.length;
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

  const out: string[] = [];
  let blank = 0;
  for (let li = 0; li < lines.length; li++) {
    const raw = lines[li]!.replace(/\s+$/, "");
    const body = raw.trim();
    if (body === "") {
      blank++;
      if (blank > 1 || out.length === 0) continue;
      out.push("");
      continue;
    }
    blank = 0;
    out.push(indentUnit.repeat(depthAtLine[li]!) + spaceAfterColons(body));
  }
  while (out.length && out[out.length - 1] === "") out.pop();
  return out.join("\n") + "\n";
}

/** `name:value` -> `name: value`, outside strings and comments. */
function spaceAfterColons(line: string): string {
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
    if (c === '"' || c === "'") quote = c;
    out += c;
    if (c === ":" && line[i + 1] !== undefined && line[i + 1] !== " ") out += " ";
  }
  return out;
}
