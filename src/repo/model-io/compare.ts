import path from "node:path";
import fsp from "node:fs/promises";
import type { ModelConfigJson, ModelInputJson, ModelOutputJson } from "../model-config.js";
import { type ModelContext, type Reporter, tensorRtCompletes, versionsToLoad } from "../rules.js";
import { DataType } from "../gen/model_config_pb.js";
import { type ModelTensor, OnnxReadError, readOnnxModel } from "./onnx.js";
import { OpenVinoReadError, readOpenVinoModel } from "./openvino.js";
import { checkTorchScriptNames } from "./torchscript.js";

/**
 * Compares a model's config with its model file the way Triton's backends do when they load it
 * (onnxruntime_backend's ValidateInputs/ValidateOutputs and AutoCompleteConfig; the openvino
 * backend follows the same rules): the config gives the model as many inputs as it has (each
 * backend's count, checkInputCount), every config tensor must be one of the model's, with its data
 * type, and dims that the model's shape accepts once the batch dimension is taken off. With
 * auto-complete on (Triton's default) the backend first fills in what the config leaves out (see
 * complete: all inputs or outputs when the config lists none, max_batch_size when every tensor's
 * first dimension is variable, never a listed tensor's fields); what it fills is not an error.
 * The local runtime has neither backend, so these verdicts are derived from the backends' rules,
 * not measured (test/repo/model-io/conformance-cases.ts says which).
 *
 * TensorRT plans and TensorFlow SavedModels/GraphDefs cannot be read without the vendor runtime:
 * they are reported as not checked (a warning), never passed as clean.
 */

/** Triton's default-max-batch-size backend setting, which auto-complete gives a batching model. */
export const DEFAULT_MAX_BATCH_SIZE = 4;

/** What lint knows of how Triton completes this model's config, for `lint --explain`. */
export interface ModelIOReport {
  /** The model file read (the first version Triton loads). */
  file: string;
  autoComplete: boolean;
  /** True when auto-complete was not told (LintOptions.autoComplete undefined) and Triton's default was assumed. */
  assumed: boolean;
  /** The config as Triton would hold it after auto-complete (the file's when auto-complete is off). */
  completed: ModelConfigJson;
  /** What auto-complete filled in, one phrase each ("input 'x' data_type TYPE_FP32"). */
  filled: string[];
}

interface Tensors {
  inputs: ModelTensor[];
  outputs: ModelTensor[];
  /** ONNX initializers a request may override (OnnxModelInfo.overridable); none for OpenVINO. */
  overridable?: ModelTensor[];
}

type Kind = "input" | "output";

const shape = (dims: readonly number[] | undefined): string => (dims ? `[${dims.join(",")}]` : "(no shape)");

/** The model file of a version for this backend: a directory model.onnx holds its model.onnx. */
async function modelFileOf(dir: string, file: string, backend: string): Promise<string> {
  const full = path.join(dir, file);
  if (backend === "onnxruntime") {
    const st = await fsp.stat(full).catch(() => undefined);
    if (st?.isDirectory()) return path.join(full, "model.onnx");
  }
  return full;
}

/**
 * Reads each model file Triton loads for this model and compares it with the config, reporting
 * on `r`; returns how Triton completes the config (from the first version it loads), or undefined
 * when no model file was read.
 */
