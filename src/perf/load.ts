import { performance } from "node:perf_hooks";
import { LatencyHistogram } from "./histogram.js";
import { StreamWindow } from "./stream-stats.js";
import type { SequencePool, SequenceStep } from "./sequences.js";
import type { InferTransport, Outcome } from "./transport.js";

export type Distribution = "constant" | "poisson";

/** Closed loop: N requests always in flight. Open loop: requests sent on a schedule, answered or not. */
export type LoadMode =
  { kind: "concurrency"; concurrency: number } | { kind: "rate"; rate: number; distribution: Distribution };

export interface ErrorCount {
  count: number;
}

/** What completed during one measurement window. */
export interface WindowData {
  startMs: number;
  endMs: number;
  histogram: LatencyHistogram;
  success: number;
  errors: Map<string, number>;
  connectionErrors: number;
  sendUsSum: number;
  recvUsSum: number;
  /** Open loop: requests that found every connection busy and waited client-side. */
  delayed: number;
  /** Streamed requests' responses, when the transport streams. */
  stream?: StreamWindow;
}

function emptyWindow(now: number): WindowData {
  return {
    startMs: now,
    endMs: now,
    histogram: new LatencyHistogram(),
    success: 0,
    errors: new Map(),
    connectionErrors: 0,
    sendUsSum: 0,
    recvUsSum: 0,
    delayed: 0,
  };
}

export interface LoadGeneratorOptions {
  /** Open loop: requests in flight at most before new ones count as delayed. */
  maxInFlight?: number;
  random?: () => number;
  /**
   * A stateful model: every request comes from one of these sequences, which hold at most one
   * request in flight each (a send that finds none free waits, and counts as delayed).
   */
  sequences?: SequencePool;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Drives one load level. Every completed request is recorded into the window open at the moment
 * it completes; `cut()` closes that window and opens the next, so windows tile the run exactly.
 */
export class LoadGenerator {
  private window: WindowData = emptyWindow(performance.now());
  private stopping = false;
  private inFlight = 0;
  private next = 0;
  private workers: Promise<void>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private drained: (() => void) | undefined;
  private readonly random: () => number;

  constructor(
    private readonly transport: InferTransport,
    readonly mode: LoadMode,
    private readonly options: LoadGeneratorOptions = {},
  ) {
    this.random = options.random ?? Math.random;
  }

  get pending(): number {
    return this.inFlight;
  }

  /** Requests completed (answered or failed) in the window open now. */
  get completedInWindow(): number {
    let errors = 0;
    for (const n of this.window.errors.values()) errors += n;
    return this.window.success + errors;
  }

  start(): void {
    this.window = emptyWindow(performance.now());
    if (this.mode.kind === "concurrency") {
      for (let i = 0; i < this.mode.concurrency; i++) this.workers.push(this.worker());
    } else {
      this.schedule(this.mode.rate, this.mode.distribution);
    }
  }

  private record(o: Outcome): void {
    const w = this.window;
    if (o.ok) {
      w.success++;
      w.histogram.record(o.latencyUs);
      w.sendUsSum += o.sendUs;
      w.recvUsSum += o.recvUs;
      if (o.stream) (w.stream ??= new StreamWindow()).record(o.stream);
      return;
    }
    const kind = o.error?.kind ?? "unknown error";
    w.errors.set(kind, (w.errors.get(kind) ?? 0) + 1);
    if (o.error?.connection) w.connectionErrors++;
  }

  private async fire(): Promise<Outcome> {
    const pool = this.options.sequences;
    if (!pool) return this.send(this.next++);
    const step = await pool.acquire();
    if (!step) return { ok: false, latencyUs: 0, sendUs: 0, recvUs: 0, error: { kind: "cancelled", connection: true } };
    return this.send(step.index, step, (ok) => {
      const end = pool.release(step, ok);
      if (end) void this.send(end.index, end);
    });
  }

  /** `settle` runs before the request stops counting as in flight, so a stop sees its sequence free. */
  private async send(index: number, step?: SequenceStep, settle?: (ok: boolean) => void): Promise<Outcome> {
    this.inFlight++;
    let ok = false;
    try {
      const o = await this.transport.send(index, step);
      ok = o.ok;
      return o;
    } finally {
      settle?.(ok);
      this.inFlight--;
      if (this.inFlight === 0 && this.drained) this.drained();
    }
  }

  private async worker(): Promise<void> {
    while (!this.stopping) {
      const o = await this.fire();
      if (this.stopping) return;
      this.record(o);
      // With the server gone every request fails at once; do not spin the CPU meanwhile.
      if (o.error?.connection) await sleep(50);
    }
  }

  private schedule(rate: number, distribution: Distribution): void {
    const interval = () => (distribution === "constant" ? 1000 / rate : (-Math.log(1 - this.random()) * 1000) / rate);
    let due = performance.now();
    const cap = this.options.maxInFlight ?? Infinity;
    const tick = () => {
      if (this.stopping) return;
      const now = performance.now();
      // Catch up on every send that fell due since the last tick (timers fire late under load).
      while (due <= now) {
        if (this.inFlight >= cap || this.options.sequences?.exhausted) this.window.delayed++;
        void this.fire().then((o) => {
          if (!this.stopping) this.record(o);
        });
        due += interval();
      }
      this.timer = setTimeout(tick, Math.max(0, due - performance.now()));
    };
    tick();
  }

  /** Close the current window and open the next one. */
  cut(): WindowData {
    const now = performance.now();
    const w = this.window;
    w.endMs = now;
    this.window = emptyWindow(now);
    return w;
  }

  /**
   * Stop sending; wait up to `graceMs` for requests in flight, which are not recorded. A stateful
   * model's open sequences are ended, one request each (not recorded either), as perf_analyzer
   * does: left open, each would hold its slot on the server until it idled out.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    for (const step of this.options.sequences?.close() ?? []) void this.send(step.index, step);
    if (this.inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        timer = setTimeout(resolve, graceMs);
      });
      clearTimeout(timer);
    }
    this.drained = undefined;
  }
}
