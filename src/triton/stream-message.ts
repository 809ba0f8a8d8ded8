import { fromBinary } from "@bufbuild/protobuf";
import { ModelStreamInferResponseSchema, type ModelInferResponse } from "./gen/grpc_service_pb.js";

/** One message of a ModelStreamInfer stream, decoded only as far as a load generator needs. */
export interface StreamMessage {
  /** Triton's error for the request this message ends; "" for a response. */
  error: string;
  /** The response carries `triton_final_response: true`: its request is complete. */
  final: boolean;
  /** Output tensors the response carries (0 for the empty final response). */
  outputs: number;
  /** Elements over all its outputs (tokens, for a generator emitting one id per token). */
  elements: number;
  /** The whole response, decoded on first use (a load generator never asks). */
  readonly response: ModelInferResponse | undefined;
}

// Field numbers of grpc_service.proto's messages, as far as the scan reads them.
const STREAM_ERROR = 1; // ModelStreamInferResponse.error_message
const STREAM_RESPONSE = 2; // ModelStreamInferResponse.infer_response
const RESPONSE_PARAMETERS = 4; // ModelInferResponse.parameters (map<string, InferParameter>)
const RESPONSE_OUTPUTS = 5; // ModelInferResponse.outputs
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;
const PARAM_BOOL = 1; // InferParameter.bool_param
const OUTPUT_SHAPE = 3; // InferOutputTensor.shape (repeated int64)
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;
const FINAL_KEY = Buffer.from("triton_final_response");

class WireError extends Error {}

/** A forward-only reader of protobuf's wire format over one buffer range. */
class Wire {
  constructor(
    private readonly b: Buffer,
    public pos: number,
    private readonly end: number,
  ) {}

  more(): boolean {
    return this.pos < this.end;
  }

  /** A varint below 2^53 (field tags, lengths, shapes; larger dims do not occur). */
  varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError("truncated varint");
      const byte = this.b[this.pos++]!;
      v += (byte & 0x7f) * scale;
      if (byte < 0x80) return v;
      scale *= 128;
    }
    throw new WireError("varint too long");
  }

  /** The range of a length-delimited field's contents; the reader moves past it. */
  range(): [number, number] {
    const n = this.varint();
    const from = this.pos;
    if (from + n > this.end) throw new WireError("truncated field");
    this.pos = from + n;
    return [from, from + n];
  }

  skip(wireType: number): void {
    if (wireType === VARINT) this.varint();
    else if (wireType === FIXED64) this.pos += 8;
    else if (wireType === LEN) this.range();
    else if (wireType === FIXED32) this.pos += 4;
    else throw new WireError(`wire type ${wireType}`);
    if (this.pos > this.end) throw new WireError("truncated field");
  }
}

/** Is this `parameters` map entry `triton_final_response: true`? */
function isFinalEntry(b: Buffer, from: number, to: number): boolean {
  const w = new Wire(b, from, to);
  let keyIsFinal = false;
  let value: [number, number] | undefined;
  while (w.more()) {
    const tag = w.varint();
    const field = Math.floor(tag / 8);
    if (field === ENTRY_KEY && (tag & 7) === LEN) {
      const [s, e] = w.range();
      keyIsFinal = e - s === FINAL_KEY.length && b.compare(FINAL_KEY, 0, FINAL_KEY.length, s, e) === 0;
    } else if (field === ENTRY_VALUE && (tag & 7) === LEN) value = w.range();
    else w.skip(tag & 7);
  }
  if (!keyIsFinal || !value) return false;
  const v = new Wire(b, value[0], value[1]);
  let on = false;
  while (v.more()) {
    const tag = v.varint();
    if (Math.floor(tag / 8) === PARAM_BOOL && (tag & 7) === VARINT) on = v.varint() !== 0;
    else v.skip(tag & 7);
  }
  return on;
}

/** Elements of one InferOutputTensor: the product of its shape (1 for a scalar). */
function outputElements(b: Buffer, from: number, to: number): number {
  const w = new Wire(b, from, to);
  let n = 1;
  while (w.more()) {
    const tag = w.varint();
    if (Math.floor(tag / 8) !== OUTPUT_SHAPE) w.skip(tag & 7);
    else if ((tag & 7) === LEN) {
      const [s, e] = w.range();
      const dims = new Wire(b, s, e);
      while (dims.more()) n *= dims.varint();
    } else n *= w.varint();
  }
  return n;
}

/**
 * Read what a load generator needs from a ModelStreamInferResponse without decoding it: the error,
 * the final flag, the outputs and their elements. A stream delivers one such message per response
 * (a token generator, tens per request) and the load generator sends the next request only once a
 * request's messages are read: protobuf-es's full decode (every output tensor, its parameters and
 * raw contents copied into objects) took 10-30 µs a message there, this scan 1-2 µs. The whole
 * response is decoded on first use of `response`.
 */
export function decodeStreamMessage(bytes: Buffer): StreamMessage {
  let error = "";
  let final = false;
  let outputs = 0;
  let elements = 0;
  let hasResponse = false;
  try {
    const top = new Wire(bytes, 0, bytes.length);
    while (top.more()) {
      const tag = top.varint();
      const field = Math.floor(tag / 8);
      if (field === STREAM_ERROR && (tag & 7) === LEN) {
        const [s, e] = top.range();
        error = bytes.toString("utf8", s, e);
      } else if (field === STREAM_RESPONSE && (tag & 7) === LEN) {
        hasResponse = true;
        const [s, e] = top.range();
        const r = new Wire(bytes, s, e);
        while (r.more()) {
          const t = r.varint();
          const f = Math.floor(t / 8);
          if (f === RESPONSE_PARAMETERS && (t & 7) === LEN) {
            const [ps, pe] = r.range();
            if (!final && isFinalEntry(bytes, ps, pe)) final = true;
          } else if (f === RESPONSE_OUTPUTS && (t & 7) === LEN) {
            const [os, oe] = r.range();
            outputs++;
            elements += outputElements(bytes, os, oe);
          } else r.skip(t & 7);
        }
      } else top.skip(tag & 7);
    }
  } catch (err) {
    if (!(err instanceof WireError)) throw err;
    // A message the scan cannot read: protobuf-es says what is wrong with it, or reads it.
    return fullStreamMessage(bytes);
  }
  return new ScannedMessage(error, final, outputs, elements, hasResponse ? bytes : undefined);
}

/** A class, not a literal with a getter: one allocation a message, the same shape for all. */
class ScannedMessage implements StreamMessage {
  private decoded: ModelInferResponse | undefined;

  constructor(
    readonly error: string,
    readonly final: boolean,
    readonly outputs: number,
    readonly elements: number,
    private readonly bytes: Buffer | undefined,
  ) {}

  get response(): ModelInferResponse | undefined {
    if (!this.bytes) return undefined;
    return (this.decoded ??= fromBinary(ModelStreamInferResponseSchema, this.bytes).inferResponse);
  }
}

function fullStreamMessage(bytes: Buffer): StreamMessage {
  const m = fromBinary(ModelStreamInferResponseSchema, bytes);
  const r = m.inferResponse;
  const flag = r?.parameters["triton_final_response"]?.parameterChoice;
  return {
    error: m.errorMessage,
    final: flag?.case === "boolParam" && flag.value,
    outputs: r?.outputs.length ?? 0,
    elements: (r?.outputs ?? []).reduce((a, o) => a + o.shape.reduce((p, d) => p * Number(d), 1), 0),
    response: r,
  };
}
