import { UsageError } from "../errors.js";
import { DATATYPE_BYTES, elementCount, encodeTensorData, type RawTensor } from "../triton/binary.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import type { ModelMetadata, TensorMetadata } from "../triton/http-client.js";
import { InputDataError, type DataStep, type DataValue, type LoadedInputData } from "./input-data.js";

export type InputDataSource = "random" | "zero" | { file: string };

export interface InputOptions {
  batchSize: number;
  /** From `--shape NAME:d1,d2`: the non-batch dimensions of inputs whose shape has -1. */
  shapes: Record<string, number[]>;
  /** Synthetic data, or the steps of an --input-data file already read. */
  data: "random" | "zero" | LoadedInputData;
  /** Characters per synthesised BYTES element. */
  stringLength: number;
  /** Seeded by default so two runs send the same data. */
  random?: () => number;
}

/**
 * `NAME:d1,d2` (the --shape flag, as perf_analyzer takes it) or `NAME=d1xd2` (the dashboard's
 * prompt): one parser for both, so they accept and refuse the same shapes. The name may itself
 * hold colons or `=`, so the dimensions follow the last separator.
 */
export function parseShapeFlag(value: string): [string, number[]] {
  const i = Math.max(value.lastIndexOf(":"), value.lastIndexOf("="));
  const name = i > 0 ? value.slice(0, i) : "";
  const dims =
    i > 0
      ? value
          .slice(i + 1)
          .split(/[,x]/)
          .map((d) => d.trim())
      : [];
  if (!name || dims.length === 0 || dims.some((d) => !/^\d+$/.test(d) || Number(d) < 1)) {
    throw new UsageError(
      `a shape must look like NAME:d1,d2 (or NAME=d1xd2) with every dimension a whole number >= 1, got '${value}'`,
      { hint: "Give the dimensions without the batch dimension, e.g. --shape INPUT0:3,224,224." },
    );
  }
  return [name, dims.map(Number)];
}

/** Parameters perf sets itself, from their own flags and from a stateful model's sequences. */
const OWN_PARAMETERS: Record<string, string> = {
  priority: "--priority",
  timeout: "--request-timeout-us",
  sequence_id: "the sequence flags",
  sequence_start: "the sequence flags",
  sequence_end: "the sequence flags",
};

/**
 * perf_analyzer's `--request-parameter NAME:VALUE:TYPE` (TYPE `string`, `int` or `bool`): a
 * parameter sent with every request (a model reads them with `request.parameters()`). The value
 * may hold colons; the name and type may not.
 */
export function parseRequestParameter(value: string): [string, string | number | boolean] {
  const first = value.indexOf(":");
  const last = value.lastIndexOf(":");
  const name = first > 0 ? value.slice(0, first) : "";
  const raw = last > first ? value.slice(first + 1, last) : "";
  const type = last > first ? value.slice(last + 1) : "";
  const usage = (why: string) =>
    new UsageError(`--request-parameter takes NAME:VALUE:TYPE (TYPE string, int or bool): ${why}, got '${value}'`, {
      hint: "For example --request-parameter max_tokens:256:int --request-parameter ignore_eos:true:bool.",
    });
  if (!name || last <= first) throw usage("a name, a value and a type, separated by ':'");
  if (OWN_PARAMETERS[name])
    throw new UsageError(`--request-parameter ${name} is a parameter perf sets itself`, {
      hint: `Set it with ${OWN_PARAMETERS[name]}.`,
    });
  if (type === "string") return [name, raw];
  if (type === "int") {
    if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw usage(`'${raw}' is not a whole number`);
    return [name, Number(raw)];
  }
  if (type === "bool") {
    if (raw !== "true" && raw !== "false") throw usage(`a bool is true or false, not '${raw}'`);
    return [name, raw === "true"];
  }
  throw usage(`unknown type '${type}'`);
}

/** Several shapes separated by spaces (`a=2x3 b=4`), as the dashboard's prompt takes them. */
export function parseShapeList(text: string): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const token of text.trim().split(/\s+/).filter(Boolean)) {
    const [name, dims] = parseShapeFlag(token);
    out[name] = dims;
  }
  return out;
}

/** The inverse of parseShapeList, for showing remembered shapes. */
export function formatShapeList(shapes: Readonly<Record<string, readonly number[]>>): string {
  return Object.entries(shapes)
    .map(([n, d]) => `${n}=${d.join("x")}`)
    .join(" ");
}

