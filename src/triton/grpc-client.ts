import * as grpc from "@grpc/grpc-js";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { ServerResponseError, UserError } from "../errors.js";
import { INFER_RESPONSE_LIMIT } from "../net/bounded-fetch.js";
import { decodeTensorData, type DecodedInferResponse, type ParameterValue, type RawTensor } from "./binary.js";
import {
  InferParameterSchema,
  ModelConfigRequestSchema,
  ModelConfigResponseSchema,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  ModelMetadataRequestSchema,
  ModelMetadataResponseSchema,
  ModelReadyRequestSchema,
  ModelReadyResponseSchema,
  ModelStatisticsRequestSchema,
  ModelStatisticsResponseSchema,
  ServerLiveRequestSchema,
  ServerLiveResponseSchema,
  ServerMetadataRequestSchema,
  ServerMetadataResponseSchema,
  type InferParameter,
  type ModelInferResponse,
  type StatisticDuration,
} from "./gen/grpc_service_pb.js";
import type { ModelMetadata } from "./http-client.js";
import { decodeStreamMessage, type StreamMessage } from "./stream-message.js";

export { decodeStreamMessage, type StreamMessage } from "./stream-message.js";

const SERVICE = "/inference.GRPCInferenceService/";

/**
 * A gRPC call ended with a non-OK status: Triton's own (NOT_FOUND, INVALID_ARGUMENT, ...), or the
 * transport's (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED for an answer over the limit,
 * INTERNAL for frames that are not gRPC). A user-facing error, never a crash.
 */
export class TritonGrpcError extends UserError {
  override name = "TritonGrpcError";
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly method: string,
    /** Who was asked and what a working server answers, for the message. */
    where?: { address: string; expected: string },
  ) {
    super(
      where
        ? `Triton at ${where.address} answered ${grpc.status[code] ?? code} to gRPC ${method}: ${details} (expecting ${where.expected})`
        : `Triton answered ${grpc.status[code] ?? code} to ${method}: ${details}`,
    );
  }

  get codeName(): string {
    return grpc.status[this.code] ?? String(this.code);
  }
}

/** The fields of a model's configuration that perf reads, from either transport. */
export interface ModelConfigSummary {
  name: string;
  platform: string;
  backend: string;
  max_batch_size: number;
  dynamic_batching?: { preferred_batch_size: number[]; max_queue_delay_microseconds: number };
  instance_group: Array<{ count: number; kind: string }>;
  ensemble_scheduling?: { step: Array<{ model_name: string }> };
  /** model_transaction_policy.decoupled: responses come only over a stream, any number per request. */
  decoupled?: boolean;
  /** A stateful model: every request names its sequence (id, start and end flags). */
  sequence_batching?: {
    max_sequence_idle_microseconds: number;
    /**
     * An iterative sequence: one request is the whole sequence, which the model reschedules until
     * it is done (START on it, never END: Triton refuses the rescheduled request of an ended one).
     */
    iterative_sequence?: boolean;
  };
  /** The config's inputs, for what metadata does not say: which ones a request may leave out. */
  input?: Array<{ name: string; optional: boolean }>;
}

/** Statistics in the same shape as the HTTP statistics extension's JSON. */
export interface StatisticsJson {
  model_stats: Array<{
    name: string;
    version: string;
    inference_count: number;
    execution_count: number;
    inference_stats: Record<string, { count: number; ns: number }>;
    batch_stats: Array<{ batch_size: number; compute_infer: { count: number; ns: number } }>;
  }>;
}

export interface TritonGrpcClientOptions {
  timeoutMs?: number;
  /**
   * The run's key (header name and value, as for HTTP), sent with the calls of Triton's
   * restricted protocols (server-args.ts RESTRICTED_APIS), never with the others.
   */
  key?: { header: string; value: string };
}

/** Triton 2.51's gRPC side expects a restricted protocol's header under this prefix (lowercase, HTTP/2). */
export const GRPC_RESTRICTED_HEADER_PREFIX = "triton-grpc-protocol-";

