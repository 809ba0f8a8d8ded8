/**
 * Textual edits of a config.pbtxt for `triton-dev tune`: only the fields named in `ConfigEdits`
 * change, every other byte (comments, order, layout) stays as the user wrote it.
 *
 * A simple stand-in with the agreed interface (the scanner mirrors perf/variants.ts's, which
 * repo/ may not import); the byte-preserving editor from the config-edit work replaces it.
 */
import { UserError } from "../errors.js";

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

/** The config could not be edited (it is not well formed where an edit must go). */
export class ConfigEditError extends UserError {
  override name = "ConfigEditError";
}

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

function lineCol(text: string, i: number): string {
  const before = text.slice(0, i).split("\n");
  return `${before.length}:${before[before.length - 1]!.length + 1}`;
}

function matchBracket(text: string, open: number, file: string): number {
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
  throw new ConfigEditError(`${file}:${lineCol(text, open)}: this ${text[open]} is never closed`, {
    hint: "Run `triton-dev lint` on the model to find it.",
  });
}

/** Spans (key through value) of every occurrence of `key` at the top level of `text`. */
function fields(text: string, key: string, file: string): Span[] {
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
      if (text.slice(i, j) !== key) {
        i = j;
        continue;
      }
      let k = skipSpace(text, j);
      if (text[k] === ":") k = skipSpace(text, k + 1);
      let end: number;
      if (text[k] === "{" || text[k] === "[" || text[k] === "<") end = matchBracket(text, k, file);
      else if (text[k] === '"' || text[k] === "'") end = skipString(text, k);
      else {
        end = k;
        while (end < text.length && !/[\s#,;}\]]/.test(text[end]!)) end++;
      }
      spans.push({ start: i, end });
      i = end;
      continue;
    }
    i++;
  }
  return spans;
}

/** The value part of a field span (after the key and colon). */
function valueOf(text: string, s: Span): string {
  let k = s.start;
  while (/[A-Za-z0-9_]/.test(text[k]!)) k++;
  k = skipSpace(text, k);
  if (text[k] === ":") k = skipSpace(text, k + 1);
  return text.slice(k, s.end);
}

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

/** Replace the first `key` (dropping repeats), or insert `line` via `insert` when absent. */
function setIn(text: string, key: string, replacement: string, file: string, insert: (t: string) => string): string {
  const spans = fields(text, key, file);
  if (spans.length === 0) return insert(text);
  const first = spans[0]!;
  const rest = cut(text, spans.slice(1));
  return rest.slice(0, first.start) + replacement + rest.slice(first.end);
}

const appendTop = (replacement: string) => (t: string) => t.replace(/\s*$/, "") + "\n\n" + replacement + "\n";

/** Apply `edit` to the inside of the bracketed value of `span` (between its brackets). */
function editInside(text: string, span: Span, edit: (inner: string) => string): string {
  const v = valueOf(text, span);
  const open = span.end - v.length;
  const inner = text.slice(open + 1, span.end - 1);
  return text.slice(0, open + 1) + edit(inner) + text.slice(span.end - 1);
}

/** Insert a field just inside a block: on its own line when the block spans lines. */
function insertInBlock(line: string) {
  return (inner: string): string => {
    if (!inner.includes("\n"))
      return inner.trim() === "" ? ` ${line} ` : ` ${line}${inner.startsWith(" ") ? "" : " "}${inner}`;
    const indent = /\n([ \t]*)\S/.exec(inner)?.[1] ?? "  ";
    const end = inner.replace(/\s*$/, "");
    return `${end}\n${indent}${line}${inner.slice(end.length)}`;
  };
}

function editBatching(text: string, edits: NonNullable<ConfigEdits["dynamicBatching"]>, file: string): string {
  const spans = fields(text, "dynamic_batching", file);
  if (edits === false) return cut(text, spans);
  const lines: string[] = [];
  if (edits.preferredBatchSize?.length) lines.push(`preferred_batch_size: [ ${edits.preferredBatchSize.join(", ")} ]`);
  if (edits.maxQueueDelayMicroseconds !== undefined)
    lines.push(`max_queue_delay_microseconds: ${edits.maxQueueDelayMicroseconds}`);
  if (spans.length === 0)
    return appendTop(
      lines.length ? `dynamic_batching {\n${lines.map((l) => `  ${l}`).join("\n")}\n}` : "dynamic_batching { }",
    )(text);
  return editInside(text, spans[0]!, (inner) => {
    let out = inner;
    if (edits.preferredBatchSize !== undefined) {
      if (edits.preferredBatchSize.length === 0) out = cut(out, fields(out, "preferred_batch_size", file));
      else {
        const l = `preferred_batch_size: [ ${edits.preferredBatchSize.join(", ")} ]`;
        out = setIn(out, "preferred_batch_size", l, file, insertInBlock(l));
      }
    }
    if (edits.maxQueueDelayMicroseconds !== undefined) {
      const l = `max_queue_delay_microseconds: ${edits.maxQueueDelayMicroseconds}`;
      out = setIn(out, "max_queue_delay_microseconds", l, file, insertInBlock(l));
    }
    return out;
  });
}

