import fsp from "node:fs/promises";
import { UsageError, UserError } from "../errors.js";
import { DATATYPE_BYTES, elementCount, encodeTensorData, type RawTensor } from "../triton/binary.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import type { ModelMetadata, TensorMetadata } from "../triton/http-client.js";

export type InputDataSource = "random" | "zero" | { file: string };

export interface InputOptions {
  batchSize: number;
  /** From `--shape NAME:d1,d2`: the non-batch dimensions of inputs whose shape has -1. */
  shapes: Record<string, number[]>;
  data: InputDataSource;
  /** Characters per synthesised BYTES element. */
  stringLength: number;
  /** Seeded by default so two runs send the same data. */
  random?: () => number;
}

/** `NAME:d1,d2,...`; the name may itself hold colons, so the dimensions follow the last one. */
export function parseShapeFlag(value: string): [string, number[]] {
  const i = value.lastIndexOf(":");
  const name = i > 0 ? value.slice(0, i) : "";
  const dims =
    i > 0
      ? value
          .slice(i + 1)
          .split(",")
          .map((d) => d.trim())
      : [];
  if (!name || dims.length === 0 || dims.some((d) => !/^\d+$/.test(d) || Number(d) < 1)) {
    throw new UsageError(`--shape must look like NAME:d1,d2 with every dimension a whole number >= 1, got '${value}'`, {
      hint: "Give the dimensions without the batch dimension, e.g. --shape INPUT0:3,224,224.",
    });
  }
  return [name, dims.map(Number)];
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
  /** Without the batch dimension. */
  dims: number[];
}

/** Each input's concrete dimensions, filling -1 from --shape, with perf_analyzer's error when one is missing. */
export function resolveInputs(
  metadata: ModelMetadata,
  config: Pick<ModelConfigSummary, "max_batch_size">,
  o: Pick<InputOptions, "batchSize" | "shapes">,
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
  return metadata.inputs.map((t: TensorMetadata) => {
    const declared = batching ? t.shape.slice(1) : t.shape;
    const given = o.shapes[t.name];
    if (given) {
      if (given.length !== declared.length || given.some((d, i) => declared[i]! >= 0 && declared[i] !== d)) {
        throw new UsageError(
          `--shape ${t.name}:${given.join(",")} does not fit the model's shape [${declared.join(",")}] for ${t.name}`,
          {
            hint: "Give every dimension except the batch dimension; fixed ones must match the model.",
          },
        );
      }
      return { name: t.name, datatype: t.datatype, dims: given };
    }
    if (declared.some((d) => d < 0)) {
      throw new UsageError(
        `input ${t.name} contains dynamic shape [${declared.join(",")}], provide shapes to send along with the request`,
        {
          hint: `Pass --shape ${t.name}:${declared.map((d) => (d < 0 ? "N" : String(d))).join(",")} with a size for each -1.`,
        },
      );
    }
    return { name: t.name, datatype: t.datatype, dims: declared };
  });
}

function flatten(v: unknown): unknown[] {
  return Array.isArray(v) ? v.flatMap(flatten) : [v];
}

interface DataFileEntry {
  [input: string]: unknown;
}

/**
 * perf_analyzer's --input-data JSON: {"data": [{"IN": [..] | {"content": [..], "shape": [..]} | {"b64": ".."}}, ...]}.
 */
async function readDataFile(file: string): Promise<DataFileEntry[]> {
  let text: string;
  try {
    text = await fsp.readFile(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read --input-data ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UserError(`--input-data ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const data = (json as { data?: unknown }).data;
  if (
    !Array.isArray(data) ||
    data.length === 0 ||
    data.some((e) => typeof e !== "object" || e === null || Array.isArray(e))
  ) {
    throw new UserError(
      `--input-data ${file} must hold {"data": [ {"INPUT": [values]}, ... ]} with at least one entry`,
      {
        hint: 'This is perf_analyzer\'s format; an entry may also give {"content": [...], "shape": [...]} or {"b64": "..."} per input.',
      },
    );
  }
  return data as DataFileEntry[];
}

function tensorFromEntry(input: ResolvedInput, value: unknown, where: string): { dims: number[]; data: Buffer } {
  let content: unknown = value;
  let dims = input.dims;
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const v = value as { content?: unknown; shape?: unknown; b64?: unknown };
    if (Array.isArray(v.shape)) dims = v.shape.map(Number);
    if (typeof v.b64 === "string") return { dims, data: Buffer.from(v.b64, "base64") };
    content = v.content;
  }
  const values = flatten(content);
  const expected = elementCount(dims);
  if (values.length !== expected) {
    throw new UserError(
      `${where}: ${input.name} has ${values.length} element(s) but shape [${dims.join(",")}] needs ${expected}`,
      {
        hint: `Give ${expected} values, or a "shape" next to "content" (and --shape ${input.name}:... for a dynamic input).`,
      },
    );
  }
  return { dims, data: encodeTensorData(input.datatype, values) };
}

function repeatBatch(data: Buffer, batchSize: number): Buffer {
  return batchSize === 1 ? data : Buffer.concat(Array.from({ length: batchSize }, () => data));
}

/**
 * The request inputs to send, one array per distinct request (the load generator rotates through
 * them): from the data file's entries, or synthesised from the model's metadata.
 */
export async function buildPayloads(
  inputs: readonly ResolvedInput[],
  batching: boolean,
  o: InputOptions,
): Promise<RawTensor[][]> {
  const full = (dims: number[]) => (batching ? [o.batchSize, ...dims] : dims);
  if (typeof o.data === "object") {
    const file = o.data.file;
    const entries = await readDataFile(file);
    return entries.map((entry, k) =>
      inputs.map((input) => {
        if (!(input.name in entry)) {
          throw new UserError(`--input-data ${file}: entry ${k + 1} has no value for input ${input.name}`, {
            hint: `Every entry needs all of: ${inputs.map((i) => i.name).join(", ")}.`,
          });
        }
        const t = tensorFromEntry(input, entry[input.name], `--input-data ${file}, entry ${k + 1}`);
        return {
          name: input.name,
          datatype: input.datatype,
          shape: full(t.dims),
          data: repeatBatch(t.data, o.batchSize),
        };
      }),
    );
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
