import type { DescEnum, DescField, DescMessage } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import { fromText } from "@bufbuild/protobuf/txtpb";
import { type Diagnostic, DiagnosticError, clipLongRuns } from "./diagnostics.js";
import { ModelConfigSchema, type ModelConfig } from "./gen/model_config_pb.js";
import { type ModelConfigJson, toModelConfigJson } from "./model-config.js";
import { closest, quoteList } from "./suggest.js";
import {
  type FieldNode,
  type MessageNode,
  type ParseTreeResult,
  type Pos,
  type ScalarNode,
  type Token,
  TextSyntaxError,
  parseTree,
} from "./textproto.js";
import type { ErrorCode } from "./rules/codes.js";

/**
 * Where each part of a parsed config.pbtxt sits in the file, by path: `max_batch_size`,
 * `input[0].dims[1]`, `dynamic_batching.priority_queue_policy{2}.timeout_action`,
 * `ensemble_scheduling.step[0].input_map{TEXT}` (plus `.key` and `.value` for a map entry's key
 * and value). Repeated fields count elements across every occurrence, in file order, the way the
 * parsed message does.
 */
export class SourceMap {
  private readonly names = new Map<string, Pos>();
  private readonly values = new Map<string, Pos>();
  /** Map entries whose key occurs twice in one map: the parser keeps the last silently. */
  readonly duplicateKeys: Array<{ path: string; key: string; first: Pos; second: Pos }> = [];

  set(path: string, name: Pos, value?: Pos): void {
    if (!this.names.has(path)) this.names.set(path, name);
    if (value && !this.values.has(path)) this.values.set(path, value);
  }

  has(path: string): boolean {
    return this.names.has(path);
  }

  /** The field's name (or the list element's start); the nearest enclosing part when absent. */
  at(path: string): Pos {
    for (let p: string | undefined = path; p !== undefined; p = parentPath(p)) {
      const pos = this.names.get(p);
      if (pos) return pos;
    }
    return { line: 1, column: 1, offset: 0 };
  }

  /** The field's value; falls back like `at`. */
  valueAt(path: string): Pos {
    return this.values.get(path) ?? this.at(path);
  }
}

/** `a.b[2]` -> `a.b`, `a.b` -> `a`, `a{k}` -> `a`, `a` -> undefined. */
export function parentPath(path: string): string | undefined {
  if (path.endsWith("]")) {
    const i = path.lastIndexOf("[");
    return i > 0 ? path.slice(0, i) : undefined;
  }
  if (path.endsWith("}")) {
    const i = path.lastIndexOf("{");
    return i > 0 ? path.slice(0, i) : undefined;
  }
  const i = path.lastIndexOf(".");
  return i > 0 ? path.slice(0, i) : undefined;
}

export interface ParsedConfig {
  file: string;
  text: string;
  /** The message as `@bufbuild/protobuf` read it. */
  config: ModelConfig;
  /** The same in Triton's JSON form. */
  json: ModelConfigJson;
  source: SourceMap;
}

export interface ParseResult {
  /** Absent when the text is not a valid ModelConfig; `diagnostics` then says why. */
  parsed?: ParsedConfig;
  diagnostics: Diagnostic[];
}

export interface ParseOptions {
  /** Model name to stamp on diagnostics. */
  model?: string;
}

/**
 * Reads config.pbtxt text. Never throws for bad input: a file that is not a valid ModelConfig
 * yields one error diagnostic with its position (the library stops at the first error, and so
 * does Triton's parser).
 */
