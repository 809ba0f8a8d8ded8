/**
 * The byte-preserving editor of config.pbtxt: `triton-dev tune --apply` writes the fields it chose
 * into the user's own file, and everything else (comments, order, layout, separators, `<...>`
 * delimiters, line endings) stays byte for byte.
 *
 * Edits are placed on the positions of the real parser (textproto.ts), so strings, comments and
 * the shapes protobuf text format allows (a repeated field as several blocks, as a list, or both)
 * are read as Triton reads them. Every result is parsed again and compared with the edit applied to
 * the parsed message: an edit that would mean anything else is refused, never written.
 */
import { clone, create, equals } from "@bufbuild/protobuf";
import fsp from "node:fs/promises";
import path from "node:path";
import { REPORT_URL_HINT, UserError, describeCause, explainFsError } from "../errors.js";
import { log as rootLog } from "../log/logger.js";
import { FolderChangedError, type ReplaceSteps, replaceFileAtomic } from "../state/atomic-write.js";
import { type TrustOptions, UntrustedFolderError, requireTrustedFolder } from "../config/folder-trust.js";
import { DiagnosticError } from "./diagnostics.js";
import {
  type ModelConfig,
  ModelConfigSchema,
  ModelDynamicBatchingSchema,
  ModelInstanceGroupSchema,
  ModelInstanceGroup_Kind,
} from "./gen/model_config_pb.js";
import { type ParsedConfig, parseModelConfig } from "./parse.js";
import { type FieldNode, type MessageNode, type Token, parseTree, positionAt } from "./textproto.js";

/** What tune may change in a config.pbtxt; everything not named here stays byte for byte. */
export interface ConfigEdits {
  maxBatchSize?: number;
  /**
   * undefined: dynamic_batching left as it is; false: the block removed; an object: these fields
   * set inside the block (created when absent), every other field of the block (priority levels,
   * queue policy, comments) kept. `preferredBatchSize: []` removes preferred_batch_size.
   */
  dynamicBatching?: false | { preferredBatchSize?: number[]; maxQueueDelayMicroseconds?: number };
  /**
   * Instance counts per kind: the count of the first instance_group entry of that kind is set
   * (a `count:` inserted when the entry has none); a kind with no entry gets a new entry
   * `{ count: N kind: KIND }` (appended to the existing instance_group list, or a new
   * `instance_group [...]` at the end of the file).
   */
  instanceCounts?: Array<{ kind: "KIND_CPU" | "KIND_GPU"; count: number }>;
}

export interface ConfigEditChange {
  /**
   * The field: `max_batch_size`, `dynamic_batching.preferred_batch_size`, or per kind (as the edits
   * name them) `instance_group[KIND_CPU].count`, the count of that kind's first entry.
   */
  field: string;
  /** The value before, in text format; undefined when the file does not write it. */
  before: string | undefined;
  /** The value after; undefined when the edit removes it. */
  after: string | undefined;
}

/**
 * Why a config was not edited:
 * - `syntax`: the file is not a valid model configuration (the message names file:line:col);
 * - `conflict`: the edit cannot be made in this config (dynamic batching beside sequence batching);
 * - `invalid-edit`: the edit itself is out of range (a count of 0);
 * - `changed`: the file is no longer the text the edit was computed from;
 * - `io`: the file could not be read or written;
 * - `unsafe-folder`: the file is a link into a folder another user owns or can write, or the
 *   folder changed under the write: nothing is written there;
 * - `internal`: the result would not have meant exactly the edit (our fault; nothing was written).
 */
export type ConfigEditReason = "syntax" | "conflict" | "invalid-edit" | "changed" | "io" | "unsafe-folder" | "internal";

/** A config.pbtxt that was not edited; the file is left exactly as it was. */
export class ConfigEditError extends UserError {
  override name = "ConfigEditError";
  constructor(
    message: string,
    readonly reason: ConfigEditReason,
    options: { hint?: string; cause?: unknown; file?: string; line?: number; column?: number } = {},
  ) {
    super(message, { hint: options.hint, cause: options.cause });
    this.file = options.file;
    this.line = options.line;
    this.column = options.column;
  }
  readonly file: string | undefined;
  readonly line: number | undefined;
  readonly column: number | undefined;
}