export async function checkModelIO(ctx: ModelContext, r: Reporter): Promise<ModelIOReport | undefined> {
  const c = ctx.parsed.config;
  const backend = ctx.autofill.backend;
  if (!backend) return undefined;
  const rel = (p: string) => path.relative(path.dirname(ctx.layout.dir), p);
  const { load } = versionsToLoad(c, ctx.layout);
  const versions = load.map((n) => ctx.layout.versions.find((v) => v.version === n)!).filter(Boolean);
  const where = c.backend ? "backend#value" : c.platform ? "platform#value" : undefined;
  if (backend === "tensorrt" || backend === "tensorflow") {
    if (versions.length === 0) return undefined;
    const what = backend === "tensorrt" ? "a TensorRT plan" : "a TensorFlow model";
    // The TensorRT backend completes a listed tensor's data_type and dims from the plan (rules.ts tensorRtCompletes).
    const left =
      backend === "tensorrt" && tensorRtCompletes(ctx)
        ? [...c.input.map((io) => ({ io, kind: "input" })), ...c.output.map((io) => ({ io, kind: "output" }))]
            .filter(({ io }) => io.name && (io.dims.length === 0 || io.dataType === DataType.TYPE_INVALID))
            .map(({ io, kind }) => `${kind} '${io.name}'`)
        : [];
    r.warning(
      "model-file-not-checked",
      where,
      `the inputs and outputs of config.pbtxt are not checked against the model file: lint cannot read ${what} without ${backend === "tensorrt" ? "TensorRT" : "TensorFlow"}${left.length > 0 ? `; the data_type and dims missing from ${left.join(", ")} are left to Triton's auto-complete, which fills them in from the plan` : ""}`,
      left.length > 0
        ? "Triton completes and checks them when it loads the model (`triton-dev up` shows its verdict); write them in config.pbtxt to have them checked with auto-complete off too."
        : "Triton checks them when it loads the model; `triton-dev up` shows its verdict.",
    );
    return undefined;
  }
  if (backend === "pytorch") {
    for (const v of versions.slice(0, 1)) await checkTorchScriptNames(ctx, r, v.dir);
    return undefined;
  }
  if (backend !== "onnxruntime" && backend !== "openvino") return undefined;
  const fileName = ctx.autofill.defaultModelFilename || (backend === "onnxruntime" ? "model.onnx" : "model.xml");
  const autoComplete = ctx.options.autoComplete ?? true;
  const assumed = ctx.options.autoComplete === undefined;
  let report: ModelIOReport | undefined;
  for (const v of versions) {
    if (!v.entries.has(fileName)) continue; // model-file-missing says so
    const file = await modelFileOf(v.dir, fileName, backend);
    let tensors: Tensors;
    try {
      if (backend === "onnxruntime") {
        const info = await readOnnxModel(file);
        tensors = info;
        await checkExternalData(file, info.externalData, rel, r);
      } else {
        tensors = await readOpenVinoModel(file);
      }
    } catch (err) {
      if (!(err instanceof OnnxReadError) && !(err instanceof OpenVinoReadError)) throw err;
      r.error(
        backend === "onnxruntime" ? "onnx-invalid" : "openvino-invalid",
        undefined,
        `${rel(file)} cannot be read: ${err.message}`,
        backend === "onnxruntime"
          ? "Export the model again (torch.onnx.export, or onnx.save); Triton refuses a file onnxruntime cannot parse."
          : "Convert the model again (openvino.save_model); Triton refuses an IR OpenVINO cannot read.",
        file,
      );
      continue;
    }
    const completion = complete(ctx, tensors, autoComplete, backend);
    compare(ctx, r, tensors, completion, rel(file), autoComplete, assumed, backend);
    report ??= { file, autoComplete, assumed, completed: completion.json, filled: completion.filled };
  }
  return report;
}

/** Initializers whose data is in a file that is not there, or shorter than they say. */
async function checkExternalData(
  file: string,
  externalData: ReadonlyArray<{ tensor: string; location: string; offset?: number; length?: number }>,
  rel: (p: string) => string,
  r: Reporter,
): Promise<void> {
  const sizes = new Map<string, number | undefined>();
  for (const e of externalData) {
    const data = path.resolve(path.dirname(file), e.location);
    if (!sizes.has(data))
      sizes.set(
        data,
        await fsp.stat(data).then(
          (s) => (s.isFile() ? s.size : undefined),
          () => undefined,
        ),
      );
    const size = sizes.get(data);
    const end = (e.offset ?? 0) + (e.length ?? 0);
    if (size === undefined || end > size) {
      r.error(
        "onnx-external-data-missing",
        undefined,
        size === undefined
          ? `${rel(file)} keeps the data of initializer '${e.tensor}' in ${e.location}, which is not there (${rel(data)})`
          : `${rel(file)} keeps the data of initializer '${e.tensor}' at bytes ${e.offset ?? 0}..${end} of ${e.location}, which holds ${size}`,
        `Put ${e.location} beside ${path.basename(file)} (save both with onnx.save(model, path, save_as_external_data=True)); onnxruntime cannot load the model without it.`,
        file,
      );
      return;
    }
  }
}

interface Completion {
  maxBatchSize: number;
  inputs: ModelInputJson[];
  outputs: ModelOutputJson[];
  json: ModelConfigJson;
  filled: string[];
}