/** The `{...}` entries of an instance_group list, with the kind each names. */
function groupEntries(text: string, list: Span, file: string): Array<{ span: Span; kind: string | undefined }> {
  const v = valueOf(text, list);
  const open = list.end - v.length;
  const out: Array<{ span: Span; kind: string | undefined }> = [];
  if (text[open] !== "[") {
    const inner = text.slice(open + 1, list.end - 1);
    const k = fields(inner, "kind", file)[0];
    return [{ span: list, kind: k ? valueOf(inner, k) : undefined }];
  }
  for (let i = skipSpace(text, open + 1); i < list.end - 1; i = skipSpace(text, i + 1)) {
    if (text[i] !== "{" && text[i] !== "<") continue;
    const end = matchBracket(text, i, file);
    const inner = text.slice(i + 1, end - 1);
    const k = fields(inner, "kind", file)[0];
    out.push({ span: { start: i, end }, kind: k ? valueOf(inner, k) : undefined });
    i = end - 1;
  }
  return out;
}

function editInstances(text: string, counts: NonNullable<ConfigEdits["instanceCounts"]>, file: string): string {
  let out = text;
  for (const { kind, count } of counts) {
    const lists = fields(out, "instance_group", file);
    const newEntry = `{ count: ${count} kind: ${kind} }`;
    if (lists.length === 0) {
      out = appendTop(`instance_group [ ${newEntry} ]`)(out);
      continue;
    }
    const list = lists[0]!;
    const entry = groupEntries(out, list, file).find((e) => e.kind === kind);
    if (!entry) {
      const close = list.end - 1;
      if (out[close] !== "]") {
        throw new ConfigEditError(`${file}:${lineCol(out, list.start)}: instance_group is one entry, not a list`, {
          hint: `Write it as instance_group [ { ... } ] to add a ${kind} entry.`,
        });
      }
      const before = out.slice(0, close).replace(/\s*$/, "");
      const sep = before.endsWith("[") ? " " : ", ";
      out = before + sep + newEntry + (out.slice(before.length, close).includes("\n") ? "\n" : " ") + out.slice(close);
      continue;
    }
    const span: Span = { start: entry.span.start, end: entry.span.end };
    // editInside reads the value after a key; an entry is a bare block, so edit between its brackets.
    const inner = out.slice(span.start + 1, span.end - 1);
    const l = `count: ${count}`;
    const edited = setIn(inner, "count", l, file, insertInBlock(l));
    out = out.slice(0, span.start + 1) + edited + out.slice(span.end - 1);
  }
  return out;
}

/**
 * The text with the edits applied; `file` names the config in errors (ConfigEditError, a
 * UserError with file:line:col).
 */
export function applyConfigEdits(text: string, edits: ConfigEdits, file = "config.pbtxt"): string {
  let out = text;
  if (edits.maxBatchSize !== undefined) {
    const l = `max_batch_size: ${edits.maxBatchSize}`;
    out = setIn(out, "max_batch_size", l, file, appendTop(l));
  }
  if (edits.dynamicBatching !== undefined) out = editBatching(out, edits.dynamicBatching, file);
  if (edits.instanceCounts?.length) out = editInstances(out, edits.instanceCounts, file);
  return out;
}

interface Current {
  maxBatchSize: string | undefined;
  dynamicBatching: string | undefined;
  preferred: string | undefined;
  delay: string | undefined;
  counts: Map<string, string | undefined>;
}

function current(text: string): Current {
  const file = "config.pbtxt";
  const mbs = fields(text, "max_batch_size", file)[0];
  const db = fields(text, "dynamic_batching", file)[0];
  let preferred: string | undefined;
  let delay: string | undefined;
  if (db) {
    const v = valueOf(text, db);
    const inner = v.slice(1, -1);
    const p = fields(inner, "preferred_batch_size", file);
    if (p.length)
      preferred = `[ ${p
        .map((s) =>
          valueOf(inner, s)
            .replace(/^\[|\]$/g, "")
            .trim(),
        )
        .join(", ")} ]`;
    const d = fields(inner, "max_queue_delay_microseconds", file)[0];
    if (d) delay = valueOf(inner, d);
  }
  const counts = new Map<string, string | undefined>();
  const list = fields(text, "instance_group", file)[0];
  if (list) {
    for (const e of groupEntries(text, list, file)) {
      if (!e.kind || counts.has(e.kind)) continue;
      const inner = text.slice(e.span.start + 1, e.span.end - 1);
      const c = fields(inner, "count", file)[0];
      counts.set(e.kind, c ? valueOf(inner, c) : "1 (default)");
    }
  }
  return {
    maxBatchSize: mbs ? valueOf(text, mbs) : undefined,
    dynamicBatching: db ? "on" : undefined,
    preferred,
    delay,
    counts,
  };
}

/** Which fields of `edits` would change `text` (for the diff and the "changed only" report). */
export function describeConfigEdits(
  text: string,
  edits: ConfigEdits,
): Array<{ field: string; before: string | undefined; after: string | undefined }> {
  const before = current(text);
  const after = current(applyConfigEdits(text, edits));
  const out: Array<{ field: string; before: string | undefined; after: string | undefined }> = [];
  const add = (field: string, b: string | undefined, a: string | undefined) => {
    if (b !== a) out.push({ field, before: b, after: a });
  };
  add("max_batch_size", before.maxBatchSize, after.maxBatchSize);
  add("dynamic_batching", before.dynamicBatching, after.dynamicBatching);
  add("dynamic_batching.preferred_batch_size", before.preferred, after.preferred);
  add("dynamic_batching.max_queue_delay_microseconds", before.delay, after.delay);
  for (const kind of new Set([...before.counts.keys(), ...after.counts.keys()]))
    add(`instance_group[${kind}].count`, before.counts.get(kind), after.counts.get(kind));
  return out;
}