const log = rootLog.child("config-edit");

const INT32_MAX = 2 ** 31 - 1;

// ---------------------------------------------------------------------------------------------
// Replacements of spans of the original text, applied in one pass

interface Replacement {
  start: number;
  end: number;
  text: string;
  seq: number;
}

class Rewrite {
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

class Layout {
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
function cutField(r: Rewrite, l: Layout, f: FieldNode): void {
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
function childIndent(l: Layout, msg: MessageNode): string {
  const own = msg.fields.find((f) => l.startsLine(f.nameToken.pos.offset));
  if (own) return l.indentAt(own.nameToken.pos.offset);
  return l.indentAt(msg.open!.pos.offset) + l.unit;
}

/** Insert a field as the last of a message: on its own line when the message spans lines. */
function insertLast(r: Rewrite, l: Layout, msg: MessageNode, field: string): void {
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
function insertFirst(r: Rewrite, l: Layout, msg: MessageNode, field: string): void {
  const first = msg.fields[0];
  if (!first) return insertLast(r, l, msg, field);
  const at = first.nameToken.pos.offset;
  if (l.startsLine(at)) r.insert(l.lineStart(at), l.indentAt(at) + field + l.eol);
  else r.insert(msg.open!.end, l.text.slice(msg.open!.end, at) === "" ? `${field} ` : ` ${field}`);
}

/** Insert a top-level field (or block) right after `after`, on a line of its own when it is on one. */
function insertAfter(r: Rewrite, l: Layout, after: FieldNode, field: string): void {
  const end = l.fieldEnd(after);
  if (!l.endsLine(end)) return r.insert(end, ` ${field}`);
  const line = l.lineEnd(end);
  const indent = l.indentAt(after.nameToken.pos.offset);
  if (line.hasBreak) r.insert(line.next, indent + field.split("\n").join("\n" + indent) + l.eol);
  else r.insert(line.next, l.eol + indent + field.split("\n").join("\n" + indent));
}

/** Append a top-level field at the end of the file, keeping whether the file ends with a line break. */
function appendTop(r: Rewrite, l: Layout, field: string): void {
  const t = l.text;
  if (t === "") r.insert(0, field + l.eol);
  else if (t.endsWith("\n")) r.insert(t.length, field + l.eol);
  else r.insert(t.length, l.eol + field);
}

/** A message's fields as the file writes a message like `like`: on one line, or one field a line. */
function renderMessage(l: Layout, fields: string[], like: MessageNode | undefined, baseIndent: string): string {
  if (fields.length === 0) return "{ }";
  const multi = like?.open !== undefined && !l.sameLine(like.open.pos.offset, l.closeOf(like.open).pos.offset);
  if (!multi) return `{ ${fields.join(" ")} }`;
  const inner = like.fields.some((f) => l.startsLine(f.nameToken.pos.offset))
    ? childIndent(l, like)
    : baseIndent + l.unit;
  return `{${l.eol}${fields.map((f) => inner + f + l.eol).join("")}${baseIndent}}`;
}

function renderList(values: readonly number[], padded = true): string {
  return padded ? `[ ${values.join(", ")} ]` : `[${values.join(", ")}]`;
}

// ---------------------------------------------------------------------------------------------
// The plan: what changes, where, and what the result must mean

interface Plan {
  changes: ConfigEditChange[];
  rewrite: Rewrite;
  expected: ModelConfig;
  layout: Layout;
}

const KIND_VALUES = { KIND_CPU: ModelInstanceGroup_Kind.CPU, KIND_GPU: ModelInstanceGroup_Kind.GPU };

function validateEdits(edits: ConfigEdits, file: string): void {
  const bad = (what: string): never => {
    throw new ConfigEditError(`cannot edit ${file}: ${what}`, "invalid-edit", {
      file,
      hint: REPORT_URL_HINT,
    });
  };
  const isInt = (n: unknown, min: number, max: number) =>
    typeof n === "number" && Number.isInteger(n) && n >= min && n <= max;
  if (edits.maxBatchSize !== undefined && !isInt(edits.maxBatchSize, 0, INT32_MAX))
    bad(`max_batch_size ${String(edits.maxBatchSize)} is not an integer from 0 to ${INT32_MAX}`);
  const db = edits.dynamicBatching;
  if (db !== undefined && db !== false) {
    if (typeof db !== "object" || db === null) bad("dynamic_batching must be false or an object");
    if (db.preferredBatchSize !== undefined) {
      if (!Array.isArray(db.preferredBatchSize)) bad("preferred_batch_size must be a list");
      for (const n of db.preferredBatchSize)
        if (!isInt(n, 1, INT32_MAX)) bad(`preferred_batch_size ${String(n)} is not an integer from 1 to ${INT32_MAX}`);
    }
    if (db.maxQueueDelayMicroseconds !== undefined && !isInt(db.maxQueueDelayMicroseconds, 0, Number.MAX_SAFE_INTEGER))
      bad(`max_queue_delay_microseconds ${String(db.maxQueueDelayMicroseconds)} is not a non-negative integer`);
  }
  if (edits.instanceCounts !== undefined) {
    if (!Array.isArray(edits.instanceCounts)) bad("instance counts must be a list");
    const seen = new Set<string>();
    for (const c of edits.instanceCounts) {
      if (typeof c !== "object" || c === null || !(c.kind in KIND_VALUES)) bad(`instance kind ${String(c?.kind)}`);
      if (seen.has(c.kind)) bad(`${c.kind} is given twice`);
      seen.add(c.kind);
      if (!isInt(c.count, 1, INT32_MAX)) bad(`count ${String(c.count)} is not an integer from 1 to ${INT32_MAX}`);
    }
  }
}

function parseOrRefuse(text: string, file: string): { parsed: ParsedConfig; layout: Layout; root: MessageNode } {
  const r = parseModelConfig(text, file);
  if (!r.parsed) {
    const d = r.diagnostics[0];
    const where = d ? `${d.file}:${d.line}:${d.column}` : file;
    throw new ConfigEditError(`${where}: ${d?.message ?? "not a valid model configuration"}`, "syntax", {
      file,
      line: d?.line,
      column: d?.column,
      hint: `${d?.hint ? `${d.hint} ` : ""}Fix the config (\`triton-dev lint\` shows every problem) and apply again; it was not changed.`,
      cause: new DiagnosticError(r.diagnostics),
    });
  }
  const tree = parseTree(text);
  return { parsed: r.parsed, layout: new Layout(text, tree.tokens), root: tree.root };
}

const topFields = (root: MessageNode, name: string): FieldNode[] => root.fields.filter((f) => f.name === name);

/** Message-valued fields written `name: {` rather than `name {`: follow the file. */
function colonStyle(root: MessageNode): string {
  let colon = 0;
  let bare = 0;
  const walk = (m: MessageNode): void => {
    for (const f of m.fields) {
      const items = f.value.kind === "list" ? f.value.items : [f.value];
      if (f.value.kind === "message") {
        if (f.hasColon) colon++;
        else bare++;
      }
      for (const i of items) if (i.kind === "message") walk(i);
    }
  };
  walk(root);
  return colon > bare ? ": " : " ";
}

function plan(text: string, edits: ConfigEdits, file: string): Plan {
  validateEdits(edits, file);
  const { parsed, layout: l, root } = parseOrRefuse(text, file);
  const config = parsed.config;
  const expected = clone(ModelConfigSchema, config);
  const r = new Rewrite();
  const changes: ConfigEditChange[] = [];
  const sep = colonStyle(root);

  if (edits.maxBatchSize !== undefined && config.maxBatchSize !== edits.maxBatchSize) {
    const n = edits.maxBatchSize;
    expected.maxBatchSize = n;
    const field = topFields(root, "max_batch_size")[0];
    if (field && field.value.kind === "scalar") {
      r.replace(field.value.pos.offset, field.value.token.end, String(n));
      changes.push({ field: "max_batch_size", before: String(config.maxBatchSize), after: String(n) });
    } else {
      // Beside the model's identity (name, platform, backend), where Triton's examples write it.
      const anchor = root.fields
        .filter((f) => f.name === "name" || f.name === "platform" || f.name === "backend")
        .at(-1);
      const line = `max_batch_size: ${n}`;
      if (anchor) insertAfter(r, l, anchor, line);
      else if (root.fields[0]) {
        const at = root.fields[0].nameToken.pos.offset;
        if (l.startsLine(at)) r.insert(l.lineStart(at), l.indentAt(at) + line + l.eol);
        else r.insert(at, `${line} `);
      } else appendTop(r, l, line);
      changes.push({ field: "max_batch_size", before: undefined, after: String(n) });
    }
  }

  const db = edits.dynamicBatching;
  const dbField = topFields(root, "dynamic_batching")[0];
  const dbNode = dbField?.value.kind === "message" ? dbField.value : undefined;
  if (db === false && dbField) {
    expected.schedulingChoice = { case: undefined, value: undefined };
    cutField(r, l, dbField);
    changes.push({
      field: "dynamic_batching",
      before: l.compact(dbNode!.open!.pos.offset, l.valueEnd(dbField)),
      after: undefined,
    });
  } else if (db) {
    const other = config.schedulingChoice.case;
    if (other === "sequenceBatching" || other === "ensembleScheduling") {
      const name = other === "sequenceBatching" ? "sequence_batching" : "ensemble_scheduling";
      const at = parsed.source.at(name);
      throw new ConfigEditError(
        `${file}:${at.line}:${at.column}: dynamic_batching cannot be set beside ${name}`,
        "conflict",
        {
          file,
          line: at.line,
          column: at.column,
          hint: `A model has one scheduler: it already uses ${name}, so its dynamic batching is not tuned.`,
        },
      );
    }
    const current = config.schedulingChoice.case === "dynamicBatching" ? config.schedulingChoice.value : undefined;
    const next = current ? clone(ModelDynamicBatchingSchema, current) : create(ModelDynamicBatchingSchema);
    const pbs = db.preferredBatchSize;
    const delay = db.maxQueueDelayMicroseconds;
    const lines: string[] = [];
    if (!dbNode) {
      if (pbs?.length) lines.push(`preferred_batch_size: ${renderList(pbs)}`);
      if (delay !== undefined && delay !== 0) lines.push(`max_queue_delay_microseconds: ${delay}`);
      changes.push({
        field: "dynamic_batching",
        before: undefined,
        after: lines.length ? `{ ${lines.join(" ")} }` : "{ }",
      });
    }
    const currentPbs = current?.preferredBatchSize ?? [];
    const pbsChanged =
      pbs !== undefined && (pbs.length !== currentPbs.length || pbs.some((v, i) => v !== currentPbs[i]));
    if (pbsChanged) {
      next.preferredBatchSize = [...pbs];
      changes.push({
        field: "dynamic_batching.preferred_batch_size",
        before: currentPbs.length ? renderList(currentPbs) : undefined,
        after: pbs.length ? renderList(pbs) : undefined,
      });
    }
    const currentDelay = current?.maxQueueDelayMicroseconds ?? 0n;
    const delayChanged = delay !== undefined && currentDelay !== BigInt(delay);
    if (delayChanged) {
      next.maxQueueDelayMicroseconds = BigInt(delay);
      const written = dbNode?.fields.some((f) => f.name === "max_queue_delay_microseconds");
      changes.push({
        field: "dynamic_batching.max_queue_delay_microseconds",
        before: written ? String(currentDelay) : undefined,
        after: String(delay),
      });
    }
    expected.schedulingChoice = { case: "dynamicBatching", value: next };

    if (!dbNode) {
      const block = `dynamic_batching${sep}${lines.length ? `{${l.eol}${lines.map((x) => l.unit + x + l.eol).join("")}}` : "{ }"}`;
      appendTop(r, l, block);
    } else {
      if (pbsChanged) {
        const occurrences = dbNode.fields.filter((f) => f.name === "preferred_batch_size");
        const [first, ...rest] = occurrences;
        if (pbs.length === 0) for (const f of occurrences) cutField(r, l, f);
        else if (!first) insertLast(r, l, dbNode, `preferred_batch_size: ${renderList(pbs)}`);
        else {
          const v = first.value;
          if (v.kind === "list") {
            const padded = v.items.length === 0 || /^\s/.test(l.text.slice(v.open.end));
            r.replace(v.open.pos.offset, l.closeOf(v.open).end, renderList(pbs, padded));
          } else if (v.kind === "scalar") {
            const value = pbs.length === 1 ? String(pbs[0]) : renderList(pbs);
            r.replace(v.pos.offset, v.token.end, value);
          }
          for (const f of rest) cutField(r, l, f);
        }
      }
      if (delayChanged) {
        const f = dbNode.fields.find((x) => x.name === "max_queue_delay_microseconds");
        if (f && f.value.kind === "scalar") r.replace(f.value.pos.offset, f.value.token.end, String(delay));
        else insertLast(r, l, dbNode, `max_queue_delay_microseconds: ${delay}`);
      }
    }
  }

  if (edits.instanceCounts?.length) planInstances(r, l, root, config, expected, edits.instanceCounts, changes, sep);
  return { changes, rewrite: r, expected, layout: l };
}

interface GroupEntry {
  node: MessageNode;
  /** The field holding it: a block `instance_group { }` or a list `instance_group [ ... ]`. */
  field: FieldNode;
}

function planInstances(
  r: Rewrite,
  l: Layout,
  root: MessageNode,
  config: ModelConfig,
  expected: ModelConfig,
  counts: NonNullable<ConfigEdits["instanceCounts"]>,
  changes: ConfigEditChange[],
  sep: string,
): void {
  const occurrences = topFields(root, "instance_group");
  // Elements in file order across every occurrence, as the parsed message holds them.
  const entries: GroupEntry[] = [];
  for (const f of occurrences) {
    const items = f.value.kind === "list" ? f.value.items : [f.value];
    for (const item of items) if (item.kind === "message") entries.push({ node: item, field: f });
  }
  if (entries.length !== config.instanceGroup.length) throw new Error("instance_group entries do not match the tree");
  const added: Array<{ kind: string; count: number }> = [];
  for (const { kind, count } of counts) {
    const k = KIND_VALUES[kind];
    const i = config.instanceGroup.findIndex((g) => g.kind === k);
    if (i < 0) {
      added.push({ kind, count });
      expected.instanceGroup.push(create(ModelInstanceGroupSchema, { kind: k, count }));
      changes.push({ field: `instance_group[${kind}].count`, before: undefined, after: String(count) });
      continue;
    }
    const group = config.instanceGroup[i]!;
    if (group.count === count) continue;
    expected.instanceGroup[i]!.count = count;
    const entry = entries[i]!.node;
    const f = entry.fields.find((x) => x.name === "count");
    changes.push({
      field: `instance_group[${kind}].count`,
      before: f ? String(group.count) : undefined,
      after: String(count),
    });
    if (f && f.value.kind === "scalar") r.replace(f.value.pos.offset, f.value.token.end, String(count));
    else insertFirst(r, l, entry, `count: ${count}`);
  }
  if (added.length === 0) return;
  const fieldsOf = (a: { kind: string; count: number }) => [`count: ${a.count}`, `kind: ${a.kind}`];
  const last = occurrences.at(-1);
  if (!last) {
    const items = added.map((a) => `{ ${fieldsOf(a).join(" ")} }`).join(", ");
    appendTop(r, l, `instance_group [ ${items} ]`);
    return;
  }
  const like = entries.at(-1)?.node;
  if (last.value.kind === "list") {
    const list = last.value;
    const lastItem = list.items.at(-1);
    if (!lastItem || lastItem.kind !== "message") {
      const close = l.closeOf(list.open);
      const base = l.indentAt(last.nameToken.pos.offset);
      const items = added.map((a) => renderMessage(l, fieldsOf(a), like, base)).join(", ");
      const gap = l.text.slice(list.open.end, close.pos.offset);
      r.insert(list.open.end, gap === "" ? ` ${items} ` : ` ${items}`);
      return;
    }
    const end = l.closeOf(lastItem.open!).end;
    const own = l.startsLine(lastItem.open!.pos.offset);
    const base = own ? l.indentAt(lastItem.open!.pos.offset) : l.indentAt(last.nameToken.pos.offset);
    for (const a of added) {
      const item = renderMessage(l, fieldsOf(a), lastItem, base);
      r.insert(end, own ? `,${l.eol}${base}${item}` : `, ${item}`);
    }
    return;
  }
  // Written as blocks: one more block after the last.
  const base = l.indentAt(last.nameToken.pos.offset);
  const blocks = added.map(
    (a) => `instance_group${last.hasColon ? ": " : sep}${renderMessage(l, fieldsOf(a), like, base)}`,
  );
  const own = l.startsLine(last.nameToken.pos.offset) && l.endsLine(l.fieldEnd(last));
  if (own) {
    // insertAfter indents every line it adds; the rendered block is already indented.
    const line = l.lineEnd(l.fieldEnd(last));
    const text = blocks.map((b) => base + b).join(l.eol);
    if (line.hasBreak) r.insert(line.next, text + l.eol);
    else r.insert(line.next, l.eol + text);
  } else r.insert(l.fieldEnd(last), ` ${blocks.join(" ")}`);
}

// ---------------------------------------------------------------------------------------------
// The interface

function guarded<T>(file: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof ConfigEditError) throw err;
    throw new ConfigEditError(`could not edit ${file}: ${describeCause(err)}; it was not changed`, "internal", {
      file,
      hint: REPORT_URL_HINT,
      cause: err,
    });
  }
}

/**
 * The text with the edits applied; `file` names the config in errors (ConfigEditError, a UserError
 * with file:line:col).
 */
export function applyConfigEdits(text: string, edits: ConfigEdits, file = "config.pbtxt"): string {
  return guarded(file, () => {
    const p = plan(text, edits, file);
    if (p.rewrite.empty) return text;
    let out = p.rewrite.apply(text);
    // A file without a final line break keeps none: a cut of its last field leaves the breaks before it.
    if (text !== "" && !text.endsWith("\n")) out = out.replace(/(?:\r?\n)+$/, "");
    const check = parseModelConfig(out, file);
    if (!check.parsed || !equals(ModelConfigSchema, check.parsed.config, p.expected)) {
      const d = check.diagnostics[0];
      throw new ConfigEditError(
        `could not edit ${file}: the edited text would not mean exactly the edit${d ? ` (${d.line}:${d.column}: ${d.message})` : ""}; it was not changed`,
        "internal",
        { file, hint: REPORT_URL_HINT, cause: d ? new DiagnosticError(check.diagnostics) : undefined },
      );
    }
    return out;
  });
}

/** Which fields of `edits` would change `text` (for the diff and the "changed only" report). */
export function describeConfigEdits(
  text: string,
  edits: ConfigEdits,
): Array<{ field: string; before: string | undefined; after: string | undefined }> {
  return guarded("config.pbtxt", () => plan(text, edits, "config.pbtxt").changes);
}

export interface AppliedConfigEdits {
  /** False when the file already said what the edits say: nothing was written, no backup made. */
  changed: boolean;
  /** The copy of the file as it was, beside it; ignored by the watcher and staging (a `.bak` file). */
  backup: string | undefined;
  /** The file's text now. */
  text: string;
}

export interface ApplyToFileOptions {
  /** The clock that names the backup. */
  now?: () => Date;
  /** The replace's own steps (tests play another user between them). */
  replaceSteps?: ReplaceSteps;
  /** Trust options of the folder check (the uid counted as ours). */
  trust?: TrustOptions;
}

/** `config.pbtxt.triton-dev-backup-20261202T014500Z.bak`: `.bak` is editor litter to the watcher and staging. */
export function backupName(file: string, at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${path.basename(file)}.triton-dev-backup-${stamp}.bak`;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Apply the edits to the file: its old bytes are kept in a backup beside it, then the new text
 * replaces it in one rename with its mode and owner. `readText` is the text the edits were
 * computed from: a file that no longer holds it is refused. A link is written through to the file
 * it names, so the link stays a link, but only into a folder that no other user owns or can write
 * (that user could swap the file there for a link of theirs while it is written): lint still reads
 * such a link, an edit is refused with what to do.
 */
export async function applyConfigEditsToFile(
  file: string,
  edits: ConfigEdits,
  readText?: string,
  options: ApplyToFileOptions = {},
): Promise<AppliedConfigEdits> {
  const now = options.now ?? (() => new Date());
  const io = (err: unknown, what: string): ConfigEditError => {
    const e = explainFsError(err);
    return new ConfigEditError(`${what} ${e.is}`, "io", { file, hint: e.hint, cause: err });
  };
  let real: string;
  let bytes: Buffer;
  try {
    real = await fsp.realpath(file);
  } catch (err) {
    throw io(err, file);
  }
  // Without a link the folder is the user's repository: the temp file and the backup are new
  // names there (O_EXCL) and mode and owner go through handles, so another user who can write it
  // can at most break this edit. A folder above it swapped for a link between these steps would
  // move the edit (a file named like this one holding its text) elsewhere; Node has no openat to
  // pin the folder, and the content check against the text read first narrows it further.
  if (real !== path.resolve(file)) {
    try {
      requireTrustedFolder(
        path.dirname(real),
        `${file} was not edited: it is a link to ${real}, and a file there is not ours to write`,
        `Copy the file into your repository in place of the link (\`cp --remove-destination ${real} ${file}\`), or keep it in a folder only you (or root) own and can write, then run the command again.`,
        options.trust,
      );
    } catch (err) {
      if (err instanceof UntrustedFolderError)
        throw new ConfigEditError(err.message, "unsafe-folder", { file, hint: err.hint, cause: err });
      throw io(err, file);
    }
  }
  try {
    bytes = await fsp.readFile(real);
  } catch (err) {
    throw io(err, file);
  }
  const text = decode(bytes, file);
  if (readText !== undefined && text !== readText) {
    throw new ConfigEditError(`${file} changed since it was read; it was not edited`, "changed", {
      file,
      hint: "Run the command again, so it works from the file as it is now.",
    });
  }
  const out = applyConfigEdits(text, edits, file);
  if (out === text) return { changed: false, backup: undefined, text };
  let stat;
  try {
    stat = await fsp.stat(real);
  } catch (err) {
    throw io(err, file);
  }
  const backup = await writeBackup(real, bytes, stat.mode & 0o7777, now(), io);
  try {
    const again = await fsp.readFile(real);
    if (!again.equals(bytes)) {
      throw new ConfigEditError(`${file} changed while it was being edited; it was not edited`, "changed", {
        file,
        hint: `Run the command again. The copy taken before is ${backup}.`,
      });
    }
    await replaceFileAtomic(
      real,
      out,
      { mode: stat.mode & 0o7777, uid: stat.uid, gid: stat.gid },
      options.replaceSteps,
    );
  } catch (err) {
    if (err instanceof ConfigEditError) throw err;
    if (err instanceof FolderChangedError)
      throw new ConfigEditError(err.message, "unsafe-folder", {
        file,
        hint: `${err.hint ?? ""} The file's text from before is in ${backup}.`.trim(),
        cause: err,
      });
    throw io(err, file);
  }
  log.debug(`edited ${real}; the old text is in ${backup}`);
  return { changed: true, backup, text: out };
}