const identity = (b: Buffer) => b;

function param(v: ParameterValue): InferParameter {
  if (typeof v === "boolean") return create(InferParameterSchema, { parameterChoice: { case: "boolParam", value: v } });
  if (typeof v === "number" && Number.isInteger(v))
    return create(InferParameterSchema, { parameterChoice: { case: "int64Param", value: BigInt(v) } });
  if (typeof v === "number")
    return create(InferParameterSchema, { parameterChoice: { case: "doubleParam", value: v } });
  return create(InferParameterSchema, { parameterChoice: { case: "stringParam", value: v } });
}

function duration(d: StatisticDuration | undefined): { count: number; ns: number } {
  return { count: Number(d?.count ?? 0n), ns: Number(d?.ns ?? 0n) };
}

/**
 * The KServe v2 gRPC API of one Triton server (inference.GRPCInferenceService), with message
 * types compiled from our own grpc_service.proto. ModelInfer can take request bytes encoded once
 * up front, so a load generator pays protobuf encoding only once per distinct request.
 */
export class TritonGrpcClient {
  readonly address: string;
  private readonly client: grpc.Client;
  private readonly timeoutMs: number;
  private readonly key: TritonGrpcClientOptions["key"];

  constructor(address: string, options: TritonGrpcClientOptions = {}) {
    this.address = address;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.key = options.key;
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), {
      // A message over this is refused (RESOURCE_EXHAUSTED) before it is buffered; see
      // INFER_RESPONSE_LIMIT for why no real answer comes near it.
      "grpc.max_receive_message_length": INFER_RESPONSE_LIMIT,
      "grpc.max_send_message_length": -1,
      // One HTTP/2 connection carries every concurrent call; do not let an idle timer drop it mid-run.
      "grpc.keepalive_permit_without_calls": 1,
    });
  }

  private call<I extends DescMessage, O extends DescMessage>(
    method: string,
    inSchema: I,
    outSchema: O,
    req: MessageInitShape<I>,
    timeoutMs = this.timeoutMs,
  ): Promise<MessageShape<O>> {
    const bytes = Buffer.from(toBinary(inSchema, create(inSchema, req)));
    return this.callRaw(method, bytes, timeoutMs, `a ${outSchema.name}`).then((b) => this.decode(outSchema, b, method));
  }

  /** A response message, or a ServerResponseError when its bytes are no such message. */
  private decode<O extends DescMessage>(schema: O, bytes: Buffer, method: string): MessageShape<O> {
    try {
      return fromBinary(schema, bytes);
    } catch (err) {
      throw new ServerResponseError(
        { server: `Triton at ${this.address}`, request: `gRPC ${method}`, expected: `a ${schema.name}` },
        `answered with ${bytes.length} bytes that do not decode (${(err as Error).message})`,
        { cause: err },
      );
    }
  }

  /**
   * A unary call with bytes already encoded; resolves with the response bytes. `keyed`: a call of
   * a restricted protocol, which carries the key when the client has one.
   */
  callRaw(
    method: string,
    bytes: Buffer,
    timeoutMs: number | undefined = this.timeoutMs,
    expected = "an answer",
    o: { keyed?: boolean } = {},
  ): Promise<Buffer> {
    const metadata = new grpc.Metadata();
    if (o.keyed && this.key) metadata.set(GRPC_RESTRICTED_HEADER_PREFIX + this.key.header, this.key.value);
    return new Promise((resolve, reject) => {
      const options: grpc.CallOptions = timeoutMs ? { deadline: Date.now() + timeoutMs } : {};
      this.client.makeUnaryRequest(SERVICE + method, identity, identity, bytes, metadata, options, (err, res) => {
        if (err)
          reject(
            new TritonGrpcError(err.code, err.details || err.message, method, { address: this.address, expected }),
          );
        else resolve(res!);
      });
    });
  }

  async isLive(): Promise<boolean> {
    try {
      return (await this.call("ServerLive", ServerLiveRequestSchema, ServerLiveResponseSchema, {}, 2000)).live;
    } catch {
      return false;
    }
  }

  async isModelReady(model: string, version = ""): Promise<boolean> {
    try {
      return (
        await this.call("ModelReady", ModelReadyRequestSchema, ModelReadyResponseSchema, { name: model, version })
      ).ready;
    } catch {
      return false;
    }
  }

  async serverMetadata(): Promise<{ name: string; version: string; extensions: string[] }> {
    const r = await this.call("ServerMetadata", ServerMetadataRequestSchema, ServerMetadataResponseSchema, {});
    return { name: r.name, version: r.version, extensions: [...r.extensions] };
  }

  async modelMetadata(model: string, version = ""): Promise<ModelMetadata> {
    const r = await this.call("ModelMetadata", ModelMetadataRequestSchema, ModelMetadataResponseSchema, {
      name: model,
      version,
    });
    const tensor = (t: { name: string; datatype: string; shape: bigint[] }) => ({
      name: t.name,
      datatype: t.datatype,
      shape: t.shape.map(Number),
    });
    return {
      name: r.name,
      versions: [...r.versions],
      platform: r.platform,
      inputs: r.inputs.map(tensor),
      outputs: r.outputs.map(tensor),
    };
  }

  async modelConfig(model: string, version = ""): Promise<ModelConfigSummary> {
    const r = await this.call("ModelConfig", ModelConfigRequestSchema, ModelConfigResponseSchema, {
      name: model,
      version,
    });
    const c = r.config;
    const kinds = ["KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL"];
    return {
      name: c?.name ?? model,
      platform: c?.platform ?? "",
      backend: c?.backend ?? "",
      max_batch_size: c?.maxBatchSize ?? 0,
      ...(c?.dynamicBatching
        ? {
            dynamic_batching: {
              preferred_batch_size: [...c.dynamicBatching.preferredBatchSize],
              max_queue_delay_microseconds: Number(c.dynamicBatching.maxQueueDelayMicroseconds),
            },
          }
        : {}),
      instance_group: (c?.instanceGroup ?? []).map((g) => ({ count: g.count, kind: kinds[g.kind] ?? String(g.kind) })),
      input: (c?.input ?? []).map((i) => ({ name: i.name, optional: i.optional })),
      ...(c?.ensembleScheduling
        ? { ensemble_scheduling: { step: c.ensembleScheduling.step.map((s) => ({ model_name: s.modelName })) } }
        : {}),
      ...(c?.modelTransactionPolicy?.decoupled ? { decoupled: true } : {}),
      ...(c?.sequenceBatching
        ? {
            sequence_batching: {
              max_sequence_idle_microseconds: Number(c.sequenceBatching.maxSequenceIdleMicroseconds),
              ...(c.sequenceBatching.iterativeSequence ? { iterative_sequence: true } : {}),
            },
          }
        : {}),
    };
  }

  async modelStatistics(model = "", version = ""): Promise<StatisticsJson> {
    const r = await this.call("ModelStatistics", ModelStatisticsRequestSchema, ModelStatisticsResponseSchema, {
      name: model,
      version,
    });
    return {
      model_stats: r.modelStats.map((m) => {
        const s = m.inferenceStats;
        return {
          name: m.name,
          version: m.version,
          inference_count: Number(m.inferenceCount),
          execution_count: Number(m.executionCount),
          inference_stats: {
            success: duration(s?.success),
            fail: duration(s?.fail),
            queue: duration(s?.queue),
            compute_input: duration(s?.computeInput),
            compute_infer: duration(s?.computeInfer),
            compute_output: duration(s?.computeOutput),
          },
          batch_stats: m.batchStats.map((b) => ({
            batch_size: Number(b.batchSize),
            compute_infer: duration(b.computeInfer),
          })),
        };
      }),
    };
  }

  /** ModelInfer request bytes for these inputs, to be sent many times with `inferRaw`. */
  static encodeInferRequest(
    model: string,
    inputs: readonly RawTensor[],
    options: { id?: string; version?: string; parameters?: Record<string, ParameterValue> } = {},
  ): Buffer {
    const msg = create(ModelInferRequestSchema, {
      modelName: model,
      modelVersion: options.version ?? "",
      id: options.id ?? "",
      parameters: Object.fromEntries(Object.entries(options.parameters ?? {}).map(([k, v]) => [k, param(v)])),
      inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map((d) => BigInt(d)) })),
      rawInputContents: inputs.map((t) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.length)),
    });
    return Buffer.from(toBinary(ModelInferRequestSchema, msg));
  }

  /** A ModelInferRequest holding only these parameters: appended to encoded request bytes, they merge in. */
  static encodeInferParameters(parameters: Record<string, ParameterValue>): Buffer {
    const msg = create(ModelInferRequestSchema, {
      parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, param(v)])),
    });
    return Buffer.from(toBinary(ModelInferRequestSchema, msg));
  }

  /** Send encoded ModelInfer bytes; resolves with the undecoded response. */
  inferRaw(request: Buffer, timeoutMs?: number): Promise<Buffer> {
    return this.callRaw("ModelInfer", request, timeoutMs ?? 0, "an inference response");
  }

  /** Throws when the bytes are no ModelInferResponse, or their tensors do not fit their shapes. */
  static decodeInferResponse(bytes: Buffer): DecodedInferResponse {
    return TritonGrpcClient.inferResponseOf(fromBinary(ModelInferResponseSchema, bytes));
  }

  static inferResponseOf(r: ModelInferResponse): DecodedInferResponse {
    return {
      model_name: r.modelName,
      model_version: r.modelVersion,
      ...(r.id ? { id: r.id } : {}),
      outputs: r.outputs.map((o, i) => {
        const raw = r.rawOutputContents[i];
        const data = raw ? decodeTensorData(o.datatype, Buffer.from(raw.buffer, raw.byteOffset, raw.length)) : [];
        return { name: o.name, datatype: o.datatype, shape: o.shape.map(Number), data };
      }),
    };
  }

  async infer(
    model: string,
    inputs: readonly RawTensor[],
    options: { id?: string; parameters?: Record<string, ParameterValue> } = {},
  ): Promise<DecodedInferResponse> {
    const bytes = await this.inferRaw(TritonGrpcClient.encodeInferRequest(model, inputs, options), this.timeoutMs);
    return TritonGrpcClient.decodeInferResponse(bytes);
  }

  /**
   * Open a ModelStreamInfer stream. `onMessage` gets each message as it arrives, `onEnd` once, with
   * the call's error when it ended with a non-OK status (CANCELLED after `cancel()` included).
   */
  openStream(handlers: {
    onMessage: (m: StreamMessage) => void;
    onEnd: (err: TritonGrpcError | undefined) => void;
  }): InferStream {
    const call = this.client.makeBidiStreamRequest<Buffer, Buffer>(
      SERVICE + "ModelStreamInfer",
      identity,
      identity,
      new grpc.Metadata(),
      {},
    );
    let ended = false;
    const end = (err: TritonGrpcError | undefined) => {
      if (ended) return;
      ended = true;
      handlers.onEnd(err);
    };
    call.on("data", (b: Buffer) => handlers.onMessage(decodeStreamMessage(b)));
    call.on("error", (err: grpc.ServiceError) =>
      end(new TritonGrpcError(err.code, err.details || err.message, "ModelStreamInfer")),
    );
    call.on("end", () => end(undefined));
    return {
      write: (request) => call.write(request),
      cancel: () => call.cancel(),
      end: () => call.end(),
    };
  }

  close(): void {
    this.client.close();
  }
}

export interface InferStream {
  write(request: Buffer): void;
  /** Half-close: no more requests; the server ends the call once its responses are sent. */
  end(): void;
  cancel(): void;
}
