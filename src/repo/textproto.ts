/**
 * A position-keeping reader for the protobuf text format. `@bufbuild/protobuf`'s reader is the
 * authority on what a config.pbtxt means, but it reports no positions; this module tokenizes and
 * parses the same grammar into a syntax tree whose every token knows its line and column, so that
 * each diagnostic can name file:line:col. It knows nothing of the ModelConfig schema.
 *
 * Token boundaries follow the library's reader (txtpb/reader.js) on purpose: parse.ts locates the
 * library's own errors by re-parsing prefixes cut at these boundaries.
 */

export interface Pos {
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units. */
  column: number;
  /** 0-based offset into the text. */
  offset: number;
}

export type Punct = "{" | "}" | "<" | ">" | "[" | "]" | ":" | "," | ";" | "-";

export type Token =
  | { type: Punct | "eof"; pos: Pos; end: number }
  | { type: "identifier"; value: string; pos: Pos; end: number }
  | { type: "string"; value: string; pos: Pos; end: number }
  | { type: "int" | "float"; text: string; pos: Pos; end: number };

export class TextSyntaxError extends Error {
  override name = "TextSyntaxError";
  constructor(
    message: string,
    readonly pos: Pos,
    readonly hint?: string,
  ) {
    super(message);
  }
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const isLetter = (c: string | undefined): boolean =>
  c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_");
const isLetterOrDigit = (c: string | undefined): boolean => isLetter(c) || isDigit(c);
const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9a-fA-F]$/.test(c);
const isOctal = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "7";

function describeChar(c: string): string {
  if (c === "\n") return "a line break";
  if (c === "\0") return "a NUL character";
  const code = c.codePointAt(0) ?? 0;
  if (code < 0x20 || code === 0x7f) return `control character U+${code.toString(16).padStart(4, "0")}`;
  return `'${c}'`;
}

/**
 * Splits `text` into tokens, ending with one `eof` token. Throws TextSyntaxError.
 *
 * The LSP re-tokenizes on every keystroke and lint on every config, so the loop stays one function
 * over plain locals (`pos`, `line`, `lineStart`): only whitespace and comments cross lines, and
 * they are skipped here; numbers and strings, which never do, are scanned by the functions below
 * from a start position and return their token's end.
 */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let line = 1;
  let lineStart = 0;

  for (;;) {
    // Whitespace and comments.
    for (;;) {
      const c = text[pos];
      if (c === "\n") {
        pos++;
        line++;
        lineStart = pos;
      } else if (c === " " || c === "\t" || c === "\r" || c === "\v" || c === "\f") {
        pos++;
      } else if (c === "#") {
        while (pos < text.length && text[pos] !== "\n") pos++;
      } else {
        break;
      }
    }
    const start: Pos = { line, column: pos - lineStart + 1, offset: pos };
    const c = text[pos];
    if (c === undefined) {
      tokens.push({ type: "eof", pos: start, end: pos });
      return tokens;
    }
    switch (c) {
      case "{":
      case "}":
      case "<":
      case ">":
      case "[":
      case "]":
      case ":":
      case ",":
      case ";":
        pos++;
        tokens.push({ type: c, pos: start, end: pos });
        continue;
      case "-":
        if (isLetter(text[pos + 1])) {
          pos += 2;
          while (isLetterOrDigit(text[pos])) pos++;
          tokens.push({ type: "identifier", value: text.slice(start.offset, pos), pos: start, end: pos });
        } else {
          pos++;
          tokens.push({ type: "-", pos: start, end: pos });
        }
        continue;
      case '"':
      case "'": {
        const t = scanString(text, start, c);
        tokens.push(t);
        pos = t.end;
        continue;
      }
    }
    if (isDigit(c) || (c === "." && isDigit(text[pos + 1]))) {
      const t = scanNumber(text, start);
      tokens.push(t);
      pos = t.end;
      continue;
    }
    if (isLetter(c)) {
      pos++;
      while (isLetterOrDigit(text[pos])) pos++;
      tokens.push({ type: "identifier", value: text.slice(start.offset, pos), pos: start, end: pos });
      continue;
    }
    throw unexpectedCharacter(text, start);
  }
}

