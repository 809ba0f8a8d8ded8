/**
 * The ensemble's own graph, without looking at the composing models (core's
 * ValidateEnsembleSchedulingConfig). Each part answers one question, in the order Triton asks:
 * does the config hold only what an ensemble takes, does each step name a model and map its
 * tensors, is each tensor written once, is every ensemble input read, is every output written,
 * is anything computed for nobody, do the steps feed each other in a cycle.
 */
import type { ModelConfig, ModelEnsembling_Step } from "../../gen/model_config_pb.js";
import type { ParsedConfig } from "../../parse.js";
import { cycleText } from "../../suggest.js";
import type { Reporter } from "../reporter.js";
import { entryPath, findCycles, stepPath } from "./config.js";

interface TensorInfo {
  name: string;
  producedBy?: { step: number; key: string };
  consumedBy: Array<{ step: number; key: string }>;
  isEnsembleInput: boolean;
  ready: boolean;
  prev: Set<string>;
  next: Set<string>;
}

type Tensors = Map<string, TensorInfo>;

/**
 * The ensemble's own graph: steps complete, each tensor written once, every ensemble input read,
 * every output written, nothing computed for nobody, no cycles.
 */
export function checkEnsembleGraph(parsed: ParsedConfig, r: Reporter): void {
  const c = parsed.config;
  if (c.schedulingChoice.case !== "ensembleScheduling") return;
  checkEnsembleTakesNoSettings(c, r);
  const steps = c.schedulingChoice.value.step;
  if (steps.length === 0) {
    r.error(
      "ensemble-no-steps",
      "ensemble_scheduling",
      "the ensemble has no step",
      'Add step [ { model_name: "..." input_map {...} output_map {...} } ].',
    );
    return;
  }
  if (c.input.length === 0 && c.output.length === 0) {
    reportNoInputsOrOutputs(steps, r);
    return;
  }

  const tensors = buildTensorGraph(parsed, steps, r);
  const queue = checkEnsembleInputs(c, tensors, r);
  markReady(queue, tensors);
  const inCycle = reportTensorCycles(tensors, r);
  const unreadySource = unreadySources(tensors);
  checkOutputsWritten(c, tensors, inCycle, unreadySource, r);
  checkTensorsFlow(c, tensors, inCycle, unreadySource, r);
  checkDuplicateMapKeys(parsed, steps, r);
}

/** What the composing models set for themselves: instances, optimization, warm-up. */
function checkEnsembleTakesNoSettings(c: ModelConfig, r: Reporter): void {
  if (c.instanceGroup.length > 0) {
    r.error(
      "ensemble-instance-group",
      "instance_group",
      "an ensemble takes no instance_group",
      "Delete instance_group: each composing model sets its own instances.",
    );
  }
  if (c.optimization) {
    r.error(
      "ensemble-optimization",
      "optimization",
      "an ensemble takes no optimization",
      "Delete optimization: set it on the composing models.",
    );
  }
  if (c.modelWarmup.length > 0) {
    r.error(
      "ensemble-warmup",
      "model_warmup",
      "an ensemble takes no model_warmup",
      "Delete model_warmup: warm up the composing models instead.",
    );
  }
}

/**
 * An ensemble that declares neither inputs nor outputs (a config that is little more than
 * `platform: "ensemble"` and steps): one error saying what to declare, instead of every tensor
 * of the graph reported as never produced or never used.
 */
function reportNoInputsOrOutputs(steps: readonly ModelEnsembling_Step[], r: Reporter): void {
  const read = new Set(steps.flatMap((st) => Object.values(st.inputMap)));
  const written = new Set(steps.flatMap((st) => Object.values(st.outputMap)));
  const ins = [...read].filter((t) => !written.has(t));
  const outs = [...written].filter((t) => !read.has(t));
  const list = (names: string[], what: string) => (names.length ? `${what} (${names.join(", ")})` : "");
  r.error(
    "ensemble-no-io",
    "ensemble_scheduling",
    "the ensemble declares no input and no output: Triton needs both to know what a request carries and what it returns",
    `Declare input [ ... ] and output [ ... ] with name, data_type and dims as the composing models have them: ${[list(ins, "inputs for the tensors no step writes"), list(outs, "outputs for those no step reads")].filter(Boolean).join(", and ") || "name the tensors the steps read first and write last"}.`,
  );
}

