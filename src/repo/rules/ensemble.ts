import { ENSEMBLE_PLATFORM } from "../backends.js";
import {
  DataType,
  type ModelConfig,
  type ModelEnsembling_Step,
  type ModelInput,
  type ModelOutput,
} from "../gen/model_config_pb.js";
import type { ModelLayout } from "../layout.js";
import { modelNameProblem, servableName, shownName } from "../model-name.js";
import type { ParsedConfig } from "../parse.js";
import { type Reporter, dataTypeName, shapeString } from "./reporter.js";
import { codes, type RuleArea } from "./rule.js";
import { versionsToLoad } from "./versions.js";
import { cycleText, quoteList } from "../suggest.js";

export const ENSEMBLE_CODES = codes({
  "ensemble-no-steps": { severity: "error", description: "ensemble_scheduling without a step" },
  "ensemble-no-io": { severity: "error", description: "an ensemble that declares no input and no output" },
  "ensemble-instance-group": { severity: "error", description: "an ensemble with an instance_group" },
  "ensemble-optimization": { severity: "error", description: "an ensemble with optimization settings" },
  "ensemble-warmup": { severity: "error", description: "an ensemble with model_warmup" },
  "ensemble-step-model-missing": { severity: "error", description: "a step without model_name" },
  "ensemble-step-input-map-missing": { severity: "error", description: "a step without input_map" },
  "ensemble-step-output-map-missing": { severity: "error", description: "a step without output_map" },
  "ensemble-tensor-written-twice": { severity: "error", description: "an ensemble tensor that two steps write" },
  "ensemble-input-unused": { severity: "error", description: "an ensemble input no step reads" },
  "ensemble-input-overwritten": {
    severity: "warning",
    description: "a step writes a tensor of the ensemble input's name",
  },
  "ensemble-output-not-written": { severity: "error", description: "an ensemble output no step writes" },
  "ensemble-tensor-not-produced": { severity: "error", description: "a step reads a tensor nothing writes" },
  "ensemble-tensor-unused": { severity: "error", description: "a step writes a tensor nothing reads" },
  "ensemble-map-duplicate-key": {
    severity: "warning",
    description: "a step maps one of its model's tensors twice; Triton keeps the last",
  },
  "ensemble-tensor-cycle": { severity: "error", description: "the steps' tensors form a cycle" },
  "ensemble-type-mismatch": {
    severity: "error",
    description: "an ensemble tensor whose data type differs between the models that share it",
  },
  "ensemble-shape-mismatch": {
    severity: "error",
    description: "an ensemble tensor whose shape differs between the models that share it",
  },
  "ensemble-model-name-unsafe": {
    severity: "error",
    description: "a step runs a model whose name Triton cannot serve",
  },
  "ensemble-model-missing": { severity: "error", description: "a step runs a model that is not in the repository" },
  "ensemble-model-invalid": { severity: "error", description: "a step runs a model whose config has errors" },
  "ensemble-model-unavailable": {
    severity: "warning",
    description: "a step runs a model whose backend the runtime lacks",
  },
  "ensemble-model-version": { severity: "error", description: "a step names a version its model does not load" },
  "ensemble-max-batch-size": {
    severity: "error",
    description: "the ensemble allows larger batches than a step's model",
  },
  "ensemble-unknown-input": {
    severity: "error",
    description: "a step's input_map names an input its model does not have",
  },
  "ensemble-input-not-mapped": { severity: "error", description: "a step leaves inputs of its model unfed" },
  "ensemble-unknown-output": {
    severity: "error",
    description: "a step's output_map names an output its model does not have",
  },
  "ensemble-decoupled-origins": {
    severity: "error",
    description: "outputs from different origins once a step is decoupled, which Triton refuses",
  },
  "ensemble-cycle": { severity: "error", description: "ensembles that run each other" },
});

declare module "./codes.js" {
  interface CodeTables {
    ensemble: typeof ENSEMBLE_CODES;
  }
}

