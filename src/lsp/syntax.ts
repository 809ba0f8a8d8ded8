/**
 * A forgiving reading of config.pbtxt for the editor: the text as it is while being typed (an
 * unclosed `{`, a string not yet closed, a field without its value) still gives a tree, so
 * completion, hover and go-to-definition know where the cursor is. Diagnostics never come from
 * here: they are lint's (repo/parse.ts), which is strict as Triton is.
 */

export interface LooseToken {
  type: "identifier" | "string" | "number" | "punct";
  /** The identifier, the string's decoded value (escapes kept as written), the number or the punctuation. */
  value: string;
  start: number;
  end: number;
}

export interface LooseScalar {
  kind: "scalar";
  token: LooseToken;
  start: number;
  end: number;
}

export interface LooseMessage {
  kind: "message";
  fields: LooseField[];
  /** Offset of the `{` (0 for the top level). */
  start: number;
  /** Offset just past the `}` (the text's length when it is never closed). */
  end: number;
}

export interface LooseField {
  name: string;
  nameStart: number;
  nameEnd: number;
  values: Array<LooseScalar | LooseMessage>;
  /** Offset past the field's last token. */
  end: number;
}

/** Never throws: what it cannot read is skipped. */
export function looseTokens(text: string, limit = text.length): LooseToken[] {
  const out: LooseToken[] = [];
  let i = 0;
  const n = Math.min(limit, text.length);
  while (i < n) {
    const c = text[i]!;
    if (c === "#") {
      while (i < n && text[i] !== "\n") i++;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (c === '"' || c === "'") {
      i++;
      let value = "";
      while (i < n && text[i] !== c && text[i] !== "\n") {
        if (text[i] === "\\" && i + 1 < n) {
          value += text.slice(i, i + 2);
          i += 2;
          continue;
        }
        value += text[i];
        i++;
      }
      if (text[i] === c) i++;
      out.push({ type: "string", value, start, end: i });
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[A-Za-z0-9_]/.test(text[i]!)) i++;
      out.push({ type: "identifier", value: text.slice(start, i), start, end: i });
      continue;
    }
    if (/[0-9.]/.test(c) || (c === "-" && /[0-9.A-Za-z]/.test(text[i + 1] ?? ""))) {
      i++;
      while (i < n && /[A-Za-z0-9_.+-]/.test(text[i]!)) i++;
      out.push({ type: "number", value: text.slice(start, i), start, end: i });
      continue;
    }
    i++;
    out.push({ type: "punct", value: c, start, end: i });
  }
  return out;
}

const isOpen = (t: LooseToken | undefined) => t?.type === "punct" && (t.value === "{" || t.value === "<");
const isClose = (t: LooseToken | undefined) => t?.type === "punct" && (t.value === "}" || t.value === ">");
const isPunct = (t: LooseToken | undefined, p: string) => t?.type === "punct" && t.value === p;

/** The whole text as a tree; an unclosed message ends where the text does. */
export function looseParse(text: string): LooseMessage {
  const tokens = looseTokens(text);
  let i = 0;
  const scalar = (): LooseScalar | undefined => {
    const t = tokens[i];
    if (!t || t.type === "punct") return undefined;
    i++;
    let token = t;
    // Adjacent strings are one value.
    while (token.type === "string" && tokens[i]?.type === "string") {
      const more = tokens[i++]!;
      token = { ...token, value: token.value + more.value, end: more.end };
    }
    return { kind: "scalar", token, start: token.start, end: token.end };
  };
  const message = (start: number, depth: number): LooseMessage => {
    const msg: LooseMessage = { kind: "message", fields: [], start, end: text.length };
    while (i < tokens.length) {
      const t = tokens[i]!;
      if (isClose(t)) {
        if (depth === 0) {
          i++;
          continue;
        }
        i++;
        msg.end = t.end;
        return msg;
      }
      if (t.type !== "identifier") {
        i++;
        continue;
      }
      i++;
      const field: LooseField = { name: t.value, nameStart: t.start, nameEnd: t.end, values: [], end: t.end };
      msg.fields.push(field);
      if (isPunct(tokens[i], ":")) field.end = tokens[i++]!.end;
      const v = tokens[i];
      // A field name on the next line with no value between: this field is unfinished.
      if (v?.type === "identifier" && tokens[i + 1] && !isPunct(tokens[i - 1], ":")) continue;
      if (isOpen(v)) {
        i++;
        const m = message(v!.start, depth + 1);
        field.values.push(m);
        field.end = m.end;
      } else if (isPunct(v, "[")) {
        i++;
        while (i < tokens.length && !isPunct(tokens[i], "]") && !isClose(tokens[i])) {
          const e = tokens[i]!;
          if (isOpen(e)) {
            i++;
            field.values.push(message(e.start, depth + 1));
          } else if (e.type === "punct") {
            i++;
          } else {
            field.values.push(scalar()!);
          }
          field.end = tokens[i - 1]!.end;
        }
        if (isPunct(tokens[i], "]")) field.end = tokens[i++]!.end;
      } else if (v && v.type !== "punct") {
        const s = scalar()!;
        field.values.push(s);
        field.end = s.end;
      }
      if (isPunct(tokens[i], ",") || isPunct(tokens[i], ";")) i++;
    }
    return msg;
  };
  return message(0, 0);
}

