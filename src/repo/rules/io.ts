/**
 * Lint rules, area `io`: a model's tensors: max_batch_size, inputs and outputs (names, types,
 * dims, reshape, formats), batch inputs and outputs.
 */
import {
  DataType,
  ModelInput_Format,
  ModelInput_FormatSchema,
  type ModelInput,
  type ModelOutput,
} from "../gen/model_config_pb.js";
import { quoteList } from "../suggest.js";
import { type ModelContext, type Reporter, enumName, dataTypeName, shapeString } from "./reporter.js";
import { tensorRtCompletes } from "./platform.js";
import { seenAsModel, codes, type ModelRule, type RuleArea } from "./rule.js";

export const IO_CODES = codes({
  "max-batch-size-negative": { severity: "error", description: "max_batch_size below 0" },
  "io-name-missing": { severity: "error", description: "an input or output without a name" },
  "io-data-type-missing": { severity: "error", description: "an input or output without a data_type" },
  "io-dims-missing": { severity: "error", description: "an input or output without dims" },
  "io-duplicate": { severity: "warning", description: "two inputs or two outputs of one name" },
  "dims-invalid": { severity: "error", description: "a dimension below -1, or 0" },
  "reshape-empty": { severity: "error", description: "a reshape with no shape where the tensor has elements" },
  "reshape-invalid": { severity: "error", description: "a reshape dimension below -1, or 0" },
  "reshape-count": { severity: "error", description: "a reshape whose element count differs from the dims'" },
  "io-format-dims": {
    severity: "error",
    description: "an image format (FORMAT_NCHW/NHWC) on dims that are not 3 long",
  },
  "shape-tensor-platform": { severity: "error", description: "is_shape_tensor on a backend other than TensorRT" },
  "non-linear-io-platform": {
    severity: "error",
    description: "is_non_linear_format_io on a backend other than TensorRT",
  },
  "non-linear-io-dims": { severity: "error", description: "is_non_linear_format_io on dims that are not 3 long" },
  "batch-input-source": { severity: "error", description: "a batch_input without exactly one source_input" },
  "batch-input-type": {
    severity: "error",
    description: "a batch_input whose data_type is not TYPE_INT32 or TYPE_FP32",
  },
  "batch-input-unknown-source": { severity: "error", description: "a batch_input's source_input that is no input" },
  "batch-output-source": { severity: "error", description: "a batch_output without exactly one source_input" },
  "batch-output-unknown-source": { severity: "error", description: "a batch_output's source_input that is no input" },
  "batch-output-unknown-target": { severity: "error", description: "a batch_output's target_name that is no output" },
  "batch-output-duplicate-target": { severity: "error", description: "a batch_output that lists one target twice" },
});

declare module "./codes.js" {
  interface CodeTables {
    io: typeof IO_CODES;
  }
}

/** Element count of a shape; -1 when any dimension is variable. */
function elementCount(dims: readonly bigint[]): bigint {
  let n = 1n;
  for (const d of dims) {
    if (d === -1n) return -1n;
    n *= d;
  }
  return n;
}

/** Products of the runs between variable dimensions: [2,4,-1,6] -> [8, 6]. */
function segmentCounts(dims: readonly bigint[]): bigint[] {
  const out: bigint[] = [];
  let cur = 1n;
  for (const d of dims) {
    if (d === -1n) {
      out.push(cur);
      cur = 1n;
    } else cur *= d;
  }
  out.push(cur);
  return out;
}

// ---------------------------------------------------------------------------------------------

function checkIOs(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const model: TensorModel = {
    maxBatchSize: c.maxBatchSize,
    // Triton checks the platform autofill leaves: backend "tensorrt", or 1/model.plan, make it tensorrt_plan.
    platform: ctx.autofill.platform,
    fromPlan: tensorRtCompletes(ctx),
  };
  c.input.forEach((io, i) => checkTensor(r, model, io, i, "input"));
  c.output.forEach((io, i) => checkTensor(r, model, io, i, "output"));
  for (const kind of ["input", "output"] as const) checkDuplicateNames(ctx, r, kind);
}

/** What a tensor's checks read of the model it belongs to. */
interface TensorModel {
  maxBatchSize: number;
  platform: string;
  fromPlan: boolean;
}

/** One input or output, with where its findings go and how they name it. */
interface Tensor {
  io: ModelInput | ModelOutput;
  kind: "input" | "output";
  /** Its field path in the config. */
  p: string;
  label: string;
}

function checkTensor(
  r: Reporter,
  model: TensorModel,
  io: ModelInput | ModelOutput,
  i: number,
  kind: "input" | "output",
): void {
  const t: Tensor = { io, kind, p: `${kind}[${i}]`, label: io.name ? `${kind} '${io.name}'` : `${kind} ${i + 1}` };
  checkDeclared(r, model, t, i);
  checkDims(r, t);
  if (io.reshape) checkReshape(r, model.maxBatchSize, t, io.reshape.shape);
  if (kind === "input") checkFormat(r, t, io as ModelInput);
  checkTensorRtOnly(r, model.platform, t);
}

