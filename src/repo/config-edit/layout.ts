/**
 * Where text goes in a config as the file itself writes it: its spans replaced in one pass
 * (`Rewrite`), its lines, indentation and line break (`Layout`), and a field cut out or placed
 * before, after or inside another, on a line of its own where the file writes it so.
 */
import type { FieldNode, MessageNode, Token } from "../textproto.js";

// ---------------------------------------------------------------------------------------------
// Replacements of spans of the original text, applied in one pass

interface Replacement {
  start: number;
  end: number;
  text: string;
  seq: number;
}

export class Rewrite {
  private readonly parts: Replacement[] = [];
  private seq = 0;

  replace(start: number, end: number, text: string): void {
    this.parts.push({ start, end, text, seq: this.seq++ });
  }

  insert(at: number, text: string): void {
    this.replace(at, at, text);
  }

  get empty(): boolean {
    return this.parts.length === 0;
  }

  apply(text: string): string {
    // Insertions at a point come before a cut starting there; two cuts that touch merge.
    const parts = [...this.parts].sort((a, b) => a.start - b.start || a.end - b.end || a.seq - b.seq);
    let out = "";
    let at = 0;
    for (const p of parts) {
      if (p.start < at) {
        if (p.text === "" && p.start !== p.end) {
          at = Math.max(at, p.end);
          continue;
        }
        throw new Error(`overlapping edits at offset ${p.start}`);
      }
      out += text.slice(at, p.start) + p.text;
      at = p.end;
    }
    return out + text.slice(at);
  }
}

// ---------------------------------------------------------------------------------------------
// The file's layout: lines, indentation, its line break

export class Layout {
  readonly eol: string;
  /** One level of indentation as the file writes it. */
  readonly unit: string;
  /** Where each `{`, `<` and `[` closes. */
  private readonly closes = new Map<number, Token>();

  constructor(
    readonly text: string,
    readonly tokens: Token[],
  ) {
    const nl = text.indexOf("\n");
    this.eol = nl > 0 && text[nl - 1] === "\r" ? "\r\n" : "\n";
    this.unit = detectIndentUnit(text);
    const stack: Token[] = [];
    for (const t of tokens) {
      if (t.type === "{" || t.type === "<" || t.type === "[") stack.push(t);
      else if (t.type === "}" || t.type === ">" || t.type === "]") {
        const open = stack.pop();
        if (open) this.closes.set(open.pos.offset, t);
      }
    }
  }

  closeOf(open: Token): Token {
    const close = this.closes.get(open.pos.offset);
    if (!close) throw new Error(`no close for the bracket at offset ${open.pos.offset}`);
    return close;
  }