/** The checks of an ensemble against the models it runs: lint.ts runs them once every model has its own. */
export const ENSEMBLE: RuleArea<typeof ENSEMBLE_CODES> = {
  area: "ensemble",
  codes: ENSEMBLE_CODES,
  rules: [],
  reportedBy:
    "the checks across models (checkEnsembleGraph, checkEnsembleSteps, checkEnsembleCycles), after each model's own",
};

/** What the ensemble rules know of each model in the repository. */
export interface RepoModel {
  name: string;
  layout: ModelLayout;
  parsed?: ParsedConfig;
  /** Errors found in it so far: a model with errors will not load, nor will an ensemble running it. */
  errorCount: number;
}

export function isEnsemble(c: ModelConfig): boolean {
  return c.platform === ENSEMBLE_PLATFORM || c.schedulingChoice.case === "ensembleScheduling";
}

export function ensembleSteps(c: ModelConfig): ModelEnsembling_Step[] {
  return c.schedulingChoice.case === "ensembleScheduling" ? c.schedulingChoice.value.step : [];
}

const stepPath = (s: number) => `ensemble_scheduling.step[${s}]`;
const entryPath = (s: number, map: "input_map" | "output_map", key: string) => `${stepPath(s)}.${map}{${key}}`;

interface TensorInfo {
  name: string;
  producedBy?: { step: number; key: string };
  consumedBy: Array<{ step: number; key: string }>;
  isEnsembleInput: boolean;
  ready: boolean;
  prev: Set<string>;
  next: Set<string>;
}

/**
 * The ensemble's own graph, without looking at the composing models (core's
 * ValidateEnsembleSchedulingConfig): steps complete, each tensor written once, every ensemble
 * input read, every output written, nothing computed for nobody, no cycles.
 */
