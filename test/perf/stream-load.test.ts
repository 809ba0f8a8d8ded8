import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL_STREAM_INFER_SERVICE } from "../helpers/stream-infer-service.js";
import { GrpcStreamTransport } from "../../src/perf/stream-load.js";
import {
  ModelInferRequestSchema,
  ModelStreamInferResponseSchema,
  type ModelInferRequest,
} from "../../src/triton/gen/grpc_service_pb.js";
import { encodeTensorData } from "../../src/triton/binary.js";

const flag = (v: boolean) => ({ parameterChoice: { case: "boolParam" as const, value: v } });

/**
 * A real gRPC server (grpc-js, in this process) speaking ModelStreamInfer as Triton does: input N
 * (INT32) asks for N data responses then the empty final one; -1 for an error message, followed by
 * a stray response the transport must not count for anything; -2 for two responses, the second
 * carrying the final flag itself; -3 for no answer at all.
 */
function streamServer(seen: { requests: ModelInferRequest[]; streams: number }): grpc.Server {
  const server = new grpc.Server();
  const reply = (call: grpc.ServerDuplexStream<Buffer, Buffer>, m: Parameters<typeof create>[1]) =>
    call.write(
      Buffer.from(toBinary(ModelStreamInferResponseSchema, create(ModelStreamInferResponseSchema, m as never))),
    );
  const data = (final: boolean) => ({
    inferResponse: {
      modelName: "gen",
      outputs: [{ name: "TOKEN", datatype: "INT32", shape: [2n] }],
      rawOutputContents: [new Uint8Array(8)],
      parameters: { triton_final_response: flag(final) },
    },
  });
  server.addService(MODEL_STREAM_INFER_SERVICE, {
    ModelStreamInfer: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      seen.streams++;
      call.on("data", (b: Buffer) => {
        const req = fromBinary(ModelInferRequestSchema, b);
        seen.requests.push(req);
        const raw = req.rawInputContents[0]!;
        const n = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).readInt32LE(0);
        if (n === -3) return;
        if (n === -1) {
          reply(call, { errorMessage: "N must be 0 or more" });
          setTimeout(() => reply(call, data(true)), 5);
          return;
        }
        if (n === -2) {
          reply(call, data(false));
          setTimeout(() => reply(call, data(true)), 5);
          return;
        }
        let i = 0;
        const next = () => {
          if (i++ < n) {
            reply(call, data(false));
            setTimeout(next, 3);
          } else
            reply(call, { inferResponse: { modelName: "gen", parameters: { triton_final_response: flag(true) } } });
        };
        next();
      });
      call.on("end", () => call.end());
    },
  });
  return server;
}

const payload = (n: number) => [{ name: "N", datatype: "INT32", shape: [1], data: encodeTensorData("INT32", [n]) }];

describe("GrpcStreamTransport on a real gRPC stream", () => {
  const seen = { requests: [] as ModelInferRequest[], streams: 0 };
  let server: grpc.Server;
  let address: string;

  beforeAll(async () => {
    server = streamServer(seen);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    address = `127.0.0.1:${port}`;
  });

  afterAll(() => server.forceShutdown());

  const transport = (ns: number[], o: { maxConnections?: number; requestTimeoutMs?: number } = {}) =>
    new GrpcStreamTransport(address, {
      model: "gen",
      payloads: ns.map(payload),
      maxConnections: o.maxConnections ?? 1,
      ...(o.requestTimeoutMs ? { requestTimeoutMs: o.requestTimeoutMs } : {}),
    });

  it("completes a request at its empty final response, counting only the data responses, and asks for that response", async () => {
    const t = transport([4]);
    try {
      const o = await t.send(0);
      expect(o.ok).toBe(true);
      expect(o.stream?.responses).toBe(4);
      expect(o.stream?.elements).toBe(8);
      expect(o.stream?.gapsUs).toHaveLength(3);
      expect(o.stream!.firstResponseUs!).toBeLessThanOrEqual(o.latencyUs);
      // The server sends the four 3 ms apart (9 ms at least from first to last); a loaded machine may
      // deliver two in one read, so only the spread as a whole is bound to show.
      expect(o.stream!.gapsUs.every((g) => g >= 0)).toBe(true);
      expect(o.stream!.gapsUs.reduce((a, b) => a + b, 0)).toBeGreaterThan(2000);
      const req = seen.requests.at(-1)!;
      expect(req.parameters["triton_enable_empty_final_response"]?.parameterChoice).toEqual({
        case: "boolParam",
        value: true,
      });
    } finally {
      t.close();
    }
  });

  it("completes a request whose last data response carries the final flag", async () => {
    const t = transport([-2]);
    try {
      const o = await t.send(0);
      expect(o.ok).toBe(true);
      expect(o.stream?.responses).toBe(2);
    } finally {
      t.close();
    }
  });

  it("counts an error message as a failed request, and the next request goes on a fresh stream untouched by the stray response after it", async () => {
    const t = transport([-1, 3]);
    try {
      const before = seen.streams;
      const bad = await t.send(0);
      expect(bad.ok).toBe(false);
      expect(bad.error).toEqual({ kind: "stream error: N must be 0 or more", connection: false });
      await new Promise((r) => setTimeout(r, 20));
      const good = await t.send(1);
      expect(good.ok).toBe(true);
      expect(good.stream?.responses).toBe(3);
      expect(seen.streams - before).toBe(2);
    } finally {
      t.close();
    }
  });

  it("keeps one request in flight per stream, at most maxConnections streams, reusing them", async () => {
    const t = transport([2], { maxConnections: 3 });
    try {
      const before = seen.streams;
      const outs = await Promise.all(Array.from({ length: 9 }, (_, i) => t.send(i)));
      expect(outs.every((o) => o.ok && o.stream?.responses === 2)).toBe(true);
      expect(seen.streams - before).toBe(3);
    } finally {
      t.close();
    }
  });

  it("bounds a request the server never finishes, and close() ends what is in flight", async () => {
    const t = transport([-3], { requestTimeoutMs: 200 });
    const o = await t.send(0);
    expect(o.error).toEqual({ kind: "timed out", connection: true });
    const pending = t.send(0);
    t.close();
    expect((await pending).error?.kind).toBe("cancelled");
  });

  it("answers the probe with the first data response, and throws Triton's message for an error", async () => {
    const t = transport([1, -1]);
    try {
      const r = await t.probe(0);
      expect(r.outputs.map((x) => [x.name, x.shape])).toEqual([["TOKEN", [2]]]);
      await expect(t.probe(1)).rejects.toMatchObject({ name: "InferFailedError", connection: false });
    } finally {
      t.close();
    }
  });

  it("counts a server that is not there as a connection error", async () => {
    const t = new GrpcStreamTransport("127.0.0.1:1", { model: "gen", payloads: [payload(1)], maxConnections: 1 });
    try {
      const o = await t.send(0);
      expect(o.ok).toBe(false);
      expect(o.error?.connection).toBe(true);
    } finally {
      t.close();
    }
  });
});
