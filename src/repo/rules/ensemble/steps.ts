/**
 * The ensemble against the models it composes (core's ValidateEnsembleConfig at load time). Per
 * step: does its model exist and load, at the version asked, with batches as large as the
 * ensemble's (`checkStepModel`); are the tensors it maps its model's, every required input fed
 * (`checkStepTensors`); do types and shapes agree along each edge (`TensorAgreement`); then the
 * decoupled steps' origins (decoupled.ts).
 */
import {
  DataType,
  type ModelConfig,
  type ModelEnsembling_Step,
  type ModelInput,
  type ModelOutput,
} from "../../gen/model_config_pb.js";
import { modelNameProblem, servableName, shownName } from "../../model-name.js";
import type { ParsedConfig } from "../../parse.js";
import { quoteList } from "../../suggest.js";
import { type Reporter, dataTypeName, shapeString } from "../reporter.js";
import { versionsToLoad } from "../versions.js";
import { type RepoModel, entryPath, hintFor, stepPath } from "./config.js";
import { checkDecoupledOrigins } from "./decoupled.js";

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

const node = (type: DataType, dims: bigint[], batch: boolean, from: string): TensorNode => ({
  type,
  dims,
  full: batch ? [-1n, ...dims] : dims,
  from,
});

/**
 * Each ensemble tensor's data type and shape as the first side seen gives it (the ensemble's own
 * inputs and outputs first), every later side compared with it.
 */
class TensorAgreement {
  private readonly nodes = new Map<string, TensorNode>();
  private readonly broken: Set<string>;

  constructor(
    c: ModelConfig,
    private readonly r: Reporter,
  ) {
    const batching = c.maxBatchSize > 0;
    // Broken ensemble inputs and outputs stay out of the table, so their edges are not compared.
    for (const io of c.input)
      if (!isBroken(io))
        this.nodes.set(
          io.name,
          node(io.dataType, io.reshape ? io.reshape.shape : io.dims, batching, `ensemble input '${io.name}'`),
        );
    for (const io of c.output)
      if (!isBroken(io))
        this.nodes.set(
          io.name,
          node(io.dataType, io.reshape ? io.reshape.shape : io.dims, batching, `ensemble output '${io.name}'`),
        );
    this.broken = new Set([...c.input, ...c.output].filter(isBroken).map((io) => io.name));
  }

  agree(tensor: string, io: ModelInput | ModelOutput, batch: boolean, from: string, where: string): void {
    if (isBroken(io) || this.broken.has(tensor)) return;
    const here = node(io.dataType, io.dims, batch, from);
    const there = this.nodes.get(tensor);
    if (!there) {
      this.nodes.set(tensor, here);
      return;
    }
    if (there.type !== here.type) {
      this.r.error(
        "ensemble-type-mismatch",
        where,
        `ensemble tensor '${tensor}' is ${dataTypeName(here.type)} in ${here.from} but ${dataTypeName(there.type)} in ${there.from}`,
        "Make the data_type of both sides the same.",
      );
    } else if (!sameWithWildcard(there.dims, here.dims) && !sameWithWildcard(there.full, here.full)) {
      this.r.error(
        "ensemble-shape-mismatch",
        where,
        `ensemble tensor '${tensor}' has shape ${shapeString(here.full)} in ${here.from} but ${shapeString(there.full)} in ${there.from}`,
        "Make the dims agree (use -1 where the size varies); the batch dimension counts only when max_batch_size > 0.",
      );
    }
  }
}

/**
 * Each step's model exists and loads, its inputs and outputs are the ones mapped, every required
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
  const tensors = new TensorAgreement(c, r);
  steps.forEach((step, s) => {
    const name = step.modelName;
    if (!name) return;
    if (name === self || (cyclic.has(self) && cyclic.has(name))) return; // reported as a cycle
    const mc = checkStepModel(parsed, self, step, s, models, names, r);
    if (mc) checkStepTensors(step, s, mc, tensors, r);
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
 * The step's model: a name Triton can serve, in the repository, loading (its config without
 * errors), at the version the step asks, batching as large as the ensemble. Its config when the
 * step's tensors can be checked against it.
 */
function checkStepModel(
  parsed: ParsedConfig,
  self: string,
  step: ModelEnsembling_Step,
  s: number,
  models: Map<string, RepoModel>,
  names: Iterable<string>,
  r: Reporter,
): ModelConfig | undefined {
  const c = parsed.config;
  const name = step.modelName;
  const at = `${stepPath(s)}.model_name#value`;
  const m = models.get(name);
  const unsafe = modelNameProblem(name);
  if (unsafe) {
    const rename = servableName(name, new Set(names));
    r.error(
      "ensemble-model-name-unsafe",
      at,
      `step ${s} runs model '${shownName(name)}', a name Triton cannot serve: it ${unsafe}`,
      `Rename that model's folder to '${rename}' and write model_name: "${rename}" here.`,
    );
    return undefined;
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
    return undefined;
  }
  if (!m.parsed) {
    r.error(
      "ensemble-model-invalid",
      at,
      `step ${s} runs model '${name}', whose config.pbtxt has errors`,
      `Fix ${name} first: the ensemble cannot load without it.`,
    );
    return undefined;
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
  return mc;
}

/** The step's input_map and output_map against its model's inputs and outputs, each edge's type and shape compared. */
function checkStepTensors(
  step: ModelEnsembling_Step,
  s: number,
  mc: ModelConfig,
  tensors: TensorAgreement,
  r: Reporter,
): void {
  const name = step.modelName;
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
    tensors.agree(
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
    tensors.agree(
      tensor,
      io,
      stepBatching,
      `output '${key}' of model '${name}'`,
      `${entryPath(s, "output_map", key)}.value#value`,
    );
  }
}
