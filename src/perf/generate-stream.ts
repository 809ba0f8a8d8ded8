import http from "node:http";
import { performance } from "node:perf_hooks";
import { decodeTensorData, type DecodedInferResponse, type RawTensor } from "../triton/binary.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import { modelPath, type ModelMetadata } from "../triton/http-client.js";
import { urlHost } from "../net/url.js";
import { BugError } from "../errors.js";
import type { SequenceStep } from "./sequences.js";
import { factsOf } from "./stream-stats.js";
import { formatBytes, JSON_RESPONSE_LIMIT } from "../net/bounded-fetch.js";
import {
  InferFailedError,
  PROBE_TIMEOUT_MS,
  type InferTransport,
  type Outcome,
  type TransportOptions,
} from "./transport.js";

/** Datatypes whose values JSON carries exactly (no 64-bit integers, no half floats). */
const JSON_EXACT = new Set(["BYTES", "BOOL", "INT8", "INT16", "INT32", "UINT8", "UINT16", "UINT32", "FP32", "FP64"]);

/**
 * The JSON body of Triton's generate extension for each payload, or undefined when the model does
 * not fit it for certain. Measured on 2.51: /v2/models/M/generate_stream takes `{"NAME": value}`
 * with one scalar per input and answers each response as one SSE event of scalar outputs, so only a
 * model without batching whose inputs and outputs hold one element each, inputs of a type JSON
 * carries exactly, is sent there. Anything else streams over gRPC, which carries every tensor.
 */
export function generateBodies(
  metadata: ModelMetadata,
  config: ModelConfigSummary,
  payloads: readonly RawTensor[][],
  /** Request parameters (priority, timeout, --request-parameter): the extension's `parameters` object. */
  parameters?: Record<string, string | number | boolean>,
): string[] | undefined {
  if (config.max_batch_size > 0 || config.ensemble_scheduling) return undefined;
  const one = (shape: readonly number[]) => shape.length === 1 && shape[0] === 1;
  // Outputs are the server's to write as JSON (we only count them); one element each keeps them scalars.
  if (!metadata.outputs.every((t) => one(t.shape))) return undefined;
  if (!metadata.inputs.every((t) => one(t.shape) && JSON_EXACT.has(t.datatype))) return undefined;
  const bodies: string[] = [];
  for (const inputs of payloads) {
    const body: Record<string, unknown> = {};
    for (const t of inputs) {
      if (!one(t.shape) || !JSON_EXACT.has(t.datatype)) return undefined;
      const values = decodeTensorData(t.datatype, t.data);
      const v = values[0];
      // A string JSON would re-encode differently (not UTF-8) is not the tensor the user gave.
      if (values.length !== 1 || (t.datatype === "BYTES" && Buffer.byteLength(String(v)) !== t.data.length - 4))
        return undefined;
      body[t.name] = v;
    }
    if (parameters && Object.keys(parameters).length) body.parameters = parameters;
    bodies.push(JSON.stringify(body));
  }
  return bodies;
}

/** One SSE event of generate_stream: an error, or one response's outputs by name. */
export function parseGenerateEvent(json: string): {
  error?: string;
  /** The event is not JSON: the server is broken, or is not Triton (its own errors are JSON). */
  malformed?: boolean;
  elements: number;
  outputs: Record<string, unknown>;
} {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return { error: `not JSON: ${json.slice(0, 80)}`, malformed: true, elements: 0, outputs: {} };
  }
  const o = (v && typeof v === "object" ? v : {}) as Record<string, unknown>;
  if (typeof o.error === "string") return { error: o.error, elements: 0, outputs: {} };
  const outputs: Record<string, unknown> = {};
  let elements = 0;
  for (const [k, x] of Object.entries(o)) {
    if (k === "model_name" || k === "model_version" || k === "id" || k === "parameters") continue;
    outputs[k] = x;
    elements += Array.isArray(x) ? x.length : 1;
  }
  return { elements, outputs };
}

const clip = (s: string, n = 160) => {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
};

/**
 * Requests to a decoupled model over HTTP's generate_stream (server-sent events): a request is
 * complete when its response body ends, each `data:` event is one response. Keep-alive sockets,
 * at most `maxConnections`, as the HTTP transport of ordinary models keeps them.
 */
