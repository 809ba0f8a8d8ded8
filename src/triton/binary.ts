import { TritonDevError } from "../errors.js";

/**
 * KServe v2 tensors as raw bytes: the HTTP binary tensor data extension and gRPC's
 * raw_input_contents share one layout (little-endian, row-major, BYTES elements each prefixed
 * with a 4-byte length), so both transports are built from the same buffers.
 */

/** Bytes per element; BYTES has no fixed size. */
export const DATATYPE_BYTES: Readonly<Record<string, number>> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  BF16: 2,
  FP32: 4,
  FP64: 8,
};

export const DATATYPES = [...Object.keys(DATATYPE_BYTES), "BYTES"] as const;

export class TensorDataError extends TritonDevError {
  override name = "TensorDataError";
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** A tensor ready to send: its raw bytes in the wire layout. */
export interface RawTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: Buffer;
}

function float32ToFloat16Bits(value: number): number {
  const f32 = new Float32Array([value]);
  const x = new Uint32Array(f32.buffer)[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  const mant = x & 0x7fffff;
  if (((x >>> 23) & 0xff) === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 0x1f) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    const m = (mant | 0x800000) >> (1 - exp);
    return sign | ((m + 0x1000) >> 13);
  }
  return sign | (exp << 10) | ((mant + 0x1000) >> 13);
}

function float16BitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Encode JSON-style values (numbers, booleans, strings, bigints) into the wire layout. */
export function encodeTensorData(datatype: string, values: readonly unknown[]): Buffer {
  if (datatype === "BYTES") {
    const parts = values.map((v) =>
      Buffer.isBuffer(v) ? v : Buffer.from(typeof v === "string" ? v : JSON.stringify(v), "utf8"),
    );
    const out = Buffer.allocUnsafe(parts.reduce((n, p) => n + 4 + p.length, 0));
    let off = 0;
    for (const p of parts) {
      out.writeUInt32LE(p.length, off);
      p.copy(out, off + 4);
      off += 4 + p.length;
    }
    return out;
  }
  const size = DATATYPE_BYTES[datatype];
  if (size === undefined) throw new TensorDataError(`unknown datatype ${datatype}`);
  const out = Buffer.alloc(values.length * size);
  values.forEach((raw, i) => {
    const off = i * size;
    const v = typeof raw === "boolean" ? Number(raw) : raw;
    if (typeof v !== "number" && typeof v !== "bigint" && typeof v !== "string") {
      throw new TensorDataError(`element ${i} of a ${datatype} tensor is ${JSON.stringify(raw)}, not a number`);
    }
    switch (datatype) {
      case "BOOL":
        out.writeUInt8(Number(v) ? 1 : 0, off);
        break;
      case "UINT8":
        out.writeUInt8(Number(v), off);
        break;
      case "UINT16":
        out.writeUInt16LE(Number(v), off);
        break;
      case "UINT32":
        out.writeUInt32LE(Number(v), off);
        break;
      case "UINT64":
        out.writeBigUInt64LE(BigInt(v), off);
        break;
      case "INT8":
        out.writeInt8(Number(v), off);
        break;
      case "INT16":
        out.writeInt16LE(Number(v), off);
        break;
      case "INT32":
        out.writeInt32LE(Number(v), off);
        break;
      case "INT64":
        out.writeBigInt64LE(BigInt(v), off);
        break;
      case "FP16":
        out.writeUInt16LE(float32ToFloat16Bits(Number(v)), off);
        break;
      case "BF16": {
        const f = Buffer.alloc(4);
        f.writeFloatLE(Number(v));
        out.writeUInt16LE(f.readUInt16LE(2), off);
        break;
      }
      case "FP32":
        out.writeFloatLE(Number(v), off);
        break;
      case "FP64":
        out.writeDoubleLE(Number(v), off);
        break;
    }
  });
  return out;
}

