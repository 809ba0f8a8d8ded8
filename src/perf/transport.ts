import { performance } from "node:perf_hooks";
import { TritonDevError } from "../errors.js";
import { urlHost } from "../net/url.js";
import {
  buildBinaryInferBody,
  parseInferResponseBody,
  type DecodedInferResponse,
  type ParameterValue,
  type RawTensor,
} from "../triton/binary.js";
import { TritonGrpcClient, TritonGrpcError } from "../triton/grpc-client.js";
import { modelPath } from "../triton/http-client.js";
import { buildShmInferBody, encodeShmInferRequest, type ShmTensorRef } from "../triton/system-shm.js";
import {
  HttpConnectionError,
  KeepAliveHttpPool,
  buildPostRequest,
  responseHeader,
  type PooledResponse,
} from "../triton/http-pool.js";
import { sequenceParameters, type SequenceStep } from "./sequences.js";
import type { StreamFacts } from "./stream-stats.js";

import type { Protocol } from "./protocol.js";

export interface ErrorInfo {
  /** What the error counts under: protocol status and Triton's message, e.g. "HTTP 400: ...". */
  kind: string;
  /** The request never got an answer from the server (refused, reset, timed out). */
  connection: boolean;
}

/** One request's fate. Sending never throws: errors are counted, not fatal. */
export interface Outcome {
  ok: boolean;
  latencyUs: number;
  /** Until the request was written out (HTTP only; 0 for gRPC, whose library hides it). */
  sendUs: number;
  /** From the first response byte to the whole response (HTTP only). */
  recvUs: number;
  error?: ErrorInfo;
  /** A streamed request (decoupled model): its responses and their times. */
  stream?: StreamFacts;
}

/** A probe request failed: the message is Triton's, for the user. */
export class InferFailedError extends TritonDevError {
  override name = "InferFailedError";
  constructor(
    message: string,
    readonly connection: boolean,
  ) {
    super(message);
  }
}

export interface InferTransport {
  readonly protocol: Protocol;
  readonly endpoint: string;
  /** Send payload `index` (modulo the number of payloads), as a step of a sequence when given. */
  send(index: number, sequence?: SequenceStep): Promise<Outcome>;
  /** Send one request and decode the answer; throws InferFailedError. */
  probe(index: number, sequence?: SequenceStep): Promise<DecodedInferResponse>;
  close(): void;
}

export interface TransportOptions {
  model: string;
  /** One version of the model (`-x`); absent, the version the server picks. */
  version?: string;
  payloads: readonly RawTensor[][];
  /** Request parameters such as priority and timeout (µs). */
  parameters?: Record<string, ParameterValue>;
  /** Connections the HTTP pool may open (the concurrency, or the open-loop cap). */
  maxConnections: number;
  /** Give up on a request after this long (client side). */
  requestTimeoutMs?: number;
  /** Staged paths in Triton's error messages as the user's (state/staged-paths.ts userPathsOf). */
  userPaths?: (text: string) => string;
  /** Per payload, per input: the shared memory region holding its bytes; requests then carry no input data. */
  sharedMemory?: readonly (readonly ShmTensorRef[])[];
}

const CONNECTION_WORDS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  ETIMEDOUT: "timed out",
  ECLOSED: "cancelled",
  ETOOBIG: "response over the size limit",
  EPROTO: "not an HTTP response",
};

/** How long a probe (the first request, which checks the data) may take, when no request timeout is set. */
export const PROBE_TIMEOUT_MS = 60_000;

function clip(s: string, n = 160): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

function httpErrorMessage(r: PooledResponse): string {
  try {
    const e = (JSON.parse(r.body.toString("utf8")) as { error?: string }).error;
    if (e) return e;
  } catch {
    // not JSON: use the raw text below
  }
  // An error's text is a line or two; a server that sends megabytes of it is shown the start.
  return clip(r.body.toString("utf8", 0, Math.min(r.body.length, 4096)), 2000) || "no error text";
}