  /** The first token at or after `offset`. */
  tokenAt(offset: number): Token {
    let lo = 0;
    let hi = this.tokens.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.tokens[mid]!.pos.offset < offset) lo = mid + 1;
      else hi = mid;
    }
    return this.tokens[lo]!;
  }

  /** The last token that ends at or before `offset`. */
  tokenBefore(offset: number): Token | undefined {
    let found: Token | undefined;
    let lo = 0;
    let hi = this.tokens.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const t = this.tokens[mid]!;
      if (t.type !== "eof" && t.end <= offset) {
        found = t;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  lineStart(offset: number): number {
    return this.text.lastIndexOf("\n", offset - 1) + 1;
  }

  /** The end of the line's content (before its line break) and the start of the next line. */
  lineEnd(offset: number): { contentEnd: number; next: number; hasBreak: boolean } {
    const nl = this.text.indexOf("\n", offset);
    if (nl < 0) return { contentEnd: this.text.length, next: this.text.length, hasBreak: false };
    return { contentEnd: nl > offset && this.text[nl - 1] === "\r" ? nl - 1 : nl, next: nl + 1, hasBreak: true };
  }

  indentAt(offset: number): string {
    const ls = this.lineStart(offset);
    return /^[ \t]*/.exec(this.text.slice(ls))![0];
  }

  /** Only indentation before `offset` on its line. */
  startsLine(offset: number): boolean {
    return /^[ \t]*$/.test(this.text.slice(this.lineStart(offset), offset));
  }

  /** Only blanks, and perhaps a comment, after `offset` on its line (`offset` lies between tokens). */
  endsLine(offset: number): boolean {
    return /^[ \t]*(#.*)?$/.test(this.text.slice(offset, this.lineEnd(offset).contentEnd));
  }

  sameLine(a: number, b: number): boolean {
    return !this.text.slice(Math.min(a, b), Math.max(a, b)).includes("\n");
  }

  /** The end of a field's value. */
  valueEnd(f: FieldNode): number {
    const v = f.value;
    if (v.kind === "scalar") return v.token.end;
    if (v.kind === "list") return this.closeOf(v.open).end;
    return this.closeOf(v.open!).end;
  }

  /** The end of a field with the `,` or `;` that follows it. */
  fieldEnd(f: FieldNode): number {
    const end = this.valueEnd(f);
    const next = this.tokenAt(end);
    return next.type === "," || next.type === ";" ? next.end : end;
  }

  /** The tokens from `start` to `end` on one line, spaced as text format is usually written. */
  compact(start: number, end: number): string {
    let out = "";
    let prev: Token | undefined;
    for (let t = this.tokenAt(start); t.type !== "eof" && t.end <= end; t = this.tokenAt(t.end)) {
      const tight = prev && (t.type === ":" || t.type === "," || t.type === ";" || prev.type === "-");
      out += (prev && !tight ? " " : "") + this.text.slice(t.pos.offset, t.end);
      prev = t;
    }
    return out;
  }
}

/** A tab when lines are indented with tabs; otherwise the smallest step between indentations. */
function detectIndentUnit(text: string): string {
  let step = 0;
  let prev = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const ws = /^[ \t]*/.exec(line)![0];
    if (ws.startsWith("\t")) return "\t";
    const d = ws.length - prev;
    if (d > 0 && (step === 0 || d < step)) step = d;
    prev = ws.length;
  }
  return " ".repeat(step > 0 && step <= 8 ? step : 2);
}

// ---------------------------------------------------------------------------------------------
// Placing text

/** Cut a field out: its whole line(s) when nothing else is on them (a trailing comment goes with it). */
export function cutField(r: Rewrite, l: Layout, f: FieldNode): void {
  let start = f.nameToken.pos.offset;
  let end = l.fieldEnd(f);
  if (l.startsLine(start) && l.endsLine(end)) {
    // On the last line of a file without a final line break, the break before it is left to
    // applyConfigEdits, which keeps the file without one: an insertion may sit right after it.
    start = l.lineStart(start);
    end = l.lineEnd(end).next;
  } else if (l.endsLine(end)) {
    start -= /[ \t]*$/.exec(l.text.slice(0, start))![0].length;
  } else {
    end += /^[ \t]*/.exec(l.text.slice(end))![0].length;
  }
  r.replace(start, end, "");
}

/** The indentation of a message's fields: that of one on a line of its own, else one step in. */
export function childIndent(l: Layout, msg: MessageNode): string {
  const own = msg.fields.find((f) => l.startsLine(f.nameToken.pos.offset));
  if (own) return l.indentAt(own.nameToken.pos.offset);
  return l.indentAt(msg.open!.pos.offset) + l.unit;
}

/** Insert a field as the last of a message: on its own line when the message spans lines. */
export function insertLast(r: Rewrite, l: Layout, msg: MessageNode, field: string): void {
  const open = msg.open!;
  const close = l.closeOf(open);
  if (!l.sameLine(open.pos.offset, close.pos.offset) && l.startsLine(close.pos.offset)) {
    r.insert(l.lineStart(close.pos.offset), childIndent(l, msg) + field + l.eol);
    return;
  }
  const gap = l.text.slice(open.end, close.pos.offset);
  const prev = l.tokenBefore(close.pos.offset);
  const tight = prev !== undefined && prev.end === close.pos.offset;
  r.insert(close.pos.offset, gap === "" ? ` ${field} ` : tight ? ` ${field}` : `${field} `);
}

/** Insert a field as the first of a message. */
export function insertFirst(r: Rewrite, l: Layout, msg: MessageNode, field: string): void {
  const first = msg.fields[0];
  if (!first) return insertLast(r, l, msg, field);
  const at = first.nameToken.pos.offset;
  if (l.startsLine(at)) r.insert(l.lineStart(at), l.indentAt(at) + field + l.eol);
  else r.insert(msg.open!.end, l.text.slice(msg.open!.end, at) === "" ? `${field} ` : ` ${field}`);
}

/** Insert a top-level field (or block) right after `after`, on a line of its own when it is on one. */
export function insertAfter(r: Rewrite, l: Layout, after: FieldNode, field: string): void {
  const end = l.fieldEnd(after);
  if (!l.endsLine(end)) return r.insert(end, ` ${field}`);
  const line = l.lineEnd(end);
  const indent = l.indentAt(after.nameToken.pos.offset);
  if (line.hasBreak) r.insert(line.next, indent + field.split("\n").join("\n" + indent) + l.eol);
  else r.insert(line.next, l.eol + indent + field.split("\n").join("\n" + indent));
}

/** Append a top-level field at the end of the file, keeping whether the file ends with a line break. */
export function appendTop(r: Rewrite, l: Layout, field: string): void {
  const t = l.text;
  if (t === "") r.insert(0, field + l.eol);
  else if (t.endsWith("\n")) r.insert(t.length, field + l.eol);
  else r.insert(t.length, l.eol + field);
}

/** A message's fields as the file writes a message like `like`: on one line, or one field a line. */
export function renderMessage(l: Layout, fields: string[], like: MessageNode | undefined, baseIndent: string): string {
  if (fields.length === 0) return "{ }";
  const multi = like?.open !== undefined && !l.sameLine(like.open.pos.offset, l.closeOf(like.open).pos.offset);
  if (!multi) return `{ ${fields.join(" ")} }`;
  const inner = like.fields.some((f) => l.startsLine(f.nameToken.pos.offset))
    ? childIndent(l, like)
    : baseIndent + l.unit;
  return `{${l.eol}${fields.map((f) => inner + f + l.eol).join("")}${baseIndent}}`;
}

export function renderList(values: readonly number[], padded = true): string {
  return padded ? `[ ${values.join(", ")} ]` : `[${values.join(", ")}]`;
}
