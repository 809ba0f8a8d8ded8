import { describe, expect, it } from "vitest";
import { generateBodies, parseGenerateEvent } from "../../src/perf/generate-stream.js";
import { encodeTensorData, type RawTensor } from "../../src/triton/binary.js";
import type { ModelConfigSummary } from "../../src/triton/grpc-client.js";
import type { ModelMetadata } from "../../src/triton/http-client.js";

const config = (o: Partial<ModelConfigSummary> = {}): ModelConfigSummary => ({
  name: "m",
  platform: "",
  backend: "python",
  max_batch_size: 0,
  instance_group: [],
  decoupled: true,
  ...o,
});
const meta = (inputs: ModelMetadata["inputs"], outputs: ModelMetadata["outputs"]): ModelMetadata => ({
  name: "m",
  versions: ["1"],
  platform: "python",
  inputs,
  outputs,
});
const text = (s: string): RawTensor => ({
  name: "TEXT",
  datatype: "BYTES",
  shape: [1],
  data: encodeTensorData("BYTES", [s]),
});

describe("generate_stream fit", () => {
  const streamer = meta(
    [{ name: "TEXT", datatype: "BYTES", shape: [1] }],
    [
      { name: "TOKEN_ID", datatype: "INT64", shape: [1] },
      { name: "SCORE", datatype: "FP32", shape: [1] },
    ],
  );

  it("sends a model of one-element inputs and outputs as JSON scalars by input name", () => {
    expect(generateBodies(streamer, config(), [[text("hello world")], [text("é ü")]])).toEqual([
      '{"TEXT":"hello world"}',
      '{"TEXT":"é ü"}',
    ]);
    const n = meta([{ name: "IN", datatype: "INT32", shape: [1] }], [{ name: "OUT", datatype: "INT32", shape: [1] }]);
    const t: RawTensor = { name: "IN", datatype: "INT32", shape: [1], data: encodeTensorData("INT32", [4]) };
    expect(generateBodies(n, config(), [[t]])).toEqual(['{"IN":4}']);
  });

  it("refuses what the generate extension cannot carry for certain: batching, tensors, 64-bit inputs, non-UTF-8 bytes", () => {
    expect(generateBodies(streamer, config({ max_batch_size: 8 }), [[text("a")]])).toBeUndefined();
    const wide = meta(
      [{ name: "IN", datatype: "INT32", shape: [4] }],
      [{ name: "OUT", datatype: "INT32", shape: [1] }],
    );
    expect(generateBodies(wide, config(), [])).toBeUndefined();
    const many = meta(
      [{ name: "TEXT", datatype: "BYTES", shape: [1] }],
      [{ name: "OUT", datatype: "INT32", shape: [-1] }],
    );
    expect(generateBodies(many, config(), [[text("a")]])).toBeUndefined();
    const i64 = meta([{ name: "IN", datatype: "INT64", shape: [1] }], [{ name: "OUT", datatype: "INT32", shape: [1] }]);
    expect(generateBodies(i64, config(), [])).toBeUndefined();
    const bad: RawTensor = { name: "TEXT", datatype: "BYTES", shape: [1], data: Buffer.from([1, 0, 0, 0, 0xff]) };
    expect(generateBodies(streamer, config(), [[bad]])).toBeUndefined();
  });

  it("reads an event as one response's outputs, or as the error the stream ended with", () => {
    expect(parseGenerateEvent('{"SCORE":0.5,"TOKEN_ID":2065,"model_name":"m","model_version":"1"}')).toEqual({
      elements: 2,
      outputs: { SCORE: 0.5, TOKEN_ID: 2065 },
    });
    expect(parseGenerateEvent('{"OUT":[1,2,3],"model_name":"m"}').elements).toBe(3);
    expect(parseGenerateEvent('{"error":"TEXT has no words to tokenize"}')).toMatchObject({
      error: "TEXT has no words to tokenize",
    });
    expect(parseGenerateEvent("not json").error).toMatch(/not JSON/);
  });
});