/** Decode wire-layout bytes into JS values (numbers; bigints for 64-bit integers; strings for BYTES). */
export function decodeTensorData(datatype: string, data: Buffer): unknown[] {
  if (datatype === "BYTES") {
    const out: string[] = [];
    let off = 0;
    while (off + 4 <= data.length) {
      const n = data.readUInt32LE(off);
      if (off + 4 + n > data.length) throw new TensorDataError("a BYTES element runs past the end of its tensor");
      out.push(data.toString("utf8", off + 4, off + 4 + n));
      off += 4 + n;
    }
    return out;
  }
  const size = DATATYPE_BYTES[datatype];
  if (size === undefined) throw new TensorDataError(`unknown datatype ${datatype}`);
  const n = Math.floor(data.length / size);
  const out: unknown[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const off = i * size;
    switch (datatype) {
      case "BOOL":
        out[i] = data.readUInt8(off) !== 0;
        break;
      case "UINT8":
        out[i] = data.readUInt8(off);
        break;
      case "UINT16":
        out[i] = data.readUInt16LE(off);
        break;
      case "UINT32":
        out[i] = data.readUInt32LE(off);
        break;
      case "UINT64":
        out[i] = data.readBigUInt64LE(off);
        break;
      case "INT8":
        out[i] = data.readInt8(off);
        break;
      case "INT16":
        out[i] = data.readInt16LE(off);
        break;
      case "INT32":
        out[i] = data.readInt32LE(off);
        break;
      case "INT64":
        out[i] = data.readBigInt64LE(off);
        break;
      case "FP16":
        out[i] = float16BitsToNumber(data.readUInt16LE(off));
        break;
      case "BF16": {
        const f = Buffer.alloc(4);
        f.writeUInt16LE(data.readUInt16LE(off), 2);
        out[i] = f.readFloatLE(0);
        break;
      }
      case "FP32":
        out[i] = data.readFloatLE(off);
        break;
      case "FP64":
        out[i] = data.readDoubleLE(off);
        break;
    }
  }
  return out;
}

/** How many bytes a tensor of this type and shape takes; undefined for BYTES (variable). */
export function byteSize(datatype: string, shape: readonly number[]): number | undefined {
  const size = DATATYPE_BYTES[datatype];
  return size === undefined ? undefined : size * elementCount(shape);
}

export type ParameterValue = string | number | boolean;

export interface BinaryRequestOptions {
  id?: string;
  /** Request parameters (priority, timeout, ...); `binary_data_output` is always added. */
  parameters?: Record<string, ParameterValue>;
}

/**
 * The body of a binary-extension infer POST: the JSON header, then each input's bytes.
 * Returns the body and the header length for `Inference-Header-Content-Length`.
 */
export function buildBinaryInferBody(
  inputs: readonly RawTensor[],
  options: BinaryRequestOptions = {},
): { body: Buffer; headerLength: number } {
  const header = {
    ...(options.id ? { id: options.id } : {}),
    // Binary outputs spare the server from writing JSON arrays, as perf_analyzer asks too.
    parameters: { ...(options.parameters ?? {}), binary_data_output: true },
    inputs: inputs.map((t) => ({
      name: t.name,
      shape: t.shape,
      datatype: t.datatype,
      parameters: { binary_data_size: t.data.length },
    })),
  };
  const json = Buffer.from(JSON.stringify(header), "utf8");
  return { body: Buffer.concat([json, ...inputs.map((t) => t.data)]), headerLength: json.length };
}

export interface DecodedOutput {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
}

export interface DecodedInferResponse {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: DecodedOutput[];
}

/**
 * Read an infer response body, binary (with `Inference-Header-Content-Length`) or plain JSON.
 * Outputs sent as binary are decoded from the bytes after the header, in order.
 */
export function parseInferResponseBody(body: Buffer, headerLength?: number): DecodedInferResponse {
  const jsonEnd = headerLength ?? body.length;
  let header: {
    model_name: string;
    model_version: string;
    id?: string;
    outputs?: Array<{
      name: string;
      datatype: string;
      shape: number[];
      data?: unknown[];
      parameters?: { binary_data_size?: number };
    }>;
  };
  try {
    header = JSON.parse(body.toString("utf8", 0, jsonEnd));
  } catch (err) {
    throw new TensorDataError(`the infer response header is not JSON: ${(err as Error).message}`);
  }
  let off = jsonEnd;
  const outputs = (header.outputs ?? []).map((o) => {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) return { name: o.name, datatype: o.datatype, shape: o.shape, data: o.data ?? [] };
    if (off + size > body.length)
      throw new TensorDataError(`output ${o.name} claims ${size} bytes but the body ends first`);
    const data = decodeTensorData(o.datatype, body.subarray(off, off + size));
    off += size;
    return { name: o.name, datatype: o.datatype, shape: o.shape, data };
  });
  return {
    model_name: header.model_name,
    model_version: header.model_version,
    ...(header.id ? { id: header.id } : {}),
    outputs,
  };
}