/** A small fast PRNG (mulberry32), so synthetic data is the same from run to run. */
export function seededRandom(seed = 0x5eed): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "the a model server request batch queue latency throughput tensor input output great terrible movie film " +
  "loved hated wonderful boring quick brown fox jumps over lazy dog inference engine python numpy kernel " +
  "memory instance priority ensemble token vocabulary sentence simple ordinary fairly about nothing much"
).split(" ");

function randomText(length: number, random: () => number): string {
  let s = "";
  while (s.length < length) s += (s ? " " : "") + WORDS[Math.floor(random() * WORDS.length)];
  return s.slice(0, length).trimEnd() || "text";
}

function isFloat(datatype: string): boolean {
  return datatype === "FP16" || datatype === "FP32" || datatype === "FP64" || datatype === "BF16";
}

/** Values of the right type for one batch item. */
function synthesise(
  datatype: string,
  count: number,
  source: "random" | "zero",
  stringLength: number,
  random: () => number,
): unknown[] {
  if (datatype === "BYTES")
    return Array.from({ length: count }, () => (source === "zero" ? "" : randomText(stringLength, random)));
  if (source === "zero") return new Array(count).fill(0);
  // Floats in [0, 1) stay finite after any cast; integers 0 or 1 are in range for the masks,
  // token ids and class indexes that integer inputs usually are.
  if (isFloat(datatype)) return Array.from({ length: count }, () => random());
  return Array.from({ length: count }, () => (random() < 0.5 ? 0 : 1));
}

/** Fast path for large float/integer inputs: fill the wire buffer directly. */
function synthesiseRaw(
  datatype: string,
  count: number,
  source: "random" | "zero",
  random: () => number,
): Buffer | undefined {
  const size = DATATYPE_BYTES[datatype];
  if (size === undefined || source === "zero")
    return source === "zero" && size !== undefined ? Buffer.alloc(count * size) : undefined;
  if (datatype === "FP32") {
    const f = new Float32Array(count);
    for (let i = 0; i < count; i++) f[i] = random();
    return Buffer.from(f.buffer);
  }
  if (datatype === "FP64") {
    const f = new Float64Array(count);
    for (let i = 0; i < count; i++) f[i] = random();
    return Buffer.from(f.buffer);
  }
  return undefined;
}

export interface ResolvedInput {
  name: string;
  datatype: string;
  /** Without the batch dimension; -1 stays where each --input-data step gives the shape. */
  dims: number[];
  /** The model's config marks it optional: a data step may leave it out. */
  optional: boolean;
}

/** A dynamic input that got no size, by name, with its declared dimensions (without batch). */
export interface UnsizedInput {
  name: string;
  dims: number[];
}

/**
 * Inputs with -1 in their shape that neither --shape nor --input-data sized: all of them in one
 * error, so one more run is enough.
 */
export class MissingShapesError extends UsageError {
  override name = "MissingShapesError";
  constructor(
    readonly model: string,
    readonly inputs: readonly UnsizedInput[],
  ) {
    const list = inputs.map((i) => `${i.name} [${i.dims.join(",")}]`).join(", ");
    const example = inputs.map((i) => `--shape ${i.name}:${i.dims.map((d) => (d < 0 ? "N" : String(d))).join(",")}`);
    super(
      inputs.length === 1
        ? `input ${list} of ${model} has a dynamic shape: give it a size to send`
        : `${inputs.length} inputs of ${model} have dynamic shapes: give each a size to send: ${list}`,
      {
        hint: `Pass ${example.join(" ")} with a size for each N (without the batch dimension), or give "shape" beside "content" in --input-data FILE.json.`,
      },
    );
  }
}

export interface ResolveOptions {
  batchSize: number;
  shapes: Record<string, number[]>;
  /** The steps of an --input-data file, which may name inputs and give their shapes. */
  steps?: readonly DataStep[];
  /** Which inputs the config marks optional. */
  optional?: ReadonlySet<string>;
}

/** A BYTES b64 value is one element, so it sizes every -1 as 1 without a "shape". */
const stepGivesShape = (datatype: string, v: DataValue) =>
  v.shape !== undefined || (v.b64 !== undefined && datatype === "BYTES");