/** The name, data_type and dims every tensor needs. */
function checkDeclared(r: Reporter, model: TensorModel, { io, kind, p, label }: Tensor, i: number): void {
  if (!io.name) {
    r.error("io-name-missing", p, `${kind} ${i + 1} has no name`, `Add name: "..." inside this ${kind}.`);
  }
  // What the plan gives a named tensor is Triton's to fill in (see model-io/compare.ts's warning).
  const filled = model.fromPlan && io.name !== "";
  if (io.dataType === DataType.TYPE_INVALID && !filled) {
    r.error(
      "io-data-type-missing",
      p,
      `${label} has no data_type`,
      "Add data_type, e.g. data_type: TYPE_FP32 (TYPE_STRING for text).",
    );
  }
  if (io.dims.length === 0 && !filled) {
    r.error(
      "io-dims-missing",
      p,
      `${label} has no dims`,
      model.maxBatchSize > 0
        ? "Add dims: [ ... ] without the batch dimension, e.g. dims: [ 1 ] for one value per batch item."
        : "Add dims: [ ... ], e.g. dims: [ -1 ] for a variable-length vector.",
    );
  }
}

function checkDims(r: Reporter, { io, p, label }: Tensor): void {
  io.dims.forEach((d, j) => {
    if (d < 1n && d !== -1n) {
      r.error(
        "dims-invalid",
        `${p}.dims[${j}]#value`,
        `dimension ${j} of ${label} is ${d}: a dimension must be >= 1, or -1 for a variable size`,
        d === 0n
          ? "Use -1 for a dimension whose size varies, or its actual size."
          : "Use -1 for a variable-size dimension.",
      );
    }
  });
}

function checkReshape(r: Reporter, maxBatchSize: number, t: Tensor, shape: readonly bigint[]): void {
  const { io, p, label } = t;
  if (shape.length === 0 && maxBatchSize === 0) {
    r.error(
      "reshape-empty",
      `${p}.reshape`,
      `${label} has an empty reshape, which a non-batching model cannot use`,
      "Scalars need batching: set max_batch_size > 0, or give reshape a shape.",
    );
  }
  shape.forEach((d, j) => {
    if (d < 1n && d !== -1n) {
      r.error(
        "reshape-invalid",
        `${p}.reshape.shape[${j}]#value`,
        `reshape dimension ${j} of ${label} is ${d}: it must be >= 1, or -1`,
        "Use -1 for a variable-size dimension.",
      );
    }
  });
  // Counts of invalid dimensions mean nothing: those are reported above.
  const valid = io.dims.every((d) => d >= 1n || d === -1n) && shape.every((d) => d >= 1n || d === -1n);
  if (valid && io.dims.length > 0) checkReshapeCount(r, t, shape);
}

/** A reshape keeps the element count, and between variable dimensions the products. */
function checkReshapeCount(r: Reporter, { io, p, label }: Tensor, shape: readonly bigint[]): void {
  const a = elementCount(io.dims);
  const b = elementCount(shape);
  const hint = `dims ${shapeString(io.dims)} and reshape ${shapeString(shape)} must hold the same number of elements.`;
  if (a !== b && !(b === 0n && a === 1n) && !(shape.length === 0 && a === 1n)) {
    r.error(
      "reshape-count",
      `${p}.reshape`,
      `reshape of ${label} changes the element count (${a === -1n ? "variable" : a} -> ${b === -1n ? "variable" : b})`,
      hint,
    );
  } else if (a === -1n) {
    const sa = segmentCounts(io.dims);
    const sb = segmentCounts(shape);
    if (sa.length !== sb.length) {
      r.error(
        "reshape-count",
        `${p}.reshape`,
        `reshape of ${label} has a different number of variable dimensions than its dims`,
        hint,
      );
    } else if (sa.some((x, k) => x !== sb[k])) {
      r.error(
        "reshape-count",
        `${p}.reshape`,
        `reshape of ${label} changes the element count between variable dimensions`,
        `${hint} Between -1 dimensions the products must match.`,
      );
    }
  }
}

function checkFormat(r: Reporter, { p, label }: Tensor, inp: ModelInput): void {
  if ((inp.format === ModelInput_Format.NHWC || inp.format === ModelInput_Format.NCHW) && inp.dims.length !== 3) {
    r.error(
      "io-format-dims",
      `${p}.format`,
      `${label} has format ${enumName(ModelInput_FormatSchema, inp.format)}, which needs exactly 3 dims`,
      "Give dims as [C, H, W] or [H, W, C] without the batch dimension, or drop format.",
    );
  }
}

/** is_shape_tensor and is_non_linear_format_io, which only TensorRT reads. */
function checkTensorRtOnly(r: Reporter, platform: string, { io, p, label }: Tensor): void {
  if (io.isShapeTensor && platform !== "tensorrt_plan") {
    r.error(
      "shape-tensor-platform",
      `${p}.is_shape_tensor`,
      `${label} is a shape tensor, which only TensorRT models support`,
      "Delete is_shape_tensor.",
    );
  }
  if (io.isNonLinearFormatIo) {
    if (platform !== "tensorrt_plan") {
      r.error(
        "non-linear-io-platform",
        `${p}.is_non_linear_format_io`,
        `${label} uses non-linear IO format, which only TensorRT models support`,
        "Delete is_non_linear_format_io.",
      );
    } else if (io.dims.length !== 3) {
      r.error(
        "non-linear-io-dims",
        `${p}.is_non_linear_format_io`,
        `${label} uses non-linear IO format, which needs 3 dims`,
        "Give exactly 3 dims.",
      );
    }
  }
}