/**
 * The config as the backend's auto-complete leaves it (nothing filled when it is off). Both
 * backends fill in a whole list, inputs or outputs, only when the config lists none of it, and
 * never a listed tensor's data_type or dims (onnxruntime's AutoCompleteIO and openvino's
 * AutoCompleteInputOrOutput replace an empty list); onnxruntime's AutoCompleteConfig does nothing
 * at all once the config lists inputs (or batch_input) and outputs ("inputs and outputs already
 * specified"), max_batch_size included, and otherwise fills max_batch_size when it is 0 (written
 * or not) and every tensor's first dimension is variable.
 */
function complete(ctx: ModelContext, t: Tensors, autoComplete: boolean, backend: string): Completion {
  const { json, source } = ctx.parsed;
  const filled: string[] = [];
  let maxBatchSize = json.max_batch_size ?? 0;
  const ort = backend === "onnxruntime";
  // onnxruntime counts batch_input with the inputs: a config with one lists its inputs already.
  const listedInputs = (json.input?.length ?? 0) + (ort ? (json.batch_input?.length ?? 0) : 0);
  const listedOutputs = json.output?.length ?? 0;
  const runs = autoComplete && !(ort && listedInputs > 0 && listedOutputs > 0);
  const all = [...t.inputs, ...t.outputs];
  const canBatch = all.length > 0 && all.every((x) => x.dims !== undefined && x.dims.length > 0 && x.dims[0] === -1);
  const unset = ort ? maxBatchSize === 0 : !source.has("max_batch_size");
  if (runs && unset && canBatch) {
    maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    filled.push(`max_batch_size ${DEFAULT_MAX_BATCH_SIZE} (every tensor's first dimension is variable)`);
  }
  const strip = (dims: number[] | undefined) => (dims ? (maxBatchSize > 0 ? dims.slice(1) : dims) : undefined);
  const fill = <T extends ModelInputJson | ModelOutputJson>(
    kind: Kind,
    listed: T[] | undefined,
    count: number,
    model: ModelTensor[],
  ): T[] => {
    if (!runs || count > 0) return listed ?? [];
    return model.map((m) => {
      filled.push(`${kind} '${m.name}' (${m.dataType ?? m.fileType} ${shape(strip(m.dims))})`);
      return { name: m.name, ...(m.dataType ? { data_type: m.dataType } : {}), dims: strip(m.dims) ?? [] } as T;
    });
  };
  const inputs = fill("input", json.input, listedInputs, t.inputs);
  const outputs = fill("output", json.output, listedOutputs, t.outputs);
  const completed: ModelConfigJson = { ...json, max_batch_size: maxBatchSize, input: inputs, output: outputs };
  return { maxBatchSize, inputs, outputs, json: completed, filled };
}