const sizeFits = (given: readonly number[], declared: readonly number[]) =>
  given.length === declared.length && given.every((d, i) => declared[i]! < 0 || declared[i] === d);

/**
 * Each input's concrete dimensions, filling -1 from --shape or from the data file's shapes.
 * Optional inputs go only when asked for (a --shape, or a value in the data file); every input
 * still missing a size is named in one MissingShapesError.
 */
export function resolveInputs(
  metadata: ModelMetadata,
  config: Pick<ModelConfigSummary, "max_batch_size">,
  o: ResolveOptions,
): ResolvedInput[] {
  const batching = config.max_batch_size > 0;
  if (!batching && o.batchSize > 1) {
    throw new UsageError(
      `can not specify batch size > 1 as the model ${metadata.name} does not support batching (max_batch_size is 0)`,
      { hint: "Leave out -b." },
    );
  }
  if (batching && o.batchSize > config.max_batch_size) {
    throw new UsageError(
      `batch size ${o.batchSize} is larger than the max_batch_size ${config.max_batch_size} of ${metadata.name}`,
    );
  }
  const known = new Set(metadata.inputs.map((i) => i.name));
  for (const name of Object.keys(o.shapes)) {
    if (!known.has(name))
      throw new UsageError(`--shape names ${name}, which is not an input of ${metadata.name}`, {
        hint: `Its inputs are: ${[...known].join(", ")}.`,
      });
  }
  const steps = o.steps ?? [];
  const optional = o.optional ?? new Set<string>();
  const out: ResolvedInput[] = [];
  const missing: UnsizedInput[] = [];
  const leftOut: string[] = [];
  for (const t of metadata.inputs as TensorMetadata[]) {
    const declared = batching ? t.shape.slice(1) : t.shape;
    const given = o.shapes[t.name];
    const inData = steps.filter((s) => s.has(t.name));
    const isOptional = optional.has(t.name);
    if (isOptional && !given && inData.length === 0) {
      leftOut.push(t.name);
      continue;
    }
    const base = { name: t.name, datatype: t.datatype, optional: isOptional };
    if (given) {
      if (!sizeFits(given, declared)) {
        throw new UsageError(
          `--shape ${t.name}:${given.join(",")} does not fit the model's shape [${declared.join(",")}] for ${t.name}`,
          { hint: "Give every dimension except the batch dimension; fixed ones must match the model." },
        );
      }
      out.push({ ...base, dims: given });
    } else if (!declared.some((d) => d < 0)) {
      out.push({ ...base, dims: declared });
    } else if (inData.length > 0 && inData.every((s) => stepGivesShape(t.datatype, s.get(t.name)!))) {
      // Sized step by step: buildPayloads checks each step's shape against the model's.
      out.push({ ...base, dims: declared });
    } else {
      missing.push({ name: t.name, dims: declared });
    }
  }
  if (missing.length) throw new MissingShapesError(metadata.name, missing);
  if (out.length === 0) {
    throw new UsageError(`every input of ${metadata.name} is optional and none was asked for`, {
      hint: `Name the ones to send with --shape (e.g. --shape ${leftOut[0]}:...), or give them in --input-data FILE.json.`,
    });
  }
  return out;
}

/** The optional inputs resolveInputs left out: the ones the model has and the run does not send. */
export function leftOutInputs(metadata: ModelMetadata, inputs: readonly ResolvedInput[]): string[] {
  const sent = new Set(inputs.map((i) => i.name));
  return metadata.inputs.map((i) => i.name).filter((n) => !sent.has(n));
}