/**
 * The tensors as the steps read and write them, each tensor's producer and readers, and the
 * edges from what a step reads to what it writes; a step missing its model or a map, and a
 * tensor written twice, reported on the way.
 */
function buildTensorGraph(parsed: ParsedConfig, steps: readonly ModelEnsembling_Step[], r: Reporter): Tensors {
  const tensors: Tensors = new Map();
  const tensor = (name: string): TensorInfo => {
    let t = tensors.get(name);
    if (!t) {
      t = { name, consumedBy: [], isEnsembleInput: false, ready: false, prev: new Set(), next: new Set() };
      tensors.set(name, t);
    }
    return t;
  };

  steps.forEach((step, s) => {
    checkStepComplete(step, s, r);
    const written: string[] = [];
    for (const [key, name] of Object.entries(step.outputMap)) {
      const t = tensor(name);
      if (t.producedBy) {
        const first = t.producedBy;
        const at = parsed.source.valueAt(`${entryPath(first.step, "output_map", first.key)}.value`);
        r.error(
          "ensemble-tensor-written-twice",
          `${entryPath(s, "output_map", key)}.value#value`,
          `ensemble tensor '${name}' is written more than once (step ${first.step} writes it too, at ${at.line}:${at.column})`,
          "Give each produced tensor its own name.",
        );
        continue;
      }
      t.producedBy = { step: s, key };
      written.push(name);
    }
    for (const [key, name] of Object.entries(step.inputMap)) {
      const t = tensor(name);
      t.consumedBy.push({ step: s, key });
      for (const w of written) {
        t.next.add(w);
        tensor(w).prev.add(name);
      }
    }
  });
  return tensors;
}

/** A step names the model it runs, what it reads and what it writes. */
function checkStepComplete(step: ModelEnsembling_Step, s: number, r: Reporter): void {
  const p = stepPath(s);
  if (!step.modelName)
    r.error(
      "ensemble-step-model-missing",
      p,
      `step ${s} has no model_name`,
      'Name the model this step runs: model_name: "...".',
    );
  if (Object.keys(step.inputMap).length === 0)
    r.error(
      "ensemble-step-input-map-missing",
      p,
      `step ${s} has no input_map`,
      'Map each input of the step\'s model to an ensemble tensor: input_map { key: "<model input>" value: "<tensor>" }.',
    );
  if (Object.keys(step.outputMap).length === 0)
    r.error(
      "ensemble-step-output-map-missing",
      p,
      `step ${s} has no output_map`,
      'Map at least one output of the step\'s model to an ensemble tensor: output_map { key: "<model output>" value: "<tensor>" }.',
    );
}

/**
 * Every ensemble input read by a step and written by none; the inputs are the graph's sources,
 * ready from the start (returned in order, to walk from).
 */
function checkEnsembleInputs(c: ModelConfig, tensors: Tensors, r: Reporter): TensorInfo[] {
  const queue: TensorInfo[] = [];
  // An unnamed input or output is an error of its own (io-name-missing), not a graph problem.
  c.input.forEach((input, i) => {
    if (!input.name) return;
    const t = tensors.get(input.name);
    if (!t || t.consumedBy.length === 0) {
      if (t?.producedBy) return; // reported below as an overwritten input
      r.error(
        "ensemble-input-unused",
        `input[${i}]`,
        `ensemble input '${input.name}' is not used by any step`,
        "Map it into a step's input_map, or remove it from the ensemble's inputs.",
      );
      return;
    }
    t.isEnsembleInput = true;
    t.ready = true;
    queue.push(t);
  });
  c.input.forEach((input) => {
    const t = tensors.get(input.name);
    if (t?.producedBy) {
      t.isEnsembleInput = true;
      t.ready = true;
      r.warning(
        "ensemble-input-overwritten",
        `${entryPath(t.producedBy.step, "output_map", t.producedBy.key)}.value#value`,
        `step ${t.producedBy.step} writes '${input.name}', which is an ensemble input`,
        "Write the step's output to a new tensor name.",
      );
    }
  });
  return queue;
}

/** Walks from the ready tensors: a tensor is ready once everything its step reads is. */
function markReady(queue: TensorInfo[], tensors: Tensors): void {
  while (queue.length) {
    const t = queue.shift()!;
    for (const n of t.next) {
      const nt = tensors.get(n)!;
      if (nt.ready) continue;
      if ([...nt.prev].every((p) => tensors.get(p)?.ready)) {
        nt.ready = true;
        queue.push(nt);
      }
    }
  }
}