export function parseModelConfig(text: string, file: string, options: ParseOptions = {}): ParseResult {
  const diag = (pos: Pos, message: string, hint: string | undefined, code: ErrorCode): Diagnostic => ({
    severity: "error",
    file,
    line: pos.line,
    column: pos.column,
    message: clipLongRuns(message),
    ...(hint ? { hint: clipLongRuns(hint) } : {}),
    ...(options.model !== undefined ? { model: options.model } : {}),
    code,
  });

  let tree: ParseTreeResult;
  try {
    tree = parseTree(text);
  } catch (err) {
    if (err instanceof TextSyntaxError) {
      // A template's `${name}` is where the parser stops: said as the template it is, with the tool that fills it.
      const template = templatePlaceholders(text);
      if (template.length && template.some((p) => !p.quoted)) {
        const names = [...new Set(template.map((p) => p.name))];
        const first = template.find((p) => !p.quoted)!;
        const shown = names
          .slice(0, 6)
          .map((n) => `${n}:<value>`)
          .join(",");
        return {
          diagnostics: [
            diag(
              first.pos,
              `config.pbtxt is a template: '\${${first.name}}' and ${
                names.length > 1
                  ? `${names.length - 1} more placeholder(s) (${names
                      .filter((n) => n !== first.name)
                      .slice(0, 8)
                      .join(", ")}${names.length > 9 ? ", ..." : ""})`
                  : "no other placeholder"
              } are to be filled before Triton can read it`,
              `Fill it: tensorrtllm_backend's tools/fill_template.py replaces each \${name} in place (python3 tools/fill_template.py -i ${file.split(/[\\/]/).slice(-2).join("/")} ${shown}${names.length > 6 ? ",..." : ""}), or write each value by hand.`,
              "config-template",
            ),
          ],
        };
      }
      return { diagnostics: [diag(err.pos, err.message, err.hint, "config-syntax")] };
    }
    throw err;
  }

  const huge = hugeIntegers(tree);
  if (huge.length > 0) {
    // The library would turn each of these into a BigInt, again for every prefix that locating its
    // error re-reads: seconds for a number a megabyte long. Each is out of range for its field in
    // any case, so the first is the error unless the text has another one before it, which shows
    // as well with the numbers replaced by 0 (the text before the first is unchanged).
    const first = huge[0]!;
    let tamed = "";
    let at = 0;
    for (const h of huge) {
      tamed += `${text.slice(at, h.token.pos.offset)}0`;
      at = h.token.end;
    }
    tamed += text.slice(at);
    const earlier = parseModelConfig(tamed, file, options).diagnostics[0];
    const p = first.token.pos;
    if (earlier && (earlier.line < p.line || (earlier.line === p.line && earlier.column < p.column)))
      return { diagnostics: [earlier] };
    return { diagnostics: [diag(p, first.message, first.hint, "config-schema")] };
  }

  let config: ModelConfig;
  try {
    config = fromText(ModelConfigSchema, text);
  } catch (err) {
    const found = explainLibraryError(text, tree, err instanceof Error ? err.message : String(err));
    return { diagnostics: [diag(found.pos, found.message, found.hint, found.code)] };
  }

  const source = new SourceMap();
  mapMessage(tree.root, ModelConfigSchema, "", source);
  return { parsed: { file, text, config, json: toModelConfigJson(config), source }, diagnostics: [] };
}

/** Like parseModelConfig, but throws DiagnosticError instead of returning diagnostics. */
export function parseModelConfigOrThrow(text: string, file: string, options: ParseOptions = {}): ParsedConfig {
  const r = parseModelConfig(text, file, options);
  if (!r.parsed) throw new DiagnosticError(r.diagnostics);
  return r.parsed;
}

// ---------------------------------------------------------------------------------------------
// Source map

const join = (prefix: string, name: string): string => (prefix ? `${prefix}.${name}` : name);

function nodePos(node: MessageNode | ScalarNode, fallback: Pos): Pos {
  if (node.kind === "scalar") return node.pos;
  return node.open?.pos ?? fallback;
}

function scalarKey(node: ScalarNode | undefined, keyType: ScalarType): string {
  if (!node) return keyType === ScalarType.STRING ? "" : keyType === ScalarType.BOOL ? "false" : "0";
  const t = node.token;
  if (t.type === "string" || t.type === "identifier") return t.value;
  if (t.type === "int") {
    try {
      const v =
        t.text.length > 1 && t.text.startsWith("0") && !/^0[xX]/.test(t.text)
          ? BigInt("0o" + t.text.slice(1))
          : BigInt(t.text);
      return (node.sign ? -v : v).toString();
    } catch {
      return t.text;
    }
  }
  if (t.type === "float") return t.text;
  return "";
}

