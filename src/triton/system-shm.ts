import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { create, toBinary } from "@bufbuild/protobuf";
import { ServerResponseError, TritonDevError } from "../errors.js";
import { fetchBounded, JSON_RESPONSE_LIMIT } from "../net/bounded-fetch.js";
import type { ParameterValue, RawTensor } from "./binary.js";
import { InferParameterSchema, ModelInferRequestSchema, type InferParameter } from "./gen/grpc_service_pb.js";
import type { TritonGrpcClient } from "./grpc-client.js";
import { closingFetch } from "./http-client.js";

/**
 * Triton's system shared memory extension: POSIX shm regions registered with the server, and
 * infer inputs that name a region instead of carrying their bytes. The layout of a tensor in a
 * region is the same as on the wire (binary.ts), BYTES elements with their 4-byte length prefixes.
 */

/** Where one input's bytes lie in a registered region. */
export interface ShmTensorRef {
  region: string;
  offset: number;
  byteSize: number;
}

export interface RegionStatus {
  name: string;
  key: string;
  offset: number;
  byteSize: number;
}

/** Triton refused a shared memory call (register, unregister, status); the message is Triton's. */
export class SharedMemoryApiError extends TritonDevError {
  override name = "SharedMemoryApiError";
}

/** Register, unregister and list system shm regions, over either protocol. */
export interface SystemShmApi {
  register(region: string, key: string, offset: number, byteSize: number): Promise<void>;
  unregister(region: string): Promise<void>;
  status(): Promise<RegionStatus[]>;
}

/** The input parameters that point Triton at a region, as perf_analyzer sends them. */
export function shmParameters(ref: ShmTensorRef): Record<string, ParameterValue> {
  return {
    shared_memory_region: ref.region,
    shared_memory_offset: ref.offset,
    shared_memory_byte_size: ref.byteSize,
  };
}

/**
 * The body of an HTTP infer POST whose inputs all lie in shared memory: only the JSON header,
 * with no binary_data_size on any input (an input with region parameters takes no body bytes).
 */
export function buildShmInferBody(
  inputs: readonly Pick<RawTensor, "name" | "datatype" | "shape">[],
  refs: readonly ShmTensorRef[],
  options: { id?: string; parameters?: Record<string, ParameterValue> } = {},
): { body: Buffer; headerLength: number } {
  const header = {
    ...(options.id ? { id: options.id } : {}),
    parameters: { ...(options.parameters ?? {}), binary_data_output: true },
    inputs: inputs.map((t, i) => ({
      name: t.name,
      shape: t.shape,
      datatype: t.datatype,
      parameters: shmParameters(refs[i]!),
    })),
  };
  const json = Buffer.from(JSON.stringify(header), "utf8");
  return { body: json, headerLength: json.length };
}

function param(v: ParameterValue): InferParameter {
  if (typeof v === "boolean") return create(InferParameterSchema, { parameterChoice: { case: "boolParam", value: v } });
  if (typeof v === "number" && Number.isInteger(v))
    return create(InferParameterSchema, { parameterChoice: { case: "int64Param", value: BigInt(v) } });
  if (typeof v === "number")
    return create(InferParameterSchema, { parameterChoice: { case: "doubleParam", value: v } });
  return create(InferParameterSchema, { parameterChoice: { case: "stringParam", value: v } });
}

const params = (p: Record<string, ParameterValue>) =>
  Object.fromEntries(Object.entries(p).map(([k, v]) => [k, param(v)]));

/** ModelInfer request bytes whose inputs name regions (InferInputTensor parameters), with no raw contents. */
export function encodeShmInferRequest(
  model: string,
  inputs: readonly Pick<RawTensor, "name" | "datatype" | "shape">[],
  refs: readonly ShmTensorRef[],
  options: { id?: string; version?: string; parameters?: Record<string, ParameterValue> } = {},
): Buffer {
  const msg = create(ModelInferRequestSchema, {
    modelName: model,
    modelVersion: options.version ?? "",
    id: options.id ?? "",
    parameters: params(options.parameters ?? {}),
    inputs: inputs.map((t, i) => ({
      name: t.name,
      datatype: t.datatype,
      shape: t.shape.map((d) => BigInt(d)),
      parameters: params(shmParameters(refs[i]!)),
    })),
  });
  return Buffer.from(toBinary(ModelInferRequestSchema, msg));
}

/** Triton refused a shared memory call for want of the key (server-args.ts RESTRICTED_APIS). */
export class SharedMemoryRestrictedError extends SharedMemoryApiError {
  override name = "SharedMemoryRestrictedError";
}

/**
 * The HTTP side: /v2/systemsharedmemory/..., one of the APIs `up` restricts to the run's key
 * (`key`: header and value; absent for a server given with `-u`, which may leave it open).
 */
export class HttpSystemShm implements SystemShmApi {
  constructor(
    private readonly baseUrl: string,
    private readonly fetchImpl: typeof fetch = closingFetch,
    private readonly key?: { header: string; value: string },
  ) {}