export function checkEnsembleGraph(parsed: ParsedConfig, r: Reporter): void {
  const c = parsed.config;
  if (c.schedulingChoice.case !== "ensembleScheduling") return;
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

  // An ensemble that declares neither inputs nor outputs (a config that is little more than
  // `platform: "ensemble"` and steps): one error saying what to declare, instead of every tensor
  // of the graph reported as never produced or never used.
  if (c.input.length === 0 && c.output.length === 0) {
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
    return;
  }

  const tensors = new Map<string, TensorInfo>();
  const tensor = (name: string): TensorInfo => {
    let t = tensors.get(name);
    if (!t) {
      t = { name, consumedBy: [], isEnsembleInput: false, ready: false, prev: new Set(), next: new Set() };
      tensors.set(name, t);
    }
    return t;
  };

  steps.forEach((step, s) => {
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

  const outputs = new Set(c.output.map((o) => o.name));
  // Candidates for "did you mean", listed once rather than per finding.
  let producedNames: string[] | undefined;
  let knownNames: string[] | undefined;
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

  const inCycle = reportTensorCycles(tensors, r);
  const unreadySource = unreadySources(tensors);

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

  // Triton accepts a repeated key and silently keeps the last mapping, so this is a warning.
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

/**
 * Cycles found by depth-first search, each reported once, starting at its smallest member. The
 * search keeps its own stack: an ensemble of thousands of chained steps must not exhaust the
 * call stack.
 */
export function findCycles(nodes: Iterable<string>, edges: (n: string) => Iterable<string>): string[][] {
  const state = new Map<string, 1 | 2>();
  const path: string[] = [];
  const frames: Array<Iterator<string>> = [];
  const cycles: string[][] = [];
  const keys = new Set<string>();
  const enter = (n: string): void => {
    state.set(n, 1);
    path.push(n);
    frames.push(edges(n)[Symbol.iterator]());
  };
  for (const start of [...nodes].sort()) {
    if (state.has(start)) continue;
    enter(start);
    while (frames.length) {
      const step = frames[frames.length - 1]!.next();
      if (step.done) {
        frames.pop();
        state.set(path.pop()!, 2);
        continue;
      }
      const m = step.value;
      const st = state.get(m);
      if (st === 1) {
        const cyc = path.slice(path.lastIndexOf(m));
        const min = cyc.reduce((a, b) => (b < a ? b : a));
        const k = cyc.indexOf(min);
        const norm = [...cyc.slice(k), ...cyc.slice(0, k)];
        const key = norm.join("\u0000");
        if (!keys.has(key)) {
          keys.add(key);
          cycles.push(norm);
        }
      } else if (st === undefined) {
        enter(m);
      }
    }
  }
  return cycles.sort((x, y) => (x.join("\u0000") < y.join("\u0000") ? -1 : 1));
}

interface TensorNode {
  type: DataType;
  dims: bigint[];
  full: bigint[];
  from: string;
}

const sameWithWildcard = (a: readonly bigint[], b: readonly bigint[]): boolean =>
  a.length === b.length && a.every((d, i) => d === -1n || b[i] === -1n || d === b[i]);

const badDim = (d: bigint): boolean => d < 1n && d !== -1n;

/**
 * An input or output whose data_type or dims are already errors of its own model
 * (io-data-type-missing, io-dims-missing, dims-invalid, reshape-invalid): comparing it along an
 * edge would only repeat that error as a mismatch whose hint makes no sense.
 */
const isBroken = (io: ModelInput | ModelOutput): boolean =>
  io.dataType === DataType.TYPE_INVALID ||
  io.dims.length === 0 ||
  io.dims.some(badDim) ||
  (io.reshape?.shape.some(badDim) ?? false);

/**
 * The ensemble against the models it composes (core's ValidateEnsembleConfig at load time):
 * each step's model exists and loads, its inputs and outputs are the ones mapped, every required
 * input is fed, types and shapes agree along each edge, batch sizes fit.
 */
export function checkEnsembleSteps(
  parsed: ParsedConfig,
  self: string,
  models: Map<string, RepoModel>,
  r: Reporter,
  cyclic: ReadonlySet<string> = new Set(),
  /**
   * The repository's model names, which a missing step's hint suggests from (an editor's lint
   * knows them before it has read every model).
   */
  names: Iterable<string> = models.keys(),
): void {
  const c = parsed.config;
  if (c.schedulingChoice.case !== "ensembleScheduling") return;
  const steps = c.schedulingChoice.value.step;
  const batching = c.maxBatchSize > 0;
  const nodes = new Map<string, TensorNode>();
  const node = (type: DataType, dims: bigint[], batch: boolean, from: string): TensorNode => ({
    type,
    dims,
    full: batch ? [-1n, ...dims] : dims,
    from,
  });
  // Broken ensemble inputs and outputs stay out of the table, so their edges are not compared.
  for (const io of c.input)
    if (!isBroken(io))
      nodes.set(
        io.name,
        node(io.dataType, io.reshape ? io.reshape.shape : io.dims, batching, `ensemble input '${io.name}'`),
      );
  for (const io of c.output)
    if (!isBroken(io))
      nodes.set(
        io.name,
        node(io.dataType, io.reshape ? io.reshape.shape : io.dims, batching, `ensemble output '${io.name}'`),
      );
  const broken = new Set([...c.input, ...c.output].filter(isBroken).map((io) => io.name));

  const agree = (tensor: string, io: ModelInput | ModelOutput, batch: boolean, from: string, where: string): void => {
    if (isBroken(io) || broken.has(tensor)) return;
    const here = node(io.dataType, io.dims, batch, from);
    const there = nodes.get(tensor);
    if (!there) {
      nodes.set(tensor, here);
      return;
    }
    if (there.type !== here.type) {
      r.error(
        "ensemble-type-mismatch",
        where,
        `ensemble tensor '${tensor}' is ${dataTypeName(here.type)} in ${here.from} but ${dataTypeName(there.type)} in ${there.from}`,
        "Make the data_type of both sides the same.",
      );
    } else if (!sameWithWildcard(there.dims, here.dims) && !sameWithWildcard(there.full, here.full)) {
      r.error(
        "ensemble-shape-mismatch",
        where,
        `ensemble tensor '${tensor}' has shape ${shapeString(here.full)} in ${here.from} but ${shapeString(there.full)} in ${there.from}`,
        "Make the dims agree (use -1 where the size varies); the batch dimension counts only when max_batch_size > 0.",
      );
    }
  };

  steps.forEach((step, s) => {
    const name = step.modelName;
    if (!name) return;
    const at = `${stepPath(s)}.model_name#value`;
    const m = models.get(name);
    if (name === self || (cyclic.has(self) && cyclic.has(name))) return; // reported as a cycle
    const unsafe = modelNameProblem(name);
    if (unsafe) {
      const rename = servableName(name, new Set(names));
      r.error(
        "ensemble-model-name-unsafe",
        at,
        `step ${s} runs model '${shownName(name)}', a name Triton cannot serve: it ${unsafe}`,
        `Rename that model's folder to '${rename}' and write model_name: "${rename}" here.`,
      );
      return;
    }
    if (!m) {
      r.error(
        "ensemble-model-missing",
        at,
        `step ${s} runs model '${name}', which is not in the repository`,
        hintFor(
          r,
          name,
          [...names].filter((n) => n !== self),
          "model",
        ),
      );
      return;
    }
    if (!m.parsed) {
      r.error(
        "ensemble-model-invalid",
        at,
        `step ${s} runs model '${name}', whose config.pbtxt has errors`,
        `Fix ${name} first: the ensemble cannot load without it.`,
      );
      return;
    }
    if (m.errorCount > 0) {
      r.error(
        "ensemble-model-invalid",
        at,
        `step ${s} runs model '${name}', which has ${m.errorCount} error${m.errorCount === 1 ? "" : "s"} and will not load`,
        `Fix ${name} first: the ensemble cannot load without it.`,
      );
    }
    const mc = m.parsed.config;
    // Without any version folder the model has its own error (version-missing); no version fits.
    if (step.modelVersion !== -1n && m.layout.versions.length > 0) {
      // An omitted model_version is 0, and Triton then requires version 0, not the latest.
      const v = Number(step.modelVersion);
      const { load } = versionsToLoad(mc, m.layout);
      if (!load.includes(v)) {
        const omitted = !parsed.source.has(`${stepPath(s)}.model_version`);
        r.error(
          "ensemble-model-version",
          omitted ? stepPath(s) : `${stepPath(s)}.model_version#value`,
          omitted
            ? `step ${s} has no model_version, so Triton requires version 0 of '${name}', which ${m.layout.versions.some((x) => x.version === 0) ? "its version_policy does not load" : "does not exist"}`
            : `step ${s} wants version ${v} of '${name}', which ${m.layout.versions.some((x) => x.version === v) ? "its version_policy does not load" : "does not exist"}`,
          "Write model_version: -1 to use the latest loaded version.",
        );
      }
    }
    // A negative max_batch_size on either side is an error of its own (max-batch-size-negative).
    if (mc.maxBatchSize > 0 && c.maxBatchSize >= 0 && mc.maxBatchSize < c.maxBatchSize) {
      r.error(
        "ensemble-max-batch-size",
        at,
        `the ensemble allows batches of ${c.maxBatchSize}, but step ${s}'s model '${name}' allows only ${mc.maxBatchSize}`,
        `Lower the ensemble's max_batch_size to ${mc.maxBatchSize}, or raise ${name}'s.`,
      );
    }
    const stepBatching = mc.maxBatchSize > 0;
    const inputs = new Map(mc.input.map((i) => [i.name, i]));
    const outputs = new Map(mc.output.map((o) => [o.name, o]));
    for (const [key, tensor] of Object.entries(step.inputMap)) {
      const io = inputs.get(key);
      if (!io) {
        r.error(
          "ensemble-unknown-input",
          `${entryPath(s, "input_map", key)}.key#value`,
          `model '${name}' has no input '${key}'`,
          hintFor(r, key, inputs.keys(), "input"),
        );
        continue;
      }
      agree(
        tensor,
        io,
        stepBatching,
        `input '${key}' of model '${name}'`,
        `${entryPath(s, "input_map", key)}.value#value`,
      );
    }
    // An unnamed input is an error of its own model (io-name-missing): it cannot be mapped by name.
    const missing = mc.input
      .filter((i) => i.name && !i.optional && !Object.hasOwn(step.inputMap, i.name))
      .map((i) => i.name);
    if (missing.length > 0) {
      r.error(
        "ensemble-input-not-mapped",
        stepPath(s),
        `step ${s} does not feed ${missing.length === 1 ? "input" : "inputs"} ${quoteList(missing, "and")} of model '${name}'`,
        `Add input_map { key: "${missing[0]}" value: "<tensor>" } to step ${s}${missing.length > 1 ? " (one per input)" : ""}, or mark the input optional in ${name}.`,
      );
    }
    for (const [key, tensor] of Object.entries(step.outputMap)) {
      const io = outputs.get(key);
      if (!io) {
        r.error(
          "ensemble-unknown-output",
          `${entryPath(s, "output_map", key)}.key#value`,
          `model '${name}' has no output '${key}'`,
          hintFor(r, key, outputs.keys(), "output"),
        );
        continue;
      }
      agree(
        tensor,
        io,
        stepBatching,
        `output '${key}' of model '${name}'`,
        `${entryPath(s, "output_map", key)}.value#value`,
      );
    }
  });
  checkDecoupledOrigins(
    self,
    c.input.map((i) => i.name),
    c.output.map((o) => o.name),
    steps,
    models,
    r,
  );
}

/**
 * Whether Triton holds this model as decoupled: its config says so, or it is an ensemble one of
 * whose steps runs a decoupled model (core's ValidateEnsembleConfig sets the ensemble's
 * model_transaction_policy.decoupled when any of its steps gave a decoupled label, so an
 * ensemble running it sees it decoupled).
 */
export function heldDecoupled(
  name: string,
  models: ReadonlyMap<string, RepoModel>,
  seen: Set<string> = new Set(),
): boolean {
  const c = models.get(name)?.parsed?.config;
  if (!c || seen.has(name)) return false;
  if (c.modelTransactionPolicy?.decoupled === true) return true;
  if (!isEnsemble(c)) return false;
  seen.add(name);
  return ensembleSteps(c).some((s) => heldDecoupled(s.modelName, models, seen));
}

/** The origin of what the ensemble's request carries; a decoupled step's outputs have the step as theirs. */
const REQUEST = -1;

/**
 * core's ValidateEnsembleConfig (ensemble_utils.cc), which walks the tensors from the ensemble's
 * inputs: each tensor gets a decouple label, the request's for the inputs, a new one for the
 * outputs of each step running a decoupled model (the outputs of one step share it), and its
 * inputs' label for the outputs of any other step. A tensor whose producers' inputs carry
 * different labels is refused ("in ensemble e, step of model 'x' receives inputs originated from
 * different decoupled models", x being whichever model's config first named the tensor, the
 * ensemble's for its outputs; measured on 2.51): the responses of a decoupled model arrive on
 * their own, so Triton could not tell which inputs belong together. So a step is refused when its
 * inputs come from two decoupled steps (two steps of the same model included), or from one and
 * the ensemble's request (measured); the ensemble's outputs are held to the same rule. A step
 * running an ensemble that has a decoupled step is a decoupled step (heldDecoupled; measured).
 */
function checkDecoupledOrigins(
  self: string,
  ensembleInputs: readonly string[],
  ensembleOutputs: readonly string[],
  steps: readonly ModelEnsembling_Step[],
  models: Map<string, RepoModel>,
  r: Reporter,
): void {
  const decoupled = steps.map((s) => heldDecoupled(s.modelName, models, new Set([self])));
  if (!decoupled.includes(true)) return;
  const origins = new Map<string, Set<number>>(ensembleInputs.map((t) => [t, new Set([REQUEST])]));
  const originsOf = (tensors: readonly string[]): Set<number> =>
    new Set(tensors.flatMap((t) => [...(origins.get(t) ?? [])]));
  const stepOrigins = (step: ModelEnsembling_Step) => originsOf(Object.values(step.inputMap));
  // Each pass carries origins one step further along the graph, so as many passes as steps reach
  // every tensor (a cycle is reported elsewhere and only ends the loop early here).
  for (let pass = 0; pass < steps.length; pass++) {
    let changed = false;
    steps.forEach((step, s) => {
      const from = decoupled[s] ? new Set([s]) : stepOrigins(step);
      for (const t of Object.values(step.outputMap)) {
        const had = origins.get(t) ?? new Set<number>();
        const merged = new Set([...had, ...from]);
        if (merged.size !== had.size) {
          origins.set(t, merged);
          changed = true;
        }
      }
    });
    if (!changed) break;
  }
  const named = (from: Set<number>) =>
    [...from]
      .sort((a, b) => a - b)
      .map((o) => (o === REQUEST ? "the ensemble's request" : `step ${o} ('${steps[o]!.modelName}', decoupled)`))
      .join(" and ");
  const fix =
    "Feed it from one decoupled step only (or make the others not decoupled), or merge their outputs in one model first.";
  steps.forEach((step, s) => {
    const from = stepOrigins(step);
    if (from.size < 2) return;
    r.error(
      "ensemble-decoupled-origins",
      `${stepPath(s)}.model_name#value`,
      `step ${s} runs '${step.modelName}' on inputs that come from ${named(from)}, and Triton refuses a step whose inputs come from different origins once one is a decoupled model ("in ensemble ${self}, step of model '...' receives inputs originated from different decoupled models"): their responses arrive independently`,
      fix,
    );
  });
  const out = originsOf(ensembleOutputs);
  if (out.size >= 2) {
    r.error(
      "ensemble-decoupled-origins",
      "output",
      `the ensemble's outputs come from ${named(out)}, and Triton refuses outputs from different origins once one is a decoupled model ("in ensemble ${self}, step of model '${self}' receives inputs originated from different decoupled models"): their responses arrive independently`,
      fix,
    );
  }
}

function hintFor(r: Reporter, name: string, candidates: Iterable<string>, what: string): string {
  const list = [...candidates];
  const near = r.suggest(name, list);
  if (near) return `Did you mean '${near}'?`;
  if (list.length === 0) return `It declares no ${what}s.`;
  return list.length <= 8 ? `Its ${what}s are ${quoteList(list)}.` : `Check the ${what} names.`;
}

/** Ensembles that (directly or through other ensembles) run each other. */
export function checkEnsembleCycles(
  models: Map<string, RepoModel>,
  reporterFor: (model: string) => Reporter,
): Set<string> {
  const cyclic = new Set<string>();
  const ensembles = [...models.values()].filter((m) => m.parsed && isEnsemble(m.parsed.config));
  const edges = (n: string): string[] => {
    const m = models.get(n);
    if (!m?.parsed) return [];
    return ensembleSteps(m.parsed.config)
      .map((s) => s.modelName)
      .filter((x) => {
        const t = models.get(x);
        return !!t?.parsed && isEnsemble(t.parsed.config);
      });
  };
  for (const cycle of findCycles(
    ensembles.map((e) => e.name),
    edges,
  )) {
    cycle.forEach((n) => cyclic.add(n));
    const text = cycleText(cycle);
    cycle.forEach((n, i) => {
      const target = cycle[(i + 1) % cycle.length]!;
      const steps = ensembleSteps(models.get(n)!.parsed!.config);
      const s = steps.findIndex((st) => st.modelName === target);
      reporterFor(n).error(
        "ensemble-cycle",
        `${stepPath(s)}.model_name#value`,
        cycle.length === 1 ? `ensemble '${n}' runs itself` : `ensembles run each other in a cycle: ${text}`,
        "An ensemble cannot depend on itself; break the cycle by running a different model in one step.",
      );
    });
  }
  return cyclic;
}
