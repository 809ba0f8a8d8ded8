import { performance } from "node:perf_hooks";
import type { DecodedInferResponse } from "../triton/binary.js";
import { TritonGrpcClient, type InferStream, type StreamMessage, type TritonGrpcError } from "../triton/grpc-client.js";
import { GrpcStreamChannel } from "../triton/grpc-stream.js";
import { factsOf } from "./stream-stats.js";
import type { SequenceStep } from "./sequences.js";
import {
  InferFailedError,
  withSequence,
  type InferTransport,
  type Outcome,
  type TransportOptions,
} from "./transport.js";

function clip(s: string, n = 160): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

interface Pending {
  sentMs: number;
  arrivals: number[];
  elements: number;
  /** The probe keeps the responses themselves. */
  keep?: StreamMessage[];
  timer?: NodeJS.Timeout;
  done: (o: Outcome) => void;
}

interface Slot {
  stream: InferStream;
  pending?: Pending;
  dead: boolean;
}

/** Messages a probe keeps: it reads the first with outputs. */
const PROBE_KEEPS = 16;

const connectionKind = (err: TritonGrpcError) =>
  err.codeName === "UNAVAILABLE" && /ECONNREFUSED|No connection established|connect/i.test(err.details)
    ? "connection refused"
    : `gRPC ${err.codeName}: ${clip(err.details)}`;

/**
 * Requests to a decoupled model over gRPC's ModelStreamInfer, as perf_analyzer's `--streaming`
 * drives them: one stream per request in flight (a concurrency slot, or an open-loop connection),
 * one request at a time on each, complete when its final-flagged response arrives. With one
 * request per stream no response needs matching by id, and a stream that ended a request with an
 * error is dropped, so nothing it sends later is counted for the next request.
 */
export class GrpcStreamTransport implements InferTransport {
  readonly protocol = "grpc" as const;
  readonly endpoint: string;
  private readonly channel: GrpcStreamChannel;
  private readonly requests: Buffer[];
  private readonly said: (text: string) => string;
  private readonly maxStreams: number;
  private readonly timeoutMs: number | undefined;
  private readonly idle: Slot[] = [];
  private readonly live = new Set<Slot>();
  private readonly waiters: Array<(slot: Slot | undefined) => void> = [];
  private closed = false;

  constructor(address: string, o: TransportOptions) {
    this.endpoint = address;
    this.channel = new GrpcStreamChannel(address);
    this.said = o.userPaths ?? ((t) => t);
    this.maxStreams = Math.max(1, o.maxConnections);
    this.timeoutMs = o.requestTimeoutMs;
    // Without this flag Triton sends nothing for a final flag the model sends alone (the python
    // backend's `send(flags=FINAL)`), and the request would never be seen to complete.
    const parameters = { ...o.parameters, triton_enable_empty_final_response: true };
    this.requests = o.payloads.map((inputs) =>
      TritonGrpcClient.encodeInferRequest(o.model, inputs, {
        parameters,
        ...(o.version ? { version: o.version } : {}),
      }),
    );
  }

  private openSlot(): Slot {
    const slot: Slot = { dead: false } as Slot;
    this.live.add(slot);
    slot.stream = this.channel.openStream({
      onMessage: (m) => this.onMessage(slot, m),
      onEnd: (err) => {
        const p = slot.pending;
        if (p)
          this.finish(slot, p, {
            kind: err ? connectionKind(err) : "the stream ended before the final response",
            connection: err ? err.codeName === "UNAVAILABLE" || err.codeName === "CANCELLED" : false,
          });
      },
    });
    return slot;
  }

  private kill(slot: Slot): void {
    if (slot.dead) return;
    slot.dead = true;
    this.live.delete(slot);
    slot.stream.cancel();
    // A waiter gets a fresh stream in place of the one that died.
    if (!this.closed && this.waiters.length && this.live.size < this.maxStreams) this.waiters.shift()!(this.openSlot());
  }

  private acquire(): Promise<Slot | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    for (let s = this.idle.pop(); s; s = this.idle.pop()) if (!s.dead) return Promise.resolve(s);
    if (this.live.size < this.maxStreams) return Promise.resolve(this.openSlot());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(slot: Slot): void {
    if (slot.dead) return;
    const w = this.waiters.shift();
    if (w) w(slot);
    else this.idle.push(slot);
  }

