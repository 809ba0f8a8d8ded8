import { describe, expect, it } from "vitest";
import { GrpcControl, HttpControl } from "../../src/perf/control.js";
import { PROTOCOLS } from "../../src/perf/protocol.js";
import { protocolDescriptor, type ProtocolTarget, type StreamModel } from "../../src/perf/protocol-descriptor.js";
import { GrpcTransport, HttpTransport } from "../../src/perf/transport.js";
import { UsageError } from "../../src/errors.js";
import { encodeTensorData } from "../../src/triton/binary.js";
import { GrpcSystemShm, HttpSystemShm } from "../../src/triton/system-shm.js";

// Nothing listens on port 9 here: the descriptors only build clients, none of them connects.
const target: ProtocolTarget = { host: "127.0.0.1", port: 9, endpoint: "127.0.0.1:9" };
const model = (o: { sequence?: boolean; batch?: boolean } = {}): StreamModel => ({
  name: "streamer",
  metadata: {
    name: "streamer",
    versions: ["1"],
    platform: "python",
    inputs: [{ name: "TEXT", datatype: "BYTES", shape: [1] }],
    outputs: [{ name: "TOKEN", datatype: "INT64", shape: [1] }],
  },
  config: {
    name: "streamer",
    platform: "",
    backend: "python",
    max_batch_size: o.batch ? 8 : 0,
    instance_group: [],
    decoupled: true,
    ...(o.sequence ? { sequence_batching: { max_sequence_idle_microseconds: 0 } } : {}),
  },
  payloads: [[{ name: "TEXT", datatype: "BYTES", shape: [1], data: encodeTensorData("BYTES", ["hi"]) }]],
});

describe("the perf protocol descriptors", () => {
  it("has one for every protocol -i takes, named as it is", () => {
    expect(PROTOCOLS.map((p) => protocolDescriptor(p).name)).toEqual([...PROTOCOLS]);
  });

  it("picks the run's port, control client, transport and shared memory API of its protocol", () => {
    const ports = { http: 8000, grpc: 8001, metrics: 8002 };
    const http = protocolDescriptor("http");
    const grpc = protocolDescriptor("grpc");
    expect([http.port(ports), grpc.port(ports)]).toEqual([8000, 8001]);
    const controls = [http.control(target), grpc.control(target)];
    expect(controls[0]).toBeInstanceOf(HttpControl);
    expect(controls[1]).toBeInstanceOf(GrpcControl);
    for (const c of controls) c.close();
    const opts = { model: "m", payloads: [], maxConnections: 1 };
    const transports = [http.transport(target, opts), grpc.transport(target, opts)];
    expect(transports[0]).toBeInstanceOf(HttpTransport);
    expect(transports[1]).toBeInstanceOf(GrpcTransport);
    expect(transports.map((t) => t.protocol)).toEqual(["http", "grpc"]);
    for (const t of transports) t.close();
    const shm = [http.sharedMemory(target), grpc.sharedMemory(target)];
    expect(shm[0]!.api).toBeInstanceOf(HttpSystemShm);
    expect(shm[1]!.api).toBeInstanceOf(GrpcSystemShm);
    for (const s of shm) s.close();
  });

  it("streams a decoupled model over gRPC's ModelStreamInfer at the endpoint given, with -i grpc", () => {
    expect(protocolDescriptor("grpc").streamRoute(target, model({ sequence: true }))).toEqual({
      via: "ModelStreamInfer",
      endpoint: "127.0.0.1:9",
    });
  });

  it("streams over HTTP's generate_stream what fits it, else over the run's gRPC port, else says to use -i grpc", () => {
    const http = protocolDescriptor("http");
    expect(http.streamRoute(target, model())).toEqual({
      via: "generate_stream",
      endpoint: "127.0.0.1:9",
      bodies: ['{"TEXT":"hi"}'],
    });
    const run = { ...target, grpcEndpoint: "127.0.0.1:10" };
    // Sequence fields and batches are what generate_stream cannot carry.
    expect(http.streamRoute(run, model({ sequence: true }))).toEqual({
      via: "ModelStreamInfer",
      endpoint: "127.0.0.1:10",
    });
    expect(http.streamRoute(run, model({ batch: true }))).toEqual({
      via: "ModelStreamInfer",
      endpoint: "127.0.0.1:10",
    });
    expect(() => http.streamRoute(target, model({ sequence: true }))).toThrow(UsageError);
    let refused: unknown;
    try {
      http.streamRoute(target, model({ batch: true }));
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(UsageError);
    expect((refused as UsageError).hint).toContain("-i grpc -u 127.0.0.1:8001");
  });
});