function checkDuplicateNames(ctx: ModelContext, r: Reporter, kind: "input" | "output"): void {
  const c = ctx.parsed.config;
  const seen = new Map<string, number>();
  (kind === "input" ? c.input : c.output).forEach((io, i) => {
    if (!io.name) return;
    const first = seen.get(io.name);
    if (first === undefined) {
      seen.set(io.name, i);
      return;
    }
    const at = ctx.parsed.source.at(`${kind}[${first}]`);
    // Triton 2.51 loads such a model; clients then see one tensor where two were meant.
    r.warning(
      "io-duplicate",
      `${kind}[${i}].name#value`,
      `${kind} '${io.name}' is declared twice (first at ${at.line}:${at.column})`,
      `Rename or remove one of the two ${kind}s.`,
    );
  });
}

function checkBatchIO(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const inputs = new Set(c.input.map((i) => i.name));
  const outputs = new Set(c.output.map((o) => o.name));
  const inputNames = [...inputs].filter(Boolean);
  const outputNames = [...outputs].filter(Boolean);
  c.batchInput.forEach((b, i) => {
    const p = `batch_input[${i}]`;
    if (b.sourceInput.length !== 1) {
      r.error(
        "batch-input-source",
        p,
        `batch_input ${i + 1} needs exactly 1 source_input, has ${b.sourceInput.length}`,
        "Name the one input it is derived from in source_input.",
      );
    }
    if (b.dataType !== DataType.TYPE_INT32 && b.dataType !== DataType.TYPE_FP32) {
      r.error(
        "batch-input-type",
        p,
        `batch_input ${i + 1} has data_type ${dataTypeName(b.dataType)}; it must be TYPE_INT32 or TYPE_FP32`,
        "Set data_type: TYPE_INT32 or TYPE_FP32.",
      );
    }
    b.sourceInput.forEach((s, j) => {
      if (!inputs.has(s))
        r.error(
          "batch-input-unknown-source",
          `${p}.source_input[${j}]#value`,
          `batch_input source '${s}' is not an input of this model`,
          hintFor(r, s, inputNames, "input"),
        );
    });
  });
  c.batchOutput.forEach((b, i) => {
    const p = `batch_output[${i}]`;
    if (b.sourceInput.length !== 1) {
      r.error(
        "batch-output-source",
        p,
        `batch_output ${i + 1} needs exactly 1 source_input, has ${b.sourceInput.length}`,
        "Name the one input its shape follows in source_input.",
      );
    }
    b.sourceInput.forEach((s, j) => {
      if (!inputs.has(s))
        r.error(
          "batch-output-unknown-source",
          `${p}.source_input[${j}]#value`,
          `batch_output source '${s}' is not an input of this model`,
          hintFor(r, s, inputNames, "input"),
        );
    });
    const seen = new Set<string>();
    b.targetName.forEach((t, j) => {
      if (!outputs.has(t))
        r.error(
          "batch-output-unknown-target",
          `${p}.target_name[${j}]#value`,
          `batch_output target '${t}' is not an output of this model`,
          hintFor(r, t, outputNames, "output"),
        );
      else if (seen.has(t))
        r.error(
          "batch-output-duplicate-target",
          `${p}.target_name[${j}]#value`,
          `batch_output target '${t}' is listed twice`,
          "List each target once.",
        );
      seen.add(t);
    });
  });
}

function hintFor(r: Reporter, name: string, names: readonly string[], what: string): string {
  const near = r.suggest(name, names);
  if (near) return `Did you mean '${near}'?`;
  if (names.length === 0) return `This model declares no ${what}s.`;
  return names.length <= 8 ? `The ${what}s are ${quoteList(names)}.` : `Check the ${what} names.`;
}

export const MAX_BATCH_SIZE_RULE: ModelRule = {
  name: "max_batch_size",
  applies: seenAsModel,
  check: checkMaxBatchSize,
};
export const IO_RULE: ModelRule = { name: "inputs and outputs", applies: seenAsModel, check: checkIOs };
export const BATCH_IO_RULE: ModelRule = { name: "batch inputs and outputs", applies: seenAsModel, check: checkBatchIO };

export const IO: RuleArea<typeof IO_CODES> = {
  area: "io",
  codes: IO_CODES,
  rules: [MAX_BATCH_SIZE_RULE, IO_RULE, BATCH_IO_RULE],
};

function checkMaxBatchSize(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (c.maxBatchSize < 0) {
    r.error(
      "max-batch-size-negative",
      "max_batch_size#value",
      `max_batch_size is ${c.maxBatchSize}; it must be 0 or more`,
      "Use 0 for a model that does not batch, or the largest batch the model accepts.",
    );
  }
}
