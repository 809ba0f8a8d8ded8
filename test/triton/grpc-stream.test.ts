import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL_STREAM_INFER_SERVICE } from "../helpers/stream-infer-service.js";
import { ModelStreamInferResponseSchema } from "../../src/triton/gen/grpc_service_pb.js";
import type { TritonGrpcError } from "../../src/triton/grpc-client.js";
import { GrpcStreamChannel } from "../../src/triton/grpc-stream.js";
import type { StreamMessage } from "../../src/triton/stream-message.js";

const response = (bytes: number, final: boolean) =>
  Buffer.from(
    toBinary(
      ModelStreamInferResponseSchema,
      create(ModelStreamInferResponseSchema, {
        inferResponse: {
          outputs: [{ name: "OUT", datatype: "UINT8", shape: [BigInt(bytes)] }],
          rawOutputContents: [new Uint8Array(bytes).fill(7)],
          parameters: { triton_final_response: { parameterChoice: { case: "boolParam", value: final } } },
        },
      }),
    ),
  );

/**
 * A real gRPC server (grpc-js) on ModelStreamInfer's path. A request's first byte says what to do:
 * 1: three responses of 200 KB (each split over many HTTP/2 DATA frames), the last one final;
 * 2: end the call with INVALID_ARGUMENT and a message that needs percent-encoding; 3: nothing.
 */
function server(): grpc.Server {
  const s = new grpc.Server();
  s.addService(MODEL_STREAM_INFER_SERVICE, {
    ModelStreamInfer: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on("data", (b: Buffer) => {
        if (b[0] === 1) for (let i = 0; i < 3; i++) call.write(response(200_000, i === 2));
        if (b[0] === 2)
          call.emit(
            "error",
            Object.assign(new Error("invalid"), {
              code: grpc.status.INVALID_ARGUMENT,
              details: "TEXT: 100% wrong, ✗ not a word",
            }),
          );
      });
      call.on("end", () => call.end());
    },
  });
  return s;
}

function collect(ch: GrpcStreamChannel) {
  const messages: StreamMessage[] = [];
  let settle!: (err: TritonGrpcError | undefined) => void;
  const ended = new Promise<TritonGrpcError | undefined>((r) => (settle = r));
  const stream = ch.openStream({ onMessage: (m) => messages.push(m), onEnd: (err) => settle(err) });
  return { messages, ended, stream };
}

describe("ModelStreamInfer spoken over HTTP/2 directly", () => {
  let srv: grpc.Server;
  let address: string;
  beforeAll(async () => {
    srv = server();
    const port = await new Promise<number>((resolve, reject) =>
      srv.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => srv.forceShutdown());

  it("reassembles messages split over many DATA frames, in order, and ends cleanly after a half-close", async () => {
    const ch = new GrpcStreamChannel(address);
    const c = collect(ch);
    c.stream.write(Buffer.from([1]));
    await expect.poll(() => c.messages.length, { timeout: 5000 }).toBe(3);
    expect(c.messages.map((m) => [m.outputs, m.elements, m.final])).toEqual([
      [1, 200_000, false],
      [1, 200_000, false],
      [1, 200_000, true],
    ]);
    expect(Buffer.from(c.messages[0]!.response!.rawOutputContents[0]!).every((v) => v === 7)).toBe(true);
    c.stream.end();
    expect(await c.ended).toBeUndefined();
    ch.close();
  });

  it("ends with the server's status and its message, percent-decoded", async () => {
    const ch = new GrpcStreamChannel(address);
    const c = collect(ch);
    c.stream.write(Buffer.from([2]));
    const err = await c.ended;
    expect(err?.codeName).toBe("INVALID_ARGUMENT");
    expect(err?.details).toBe("TEXT: 100% wrong, ✗ not a word");
    ch.close();
  });

  it("ends a cancelled stream as CANCELLED, and one the channel's close() ends", async () => {
    const ch = new GrpcStreamChannel(address);
    const a = collect(ch);
    const b = collect(ch);
    a.stream.write(Buffer.from([3]));
    b.stream.write(Buffer.from([3]));
    a.stream.cancel();
    expect((await a.ended)?.codeName).toBe("CANCELLED");
    ch.close();
    expect((await b.ended)?.codeName).toBe("CANCELLED");
  });

  it("reports a method the server does not serve with its status (UNIMPLEMENTED)", async () => {
    const bare = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      bare.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const ch = new GrpcStreamChannel(`127.0.0.1:${port}`);
    const c = collect(ch);
    c.stream.write(Buffer.from([1]));
    expect((await c.ended)?.codeName).toBe("UNIMPLEMENTED");
    ch.close();
    bare.forceShutdown();
  });

  it("reports a server that is not there as UNAVAILABLE, naming the refused connection", async () => {
    const probe = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      probe.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    probe.forceShutdown();
    const ch = new GrpcStreamChannel(`127.0.0.1:${port}`);
    const c = collect(ch);
    c.stream.write(Buffer.from([1]));
    const err = await c.ended;
    expect(err?.codeName).toBe("UNAVAILABLE");
    expect(err?.details).toMatch(/ECONNREFUSED/);
    ch.close();
  });
});
