import { fromBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { ModelInferRequestSchema } from "../../src/triton/gen/grpc_service_pb.js";
import {
  buildShmInferBody,
  decodeShmStatus,
  encodeShmInferRequest,
  GrpcSystemShm,
} from "../../src/triton/system-shm.js";

const inputs = [
  { name: "IN0", datatype: "FP32", shape: [1, 4] },
  { name: "TEXT", datatype: "BYTES", shape: [1, 1] },
];
const refs = [
  { region: "r_0", offset: 0, byteSize: 16 },
  { region: "r_0", offset: 64, byteSize: 9 },
];

describe("shared memory infer requests", () => {
  it("HTTP: only the JSON header, each input naming its region, none with binary data", () => {
    const { body, headerLength } = buildShmInferBody(inputs, refs, { parameters: { priority: 2 } });
    expect(headerLength).toBe(body.length);
    const h = JSON.parse(body.toString("utf8")) as {
      parameters: Record<string, unknown>;
      inputs: Array<{ name: string; shape: number[]; datatype: string; parameters: Record<string, unknown> }>;
    };
    expect(h.parameters).toEqual({ priority: 2, binary_data_output: true });
    expect(h.inputs).toEqual([
      {
        name: "IN0",
        shape: [1, 4],
        datatype: "FP32",
        parameters: { shared_memory_region: "r_0", shared_memory_offset: 0, shared_memory_byte_size: 16 },
      },
      {
        name: "TEXT",
        shape: [1, 1],
        datatype: "BYTES",
        parameters: { shared_memory_region: "r_0", shared_memory_offset: 64, shared_memory_byte_size: 9 },
      },
    ]);
  });

  it("gRPC: InferInputTensor parameters, no raw_input_contents", () => {
    const msg = fromBinary(
      ModelInferRequestSchema,
      encodeShmInferRequest("m", inputs, refs, { parameters: { timeout: 5 } }),
    );
    expect(msg.modelName).toBe("m");
    expect(msg.rawInputContents).toHaveLength(0);
    expect(msg.parameters.timeout?.parameterChoice).toEqual({ case: "int64Param", value: 5n });
    const p = msg.inputs[1]!.parameters;
    expect(msg.inputs.map((i) => [i.name, i.datatype, i.shape.map(Number)])).toEqual([
      ["IN0", "FP32", [1, 4]],
      ["TEXT", "BYTES", [1, 1]],
    ]);
    expect(p.shared_memory_region?.parameterChoice).toEqual({ case: "stringParam", value: "r_0" });
    expect(p.shared_memory_offset?.parameterChoice).toEqual({ case: "int64Param", value: 64n });
    expect(p.shared_memory_byte_size?.parameterChoice).toEqual({ case: "int64Param", value: 9n });
  });
});

describe("the hand-written gRPC shm messages", () => {
  it("register writes name, key, offset and byte_size as fields 1-4", async () => {
    const sent: Array<[string, Buffer]> = [];
    const api = new GrpcSystemShm({
      callRaw: async (method: string, bytes: Buffer) => {
        sent.push([method, bytes]);
        return Buffer.alloc(0);
      },
    });
    await api.register("r", "/r", 0, 300);
    const expected = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string("r")
      .tag(2, WireType.LengthDelimited)
      .string("/r")
      .tag(3, WireType.Varint)
      .uint64(0)
      .tag(4, WireType.Varint)
      .uint64(300)
      .finish();
    expect(sent[0]![0]).toBe("SystemSharedMemoryRegister");
    expect(Buffer.from(expected).equals(sent[0]![1])).toBe(true);
  });

  it("status reads the map of regions, skipping fields it does not know", () => {
    const region = (name: string, size: number) =>
      new BinaryWriter()
        .tag(1, WireType.LengthDelimited)
        .string(name)
        .tag(2, WireType.LengthDelimited)
        .string(`/${name}`)
        .tag(4, WireType.Varint)
        .uint64(size)
        .tag(9, WireType.Varint)
        .uint32(1)
        .finish();
    const w = new BinaryWriter();
    for (const [name, size] of [
      ["a", 10],
      ["b", 20],
    ] as const) {
      w.tag(1, WireType.LengthDelimited)
        .fork()
        .tag(1, WireType.LengthDelimited)
        .string(name)
        .tag(2, WireType.LengthDelimited)
        .bytes(region(name, size))
        .join();
    }
    expect(decodeShmStatus(w.finish())).toEqual([
      { name: "a", key: "/a", offset: 0, byteSize: 10 },
      { name: "b", key: "/b", offset: 0, byteSize: 20 },
    ]);
  });
});
