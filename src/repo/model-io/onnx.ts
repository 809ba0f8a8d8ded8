import fsp from "node:fs/promises";
import path from "node:path";
import { type DescMessage, type MessageShape, fromBinary } from "@bufbuild/protobuf";
import { type ValueInfoProto, StringStringEntryProtoSchema, ValueInfoProtoSchema } from "../gen/onnx_pb.js";
import type { DataTypeName } from "../model-config.js";
import { type Field, WIRE_LEN, WIRE_VARINT, WireError, WireFile, type WireProblem } from "./wire.js";

/**
 * The inputs and outputs of an ONNX model, read the way onnxruntime lists them for Triton's
 * onnxruntime backend: the graph's inputs minus those that are also initializers (ORT's
 * Graph::GetInputs leaves them out, so the backend never sees them), and the graph's outputs.
 * The file is walked on the wire (wire.ts): the nodes and the initializers' data are skipped, not
 * read, so a 2 GB model reads in a few milliseconds with memory bounded by the names it holds.
 */

/** One tensor of a model file, with its type already in Triton's terms. */
export interface ModelTensor {
  name: string;
  /** Triton's name for its element type; undefined when Triton has none (a sequence, a map, complex64). */
  dataType?: DataTypeName;
  /** What the file calls its type, for messages ("FLOAT", "seq(tensor)"). */
  fileType: string;
  /** Its shape, -1 for a dimension of variable size; undefined when the model gives no shape. */
  dims?: number[];
}

/** An initializer whose data lives in another file. */
export interface ExternalData {
  tensor: string;
  location: string;
  offset?: number;
  length?: number;
}

export interface OnnxModelInfo {
  irVersion: number;
  inputs: ModelTensor[];
  outputs: ModelTensor[];
  externalData: ExternalData[];
  /** Bytes read from the file (a bounded few, whatever its size). */
  bytesRead: number;
}

export type OnnxProblem = WireProblem | "unreadable" | "no-graph";

/** The model file could not be read as ONNX: where, and what was wrong. */
export class OnnxReadError extends Error {
  override name = "OnnxReadError";
  constructor(
    readonly problem: OnnxProblem,
    readonly file: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Elem types of onnx.TensorProto.DataType (onnx.proto), with Triton's name where it has one. */
const ELEM_TYPES: Record<number, [string, DataTypeName | undefined]> = {
  0: ["UNDEFINED", undefined],
  1: ["FLOAT", "TYPE_FP32"],
  2: ["UINT8", "TYPE_UINT8"],
  3: ["INT8", "TYPE_INT8"],
  4: ["UINT16", "TYPE_UINT16"],
  5: ["INT16", "TYPE_INT16"],
  6: ["INT32", "TYPE_INT32"],
  7: ["INT64", "TYPE_INT64"],
  8: ["STRING", "TYPE_STRING"],
  9: ["BOOL", "TYPE_BOOL"],
  10: ["FLOAT16", "TYPE_FP16"],
  11: ["DOUBLE", "TYPE_FP64"],
  12: ["UINT32", "TYPE_UINT32"],
  13: ["UINT64", "TYPE_UINT64"],
  14: ["COMPLEX64", undefined],
  15: ["COMPLEX128", undefined],
  16: ["BFLOAT16", "TYPE_BF16"],
};

export function onnxElemType(elem: number): { fileType: string; dataType?: DataTypeName } {
  const known = ELEM_TYPES[elem];
  if (!known) return { fileType: `elem_type ${elem}` };
  return { fileType: known[0], ...(known[1] ? { dataType: known[1] } : {}) };
}

/** Field numbers of onnx.proto (see src/repo/proto/onnx.proto). */
const MODEL_IR_VERSION = 1;
const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const TENSOR_NAME = 8;
const TENSOR_EXTERNAL_DATA = 13;
const TENSOR_DATA_LOCATION = 14;
const DATA_LOCATION_EXTERNAL = 1;

/** Bounds no real model reaches: a tensor's description, a name, the count of inputs and outputs. */
export const ONNX_LIMITS = { valueInfoBytes: 1024 * 1024, nameBytes: 64 * 1024, tensors: 100_000 };

function tensorOf(v: ValueInfoProto): ModelTensor {
  const t = v.type?.value;
  // Sequences, maps and optionals are other cases of TypeProto's oneof, which lint does not decode.
  if (t?.case !== "tensorType") return { name: v.name, fileType: v.type ? "not a tensor" : "no type" };
  const { fileType, dataType } = onnxElemType(t.value.elemType);
  const shape = t.value.shape;
  const dims = shape?.dim.map((d) => (d.value.case === "dimValue" && d.value.value >= 0n ? Number(d.value.value) : -1));
  return { name: v.name, fileType, ...(dataType ? { dataType } : {}), ...(dims ? { dims } : {}) };
}

/** A small message of the file, decoded; what does not decode is a corrupt file, at its offset. */
function decode<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array, f: Field, what: string): MessageShape<Desc> {
  try {
    return fromBinary(schema, bytes);
  } catch (err) {
    throw new WireError("corrupt", f.at, `${what} at byte ${f.at} cannot be decoded (${(err as Error).message})`);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** Reads the inputs and outputs of the ONNX model at `file` (see the top of this file). */
export async function readOnnxModel(file: string): Promise<OnnxModelInfo> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, "r");
  } catch (err) {
    throw new OnnxReadError("unreadable", file, `cannot open ${path.basename(file)}`, { cause: err });
  }
  try {
    const size = (await fh.stat()).size;
    const wire = new WireFile(fh, size);
    const info = await walkModel(wire, file);
    return { ...info, bytesRead: wire.bytesRead };
  } catch (err) {
    if (err instanceof OnnxReadError) throw err;
    if (err instanceof WireError)
      throw new OnnxReadError(err.problem, file, `${path.basename(file)} is not a valid ONNX model: ${err.message}`, {
        cause: err,
      });
    throw new OnnxReadError("unreadable", file, `cannot read ${path.basename(file)}`, { cause: err });
  } finally {
    await fh.close();
  }
}