/** The position `offset` on the line of `start` (numbers and strings never cross a line). */
const onLineOf = (start: Pos, offset: number): Pos => ({
  line: start.line,
  column: start.column + (offset - start.offset),
  offset,
});

/** A number ends at a delimiter: `12ab` or `1.2.3` is one invalid number, not two tokens. */
function expectDelimiter(text: string, start: Pos, pos: number): void {
  const c = text[pos];
  if (c !== undefined && (isLetterOrDigit(c) || c === "-" || c === "+" || c === ".")) {
    throw new TextSyntaxError(`invalid number '${text.slice(start.offset, pos + 1)}'`, start);
  }
}

/** A number token from `start`: hexadecimal, octal, decimal or float (`1.5e3`, `2f`). */
function scanNumber(text: string, start: Pos): Token {
  let pos = start.offset;
  if (text[pos] === "0" && (text[pos + 1] === "x" || text[pos + 1] === "X")) {
    pos += 2;
    const digits = pos;
    while (isHex(text[pos])) pos++;
    if (pos === digits) throw new TextSyntaxError("invalid hexadecimal number", start);
    expectDelimiter(text, start, pos);
    return { type: "int", text: text.slice(start.offset, pos), pos: start, end: pos };
  }
  if (text[pos] === "0" && isOctal(text[pos + 1])) {
    pos++;
    while (isOctal(text[pos])) pos++;
    expectDelimiter(text, start, pos);
    return { type: "int", text: text.slice(start.offset, pos), pos: start, end: pos };
  }
  let isFloat = false;
  if (text[pos] === "0") pos++;
  else while (isDigit(text[pos])) pos++;
  if (text[pos] === ".") {
    isFloat = true;
    pos++;
    while (isDigit(text[pos])) pos++;
  }
  if (text[pos] === "e" || text[pos] === "E") {
    isFloat = true;
    pos++;
    if (text[pos] === "+" || text[pos] === "-") pos++;
    const digits = pos;
    while (isDigit(text[pos])) pos++;
    if (pos === digits) throw new TextSyntaxError("invalid exponent in number", start);
  }
  const end = pos;
  if (text[pos] === "f" || text[pos] === "F") {
    isFloat = true;
    pos++;
  }
  expectDelimiter(text, start, pos);
  return { type: isFloat ? "float" : "int", text: text.slice(start.offset, end), pos: start, end: pos };
}

/** A string token from its opening quote at `start`, its value decoded. */
function scanString(text: string, start: Pos, quote: string): Token {
  let pos = start.offset + 1;
  let value = "";
  for (;;) {
    const c = text[pos];
    if (c === undefined) {
      throw new TextSyntaxError("unterminated string", start, `Close the string with ${quote}.`);
    }
    if (c === quote) {
      pos++;
      return { type: "string", value, pos: start, end: pos };
    }
    if (c === "\n" || c === "\0") {
      throw new TextSyntaxError(
        `${describeChar(c)} inside a string`,
        c === "\n" ? start : onLineOf(start, pos),
        c === "\n" ? `Close the string with ${quote} before the end of the line, or write \\n.` : undefined,
      );
    }
    if (c === "\\") {
      const escape = scanEscape(text, pos + 1, onLineOf(start, pos));
      value += escape.value;
      pos = escape.end;
      continue;
    }
    value += c;
    pos++;
  }
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  f: "\f",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/**
 * The escape after a backslash (`pos` is just past it): its decoded text and where it ends.
 * Decoded values only name map keys in paths; the library decodes bytes exactly.
 */
function scanEscape(text: string, pos: number, escPos: Pos): { value: string; end: number } {
  const c = text[pos];
  if (c === undefined) throw new TextSyntaxError("unterminated escape sequence", escPos);
  if (Object.hasOwn(SIMPLE_ESCAPES, c)) return { value: SIMPLE_ESCAPES[c]!, end: pos + 1 };
  if (c === "x" || c === "X") {
    pos++;
    const start = pos;
    while (pos - start < 2 && isHex(text[pos])) pos++;
    if (pos === start) throw new TextSyntaxError("invalid \\x escape: expected hex digits", escPos);
    return { value: String.fromCharCode(parseInt(text.slice(start, pos), 16)), end: pos };
  }
  if (isOctal(c)) {
    const start = pos;
    while (pos - start < 3 && isOctal(text[pos])) pos++;
    const n = parseInt(text.slice(start, pos), 8);
    if (n > 255) throw new TextSyntaxError(`octal escape \\${text.slice(start, pos)} out of range`, escPos);
    return { value: String.fromCharCode(n), end: pos };
  }
  if (c === "u" || c === "U") {
    const len = c === "u" ? 4 : 8;
    pos++;
    const hex = text.slice(pos, pos + len);
    if (hex.length !== len || !/^[0-9a-fA-F]+$/.test(hex)) {
      throw new TextSyntaxError(`invalid unicode escape \\${c}${hex}`, escPos);
    }
    const cp = parseInt(hex, 16);
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      throw new TextSyntaxError(`invalid unicode escape \\${c}${hex}`, escPos);
    }
    return { value: String.fromCodePoint(cp), end: pos + len };
  }
  throw new TextSyntaxError(`invalid escape \\${c}`, escPos, "Write a literal backslash as \\\\.");
}

