import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ModelStreamInferResponseSchema } from "../../src/triton/gen/grpc_service_pb.js";
import { decodeStreamMessage } from "../../src/triton/stream-message.js";

const encode = (m: MessageInitShape<typeof ModelStreamInferResponseSchema>) =>
  Buffer.from(toBinary(ModelStreamInferResponseSchema, create(ModelStreamInferResponseSchema, m)));
const bool = (value: boolean) => ({ parameterChoice: { case: "boolParam" as const, value } });
const facts = (b: Buffer) => {
  const m = decodeStreamMessage(b);
  return { error: m.error, final: m.final, outputs: m.outputs, elements: m.elements };
};

describe("a ModelStreamInfer message read without decoding it", () => {
  it("reads a data response: its outputs, their elements, not final", () => {
    const b = encode({
      inferResponse: {
        modelName: "text_streamer",
        modelVersion: "1",
        id: "7",
        outputs: [
          { name: "TOKEN_ID", datatype: "INT64", shape: [1n] },
          { name: "SCORE", datatype: "FP32", shape: [2n, 3n] },
        ],
        rawOutputContents: [new Uint8Array(8), new Uint8Array(24)],
        parameters: {
          triton_final_response: bool(false),
          sequence_id: { parameterChoice: { case: "int64Param", value: 9n } },
        },
      },
    });
    expect(facts(b)).toEqual({ error: "", final: false, outputs: 2, elements: 7 });
    // The whole response is still there for who asks (the probe).
    expect(decodeStreamMessage(b).response?.outputs.map((o) => o.name)).toEqual(["TOKEN_ID", "SCORE"]);
  });

  it("reads the empty final response and a final flag that comes with data", () => {
    expect(
      facts(encode({ inferResponse: { modelName: "m", parameters: { triton_final_response: bool(true) } } })),
    ).toEqual({
      error: "",
      final: true,
      outputs: 0,
      elements: 0,
    });
    const withData = encode({
      inferResponse: {
        // The flag first, another parameter after it, a scalar output (no shape: one element).
        parameters: { triton_final_response: bool(true), other: bool(false) },
        outputs: [{ name: "OUT", datatype: "INT32" }],
      },
    });
    expect(facts(withData)).toEqual({ error: "", final: true, outputs: 1, elements: 1 });
  });

  it("does not take another parameter's true for the final flag", () => {
    const b = encode({
      inferResponse: { parameters: { triton_final_responsex: bool(true), triton_final: bool(true) } },
    });
    expect(decodeStreamMessage(b).final).toBe(false);
  });

  it("reads Triton's error message, with no response", () => {
    const m = decodeStreamMessage(encode({ errorMessage: "in ensemble 'x', TEXT has no words ✗" }));
    expect(m.error).toBe("in ensemble 'x', TEXT has no words ✗");
    expect(m.outputs).toBe(0);
    expect(m.response).toBeUndefined();
  });

  it("agrees with protobuf's decoding on a truncated message: it says what is wrong", () => {
    const b = encode({ inferResponse: { modelName: "text_streamer", outputs: [{ name: "A", shape: [4n] }] } });
    expect(() => decodeStreamMessage(b.subarray(0, b.length - 3))).toThrow();
  });
});