export class HttpGenerateStreamTransport implements InferTransport {
  readonly protocol = "http" as const;
  readonly endpoint: string;
  private readonly agent: http.Agent;
  private readonly path: string;
  private readonly said: (text: string) => string;
  private readonly timeoutMs: number | undefined;
  private readonly requests = new Set<http.ClientRequest>();

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly bodies: readonly string[],
    o: Pick<TransportOptions, "model" | "version" | "maxConnections" | "requestTimeoutMs" | "userPaths">,
  ) {
    this.endpoint = `http://${urlHost(host)}:${port}`;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(1, o.maxConnections) });
    this.path = `${modelPath(o.model, o.version)}/generate_stream`;
    this.said = o.userPaths ?? ((t) => t);
    this.timeoutMs = o.requestTimeoutMs;
  }

  private run(
    index: number,
    timeoutMs: number | undefined,
    keep?: Array<Record<string, unknown>>,
  ): Promise<Outcome & { said?: string }> {
    const body = this.bodies[index % this.bodies.length]!;
    return new Promise((resolve) => {
      const sentMs = performance.now();
      const arrivals: number[] = [];
      let elements = 0;
      let settled = false;
      const done = (error?: { kind: string; connection: boolean }, said?: string) => {
        if (settled) return;
        settled = true;
        if (deadline) clearTimeout(deadline);
        this.requests.delete(req);
        const latencyUs = (performance.now() - sentMs) * 1000;
        if (error) resolve({ ok: false, latencyUs, sendUs: 0, recvUs: 0, error, ...(said ? { said } : {}) });
        else resolve({ ok: true, latencyUs, sendUs: 0, recvUs: 0, stream: factsOf(sentMs, arrivals, elements) });
      };
      const req = http.request(
        {
          host: this.host,
          port: this.port,
          path: this.path,
          method: "POST",
          agent: this.agent,
          headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
        },
        (res) => {
          // The event being received, as the pieces it came in: joined once it is whole, so a
          // long one costs its length once, not once per piece.
          let pieces: string[] = [];
          let pending = 0;
          let endsInNewline = false;
          let failed: string | undefined;
          let complete = false;
          const tooBig = (what: string) => {
            req.destroy();
            done({
              kind: `${what} over triton-dev's ${formatBytes(JSON_RESPONSE_LIMIT)} limit for one event`,
              connection: false,
            });
          };
          const declared = Number(res.headers["content-length"] ?? NaN);
          if (declared > JSON_RESPONSE_LIMIT) return tooBig(`an answer of ${formatBytes(declared)} announced,`);
          /** One whole event; false once the request is done with. */
          const onEvent = (event: string): boolean => {
            const data = event
              .split("\n")
              .filter((l) => l.startsWith("data:"))
              .map((l) => l.slice(5).trimStart())
              .join("\n");
            if (!data) return true;
            const e = parseGenerateEvent(data);
            if (e.malformed) {
              req.destroy();
              done({ kind: `an event that is not JSON: ${clip(data, 80)}`, connection: false });
              return false;
            }
            if (e.error !== undefined) failed ??= e.error;
            else {
              arrivals.push(performance.now());
              elements += e.elements;
              if (keep && keep.length < 16) keep.push(e.outputs);
            }
            return true;
          };
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            if (settled) return;
            let from = 0;
            // Events end with a blank line, which may straddle two pieces.
            if (endsInNewline && chunk.startsWith("\n")) {
              const event = pieces.join("");
              pieces = [];
              pending = 0;
              from = 1;
              if (!onEvent(event.slice(0, -1))) return;
            }
            for (let cut = chunk.indexOf("\n\n", from); cut >= 0; cut = chunk.indexOf("\n\n", from)) {
              pieces.push(chunk.slice(from, cut));
              const event = pieces.join("");
              pieces = [];
              pending = 0;
              from = cut + 2;
              if (!onEvent(event)) return;
            }
            const rest = from ? chunk.slice(from) : chunk;
            if (rest) {
              pieces.push(rest);
              pending += rest.length;
            }
            endsInNewline = rest.endsWith("\n");
            // One event (or an error body) past the limit: no generate_stream sends such.
            if (pending > JSON_RESPONSE_LIMIT) tooBig("an event");
          });
          res.on("end", () => {
            complete = true;
            if (res.statusCode !== 200) {
              const buffered = pieces.join("");
              const text = failed ?? parseGenerateEvent(buffered).error ?? (buffered.slice(0, 4096) || "no error text");
              done({ kind: `HTTP ${res.statusCode}: ${clip(this.said(text))}`, connection: false }, this.said(text));
            } else if (failed !== undefined)
              done({ kind: `stream error: ${clip(this.said(failed))}`, connection: false }, this.said(failed));
            else done();
          });
          res.on("error", (err) => done({ kind: `connection error (${err.message})`, connection: true }));
          // Closed before its end (a reset, a cut connection): whatever did not say so already.
          res.on("close", () => {
            if (!complete) done({ kind: "the connection closed before the answer ended", connection: true }, undefined);
          });
        },
      );
      this.requests.add(req);
      // The whole request, answer included: a server dripping bytes runs out of time too.
      const deadline = timeoutMs
        ? setTimeout(() => {
            req.destroy();
            done({ kind: "timed out", connection: true });
          }, timeoutMs)
        : undefined;
      req.on("error", (err: NodeJS.ErrnoException) =>
        done({
          kind: err.code === "ECONNREFUSED" ? "connection refused" : `connection error (${err.code ?? err.message})`,
          connection: true,
        }),
      );
      req.end(body);
    });
  }

  send(index: number, sequence?: SequenceStep): Promise<Outcome> {
    if (sequence)
      throw new BugError("a stateful model's requests were sent to generate_stream, which carries no sequence");
    return this.run(index, this.timeoutMs);
  }

  async probe(index: number, sequence?: SequenceStep): Promise<DecodedInferResponse> {
    if (sequence)
      throw new BugError("a stateful model's requests were sent to generate_stream, which carries no sequence");
    const keep: Array<Record<string, unknown>> = [];
    // Bounded even when the user set no request timeout.
    const o = await this.run(index, this.timeoutMs ?? PROBE_TIMEOUT_MS, keep);
    if (!o.ok)
      throw new InferFailedError(
        o.said
          ? `Triton answered: ${o.said}`
          : `Triton at ${this.endpoint}: ${o.said ?? o.error?.kind ?? "no answer"} (POST ${this.path}, expecting server-sent events of inference responses)`,
        !!o.error?.connection,
      );
    const first = keep[0] ?? {};
    return {
      model_name: "",
      model_version: "",
      outputs: Object.entries(first).map(([name, v]) => ({
        name,
        datatype: "",
        shape: [Array.isArray(v) ? v.length : 1],
        data: Array.isArray(v) ? v : [v],
      })),
    };
  }

  close(): void {
    for (const r of [...this.requests]) r.destroy();
    this.agent.destroy();
  }
}