export class HttpTransport implements InferTransport {
  readonly protocol = "http" as const;
  readonly endpoint: string;
  private readonly pool: KeepAliveHttpPool;
  private readonly requests: Buffer[];
  /** Per payload: its request with more parameters (a sequence's fields change every request). */
  private readonly build: Array<(extra: Record<string, ParameterValue>) => Buffer>;
  private readonly said: (text: string) => string;
  private readonly path: string;
  private readonly probeTimeoutMs: number;

  constructor(host: string, port: number, o: TransportOptions) {
    this.said = o.userPaths ?? ((t) => t);
    const hostHeader = `${urlHost(host)}:${port}`;
    this.endpoint = `http://${hostHeader}`;
    this.pool = new KeepAliveHttpPool(host, port, {
      maxConnections: o.maxConnections,
      ...(o.requestTimeoutMs ? { requestTimeoutMs: o.requestTimeoutMs } : {}),
    });
    const path = `${modelPath(o.model, o.version)}/infer`;
    this.path = path;
    this.probeTimeoutMs = o.requestTimeoutMs ?? PROBE_TIMEOUT_MS;
    this.build = o.payloads.map((inputs, i) => (extra) => {
      const opts = { parameters: { ...o.parameters, ...extra } };
      const refs = o.sharedMemory?.[i];
      const { body, headerLength } = refs ? buildShmInferBody(inputs, refs, opts) : buildBinaryInferBody(inputs, opts);
      return buildPostRequest(hostHeader, path, body, {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": headerLength,
      });
    });
    this.requests = this.build.map((b) => b({}));
  }

  private request(index: number, sequence?: SequenceStep): Buffer {
    const i = index % this.requests.length;
    return sequence ? this.build[i]!(sequenceParameters(sequence)) : this.requests[i]!;
  }

  async send(index: number, sequence?: SequenceStep): Promise<Outcome> {
    const raw = this.request(index, sequence);
    const t0 = performance.now();
    let r: PooledResponse;
    try {
      // Only counted: a success's body is dropped as it arrives.
      r = await this.pool.request(raw, { keepBody: false });
    } catch (err) {
      const code = err instanceof HttpConnectionError ? err.code : "ECONNERROR";
      return {
        ok: false,
        latencyUs: (performance.now() - t0) * 1000,
        sendUs: 0,
        recvUs: 0,
        error: { kind: CONNECTION_WORDS[code] ?? `connection error (${code})`, connection: true },
      };
    }
    const timing = {
      latencyUs: (r.endMs - r.startMs) * 1000,
      sendUs: (r.sentMs - r.startMs) * 1000,
      recvUs: (r.endMs - r.firstByteMs) * 1000,
    };
    if (r.status === 200) return { ok: true, ...timing };
    return {
      ok: false,
      ...timing,
      error: { kind: `HTTP ${r.status}: ${clip(this.said(httpErrorMessage(r)))}`, connection: false },
    };
  }

  async probe(index: number, sequence?: SequenceStep): Promise<DecodedInferResponse> {
    let r: PooledResponse;
    const asked = `POST ${this.path}, expecting an inference response`;
    try {
      r = await this.pool.request(this.request(index, sequence), { keepBody: true, timeoutMs: this.probeTimeoutMs });
    } catch (err) {
      const code = err instanceof HttpConnectionError ? err.code : "ECONNERROR";
      // A response too large or not HTTP came from the server; anything else is the connection's.
      const connection = code !== "ETOOBIG" && code !== "EPROTO";
      throw new InferFailedError(
        `${connection ? "cannot reach Triton at" : "Triton at"} ${this.endpoint}${connection ? ":" : " answered with"} ${(err as Error).message} (${asked})`,
        connection,
      );
    }
    if (r.status !== 200)
      throw new InferFailedError(`Triton answered ${r.status}: ${this.said(httpErrorMessage(r))}`, false);
    const hl = responseHeader(r, "inference-header-content-length");
    try {
      return parseInferResponseBody(r.body, hl !== undefined ? Number(hl) : undefined);
    } catch (err) {
      throw new InferFailedError(
        `Triton at ${this.endpoint} answered 200 with a body that is not an inference response: ${clip((err as Error).message)} (${asked})`,
        false,
      );
    }
  }