function decode(bytes: Buffer, file: string): string {
  try {
    return utf8.decode(bytes);
  } catch (err) {
    const lossy = bytes.toString("utf8");
    const at = positionAt(lossy, Math.max(0, lossy.indexOf("\uFFFD")));
    throw new ConfigEditError(`${file}:${at.line}:${at.column}: a byte that is not UTF-8 text`, "syntax", {
      file,
      line: at.line,
      column: at.column,
      hint: "Save the file as UTF-8; an edit could not keep its other bytes as they are.",
      cause: err,
    });
  }
}

async function writeBackup(
  real: string,
  bytes: Buffer,
  mode: number,
  at: Date,
  io: (err: unknown, what: string) => ConfigEditError,
): Promise<string> {
  const first = path.join(path.dirname(real), backupName(real, at));
  // Two applies within a second get distinct copies; bounded, as a full folder ends the loop too.
  for (let n = 1; n <= 100; n++) {
    const candidate = n === 1 ? first : first.replace(/\.bak$/, `-${n}.bak`);
    try {
      await fsp.writeFile(candidate, bytes, { flag: "wx", mode });
      return candidate;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw io(err, candidate);
    }
  }
  throw new ConfigEditError(`${real} has 100 backups from this second already`, "io", {
    file: real,
    hint: "Remove old config.pbtxt.triton-dev-backup-*.bak files.",
  });
}

// ---------------------------------------------------------------------------------------------
// Top-level textual edits for `perf --compare`'s variants. They read text that may not parse yet
// (a `--compare config=FILE` is linted after), so they scan brackets, strings and comments
// themselves instead of asking the parser.

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