function mapMessage(node: MessageNode, desc: DescMessage, prefix: string, source: SourceMap): void {
  const counts = new Map<string, number>();
  for (const f of node.fields) {
    const field = desc.fields.find((d) => d.name === f.name);
    if (!field) continue;
    const path = join(prefix, field.name);
    const items = f.value.kind === "list" ? f.value.items : [f.value];
    source.set(path, f.nameToken.pos, f.value.kind === "list" ? f.value.open.pos : nodePos(f.value, f.nameToken.pos));
    switch (field.fieldKind) {
      case "list":
        for (const item of items) {
          const i = counts.get(field.name) ?? 0;
          counts.set(field.name, i + 1);
          const itemPath = `${path}[${i}]`;
          const itemPos = nodePos(item, f.nameToken.pos);
          source.set(itemPath, f.value.kind === "list" ? itemPos : f.nameToken.pos, itemPos);
          if (field.listKind === "message" && item.kind === "message")
            mapMessage(item, field.message, itemPath, source);
        }
        break;
      case "map":
        for (const item of items) {
          if (item.kind !== "message") continue;
          const keyField = item.fields.find((e) => e.name === "key");
          const valueField = item.fields.find((e) => e.name === "value");
          const keyNode = keyField?.value.kind === "scalar" ? keyField.value : undefined;
          const key = scalarKey(keyNode, field.mapKey);
          const entryPath = `${path}{${key}}`;
          const entryPos = f.value.kind === "list" ? nodePos(item, f.nameToken.pos) : f.nameToken.pos;
          if (source.has(entryPath)) {
            source.duplicateKeys.push({ path: entryPath, key, first: source.at(entryPath), second: entryPos });
            continue;
          }
          source.set(entryPath, entryPos, nodePos(item, entryPos));
          if (keyField)
            source.set(`${entryPath}.key`, keyField.nameToken.pos, nodePos(keyNode ?? item, keyField.nameToken.pos));
          if (valueField) {
            const v = valueField.value;
            source.set(
              `${entryPath}.value`,
              valueField.nameToken.pos,
              v.kind === "list" ? v.open.pos : nodePos(v, valueField.nameToken.pos),
            );
            if (field.mapKind === "message" && v.kind === "message") mapMessage(v, field.message, entryPath, source);
          }
        }
        break;
      case "message":
        if (f.value.kind === "message") mapMessage(f.value, field.message, path, source);
        break;
      default:
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Integers too large for any integer field

const INTEGER_TYPES: ReadonlyMap<ScalarType, string> = new Map([
  [ScalarType.INT32, "int32"],
  [ScalarType.SINT32, "sint32"],
  [ScalarType.SFIXED32, "sfixed32"],
  [ScalarType.UINT32, "uint32"],
  [ScalarType.FIXED32, "fixed32"],
  [ScalarType.INT64, "int64"],
  [ScalarType.SINT64, "sint64"],
  [ScalarType.SFIXED64, "sfixed64"],
  [ScalarType.UINT64, "uint64"],
  [ScalarType.FIXED64, "fixed64"],
]);

/** More significant digits than 2^64 has in that base: out of range for every integer type. */
function beyond64Bits(literal: string): boolean {
  if (/^0[xX]/.test(literal)) return literal.slice(2).replace(/^0+/, "").length > 16;
  if (literal.length > 1 && literal.startsWith("0")) return literal.slice(1).replace(/^0+/, "").length > 22;
  return literal.replace(/^0+/, "").length > 20;
}

interface HugeInteger {
  token: Token;
  message: string;
  hint: string;
}

/** Calls `visit` for each scalar value in the tree whose field the schema knows, with that field. */
function visitScalars(
  root: MessageNode,
  visit: (token: Token, field: DescField, label: string, mapKey: boolean) => void,
): void {
  const walk = (node: MessageNode, desc: DescMessage): void => {
    for (const f of node.fields) {
      const field = desc.fields.find((d) => d.name === f.name);
      if (!field) continue;
      for (const item of f.value.kind === "list" ? f.value.items : [f.value]) {
        if (item.kind === "scalar") {
          visit(item.token, field, field.name, false);
        } else if (field.fieldKind === "map") {
          for (const e of item.fields) {
            if ((e.name === "key" || e.name === "value") && e.value.kind === "scalar")
              visit(e.value.token, field, `${field.name} ${e.name}`, e.name === "key");
            else if (e.name === "value" && e.value.kind === "message" && field.mapKind === "message")
              walk(e.value, field.message);
          }
        } else if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
          walk(item, field.message);
        }
      }
    }
  };
  walk(root, ModelConfigSchema);
}

/** Integer literals given to integer fields (or integer map keys) that cannot fit, in file order. */
function hugeIntegers(tree: ParseTreeResult): HugeInteger[] {
  const huge = new Set(tree.tokens.filter((t) => t.type === "int" && beyond64Bits(t.text)));
  if (huge.size === 0) return [];
  const out: HugeInteger[] = [];
  // One walk over the tree for all of them: a file can hold thousands.
  visitScalars(tree.root, (token, f, label, mapKey) => {
    if (!huge.has(token)) return;
    let scalar: ScalarType | undefined;
    if (f.fieldKind === "map") scalar = mapKey ? f.mapKey : f.mapKind === "scalar" ? f.scalar : undefined;
    else if (f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar")) scalar = f.scalar;
    const type = scalar === undefined ? undefined : INTEGER_TYPES.get(scalar);
    if (!type || token.type !== "int") return;
    out.push({
      token,
      message: `invalid value for '${label}': ${token.text.length > 40 ? `a number of ${token.text.length} characters` : token.text} does not fit in ${type}`,
      hint: `'${label}' is a ${type.endsWith("32") ? "32" : "64"}-bit integer.`,
    });
  });
  return out.sort((a, b) => a.token.pos.offset - b.token.pos.offset);
}

// ---------------------------------------------------------------------------------------------
// Errors from the library, located and explained

interface Explained {
  pos: Pos;
  message: string;
  hint?: string;
  code: ErrorCode;
}

/**
 * The library reports no position, so find the shortest token-aligned prefix of the text that
 * fails with the same message: the error sits at that prefix's last token.
 *
 * Each probe re-reads a prefix, so on a large file the search first reads each top-level field on
 * its own (one pass over the text in all): most errors lie inside one field and show there with
 * the same message, and the search then runs within that field alone. Errors between fields (a
 * field set twice, two members of a oneof) search the whole text.
 */
function locateLibraryError(text: string, tree: ParseTreeResult, message: string): Token {
  const { tokens } = tree;
  const n = tokens.length - 1; // the last token is eof
  const messageOf = (from: number, to: number): string | undefined => {
    try {
      fromText(ModelConfigSchema, text.slice(from, to));
      return undefined;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  };
  /** The first k in [lo, hi] whose prefix (from `from`, ending with token k-1) fails the same; hi must. */
  const searchIndex = (from: number, lo: number, hi: number): number => {
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (messageOf(from, tokens[mid - 1]!.end) === message) hi = mid;
      else lo = mid + 1;
    }
    return Math.min(lo, n);
  };
  const tokenAt = (k: number): Token => tokens[k - 1] ?? tokens[n]!;

  const fields = tree.root.fields;
  if (text.length > 4096 && fields.length > 1) {
    const tokenIndex = (offset: number): number => {
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (tokens[mid]!.pos.offset < offset) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    for (let f = 0; f < fields.length; f++) {
      const from = fields[f]!.nameToken.pos.offset;
      const to = f + 1 < fields.length ? fields[f + 1]!.nameToken.pos.offset : text.length;
      const alone = messageOf(from, to);
      if (alone === undefined) continue;
      if (alone !== message) break;
      const first = tokenIndex(from);
      const last = f + 1 < fields.length ? tokenIndex(to) : n;
      const k = searchIndex(from, first + 1, last);
      // The field alone fails where the whole text does, unless the text's first error lies
      // across fields (a field set twice, two of a oneof) with the same message: then the prefix
      // up to this token is not the shortest failing one, and only the whole search says where.
      if (messageOf(0, tokenAt(k).end) === message && (k <= 1 || messageOf(0, tokenAt(k - 1).end) !== message))
        return tokenAt(k);
      break;
    }
  }
  return tokenAt(searchIndex(0, 1, Math.max(1, n)));
}

type TokenContext =
  | { role: "name"; parent: DescMessage; field?: DescField; node: FieldNode; earlier?: FieldNode }
  | { role: "value"; parent: DescMessage; field?: DescField; node: FieldNode; mapKey?: boolean }
  | { role: "map-entry-name"; field: DescField; node: FieldNode };

/** What the token at `offset` is in the schema: a field name of some message, or a field's value. */
function contextAt(root: MessageNode, offset: number): TokenContext | undefined {
  const inNode = (node: MessageNode | ScalarNode | undefined): boolean =>
    node?.kind === "scalar" && (node.token.pos.offset === offset || node.sign?.pos.offset === offset);

  const visit = (node: MessageNode, desc: DescMessage): TokenContext | undefined => {
    for (const f of node.fields) {
      const field = desc.fields.find((d) => d.name === f.name);
      if (f.nameToken.pos.offset === offset) {
        const earlier = node.fields.find((g) => g !== f && g.name === f.name && g.nameToken.pos.offset < offset);
        return { role: "name", parent: desc, field, node: f, earlier };
      }
      const items = f.value.kind === "list" ? f.value.items : [f.value];
      if (f.value.kind === "list" && f.value.open.pos.offset === offset)
        return { role: "value", parent: desc, field, node: f };
      for (const item of items) {
        if (item.kind === "scalar") {
          if (inNode(item)) return { role: "value", parent: desc, field, node: f };
          continue;
        }
        if (item.open?.pos.offset === offset) return { role: "value", parent: desc, field, node: f };
        if (!field) continue;
        if (field.fieldKind === "map") {
          for (const e of item.fields) {
            if (e.nameToken.pos.offset === offset) return { role: "map-entry-name", field, node: e };
            if (e.name === "key" && e.value.kind === "scalar" && inNode(e.value)) {
              return { role: "value", parent: desc, field, node: e, mapKey: true };
            }
            if (e.name === "value") {
              if (e.value.kind === "scalar" && inNode(e.value)) return { role: "value", parent: desc, field, node: e };
              if (e.value.kind === "message" && field.mapKind === "message") {
                const found = visit(e.value, field.message);
                if (found) return found;
              }
            }
          }
        } else if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
          const found = visit(item, field.message);
          if (found) return found;
        }
      }
    }
    return undefined;
  };
  return visit(root, ModelConfigSchema);
}

/** `inference.ModelDynamicBatching` -> `ModelDynamicBatching`. */
const shortName = (desc: DescMessage | DescEnum): string => desc.name;

/** Where a field of this name lives, spelled as the user would nest it (`dynamic_batching { ... }`). */
function whereFieldLives(name: string): string | undefined {
  const seen = new Set<string>();
  const queue: Array<{ desc: DescMessage; path: string[] }> = [{ desc: ModelConfigSchema, path: [] }];
  while (queue.length) {
    const { desc, path } = queue.shift()!;
    if (seen.has(desc.typeName)) continue;
    seen.add(desc.typeName);
    if (path.length > 0 && desc.fields.some((f) => f.name === name)) return path.join(" { ");
    for (const f of desc.fields) {
      if (f.message && (f.fieldKind === "message" || f.fieldKind === "list"))
        queue.push({ desc: f.message, path: [...path, f.name] });
    }
  }
  return undefined;
}

const DATA_TYPE_ALIASES: Record<string, string> = {
  FLOAT: "TYPE_FP32",
  FLOAT32: "TYPE_FP32",
  FP32: "TYPE_FP32",
  TYPE_FLOAT: "TYPE_FP32",
  TYPE_FLOAT32: "TYPE_FP32",
  HALF: "TYPE_FP16",
  FLOAT16: "TYPE_FP16",
  FP16: "TYPE_FP16",
  TYPE_FLOAT16: "TYPE_FP16",
  TYPE_HALF: "TYPE_FP16",
  DOUBLE: "TYPE_FP64",
  FLOAT64: "TYPE_FP64",
  FP64: "TYPE_FP64",
  TYPE_DOUBLE: "TYPE_FP64",
  TYPE_FLOAT64: "TYPE_FP64",
  BYTES: "TYPE_STRING",
  STRING: "TYPE_STRING",
  TYPE_BYTES: "TYPE_STRING",
  STR: "TYPE_STRING",
  INT: "TYPE_INT32",
  LONG: "TYPE_INT64",
  BOOL: "TYPE_BOOL",
  BOOLEAN: "TYPE_BOOL",
  BFLOAT16: "TYPE_BF16",
};

function enumSuggestion(e: DescEnum, word: string): string | undefined {
  const names = e.values.map((v) => v.name);
  const upper = word.toUpperCase();
  if (names.includes(upper)) return upper;
  if (e.typeName === "inference.DataType") {
    const alias = DATA_TYPE_ALIASES[upper] ?? (names.includes(`TYPE_${upper}`) ? `TYPE_${upper}` : undefined);
    if (alias) return alias;
  }
  const suffixed = names.find((n) => n.endsWith(`_${upper}`));
  return suffixed ?? closest(word, names);
}

function tokenText(t: Token): string {
  switch (t.type) {
    case "identifier":
    case "string":
      return t.value;
    case "int":
    case "float":
      return t.text;
    default:
      return t.type;
  }
}

function expectedKind(field: DescField, mapKey: boolean): "string" | "number" | "bool" | "enum" | "message" {
  const scalar = (s: ScalarType) =>
    s === ScalarType.STRING || s === ScalarType.BYTES ? "string" : s === ScalarType.BOOL ? "bool" : "number";
  if (field.fieldKind === "map") {
    if (mapKey) return scalar(field.mapKey);
    return field.mapKind === "message" ? "message" : field.mapKind === "enum" ? "enum" : scalar(field.scalar);
  }
  if (field.fieldKind === "list")
    return field.listKind === "message" ? "message" : field.listKind === "enum" ? "enum" : scalar(field.scalar);
  if (field.fieldKind === "message") return "message";
  if (field.fieldKind === "enum") return "enum";
  return scalar(field.scalar);
}

function fieldEnum(field: DescField): DescEnum | undefined {
  if (field.fieldKind === "enum") return field.enum;
  if (field.fieldKind === "list" && field.listKind === "enum") return field.enum;
  if (field.fieldKind === "map" && field.mapKind === "enum") return field.enum;
  return undefined;
}

function explainLibraryError(text: string, tree: ParseTreeResult, raw: string): Explained {
  const token = locateLibraryError(text, tree, raw);
  const pos = token.pos;
  // The library names the field in full for some value errors only; we name it by its short name always.
  const message = raw.replace(/^cannot decode field inference\.[A-Za-z0-9_.]+ from text format: /, "");
  const ctx = contextAt(tree.root, pos.offset);
  if (!ctx) return { pos, message, code: "config-schema" };

  if (ctx.role === "map-entry-name") {
    return {
      pos,
      message: `unknown field '${ctx.node.name}' in an entry of map '${ctx.field.name}'`,
      hint: "A map entry holds only 'key' and 'value'.",
      code: "config-unknown-field",
    };
  }

  if (ctx.role === "name") {
    const name = ctx.node.name;
    if (!ctx.field) {
      const typo = closest(
        name,
        ctx.parent.fields.map((f) => f.name),
      );
      const home = typo ? undefined : whereFieldLives(name);
      const hint = typo
        ? `Did you mean '${typo}'?`
        : home
          ? `'${name}' belongs inside ${home} { ... }.`
          : `Fields of ${shortName(ctx.parent)} are ${quoteList(ctx.parent.fields.map((f) => f.name).slice(0, 12), "or", Infinity)}${ctx.parent.fields.length > 12 ? ", ..." : ""}.`;
      return {
        pos,
        message: `unknown field '${name}' in ${shortName(ctx.parent)}`,
        hint,
        code: "config-unknown-field",
      };
    }
    if (/already set/.test(raw) && ctx.field.oneof) {
      const choices = ctx.field.oneof.fields.map((f) => f.name);
      return {
        pos,
        message: `'${name}' cannot be set together with another of ${quoteList(choices)}`,
        hint: `Keep only one of ${quoteList(choices)}.`,
        code: "config-oneof",
      };
    }
    if (/is repeated/.test(raw)) {
      const at = ctx.earlier
        ? ` (first set at ${ctx.earlier.nameToken.pos.line}:${ctx.earlier.nameToken.pos.column})`
        : "";
      return {
        pos,
        message: `'${name}' is set more than once${at}`,
        hint: `'${name}' takes a single value: remove one of them.`,
        code: "config-duplicate-field",
      };
    }
    if (/expected ":"/.test(raw)) {
      return {
        pos,
        message,
        hint: `Separate the field and its value with a colon: ${name}: ...`,
        code: "config-syntax",
      };
    }
    return { pos, message, code: "config-schema" };
  }

  // A value.
  const field = ctx.field;
  if (!field) return { pos, message, code: "config-schema" };
  const expect = expectedKind(field, ctx.mapKey ?? false);
  const fieldName =
    ctx.node.name === "key" || ctx.node.name === "value" ? `${field.name} ${ctx.node.name}` : field.name;
  const word = tokenText(token);
  const valueMessage = `invalid value for '${fieldName}': ${message}`;
  const en = fieldEnum(field);
  if (expect === "enum" && en && token.type === "identifier") {
    const suggestion = enumSuggestion(en, word);
    const values = en.values.map((v) => v.name);
    return {
      pos,
      message: `'${word}' is not a valid ${shortName(en)} for '${fieldName}'`,
      hint: suggestion ? `Did you mean ${suggestion}?` : `Use one of ${quoteList(values, "or", Infinity)}.`,
      code: "config-enum",
    };
  }
  let hint: string | undefined;
  if (expect === "string" && token.type !== "string") hint = `Quote the value: ${fieldName}: "${word}"`;
  else if (expect === "number" && token.type === "string") hint = `Write numbers without quotes: ${fieldName}: ${word}`;
  else if (expect === "number" && /negative/.test(raw)) hint = `'${fieldName}' cannot be negative.`;
  else if (expect === "bool") hint = `'${fieldName}' takes true or false.`;
  else if (expect === "message") hint = `'${fieldName}' is a message: write ${fieldName} { ... }`;
  else if (expect === "enum" && en)
    hint = `Use one of ${quoteList(
      en.values.map((v) => v.name),
      "or",
      Infinity,
    )}.`;
  return { pos, message: valueMessage, ...(hint ? { hint } : {}), code: "config-schema" };
}

/**
 * The `${name}` placeholders of a config template (tensorrtllm_backend ships its configs so, for
 * tools/fill_template.py), with whether each sits in a quoted string (valid text there, though
 * still unfilled). Comments are skipped.
 */
export function templatePlaceholders(text: string): Array<{ name: string; pos: Pos; quoted: boolean }> {
  const out: Array<{ name: string; pos: Pos; quoted: boolean }> = [];
  const lines = text.split("\n");
  let offset = 0;
  lines.forEach((line, i) => {
    const lineStart = offset;
    offset += line.length + 1;
    let quote: string | undefined;
    for (let j = 0; j < line.length; j++) {
      const ch = line[j]!;
      if (quote) {
        if (ch === "\\") j++;
        else if (ch === quote) quote = undefined;
      } else if (ch === '"' || ch === "'") quote = ch;
      else if (ch === "#") break;
      if (ch === "$" && line[j + 1] === "{") {
        const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(line.slice(j));
        if (m)
          out.push({
            name: m[1]!,
            pos: { line: i + 1, column: j + 1, offset: lineStart + j },
            quoted: quote !== undefined,
          });
      }
    }
  });
  return out;
}