function compare(
  ctx: ModelContext,
  r: Reporter,
  t: Tensors,
  completion: Completion,
  file: string,
  autoComplete: boolean,
  assumed: boolean,
  backend: string,
): void {
  const c = ctx.parsed.config;
  const overridable = backend === "onnxruntime" ? (t.overridable ?? []) : [];
  const mode = `auto-complete ${autoComplete ? "on" : "off"}${assumed ? ", assumed: Triton's default" : ""}`;
  const mbs = completion.maxBatchSize;
  const check = (kind: Kind, listed: Array<ModelInputJson | ModelOutputJson>, model: ModelTensor[]) => {
    const names = model.map((m) => `'${m.name}'`).join(", ") || "none";
    const configured = kind === "input" ? c.input : c.output;
    listed.forEach((io, i) => {
      const p = `${kind}[${i}]`;
      // onnxruntime takes an overridable initializer as an input of the request too.
      const m =
        model.find((x) => x.name === io.name) ??
        (kind === "input" ? overridable.find((x) => x.name === io.name) : undefined);
      if (!io.name) return; // io-name-missing
      if (!m) {
        const near = r.suggest(
          io.name,
          model.map((x) => x.name),
        );
        r.error(
          "model-io-unknown",
          `${p}.name#value`,
          `${kind} '${io.name}' is not an ${kind} of ${file}, whose ${kind}s are ${names} (Triton: "unexpected inference ${kind} '${io.name}', allowed ${kind}s are: ${model.map((x) => x.name).join(", ")}")`,
          near ? `Did you mean '${near}'?` : `Name the ${kind} as the model does (${names}).`,
        );
        return;
      }
      if (!m.dataType) {
        r.error(
          "model-io-data-type",
          p,
          `${kind} '${io.name}' of ${file} is ${m.fileType}, which Triton cannot serve`,
          `Export the model with a tensor ${kind} Triton has a type for (FLOAT, INT64, STRING, ...).`,
        );
        return;
      }
      if (io.data_type && io.data_type !== m.dataType) {
        r.error(
          "model-io-data-type",
          `${p}.data_type#value`,
          `${kind} '${io.name}' is ${io.data_type} in config.pbtxt but ${m.dataType} (${m.fileType}) in ${file} (Triton: "unexpected datatype ${io.data_type} for inference ${kind} '${io.name}', expecting ${m.dataType}")`,
          `Set data_type: ${m.dataType}.`,
        );
      }
      // onnxruntime gives a tensor of unknown rank the shape [] (measured, onnxruntime 1.32), as a
      // scalar: neither can be batched, and neither is compared dimension by dimension.
      let modelDims = m.dims ?? [];
      if (mbs > 0) {
        if (modelDims.length === 0 || modelDims[0] !== -1) {
          r.error(
            "model-io-batch-dim",
            source(ctx, "max_batch_size#value", p),
            `max_batch_size is ${mbs}, but ${kind} '${io.name}' of ${file} has shape ${shape(modelDims)}, whose first dimension is not a variable batch dimension (Triton: "the first dimension must be -1")`,
            `Set max_batch_size: 0 and write the full shape in dims (dims: ${shape(modelDims)}), or export the model with a dynamic first dimension.`,
          );
          return;
        }
        modelDims = modelDims.slice(1);
      }
      const cfg = configured[i];
      const reshaped = cfg?.reshape !== undefined;
      const dims = reshaped ? cfg!.reshape!.shape.map(Number) : (io.dims ?? []);
      if (dims.length === 0 && !reshaped) return; // io-dims-missing, unless auto-complete filled it
      if (m.dims === undefined || m.dims.length === 0) return;
      const batchNote =
        mbs > 0 ? ` after the batch dimension (max_batch_size ${mbs}, ${mode})` : ` (max_batch_size 0, ${mode})`;
      const mismatch =
        dims.length !== modelDims.length || dims.some((d, j) => modelDims[j] !== -1 && d !== modelDims[j]);
      if (mismatch) {
        r.error(
          "model-io-dims",
          `${p}.${reshaped ? "reshape" : "dims"}`,
          `${kind} '${io.name}' has ${reshaped ? "reshape" : "dims"} ${shape(dims)} in config.pbtxt but ${file} gives it ${shape(modelDims)}${batchNote}`,
          mbs > 0
            ? `Set dims: ${shape(modelDims)} (without the batch dimension${modelDims.includes(-1) ? "; -1 where the model's size varies" : ""}).`
            : `Set dims: ${shape(modelDims)}${m.dims[0] === -1 ? `, or max_batch_size > 0 with dims: ${shape(m.dims.slice(1))} to batch` : ""}.`,
        );
      }
    });
    if (kind === "input" && !checkInputCount(ctx, r, listed, model, file, backend)) {
      const missing = model.filter((m) => !listed.some((io) => io.name === m.name));
      // Inputs Triton feeds itself are no inputs a request sends: batch_input targets, and on
      // onnxruntime the sequence batcher's control inputs (START, END, READY, CORRID) and state
      // inputs, which the backend counts apart (checkInputCount); listing them would break the config.
      const fedByTriton = new Set(c.batchInput.flatMap((b) => b.targetName));
      const seq = c.schedulingChoice.case === "sequenceBatching" ? c.schedulingChoice.value : undefined;
      if (seq && backend === "onnxruntime") {
        for (const ci of seq.controlInput) fedByTriton.add(ci.name);
        for (const st of seq.state) fedByTriton.add(st.inputName);
      }
      for (const m of missing.filter((x) => !fedByTriton.has(x.name))) {
        r.warning(
          "model-io-missing",
          "input",
          `${file} has input '${m.name}' (${m.dataType ?? m.fileType} ${shape(m.dims)}), which config.pbtxt does not list: requests cannot send it, and every inference fails ("Missing Input: ${m.name}")`,
          `Add input { name: "${m.name}"${m.dataType ? ` data_type: ${m.dataType}` : ""} dims: ${shape(m.dims && mbs > 0 ? m.dims.slice(1) : m.dims)} } to config.pbtxt.`,
        );
      }
    }
  };
  check("input", completion.inputs, t.inputs);
  check("output", completion.outputs, t.outputs);
  if (t.inputs.length === 0 || t.outputs.length === 0) {
    r.warning(
      "model-io-empty",
      undefined,
      `${file} declares no ${t.inputs.length === 0 ? "inputs" : "outputs"} (graph inputs that are initializers are not inputs)`,
      "Check the export: a model without inputs or outputs cannot be served usefully.",
    );
  }
}

