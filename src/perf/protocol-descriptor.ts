import { UsageError } from "../errors.js";
import { urlHost } from "../net/url.js";
import type { RunState } from "../state/run-state.js";
import type { ParameterValue, RawTensor } from "../triton/binary.js";
import { TritonGrpcClient, type ModelConfigSummary } from "../triton/grpc-client.js";
import { clientForRun, closingFetch, TritonHttpClient, type ModelMetadata } from "../triton/http-client.js";
import { GrpcSystemShm, HttpSystemShm, type SystemShmApi } from "../triton/system-shm.js";
import { GrpcControl, HttpControl, type ControlClient } from "./control.js";
import { generateBodies } from "./generate-stream.js";
import type { Protocol } from "./protocol.js";
import { GrpcTransport, HttpTransport, type InferTransport, type TransportOptions } from "./transport.js";

/** Where a measured server is, as a protocol's descriptor needs it. */
export interface ProtocolTarget {
  host: string;
  port: number;
  /** HOST:PORT of `port`. */
  endpoint: string;
  /** The managed server's run, when perf measures the `up` server. */
  state?: RunState;
  /** The managed server's gRPC endpoint, where a decoupled model can stream whatever `-i` says. */
  grpcEndpoint?: string;
}

/** How a decoupled model's requests stream. */
export type StreamPlan =
  { via: "ModelStreamInfer"; endpoint: string } | { via: "generate_stream"; endpoint: string; bodies: string[] };

/** What a decoupled model's stream is planned from. */
export interface StreamModel {
  name: string;
  metadata: ModelMetadata;
  config: ModelConfigSummary;
  payloads: RawTensor[][];
  parameters?: Record<string, ParameterValue>;
}

/**
 * Everything perf does differently over one protocol, in one place: perf/run.ts picks the
 * descriptor for `-i` once and asks it, never the protocol's name.
 */
export interface ProtocolDescriptor {
  readonly name: Protocol;
  /** The `up` server's port for this protocol. */
  port(ports: RunState["ports"]): number;
  /** Liveness, readiness, metadata, config and statistics, over this protocol. */
  control(t: ProtocolTarget): ControlClient;
  /** The unary inference requests of a level. */
  transport(t: ProtocolTarget, o: TransportOptions): InferTransport;
  /** How a decoupled model's requests stream when it is measured over this protocol. */
  streamRoute(t: ProtocolTarget, model: StreamModel): StreamPlan;
  /** The system shared memory extension, over this protocol (with -u only its port is known). */
  sharedMemory(t: ProtocolTarget): { api: SystemShmApi; close(): void };
}

const HTTP: ProtocolDescriptor = {
  name: "http",
  port: (ports) => ports.http,
  control: (t) => new HttpControl(t.state ? clientForRun(t.state) : new TritonHttpClient(`http://${t.endpoint}`)),
  transport: (t, o) => new HttpTransport(t.host, t.port, o),
  /**
   * HTTP's /infer refuses decoupled models (Triton 2.51 answers 501): their requests go to
   * generate_stream when the model fits the generate extension, else over gRPC's ModelStreamInfer
   * on the run's gRPC port.
   */
  streamRoute(t, m) {
    // generate_stream carries no sequence fields: a stateful decoupled model streams over gRPC.
    const bodies = m.config.sequence_batching
      ? undefined
      : generateBodies(m.metadata, m.config, m.payloads, m.parameters);
    if (bodies) return { via: "generate_stream", endpoint: t.endpoint, bodies };
    if (t.grpcEndpoint) return { via: "ModelStreamInfer", endpoint: t.grpcEndpoint };
    if (m.config.sequence_batching)
      throw new UsageError(
        `${m.name} is a decoupled stateful model: its requests carry sequence fields, which only gRPC's stream carries for it`,
        { hint: `Give the server's gRPC port: -i grpc -u ${urlHost(t.host)}:8001 (or its --grpc-port).` },
      );
    throw new UsageError(
      `${m.name} is a decoupled (streaming) model whose tensors HTTP's generate_stream cannot carry, so it is measured over gRPC's stream`,
      { hint: `Give the server's gRPC port: -i grpc -u ${urlHost(t.host)}:8001 (or its --grpc-port).` },
    );
  },
  // The run's key for the `up` server (the API is restricted to it); none with -u.
  sharedMemory: (t) => ({
    api: new HttpSystemShm(`http://${t.endpoint}`, closingFetch, t.state?.repositoryKey),
    close: () => {},
  }),
};

const GRPC: ProtocolDescriptor = {
  name: "grpc",
  port: (ports) => ports.grpc,
  control: (t) => new GrpcControl(new TritonGrpcClient(t.endpoint)),
  transport: (t, o) => new GrpcTransport(t.endpoint, o),
  streamRoute: (t) => ({ via: "ModelStreamInfer", endpoint: t.endpoint }),
  sharedMemory(t) {
    const client = new TritonGrpcClient(t.endpoint, t.state ? { key: t.state.repositoryKey } : {});
    return { api: new GrpcSystemShm(client), close: () => client.close() };
  },
};

const DESCRIPTORS: Readonly<Record<Protocol, ProtocolDescriptor>> = { http: HTTP, grpc: GRPC };

/** The descriptor of `-i`'s protocol. */
export function protocolDescriptor(protocol: Protocol): ProtocolDescriptor {
  return DESCRIPTORS[protocol];
}