/** Every ensemble output written by a step that can run. */
function checkOutputsWritten(
  c: ModelConfig,
  tensors: Tensors,
  inCycle: ReadonlySet<string>,
  unreadySource: (t: TensorInfo) => string,
  r: Reporter,
): void {
  const outputs = new Set(c.output.map((o) => o.name));
  // Candidates for "did you mean", listed once rather than per finding.
  let producedNames: string[] | undefined;
  c.output.forEach((output, i) => {
    if (!output.name) return;
    const t = tensors.get(output.name);
    if (!t || !t.producedBy) {
      if (t?.isEnsembleInput) return;
      producedNames ??= [...tensors.values()].filter((x) => x.producedBy && !outputs.has(x.name)).map((x) => x.name);
      const near = r.suggest(output.name, producedNames);
      r.error(
        "ensemble-output-not-written",
        `output[${i}]`,
        `ensemble output '${output.name}' is not written by any step`,
        near
          ? `Did you mean '${near}'? Map a model output to '${output.name}' in a step's output_map.`
          : `Map a model output to '${output.name}' in a step's output_map.`,
      );
      return;
    }
    if (!t.ready && !inCycle.has(t.name)) {
      const culprit = unreadySource(t);
      r.error(
        "ensemble-output-not-written",
        `output[${i}]`,
        culprit && culprit !== t.name
          ? `ensemble output '${output.name}' can never be written: it depends on '${culprit}', which nothing produces`
          : `ensemble output '${output.name}' can never be written`,
        culprit && culprit !== t.name
          ? `Produce '${culprit}' in an earlier step's output_map, or make it an ensemble input.`
          : "Make every tensor the step writing it reads come from an ensemble input or an earlier step.",
      );
    }
  });
}

/**
 * The tensors between the steps: each one read is written first (or is an ensemble input), each
 * one written is read by a later step or is an output, and each can be computed.
 */
function checkTensorsFlow(
  c: ModelConfig,
  tensors: Tensors,
  inCycle: ReadonlySet<string>,
  unreadySource: (t: TensorInfo) => string,
  r: Reporter,
): void {
  const outputs = new Set(c.output.map((o) => o.name));
  // Candidates for "did you mean", listed once rather than per finding.
  let knownNames: string[] | undefined;
  for (const t of tensors.values()) {
    if (outputs.has(t.name) || inCycle.has(t.name)) continue;
    if (!t.producedBy && !t.isEnsembleInput) {
      const use = t.consumedBy[0]!;
      // Every ensemble input, used or not: a typo in the only step reading one leaves it unused.
      knownNames ??= [
        ...new Set([
          ...[...tensors.values()].filter((x) => x.producedBy || x.isEnsembleInput).map((x) => x.name),
          ...c.input.map((x) => x.name).filter(Boolean),
        ]),
      ];
      const near = r.suggest(t.name, knownNames);
      r.error(
        "ensemble-tensor-not-produced",
        `${entryPath(use.step, "input_map", use.key)}.value#value`,
        `step ${use.step} reads ensemble tensor '${t.name}', but no step writes it and it is not an ensemble input`,
        near
          ? `Did you mean '${near}'?`
          : "Write it in an earlier step's output_map, or add it to the ensemble's inputs.",
      );
      continue;
    }
    if (t.producedBy && t.next.size === 0) {
      // A typo of an ensemble output that nothing writes is the likeliest reason.
      const near = r.suggest(
        t.name,
        c.output.map((o) => o.name).filter((n) => n && !tensors.get(n)?.producedBy),
      );
      r.error(
        "ensemble-tensor-unused",
        `${entryPath(t.producedBy.step, "output_map", t.producedBy.key)}.value#value`,
        `ensemble tensor '${t.name}' written by step ${t.producedBy.step} is never used`,
        `${near ? `Did you mean '${near}'? ` : ""}Feed it to a later step or an ensemble output, or remove it from output_map (mapping every model output is optional).`,
      );
      continue;
    }
    if (t.producedBy && !t.ready) {
      const culprit = unreadySource(t);
      r.error(
        "ensemble-tensor-unused",
        `${entryPath(t.producedBy.step, "output_map", t.producedBy.key)}.value#value`,
        culprit && culprit !== t.name
          ? `ensemble tensor '${t.name}' can never be computed: it depends on '${culprit}', which nothing produces`
          : `ensemble tensor '${t.name}' can never be computed`,
        culprit && culprit !== t.name
          ? `Produce '${culprit}' in an earlier step's output_map, or make it an ensemble input.`
          : "Make every tensor the step writing it reads come from an ensemble input or an earlier step.",
      );
    }
  }
}