async function walkModel(wire: WireFile, file: string): Promise<Omit<OnnxModelInfo, "bytesRead">> {
  let irVersion = 0;
  let sawGraph = false;
  const inputs: ModelTensor[] = [];
  const outputs: ModelTensor[] = [];
  const initializers = new Set<string>();
  const externalData: ExternalData[] = [];
  for await (const f of wire.fields(0, wire.size)) {
    if (f.number === MODEL_IR_VERSION && f.wireType === WIRE_VARINT) irVersion = f.varint ?? 0;
    if (f.number !== MODEL_GRAPH || f.wireType !== WIRE_LEN) continue;
    // A message field written twice is merged by protobuf: its repeated fields add up.
    sawGraph = true;
    for await (const g of wire.fields(f.start!, f.start! + f.length!)) {
      if (g.wireType !== WIRE_LEN) continue;
      if (g.number === GRAPH_INPUT || g.number === GRAPH_OUTPUT) {
        if (inputs.length + outputs.length >= ONNX_LIMITS.tensors)
          throw new WireError("too-large", g.at, `the graph lists more than ${ONNX_LIMITS.tensors} inputs and outputs`);
        const bytes = await wire.bytes(g, ONNX_LIMITS.valueInfoBytes, "a graph input or output");
        const v = decode(ValueInfoProtoSchema, bytes, g, `the graph ${g.number === GRAPH_INPUT ? "input" : "output"}`);
        (g.number === GRAPH_INPUT ? inputs : outputs).push(tensorOf(v));
      } else if (g.number === GRAPH_INITIALIZER) {
        await readInitializer(wire, g, initializers, externalData);
      }
    }
  }
  if (!sawGraph)
    throw new OnnxReadError("no-graph", file, `${path.basename(file)} is not an ONNX model: it holds no graph`);
  return { irVersion, inputs: inputs.filter((t) => !initializers.has(t.name)), outputs, externalData };
}

/** An initializer's name and, when its data is in another file, where: its data is skipped. */
async function readInitializer(
  wire: WireFile,
  field: Field,
  names: Set<string>,
  externalData: ExternalData[],
): Promise<void> {
  let name = "";
  let external = false;
  const entries: Record<string, string> = {};
  for await (const t of wire.fields(field.start!, field.start! + field.length!)) {
    if (t.number === TENSOR_NAME && t.wireType === WIRE_LEN) {
      name = utf8.decode(await wire.bytes(t, ONNX_LIMITS.nameBytes, "an initializer's name"));
    } else if (t.number === TENSOR_DATA_LOCATION && t.wireType === WIRE_VARINT) {
      external = t.varint === DATA_LOCATION_EXTERNAL;
    } else if (t.number === TENSOR_EXTERNAL_DATA && t.wireType === WIRE_LEN) {
      const bytes = await wire.bytes(t, ONNX_LIMITS.nameBytes, "an initializer's external_data");
      const e = decode(StringStringEntryProtoSchema, bytes, t, "an initializer's external_data");
      entries[e.key] = e.value;
    }
  }
  names.add(name);
  if (external && entries.location !== undefined) {
    const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined);
    const offset = num(entries.offset);
    const length = num(entries.length);
    externalData.push({
      tensor: name,
      location: entries.location,
      ...(offset !== undefined ? { offset } : {}),
      ...(length !== undefined ? { length } : {}),
    });
  }
}
