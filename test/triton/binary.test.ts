import { describe, expect, it } from "vitest";
import {
  buildBinaryInferBody,
  byteSize,
  decodeTensorData,
  encodeTensorData,
  parseInferResponseBody,
} from "../../src/triton/binary.js";

describe("binary tensor data", () => {
  it("round-trips every fixed-size datatype little-endian", () => {
    const cases: Array<[string, unknown[]]> = [
      ["BOOL", [true, false, true]],
      ["UINT8", [0, 255]],
      ["INT8", [-128, 127]],
      ["UINT16", [0, 65535]],
      ["INT16", [-32768, 32767]],
      ["UINT32", [0, 4294967295]],
      ["INT32", [-2147483648, 2147483647]],
      ["INT64", [-(2n ** 63n), 2n ** 63n - 1n]],
      ["UINT64", [0n, 2n ** 64n - 1n]],
      ["FP32", [0.5, -1.25]],
      ["FP64", [Math.PI, -1e300]],
      ["FP16", [1, -2, 0.5, 65504]],
      ["BF16", [1, -2, 0.5]],
    ];
    for (const [dt, values] of cases) {
      const buf = encodeTensorData(dt, values);
      expect(buf.length, dt).toBe(byteSize(dt, [values.length]));
      expect(decodeTensorData(dt, buf), dt).toEqual(values);
    }
    expect(encodeTensorData("INT32", [1]).toString("hex")).toBe("01000000");
  });

  it("prefixes each BYTES element with its 4-byte length", () => {
    const buf = encodeTensorData("BYTES", ["hi", "héllo"]);
    expect(buf.readUInt32LE(0)).toBe(2);
    expect(buf.toString("utf8", 4, 6)).toBe("hi");
    expect(buf.readUInt32LE(6)).toBe(Buffer.byteLength("héllo"));
    expect(decodeTensorData("BYTES", buf)).toEqual(["hi", "héllo"]);
  });

  it("builds a request whose JSON header announces each input's byte size and asks for binary outputs", () => {
    const data = encodeTensorData("FP32", [1, 2, 3, 4]);
    const { body, headerLength } = buildBinaryInferBody([{ name: "x", datatype: "FP32", shape: [1, 4], data }], {
      parameters: { priority: 1 },
    });
    const header = JSON.parse(body.toString("utf8", 0, headerLength));
    expect(header).toEqual({
      parameters: { priority: 1, binary_data_output: true },
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", parameters: { binary_data_size: 16 } }],
    });
    expect(body.subarray(headerLength).equals(data)).toBe(true);
  });

  it("decodes a binary response after its JSON header, and a plain JSON one", () => {
    const out = encodeTensorData("INT64", [7n, 8n]);
    const json = Buffer.from(
      JSON.stringify({
        model_name: "m",
        model_version: "1",
        outputs: [{ name: "y", datatype: "INT64", shape: [1, 2], parameters: { binary_data_size: 16 } }],
      }),
    );
    const r = parseInferResponseBody(Buffer.concat([json, out]), json.length);
    expect(r.outputs[0]).toEqual({ name: "y", datatype: "INT64", shape: [1, 2], data: [7n, 8n] });
    const plain = parseInferResponseBody(
      Buffer.from(
        JSON.stringify({
          model_name: "m",
          model_version: "1",
          outputs: [{ name: "y", datatype: "FP32", shape: [1], data: [0.5] }],
        }),
      ),
    );
    expect(plain.outputs[0]!.data).toEqual([0.5]);
  });
});
