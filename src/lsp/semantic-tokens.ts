/**
 * Semantic tokens of a config.pbtxt (textDocument/semanticTokens/full): what each word is, for an
 * editor whose grammar knows nothing of the file (Emacs, Neovim without a pbtxt syntax) or
 * colours field names and enum values alike. Read from the text alone, as it is being typed.
 */

export const TOKEN_TYPES = ["property", "enumMember", "string", "number", "comment", "keyword", "type"] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

export const SEMANTIC_TOKENS_LEGEND = { tokenTypes: [...TOKEN_TYPES], tokenModifiers: [] as string[] };

export interface SemanticToken {
  line: number;
  character: number;
  length: number;
  type: TokenType;
}

/** Fields whose string names another model of the repository. */
const MODEL_NAME_FIELDS = new Set(["model_name"]);

/** Every token of the text with its type, in order; none spans a line. */
export function semanticTokens(text: string): SemanticToken[] {
  const out: SemanticToken[] = [];
  let line = 0;
  let lineStart = 0;
  // What came before the current token: a value follows ':' (or sits in a list); a name does not.
  let prev = "";
  let field = "";
  const push = (start: number, end: number, type: TokenType) =>
    out.push({ line, character: start - lineStart, length: end - start, type });
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === "\n") {
      line++;
      lineStart = ++i;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      i++;
      continue;
    }
    const start = i;
    if (c === "#") {
      while (i < n && text[i] !== "\n" && text[i] !== "\r") i++;
      push(start, i, "comment");
      continue;
    }
    const inValue = prev === ":" || prev === "," || prev === "[";
    if (c === '"' || c === "'") {
      i++;
      while (i < n && text[i] !== c && text[i] !== "\n") i += text[i] === "\\" && text[i + 1] !== "\n" ? 2 : 1;
      if (text[i] === c) i++;
      push(start, i, MODEL_NAME_FIELDS.has(field) && inValue ? "type" : "string");
      prev = "value";
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[A-Za-z0-9_]/.test(text[i]!)) i++;
      const word = text.slice(start, i);
      if (!inValue) {
        push(start, i, "property");
        field = word;
        prev = "name";
      } else {
        const lower = word.toLowerCase();
        push(
          start,
          i,
          lower === "true" || lower === "false"
            ? "keyword"
            : /^-?(inf|infinity|nan)$/i.test(word)
              ? "number"
              : "enumMember",
        );
        prev = "value";
      }
      continue;
    }
    if (/[0-9.]/.test(c) || ((c === "-" || c === "+") && /[0-9.a-zA-Z]/.test(text[i + 1] ?? ""))) {
      i++;
      while (i < n && /[A-Za-z0-9_.+-]/.test(text[i]!)) i++;
      push(start, i, "number");
      prev = "value";
      continue;
    }
    // Punctuation: remembered for what follows, not coloured.
    prev = c;
    if (c === "{" || c === "}" || c === "<" || c === ">") field = "";
    i++;
  }
  return out;
}

/** The tokens in LSP's relative encoding: five integers a token (line delta, start delta, length, type, modifiers). */
export function encodeSemanticTokens(tokens: SemanticToken[]): number[] {
  const data: number[] = [];
  let line = 0;
  let character = 0;
  for (const t of tokens) {
    if (t.length <= 0) continue;
    const dl = t.line - line;
    data.push(dl, dl === 0 ? t.character - character : t.character, t.length, TOKEN_TYPES.indexOf(t.type), 0);
    line = t.line;
    character = t.character;
  }
  return data;
}
