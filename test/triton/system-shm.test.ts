import { fromBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { TritonGrpcClient } from "../../src/triton/grpc-client.js";
import { ModelInferRequestSchema } from "../../src/triton/gen/grpc_service_pb.js";
import {
  buildShmInferBody,
  decodeShmStatus,
  encodeShmInferRequest,
  GrpcSystemShm,
  HttpSystemShm,
  SharedMemoryApiError,
  SharedMemoryRestrictedError,
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

describe("the run's key on the shared memory API", () => {
  /** A server answering as Triton 2.51 does for a restricted API: 403 unless the header holds the key. */
  async function restrictedServer(): Promise<{ url: string; seen: string[]; close: () => Promise<void> }> {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${String(req.headers["triton-dev-key"])}`);
      req.resume();
      const ok = req.headers["triton-dev-key"] === "k3y";
      res.writeHead(ok ? 200 : 403, { "content-type": "application/json" });
      res.end(ok ? (req.url?.endsWith("/status") ? "[]" : "") : JSON.stringify({ error: "This API is restricted" }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((r) => server.close(() => r())) };
  }

  it("HTTP: every call carries the key it was given; without it, the refusal is a SharedMemoryRestrictedError", async () => {
    const s = await restrictedServer();
    try {
      const keyed = new HttpSystemShm(s.url, fetch, { header: "triton-dev-key", value: "k3y" });
      await keyed.register("r", "/r", 0, 64);
      expect(await keyed.status()).toEqual([]);
      await keyed.unregister("r");
      expect(s.seen).toEqual([
        "POST /v2/systemsharedmemory/region/r/register k3y",
        "GET /v2/systemsharedmemory/status k3y",
        "POST /v2/systemsharedmemory/region/r/unregister k3y",
      ]);
      const err = await new HttpSystemShm(s.url).register("r", "/r", 0, 64).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SharedMemoryRestrictedError);
      expect((err as Error).message).toMatch(/403 .*restricted/);
    } finally {
      await s.close();
    }
  });

  it("gRPC: the shared memory calls carry the key as Triton's restricted-protocol metadata, other calls do not", async () => {
    const seen: Array<[string, string[]]> = [];
    const server = new grpc.Server();
    const record = (name: string) => (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      seen.push([name, call.metadata.get("triton-grpc-protocol-triton-dev-key").map(String)]);
      cb(null, Buffer.alloc(0));
    };
    const method = (name: string) => ({
      path: `/inference.GRPCInferenceService/${name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
    });
    const names = ["SystemSharedMemoryRegister", "SystemSharedMemoryStatus", "ServerLive"];
    server.addService(
      Object.fromEntries(names.map((n) => [n, method(n)])),
      Object.fromEntries(names.map((n) => [n, record(n)])),
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const client = new TritonGrpcClient(`127.0.0.1:${port}`, { key: { header: "triton-dev-key", value: "k3y" } });
    const bare = new TritonGrpcClient(`127.0.0.1:${port}`);
    try {
      await new GrpcSystemShm(client).register("r", "/r", 0, 64);
      await client.isLive();
      await new GrpcSystemShm(bare).status();
      expect(seen).toEqual([
        ["SystemSharedMemoryRegister", ["k3y"]],
        ["ServerLive", []],
        ["SystemSharedMemoryStatus", []],
      ]);
    } finally {
      client.close();
      bare.close();
      server.forceShutdown();
    }
  });

  it("gRPC: a refusal is a SharedMemoryApiError keeping Triton's words", async () => {
    const api = new GrpcSystemShm({
      callRaw: () => Promise.reject(new Error("UNAVAILABLE: This protocol is restricted")),
    });
    const err = await api.status().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SharedMemoryApiError);
    expect((err as Error).message).toMatch(/This protocol is restricted/);
  });
});