/** What to say about a character that starts no token (a BOM, a byte that is not UTF-8, `=`, ...). */
function unexpectedCharacter(text: string, start: Pos): TextSyntaxError {
  const cp = String.fromCodePoint(text.codePointAt(start.offset) ?? 0);
  if (cp === "\uFEFF") {
    return new TextSyntaxError(
      "unexpected byte-order mark",
      start,
      "Save the file as UTF-8 without a byte-order mark (BOM).",
    );
  }
  // Files are read as UTF-8, and a byte sequence that is not UTF-8 arrives as U+FFFD.
  if (cp === "\uFFFD") {
    return new TextSyntaxError(
      "unexpected byte that is not UTF-8 text (or a U+FFFD character)",
      start,
      "Save the file as UTF-8; outside strings and comments a config holds only field names, numbers and punctuation.",
    );
  }
  return new TextSyntaxError(
    `unexpected ${describeChar(cp)}`,
    start,
    cp === "=" ? "Text format separates a field and its value with ':' (or nothing before '{')." : undefined,
  );
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

export interface MessageNode {
  kind: "message";
  /** The `{` or `<` (absent for the top level). */
  open?: Token;
  fields: FieldNode[];
}

export interface ScalarNode {
  kind: "scalar";
  /** A leading `-`, if any. */
  sign?: Token;
  /** The value token; adjacent strings are concatenated into `value`. */
  token: Token;
  pos: Pos;
}

export interface ListNode {
  kind: "list";
  open: Token;
  items: Array<MessageNode | ScalarNode>;
}

export interface FieldNode {
  name: string;
  nameToken: Token;
  hasColon: boolean;
  value: MessageNode | ScalarNode | ListNode;
}

export interface ParseTreeResult {
  root: MessageNode;
  tokens: Token[];
}

/** Nesting deeper than this is refused, as the library does, instead of exhausting the stack. */
export const MAX_DEPTH = 100;

function describeToken(t: Token): string {
  switch (t.type) {
    case "eof":
      return "end of file";
    case "identifier":
      return `'${t.value}'`;
    case "string":
      return "a string";
    case "int":
    case "float":
      return `'${t.text}'`;
    default:
      return `'${t.type}'`;
  }
}

/** Parses text format syntax (no schema). Throws TextSyntaxError. */
export function parseTree(text: string): ParseTreeResult {
  const tokens = tokenize(text);
  let i = 0;
  const peek = (): Token => tokens[i] ?? tokens[tokens.length - 1]!;
  const next = (): Token => {
    const t = peek();
    if (i < tokens.length - 1) i++;
    return t;
  };

  const closeOf = (open: Token): "}" | ">" => (open.type === "<" ? ">" : "}");

  const parseFields = (close: "}" | ">" | "eof", open: Token | undefined, depth: number): FieldNode[] => {
    if (depth > MAX_DEPTH) {
      throw new TextSyntaxError(`messages nested more than ${MAX_DEPTH} deep`, (open ?? peek()).pos);
    }
    const fields: FieldNode[] = [];
    for (;;) {
      const t = peek();
      if (t.type === "eof") {
        if (close === "eof") return fields;
        throw new TextSyntaxError(
          `'${open?.type ?? "{"}' is never closed`,
          open?.pos ?? t.pos,
          `Add the matching '${close}'.`,
        );
      }
      if (t.type === close) {
        next();
        return fields;
      }
      if (t.type === "}" || t.type === ">") {
        throw new TextSyntaxError(
          `unexpected '${t.type}'`,
          t.pos,
          close === "eof"
            ? "It closes nothing: remove it or add the opening '{' it belongs to."
            : `Expected '${close}' here.`,
        );
      }
      fields.push(parseField(depth));
      const sep = peek();
      if (sep.type === "," || sep.type === ";") next();
    }
  };

  const parseMessage = (depth: number): MessageNode => {
    const open = next();
    return { kind: "message", open, fields: parseFields(closeOf(open), open, depth + 1) };
  };

  const parseScalar = (field: Token): ScalarNode => {
    let sign: Token | undefined;
    if (peek().type === "-") sign = next();
    const t = next();
    switch (t.type) {
      case "int":
      case "float":
      case "identifier":
        return { kind: "scalar", sign, token: t, pos: (sign ?? t).pos };
      case "string": {
        let value = t.value;
        let end = t.end;
        while (peek().type === "string") {
          const more = next() as Extract<Token, { type: "string" }>;
          value += more.value;
          end = more.end;
        }
        return { kind: "scalar", sign, token: { ...t, value, end }, pos: (sign ?? t).pos };
      }
      default: {
        const fieldName = field.type === "identifier" ? field.value : "?";
        throw new TextSyntaxError(
          `expected a value for '${fieldName}', found ${describeToken(t)}`,
          t.pos,
          t.type === "eof" || t.type === "}" ? `Give '${fieldName}' a value, or delete the line.` : undefined,
        );
      }
    }
  };

  const parseField = (depth: number): FieldNode => {
    const nameToken = next();
    if (nameToken.type !== "identifier" || nameToken.value.startsWith("-")) {
      let hint: string | undefined;
      if (nameToken.type === "[") hint = "Extensions and Any fields do not occur in a model configuration.";
      else if (nameToken.type === "string") hint = "Field names are written without quotes.";
      else if (nameToken.type === ":" || nameToken.type === ",")
        hint = "A field name is missing before this, or a separator is doubled.";
      throw new TextSyntaxError(`expected a field name, found ${describeToken(nameToken)}`, nameToken.pos, hint);
    }
    let hasColon = false;
    if (peek().type === ":") {
      next();
      hasColon = true;
    }
    const t = peek();
    let value: FieldNode["value"];
    if (t.type === "{" || t.type === "<") {
      value = parseMessage(depth);
    } else if (t.type === "[") {
      const open = next();
      const items: ListNode["items"] = [];
      if (peek().type === "]") {
        next();
      } else {
        for (;;) {
          const e = peek();
          items.push(e.type === "{" || e.type === "<" ? parseMessage(depth) : parseScalar(nameToken));
          const sep = next();
          if (sep.type === "]") break;
          if (sep.type !== ",") {
            throw new TextSyntaxError(
              `expected ',' or ']' in the list of '${nameToken.value}', found ${describeToken(sep)}`,
              sep.pos,
              sep.type === "eof"
                ? `Close the list opened at ${open.pos.line}:${open.pos.column} with ']'.`
                : "Separate list elements with commas.",
            );
          }
        }
      }
      value = { kind: "list", open, items };
    } else {
      value = parseScalar(nameToken);
    }
    return { name: nameToken.value, nameToken, hasColon, value };
  };

  const root: MessageNode = { kind: "message", fields: parseFields("eof", undefined, 0) };
  return { root, tokens };
}

/** The 1-based position of `offset` in `text`. */
export function positionAt(text: string, offset: number): Pos {
  let line = 1;
  let lineStart = 0;
  const stop = Math.min(offset, text.length);
  for (let k = 0; k < stop; k++) {
    if (text.charCodeAt(k) === 10) {
      line++;
      lineStart = k + 1;
    }
  }
  return { line, column: stop - lineStart + 1, offset: stop };
}