  private async call(method: "GET" | "POST", path: string, body?: unknown): Promise<unknown> {
    // Bounded like every answer we read (net/bounded-fetch.ts); a fault is a ServerFaultError.
    const exchange = {
      server: `Triton at ${this.baseUrl}`,
      request: `${method} ${path}`,
      expected: "the shared memory API's answer as JSON",
    };
    const headers: Record<string, string> = {
      ...(this.key ? { [this.key.header]: this.key.value } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    };
    const r = await fetchBounded(
      this.baseUrl + path,
      { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) },
      { exchange, timeoutMs: 10_000, maxBytes: JSON_RESPONSE_LIMIT, fetch: this.fetchImpl },
    );
    const text = r.body.toString("utf8");
    if (!r.ok) {
      let said = text;
      try {
        said = (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        // not JSON: Triton's raw text
      }
      // Triton 2.51 answers 403 to a restricted API's request without its key, and only then.
      throw new (r.status === 403 ? SharedMemoryRestrictedError : SharedMemoryApiError)(
        `Triton answered ${r.status} to ${path}: ${said}`,
      );
    }
    try {
      return text ? JSON.parse(text) : undefined;
    } catch (err) {
      throw new ServerResponseError(exchange, `answered ${r.status} with a body that is not JSON`, { cause: err });
    }
  }

  async register(region: string, key: string, offset: number, byteSize: number): Promise<void> {
    await this.call("POST", `/v2/systemsharedmemory/region/${encodeURIComponent(region)}/register`, {
      key,
      offset,
      byte_size: byteSize,
    });
  }

  async unregister(region: string): Promise<void> {
    await this.call("POST", `/v2/systemsharedmemory/region/${encodeURIComponent(region)}/unregister`);
  }

  async status(): Promise<RegionStatus[]> {
    const r = (await this.call("GET", "/v2/systemsharedmemory/status")) as Array<{
      name: string;
      key: string;
      offset: number;
      byte_size: number;
    }>;
    return (r ?? []).map((s) => ({
      name: s.name,
      key: s.key,
      offset: Number(s.offset),
      byteSize: Number(s.byte_size),
    }));
  }
}

/**
 * The gRPC side. Our grpc_service.proto leaves the shared memory RPCs out, so their four small
 * messages are written and read here by hand (field numbers from Triton's grpc_service.proto).
 */
export class GrpcSystemShm implements SystemShmApi {
  constructor(private readonly client: Pick<TritonGrpcClient, "callRaw">) {}

  private async call(method: string, bytes: Uint8Array): Promise<Buffer> {
    try {
      // Keyed: the client sends the run's key when it holds one (a restricted protocol).
      return await this.client.callRaw(method, Buffer.from(bytes), 10_000, "an answer", { keyed: true });
    } catch (err) {
      // Triton 2.51 refuses a restricted protocol's call without its key with UNAVAILABLE, the
      // status of an unreachable server too: only its text tells them apart, so no type does.
      throw new SharedMemoryApiError(`Triton refused ${method}: ${(err as Error).message}`, { cause: err });
    }
  }

  async register(region: string, key: string, offset: number, byteSize: number): Promise<void> {
    const w = new BinaryWriter();
    w.tag(1, WireType.LengthDelimited).string(region);
    w.tag(2, WireType.LengthDelimited).string(key);
    w.tag(3, WireType.Varint).uint64(offset);
    w.tag(4, WireType.Varint).uint64(byteSize);
    await this.call("SystemSharedMemoryRegister", w.finish());
  }

  async unregister(region: string): Promise<void> {
    await this.call(
      "SystemSharedMemoryUnregister",
      new BinaryWriter().tag(1, WireType.LengthDelimited).string(region).finish(),
    );
  }

  async status(): Promise<RegionStatus[]> {
    return decodeShmStatus(await this.call("SystemSharedMemoryStatus", new Uint8Array()));
  }
}

/** SystemSharedMemoryStatusResponse: map<string, RegionStatus> regions = 1. */
export function decodeShmStatus(bytes: Uint8Array): RegionStatus[] {
  const out: RegionStatus[] = [];
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [field, wt] = r.tag();
    if (field !== 1 || wt !== WireType.LengthDelimited) {
      r.skip(wt, field);
      continue;
    }
    const entry = new BinaryReader(r.bytes());
    while (entry.pos < entry.len) {
      const [ef, ewt] = entry.tag();
      if (ef !== 2 || ewt !== WireType.LengthDelimited) {
        entry.skip(ewt, ef);
        continue;
      }
      const s = new BinaryReader(entry.bytes());
      const status: RegionStatus = { name: "", key: "", offset: 0, byteSize: 0 };
      while (s.pos < s.len) {
        const [sf, swt] = s.tag();
        if (sf === 1) status.name = s.string();
        else if (sf === 2) status.key = s.string();
        else if (sf === 3) status.offset = Number(s.uint64());
        else if (sf === 4) status.byteSize = Number(s.uint64());
        else s.skip(swt, sf);
      }
      out.push(status);
    }
  }
  return out;
}