/** A step from the top level down to the cursor: the field, and which of its values holds the cursor. */
export interface PathStep {
  field: LooseField;
  /** The message value the cursor is inside (absent at the last step when the cursor is on a scalar or name). */
  message?: LooseMessage;
}

export interface CursorContext {
  /** Enclosing fields whose message value holds the cursor, outermost first. */
  path: PathStep[];
  /** The message the cursor is in (the top level when `path` is empty). */
  message: LooseMessage;
  /** Whether the cursor is where a field name goes, or a field's value. */
  position: "name" | "value";
  /** For a value: the field it belongs to. */
  field?: LooseField;
  /** The partial word under the cursor, and where it starts. */
  prefix: string;
  prefixStart: number;
  /** Whether the partial word opens a quoted string. */
  quoted: boolean;
}

/** Where the cursor is in the text: inside which messages, at a name or at a value, and what is typed so far. */
export function cursorContext(text: string, offset: number, tree: LooseMessage = looseParse(text)): CursorContext {
  // The word being typed ends at the cursor.
  let ps = offset;
  while (ps > 0 && /[A-Za-z0-9_.-]/.test(text[ps - 1]!)) ps--;
  let quoted = false;
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1;
  const before = text.slice(lineStart, offset);
  const open = /(["'])([^"']*)$/.exec(before);
  if (open && (before.slice(0, open.index).match(/["']/g)?.length ?? 0) % 2 === 0) {
    quoted = true;
    ps = lineStart + open.index;
  }
  const prefix = text.slice(quoted ? ps + 1 : ps, offset);

  const path: PathStep[] = [];
  let message = tree;
  for (;;) {
    let inner: PathStep | undefined;
    for (const f of message.fields) {
      for (const v of f.values) {
        if (v.kind === "message" && v.start < ps && (offset < v.end || (v.end === text.length && offset <= v.end))) {
          inner = { field: f, message: v };
        }
      }
    }
    if (!inner) break;
    path.push(inner);
    message = inner.message!;
  }
  // What comes right before the word: ':' or a list's '[' / ',' make it a value.
  const tokens = looseTokens(text, ps);
  const prev = tokens.at(-1);
  let position: "name" | "value" = "name";
  let field: LooseField | undefined;
  if (prev && prev.type === "punct" && (prev.value === ":" || prev.value === "[" || prev.value === ",")) {
    field = [...message.fields].reverse().find((f) => f.nameStart < prev.start);
    if (prev.value === ":" || (field && field.end >= prev.start) || insideList(tokens)) position = "value";
    if (prev.value === "," && !insideList(tokens)) position = "name";
  }
  return {
    path,
    message,
    position,
    ...(position === "value" && field ? { field } : {}),
    prefix,
    prefixStart: ps,
    quoted,
  };
}

/** Whether the tokens end inside an unclosed `[`. */
function insideList(tokens: LooseToken[]): boolean {
  for (let k = tokens.length - 1; k >= 0; k--) {
    const t = tokens[k]!;
    if (isPunct(t, "]") || isOpen(t) || isClose(t)) return false;
    if (isPunct(t, "[")) return true;
  }
  return false;
}

/** The token at an offset (touching it at either end), and the path of fields down to it. */
export interface TokenAt {
  token: LooseToken;
  /** The fields from the top level down to the one whose name or value the token is. */
  path: LooseField[];
  /** The messages holding each field of `path`. */
  messages: LooseMessage[];
  role: "name" | "value";
}

export function tokenAt(tree: LooseMessage, offset: number): TokenAt | undefined {
  const path: LooseField[] = [];
  const messages: LooseMessage[] = [];
  let message = tree;
  for (;;) {
    let next: LooseMessage | undefined;
    for (const f of message.fields) {
      if (f.nameStart <= offset && offset <= f.nameEnd) {
        return {
          token: { type: "identifier", value: f.name, start: f.nameStart, end: f.nameEnd },
          path: [...path, f],
          messages: [...messages, message],
          role: "name",
        };
      }
      for (const v of f.values) {
        if (v.kind === "scalar" && v.start <= offset && offset <= v.end) {
          return { token: v.token, path: [...path, f], messages: [...messages, message], role: "value" };
        }
        if (v.kind === "message" && v.start < offset && offset < v.end) {
          path.push(f);
          messages.push(message);
          next = v;
        }
      }
      if (next) break;
    }
    if (!next) return undefined;
    message = next;
  }
}

/** The first scalar of a field of `message`, by name, with its span. */
export function scalarNodeOf(message: LooseMessage, name: string): LooseScalar | undefined {
  for (const f of message.fields) {
    if (f.name !== name) continue;
    const v = f.values.find((x): x is LooseScalar => x.kind === "scalar");
    if (v) return v;
  }
  return undefined;
}

/** The first scalar value of a field of `message`, by name. */
export function scalarOf(message: LooseMessage, name: string): string | undefined {
  return scalarNodeOf(message, name)?.token.value;
}

/** The message values of every field of `message` with that name, in order. */
export function messagesOf(message: LooseMessage, name: string): LooseMessage[] {
  return message.fields
    .filter((f) => f.name === name)
    .flatMap((f) => f.values.filter((v): v is LooseMessage => v.kind === "message"));
}

/** An ensemble's steps, in order: the messages of `ensemble_scheduling { step [...] }`. */
export function stepMessages(tree: LooseMessage): LooseMessage[] {
  return messagesOf(tree, "ensemble_scheduling").flatMap((e) => messagesOf(e, "step"));
}