  close(): void {
    this.pool.close();
  }
}

/**
 * ModelInfer request bytes as a step of a sequence: the sequence's parameters encoded on their own
 * and appended, which a protobuf parser merges into the request's parameter map, so the inputs
 * are not encoded again for every request.
 */
export function withSequence(request: Buffer, sequence: SequenceStep | undefined): Buffer {
  return sequence
    ? Buffer.concat([request, TritonGrpcClient.encodeInferParameters(sequenceParameters(sequence))])
    : request;
}

export class GrpcTransport implements InferTransport {
  readonly protocol = "grpc" as const;
  readonly endpoint: string;
  private readonly client: TritonGrpcClient;
  private readonly requests: Buffer[];
  private readonly timeoutMs: number | undefined;
  private readonly said: (text: string) => string;

  constructor(address: string, o: TransportOptions) {
    this.said = o.userPaths ?? ((t) => t);
    this.endpoint = address;
    this.client = new TritonGrpcClient(address);
    this.timeoutMs = o.requestTimeoutMs;
    this.requests = o.payloads.map((inputs, i) => {
      const opts = {
        ...(o.parameters ? { parameters: o.parameters } : {}),
        ...(o.version ? { version: o.version } : {}),
      };
      const refs = o.sharedMemory?.[i];
      return refs
        ? encodeShmInferRequest(o.model, inputs, refs, opts)
        : TritonGrpcClient.encodeInferRequest(o.model, inputs, opts);
    });
  }

  async send(index: number, sequence?: SequenceStep): Promise<Outcome> {
    const t0 = performance.now();
    try {
      await this.client.inferRaw(withSequence(this.requests[index % this.requests.length]!, sequence), this.timeoutMs);
      return { ok: true, latencyUs: (performance.now() - t0) * 1000, sendUs: 0, recvUs: 0 };
    } catch (err) {
      const latencyUs = (performance.now() - t0) * 1000;
      if (err instanceof TritonGrpcError) {
        const connection =
          err.codeName === "UNAVAILABLE" ||
          err.codeName === "CANCELLED" ||
          (err.codeName === "DEADLINE_EXCEEDED" && this.timeoutMs !== undefined);
        const kind =
          err.codeName === "UNAVAILABLE" && /ECONNREFUSED|No connection established|connect/i.test(err.details)
            ? "connection refused"
            : `gRPC ${err.codeName}: ${clip(this.said(err.details))}`;
        return { ok: false, latencyUs, sendUs: 0, recvUs: 0, error: { kind, connection } };
      }
      return {
        ok: false,
        latencyUs,
        sendUs: 0,
        recvUs: 0,
        error: { kind: `gRPC error: ${clip((err as Error).message)}`, connection: true },
      };
    }
  }

  async probe(index: number, sequence?: SequenceStep): Promise<DecodedInferResponse> {
    let bytes: Buffer;
    try {
      bytes = await this.client.inferRaw(
        withSequence(this.requests[index % this.requests.length]!, sequence),
        this.timeoutMs ?? PROBE_TIMEOUT_MS,
      );
    } catch (err) {
      if (err instanceof TritonGrpcError)
        throw new InferFailedError(
          `Triton at ${this.endpoint} answered ${err.codeName}: ${clip(this.said(err.details), 2000)} (gRPC ModelInfer, expecting an inference response)`,
          err.codeName === "UNAVAILABLE" || err.codeName === "DEADLINE_EXCEEDED",
        );
      throw err;
    }
    try {
      return TritonGrpcClient.decodeInferResponse(bytes);
    } catch (err) {
      throw new InferFailedError(
        `Triton at ${this.endpoint} answered ${bytes.length} bytes that do not decode: ${clip((err as Error).message)} (gRPC ModelInfer, expecting an inference response)`,
        false,
      );
    }
  }

  close(): void {
    this.client.close();
  }
}
