/**
 * The plan of an edit: what changes, where in the text, and what the result must mean when parsed
 * again (the edit applied to the parsed message). Each field tune edits has its own planner.
 */
import { clone, create } from "@bufbuild/protobuf";
import { REPORT_URL_HINT } from "../../errors.js";
import { DiagnosticError } from "../diagnostics.js";
import {
  type ModelConfig,
  ModelConfigSchema,
  ModelDynamicBatchingSchema,
  ModelInstanceGroupSchema,
  ModelInstanceGroup_Kind,
} from "../gen/model_config_pb.js";
import { type ParsedConfig, parseModelConfig } from "../parse.js";
import { type FieldNode, type MessageNode, parseTree } from "../textproto.js";
import {
  Layout,
  Rewrite,
  appendTop,
  cutField,
  insertAfter,
  insertFirst,
  insertLast,
  renderList,
  renderMessage,
} from "./layout.js";
import { type ConfigEditChange, ConfigEditError, type ConfigEdits } from "./types.js";

const INT32_MAX = 2 ** 31 - 1;

export interface Plan {
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

/** What every field's planner reads and adds to. */
interface PlanContext {
  file: string;
  parsed: ParsedConfig;
  config: ModelConfig;
  root: MessageNode;
  l: Layout;
  r: Rewrite;
  /** The parsed message with the edits applied: what the result must parse to. */
  expected: ModelConfig;
  changes: ConfigEditChange[];
  /** How the file writes a message-valued field: `name {` or `name: {`. */
  sep: string;
}

export function plan(text: string, edits: ConfigEdits, file: string): Plan {
  validateEdits(edits, file);
  const { parsed, layout: l, root } = parseOrRefuse(text, file);
  const config = parsed.config;
  const p: PlanContext = {
    file,
    parsed,
    config,
    root,
    l,
    r: new Rewrite(),
    expected: clone(ModelConfigSchema, config),
    changes: [],
    sep: colonStyle(root),
  };
  if (edits.maxBatchSize !== undefined && config.maxBatchSize !== edits.maxBatchSize)
    planMaxBatchSize(p, edits.maxBatchSize);
  planDynamicBatching(p, edits.dynamicBatching);
  if (edits.instanceCounts?.length) planInstances(p, edits.instanceCounts);
  return { changes: p.changes, rewrite: p.r, expected: p.expected, layout: l };
}

/** max_batch_size: its value replaced, or the field written beside the model's identity. */
function planMaxBatchSize(p: PlanContext, n: number): void {
  const { r, l, root, config, expected, changes } = p;
  expected.maxBatchSize = n;
  const field = topFields(root, "max_batch_size")[0];
  if (field && field.value.kind === "scalar") {
    r.replace(field.value.pos.offset, field.value.token.end, String(n));
    changes.push({ field: "max_batch_size", before: String(config.maxBatchSize), after: String(n) });
  } else {
    // Beside the model's identity (name, platform, backend), where Triton's examples write it.
    const anchor = root.fields.filter((f) => f.name === "name" || f.name === "platform" || f.name === "backend").at(-1);
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

/**
 * dynamic_batching: the block removed, or its preferred_batch_size and max_queue_delay_microseconds
 * set (the block created when absent), every other field of it kept.
 */
function planDynamicBatching(p: PlanContext, db: ConfigEdits["dynamicBatching"]): void {
  const { r, l, root, expected, changes } = p;
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
  } else if (db) planDynamicBatchingFields(p, db, dbNode);
}

/** dynamic_batching's fields set, in the block where the file has one, else in a new block at the end. */
function planDynamicBatchingFields(
  p: PlanContext,
  db: Exclude<ConfigEdits["dynamicBatching"], false | undefined>,
  dbNode: MessageNode | undefined,
): void {
  const { r, l, config, expected, changes, sep, parsed, file } = p;
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
  const pbsChanged = pbs !== undefined && (pbs.length !== currentPbs.length || pbs.some((v, i) => v !== currentPbs[i]));
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

interface GroupEntry {
  node: MessageNode;
  /** The field holding it: a block `instance_group { }` or a list `instance_group [ ... ]`. */
  field: FieldNode;
}

/**
 * instance_group: the count of each kind's first entry set, a kind without an entry added to the
 * list or as a block after the last, as the file writes them.
 */
function planInstances(p: PlanContext, counts: NonNullable<ConfigEdits["instanceCounts"]>): void {
  const { r, l, root, config, expected, changes, sep } = p;
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
