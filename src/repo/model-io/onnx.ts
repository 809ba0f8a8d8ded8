import fsp from "node:fs/promises";
import { retryFdLimit } from "../fd-limit.js";
import path from "node:path";
import {
  GraphProtoSchema,
  ModelProtoSchema,
  StringStringEntryProtoSchema,
  TensorProtoSchema,
  TensorShapeProtoSchema,
  TensorShapeProto_DimensionSchema,
  TypeProtoSchema,
  TypeProto_TensorSchema,
  ValueInfoProtoSchema,
} from "../gen/onnx_pb.js";
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
  /**
   * Graph inputs that are initializers too: not inputs, but a request may override them
   * (onnxruntime's overridable initializers), so a config may list them, as optional inputs.
   */
  overridable: ModelTensor[];
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

/**
 * Field numbers, from the generated schema of onnx.proto (whose numbers a test checks against the
 * onnx package). The messages are walked on the wire rather than decoded by fromBinary, which
 * reads a known field number with the wrong wire type as that field; protobuf (onnxruntime's
 * parser) takes such a field as unknown and skips it, and so does this walk.
 */
const MODEL_IR_VERSION = ModelProtoSchema.field.irVersion!.number;
const MODEL_GRAPH = ModelProtoSchema.field.graph!.number;
const GRAPH_INITIALIZER = GraphProtoSchema.field.initializer!.number;
const GRAPH_INPUT = GraphProtoSchema.field.input!.number;
const GRAPH_OUTPUT = GraphProtoSchema.field.output!.number;
const TENSOR_NAME = TensorProtoSchema.field.name!.number;
const TENSOR_EXTERNAL_DATA = TensorProtoSchema.field.externalData!.number;
const TENSOR_DATA_LOCATION = TensorProtoSchema.field.dataLocation!.number;
const ENTRY_KEY = StringStringEntryProtoSchema.field.key!.number;
const ENTRY_VALUE = StringStringEntryProtoSchema.field.value!.number;
const VALUE_NAME = ValueInfoProtoSchema.field.name!.number;
const VALUE_TYPE = ValueInfoProtoSchema.field.type!.number;
const TYPE_TENSOR = TypeProtoSchema.field.tensorType!.number;
/** TypeProto's other cases of its oneof (sequence 4, map 5, opaque 7, sparse 8, optional 9), not in our subset. */
const TYPE_OTHER_CASES = new Set([4, 5, 7, 8, 9]);
const TENSOR_ELEM_TYPE = TypeProto_TensorSchema.field.elemType!.number;
const TENSOR_SHAPE = TypeProto_TensorSchema.field.shape!.number;
const SHAPE_DIM = TensorShapeProtoSchema.field.dim!.number;
const DIM_VALUE = TensorShapeProto_DimensionSchema.field.dimValue!.number;
const DIM_PARAM = TensorShapeProto_DimensionSchema.field.dimParam!.number;
const DATA_LOCATION_EXTERNAL = 1;

/** Bounds no real model reaches: a tensor's description, a name, the count of inputs and outputs. */
export const ONNX_LIMITS = { valueInfoBytes: 1024 * 1024, nameBytes: 64 * 1024, tensors: 100_000 };

const utf8 = new TextDecoder("utf-8", { fatal: false });

const isLen = (f: Field, n: number) => f.number === n && f.wireType === WIRE_LEN;
const isVarint = (f: Field, n: number) => f.number === n && f.wireType === WIRE_VARINT;
const inside = (wire: WireFile, f: Field) => wire.fields(f.start!, f.start! + f.length!);

async function text(wire: WireFile, f: Field, what: string): Promise<string> {
  return utf8.decode(await wire.bytes(f, ONNX_LIMITS.nameBytes, what));
}

/**
 * One graph input or output (ValueInfoProto), by protobuf's rules: the last name wins, a message
 * field written twice is merged, and a oneof keeps its last case.
 */
async function readValueInfo(wire: WireFile, field: Field): Promise<ModelTensor> {
  if ((field.length ?? 0) > ONNX_LIMITS.valueInfoBytes)
    throw new WireError(
      "too-large",
      field.at,
      `a graph input or output at byte ${field.at} is ${field.length} bytes (at most ${ONNX_LIMITS.valueInfoBytes} read)`,
    );
  let name = "";
  let hasType = false;
  let typeCase: "tensor" | "other" | undefined;
  let elemType = 0;
  let dims: number[] | undefined;
  for await (const f of inside(wire, field)) {
    if (isLen(f, VALUE_NAME)) name = await text(wire, f, "a tensor's name");
    if (!isLen(f, VALUE_TYPE)) continue;
    hasType = true;
    for await (const t of inside(wire, f)) {
      if (t.wireType === WIRE_LEN && TYPE_OTHER_CASES.has(t.number)) typeCase = "other";
      if (!isLen(t, TYPE_TENSOR)) continue;
      if (typeCase !== "tensor") {
        elemType = 0;
        dims = undefined;
      }
      typeCase = "tensor";
      for await (const x of inside(wire, t)) {
        if (isVarint(x, TENSOR_ELEM_TYPE)) elemType = x.varint ?? 0;
        if (!isLen(x, TENSOR_SHAPE)) continue;
        dims ??= [];
        for await (const d of inside(wire, x)) {
          if (!isLen(d, SHAPE_DIM)) continue;
          // A dim_param, or no value at all, is a size that varies; so is a negative dim_value.
          let size = -1;
          for await (const v of inside(wire, d)) {
            if (isVarint(v, DIM_VALUE)) size = (v.varint ?? 0) <= 0x7fffffff ? v.varint! : -1;
            if (isLen(v, DIM_PARAM)) size = -1;
          }
          dims.push(size);
        }
      }
    }
  }
  if (typeCase !== "tensor") return { name, fileType: hasType ? "not a tensor" : "no type" };
  const { fileType, dataType } = onnxElemType(elemType);
  return { name, fileType, ...(dataType ? { dataType } : {}), ...(dims ? { dims } : {}) };
}

/** Reads the inputs and outputs of the ONNX model at `file` (see the top of this file). */
export async function readOnnxModel(file: string): Promise<OnnxModelInfo> {
  let fh: fsp.FileHandle;
  try {
    fh = await retryFdLimit(() => fsp.open(file, "r"));
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
        (g.number === GRAPH_INPUT ? inputs : outputs).push(await readValueInfo(wire, g));
      } else if (g.number === GRAPH_INITIALIZER) {
        await readInitializer(wire, g, initializers, externalData);
      }
    }
  }
  if (!sawGraph)
    throw new OnnxReadError("no-graph", file, `${path.basename(file)} is not an ONNX model: it holds no graph`);
  return {
    irVersion,
    inputs: inputs.filter((t) => !initializers.has(t.name)),
    outputs,
    overridable: inputs.filter((t) => initializers.has(t.name)),
    externalData,
  };
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
    if (isLen(t, TENSOR_NAME)) {
      name = await text(wire, t, "an initializer's name");
    } else if (isVarint(t, TENSOR_DATA_LOCATION)) {
      external = t.varint === DATA_LOCATION_EXTERNAL;
    } else if (isLen(t, TENSOR_EXTERNAL_DATA)) {
      let key = "";
      let value = "";
      for await (const e of inside(wire, t)) {
        if (isLen(e, ENTRY_KEY)) key = await text(wire, e, "an external_data key");
        if (isLen(e, ENTRY_VALUE)) value = await text(wire, e, "an external_data value");
      }
      entries[key] = value;
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