/**
 * The backend's first check of the inputs, before any name: the number of inputs the config
 * gives the model must be the number the model has, else the load fails ("configuration expects
 * 1 inputs, model provides 2"). onnxruntime_backend (ModelInstanceState's constructor and
 * ValidateInputs) counts the config's inputs less the optional ones (those are overridable
 * initializers to it), plus each batch_input, plus one for each of the START, END, READY and
 * CORRID sequence controls the config has, plus each sequence state; the model's are the graph
 * inputs that are not initializers. openvino_backend (ValidateConfigureModel) counts the config's
 * inputs, all of them, against the IR's. With auto-complete the config's inputs are the completed
 * ones (all of the model's when it lists none). Returns whether it reported.
 */
function checkInputCount(
  ctx: ModelContext,
  r: Reporter,
  listed: readonly ModelInputJson[],
  model: readonly ModelTensor[],
  file: string,
  backend: string,
): boolean {
  const c = ctx.parsed.config;
  const parts: string[] = [];
  let expected = 0;
  const add = (n: number, what: string) => {
    if (n === 0) return;
    expected += n;
    parts.push(`${n} ${what}`);
  };
  const fed = new Set<string>();
  if (backend === "onnxruntime") {
    const required = listed.filter((io) => !io.optional);
    add(required.length, required.length === listed.length ? "listed" : "listed and not optional");
    add(c.batchInput.length, "batch_input");
    for (const b of c.batchInput) for (const t of b.targetName) fed.add(t);
    const seq = c.schedulingChoice.case === "sequenceBatching" ? c.schedulingChoice.value : undefined;
    if (seq) {
      const kinds = new Set(seq.controlInput.flatMap((ci) => ci.control.map((k) => k.kind)));
      add(kinds.size, "sequence control");
      add(seq.state.length, "sequence state");
      for (const ci of seq.controlInput) fed.add(ci.name);
      for (const st of seq.state) fed.add(st.inputName);
    }
  } else {
    add(listed.length, "listed");
  }
  if (expected === model.length) return false;
  const unfed = model.filter((m) => !fed.has(m.name) && !listed.some((io) => io.name === m.name));
  const counted = parts.length > 0 ? ` (${parts.join(", ")})` : "";
  r.error(
    "model-io-count",
    ctx.parsed.source.has("input") ? "input" : undefined,
    `config.pbtxt gives ${file} ${expected} input${expected === 1 ? "" : "s"}${counted}, but it has ${model.length}${unfed.length > 0 ? `, ${unfed.map((m) => `'${m.name}'`).join(", ")} among them unlisted` : ""} (Triton: "unable to load model '${ctx.name}', configuration expects ${expected} inputs, model provides ${model.length}")`,
    unfed.length > 0
      ? `List every input of the model: add ${unfed
          .map(
            (m) => `input { name: "${m.name}"${m.dataType ? ` data_type: ${m.dataType}` : ""} dims: ${shape(m.dims)} }`,
          )
          .join(", ")} (dims without the batch dimension when max_batch_size > 0).`
      : `List exactly the model's inputs (${model.map((m) => `'${m.name}'`).join(", ") || "none"}).`,
  );
  return true;
}

/** `max_batch_size`'s value when the config sets it, else the tensor. */
function source(ctx: ModelContext, mbsPath: string, tensorPath: string): string {
  return ctx.parsed.source.has("max_batch_size") ? mbsPath : tensorPath;
}