  private onMessage(slot: Slot, m: StreamMessage): void {
    const p = slot.pending;
    // Nothing is in flight on this stream: a late message of a request already given up on.
    if (!p) return;
    const now = performance.now();
    // A probe reads its first responses only: a stream that never ends costs no more than these.
    if (p.keep && p.keep.length < PROBE_KEEPS) p.keep.push(m);
    if (m.error) {
      this.finish(slot, p, { kind: `stream error: ${clip(this.said(m.error))}`, connection: false });
      return;
    }
    if (!(m.final && m.outputs === 0)) {
      p.arrivals.push(now);
      p.elements += m.elements;
    }
    if (m.final) this.finish(slot, p);
  }

  /**
   * End request `p`. A stream that ended a request in any way but its final response is dropped,
   * never handed to the next request: whatever it still sends belongs to the one given up on.
   */
  private finish(slot: Slot, p: Pending, error?: { kind: string; connection: boolean }): void {
    if (slot.pending !== p) return;
    // Cleared before the kill: cancelling a call can report its end at once, for nothing pending.
    slot.pending = undefined;
    if (p.timer) clearTimeout(p.timer);
    const latencyUs = (performance.now() - p.sentMs) * 1000;
    if (error) {
      this.kill(slot);
      p.done({ ok: false, latencyUs, sendUs: 0, recvUs: 0, error });
    } else {
      this.release(slot);
      p.done({ ok: true, latencyUs, sendUs: 0, recvUs: 0, stream: factsOf(p.sentMs, p.arrivals, p.elements) });
    }
  }

  private async run(
    index: number,
    sequence: SequenceStep | undefined,
    timeoutMs = this.timeoutMs,
    keep?: StreamMessage[],
  ): Promise<Outcome> {
    const slot = await this.acquire();
    // Closed (or the stream died) while this request waited for it.
    if (!slot || slot.dead || this.closed)
      return { ok: false, latencyUs: 0, sendUs: 0, recvUs: 0, error: { kind: "cancelled", connection: true } };
    return new Promise<Outcome>((done) => {
      const p: Pending = { sentMs: performance.now(), arrivals: [], elements: 0, done, ...(keep ? { keep } : {}) };
      slot.pending = p;
      if (timeoutMs)
        p.timer = setTimeout(() => this.finish(slot, p, { kind: "timed out", connection: true }), timeoutMs);
      slot.stream.write(withSequence(this.requests[index % this.requests.length]!, sequence));
    });
  }

  send(index: number, sequence?: SequenceStep): Promise<Outcome> {
    return this.run(index, sequence);
  }

  /** One request; answers its first data response (the empty final one when it had none). */
  async probe(index: number, sequence?: SequenceStep): Promise<DecodedInferResponse> {
    const keep: StreamMessage[] = [];
    // Bounded even when the user set no request timeout.
    const o = await this.run(index, sequence, this.timeoutMs ?? 60_000, keep);
    if (!o.ok) {
      const said = keep.find((m) => m.error)?.error;
      throw new InferFailedError(
        said
          ? `Triton answered: ${this.said(said)}`
          : `Triton at ${this.endpoint}: ${o.error?.kind ?? "no answer"} (gRPC ModelStreamInfer, expecting streamed inference responses)`,
        o.error?.connection ?? false,
      );
    }
    try {
      const first = keep.find((m) => !m.error && m.outputs > 0) ?? keep.find((m) => m.response);
      const response = first?.response;
      if (!response) throw new Error("no response carried one");
      return TritonGrpcClient.inferResponseOf(response);
    } catch (err) {
      throw new InferFailedError(
        `Triton at ${this.endpoint} streamed responses that are not inference responses: ${clip((err as Error).message)} (gRPC ModelStreamInfer)`,
        false,
      );
    }
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w(undefined);
    for (const slot of [...this.live]) {
      if (slot.pending) this.finish(slot, slot.pending, { kind: "cancelled", connection: true });
      else this.kill(slot);
    }
    this.channel.close();
  }
}