function tensorFromStep(
  file: string,
  step: number,
  input: ResolvedInput,
  value: DataValue,
): { dims: number[]; data: Buffer } {
  const dims =
    value.shape ?? (value.b64 && input.datatype === "BYTES" ? input.dims.map((d) => (d < 0 ? 1 : d)) : input.dims);
  if (dims.some((d) => d < 0)) {
    throw new InputDataError(file, step, input.name, `no "shape" for the model's shape [${input.dims.join(",")}]`, {
      hint: `Give {"content": [...], "shape": [...]} for ${input.name} in every step, or --shape ${input.name}:... for all of them.`,
    });
  }
  if (!sizeFits(dims, input.dims)) {
    throw new InputDataError(
      file,
      step,
      input.name,
      `shape [${dims.join(",")}] does not fit the model's shape [${input.dims.join(",")}]`,
      {
        hint: "Give every dimension except the batch dimension, as many as the model has; fixed ones must match.",
      },
    );
  }
  const expected = elementCount(dims);
  if (value.b64) {
    if (input.datatype === "BYTES") {
      if (expected !== 1)
        throw new InputDataError(
          file,
          step,
          input.name,
          `"b64" gives one BYTES element but shape [${dims.join(",")}] needs ${expected}`,
          {
            hint: 'Give the elements as a "content" list of strings instead.',
          },
        );
      return { dims, data: encodeTensorData("BYTES", [value.b64]) };
    }
    const size = DATATYPE_BYTES[input.datatype] ?? 1;
    if (value.b64.length !== expected * size)
      throw new InputDataError(
        file,
        step,
        input.name,
        `"b64" holds ${value.b64.length} byte(s) but ${expected} ${input.datatype} element(s) of shape [${dims.join(",")}] take ${expected * size}`,
        { hint: 'Encode the raw row-major tensor, or give a "shape" that matches it.' },
      );
    return { dims, data: value.b64 };
  }
  const values = value.content ?? [];
  if (values.length !== expected) {
    throw new InputDataError(
      file,
      step,
      input.name,
      `${values.length} element(s) but shape [${dims.join(",")}] needs ${expected}`,
      { hint: `Give ${expected} values, or a "shape" next to "content" that matches them.` },
    );
  }
  try {
    return { dims, data: encodeTensorData(input.datatype, values) };
  } catch (err) {
    throw new InputDataError(file, step, input.name, `values do not fit ${input.datatype}: ${(err as Error).message}`, {
      cause: err,
      hint: `Give ${input.datatype} values.`,
    });
  }
}

function repeatBatch(data: Buffer, batchSize: number): Buffer {
  return batchSize === 1 ? data : Buffer.concat(Array.from({ length: batchSize }, () => data));
}

/**
 * The request inputs to send, one array per distinct request (the load generator rotates through
 * them): from the data file's steps, or synthesised from the model's metadata.
 */
export async function buildPayloads(
  inputs: readonly ResolvedInput[],
  batching: boolean,
  o: InputOptions,
): Promise<RawTensor[][]> {
  const full = (dims: number[]) => (batching ? [o.batchSize, ...dims] : dims);
  if (typeof o.data === "object") {
    const { file, steps } = o.data;
    const names = new Set(inputs.map((i) => i.name));
    return steps.map((step, k) => {
      for (const name of step.keys()) {
        if (!names.has(name))
          throw new InputDataError(file, k + 1, name, "not an input this run sends", {
            hint: `The model's inputs sent here: ${[...names].join(", ")}.`,
          });
      }
      const tensors: RawTensor[] = [];
      for (const input of inputs) {
        const value = step.get(input.name);
        if (!value) {
          // Triton takes a request without an optional input; it is the step's choice.
          if (input.optional) continue;
          throw new InputDataError(file, k + 1, input.name, "no value for this input", {
            hint: `Every step needs all of: ${inputs
              .filter((i) => !i.optional)
              .map((i) => i.name)
              .join(", ")}.`,
          });
        }
        const t = tensorFromStep(file, k + 1, input, value);
        tensors.push({
          name: input.name,
          datatype: input.datatype,
          shape: full(t.dims),
          data: repeatBatch(t.data, o.batchSize),
        });
      }
      return tensors;
    });
  }
  const source = o.data;
  const random = o.random ?? seededRandom();
  const itemBytes = inputs.reduce(
    (n, i) => n + elementCount(i.dims) * (DATATYPE_BYTES[i.datatype] ?? o.stringLength + 4),
    0,
  );
  // A few distinct requests vary the data the server sees, within a bounded amount of memory.
  const distinct =
    source === "zero"
      ? 1
      : Math.max(1, Math.min(8, Math.floor((8 * 1024 * 1024) / Math.max(1, itemBytes * o.batchSize))));
  return Array.from({ length: distinct }, () =>
    inputs.map((input) => {
      const n = elementCount(input.dims) * o.batchSize;
      const data =
        synthesiseRaw(input.datatype, n, source, random) ??
        encodeTensorData(input.datatype, synthesise(input.datatype, n, source, o.stringLength, random));
      return { name: input.name, datatype: input.datatype, shape: full(input.dims), data };
    }),
  );
}