/** A step mapping one of its model's tensors twice. Triton accepts it and silently keeps the last, so a warning. */
function checkDuplicateMapKeys(parsed: ParsedConfig, steps: readonly ModelEnsembling_Step[], r: Reporter): void {
  for (const d of parsed.source.duplicateKeys) {
    const m = /^ensemble_scheduling\.step\[(\d+)\]\.(input|output)_map\{/.exec(d.path);
    if (!m) continue;
    const s = Number(m[1]);
    const step = steps[s];
    const model = step?.modelName ? `model '${step.modelName}'` : "the step's model";
    const kept = m[2] === "input" ? step?.inputMap[d.key] : step?.outputMap[d.key];
    r.warning(
      "ensemble-map-duplicate-key",
      d.second,
      `${m[2]} '${d.key}' of ${model} is mapped twice in step ${s} (first at ${d.first.line}:${d.first.column}); Triton uses only the last mapping${kept !== undefined ? `, to '${kept}'` : ""}`,
      m[2] === "input"
        ? "Map each model input exactly once."
        : "Map each model output once; give a second tensor its own step output.",
    );
  }
}

/**
 * Follows not-ready inputs back to a tensor nothing produces (Triton names it the same way). The
 * walks are remembered: every tensor after a break in a chain of thousands of steps asks, and
 * walking the chain again for each would take quadratic time.
 */
function unreadySources(tensors: Map<string, TensorInfo>): (t: TensorInfo) => string {
  const memo = new Map<string, string>();
  return (t) => {
    const walked: string[] = [];
    const seen = new Set<string>();
    let cur: TensorInfo | undefined = t;
    let found = t.name;
    while (cur) {
      const known = memo.get(cur.name);
      if (known !== undefined) {
        found = known;
        break;
      }
      seen.add(cur.name);
      walked.push(cur.name);
      found = cur.name;
      const nextBad: string | undefined = [...cur.prev].find((p) => !tensors.get(p)?.ready && !seen.has(p));
      cur = nextBad ? tensors.get(nextBad) : undefined;
    }
    for (const n of walked) memo.set(n, found);
    return found;
  };
}

/** `0, 1 and 2`; a long list of steps shows its first ones and a count. */
function stepList(steps: readonly number[]): string {
  if (steps.length <= 8)
    return steps.length === 1 ? String(steps[0]) : `${steps.slice(0, -1).join(", ")} and ${steps[steps.length - 1]}`;
  return `${steps.slice(0, 8).join(", ")} and ${steps.length - 8} more`;
}

/** Reports each cycle between ensemble tensors once; returns the tensors on cycles. */
function reportTensorCycles(tensors: Map<string, TensorInfo>, r: Reporter): Set<string> {
  const onCycle = new Set<string>();
  // Writing an ensemble input again closes no cycle for Triton (inputs are ready from the start);
  // that case gets its own warning above.
  const edges = (n: string): string[] =>
    [...(tensors.get(n)?.next ?? [])].filter((m) => !tensors.get(m)?.isEnsembleInput);
  for (const cycle of findCycles([...tensors.keys()], edges)) {
    cycle.forEach((n) => onCycle.add(n));
    const first = tensors.get(cycle[0]!)!;
    const steps = cycle.map((n) => tensors.get(n)?.producedBy?.step).filter((s): s is number => s !== undefined);
    const where = first.producedBy
      ? `${entryPath(first.producedBy.step, "output_map", first.producedBy.key)}.value#value`
      : "ensemble_scheduling";
    r.error(
      "ensemble-tensor-cycle",
      where,
      `ensemble tensors form a cycle: ${cycleText(cycle)}`,
      `Steps ${stepList([...new Set(steps)].sort((a, b) => a - b))} feed each other; one of them must read a tensor produced earlier instead.`,
    );
  }
  return onCycle;
}
