import { UserError } from "../errors.js";
import type { ControlClient } from "./control.js";
import { isUnreachableError } from "./control.js";
import { GpuSampler, type GpuProbe, type GpuStats } from "./gpu.js";
import { LatencyHistogram, type LatencySummary } from "./histogram.js";
import { performance } from "node:perf_hooks";
import { LoadGenerator, type Distribution, type LoadMode, type WindowData } from "./load.js";
import { figureNoise, type LevelNoise } from "./noise.js";
import { breakdown, diffSnapshots, snapshotOf, type ServerBreakdown, type StatsSnapshot } from "./server-stats.js";
import { SequencePool, type SequenceIds, type SequenceSettings } from "./sequences.js";
import { isStable, type StabilityRule } from "./stability.js";
import { summariseStream, type StreamSummary, type StreamWindow } from "./stream-stats.js";
import type { InferTransport } from "./transport.js";

export type LevelKind = "concurrency" | "rate";

export interface WindowSummary {
  durationMs: number;
  success: number;
  errors: number;
  throughput: number;
  avgLatencyUs: number;
  /** Streamed requests: data responses of the window's completed requests. */
  responses?: number;
}

/** The measurement of one load level: the merge of its last stable windows. */
export interface LevelResult {
  kind: LevelKind;
  /** The concurrency, or the request rate per second. */
  value: number;
  stable: boolean;
  /** Windows measured before the rule held (or the limit was reached). */
  trials: number;
  windows: WindowSummary[];
  /** Length of the merged windows. */
  durationMs: number;
  /** Successful requests in the merged windows. */
  requests: number;
  /** Inferences per second (requests times batch size). */
  throughput: number;
  latency: LatencySummary;
  clientSendUs: number;
  clientRecvUs: number;
  /** perf_analyzer's "Network+Server Send/Recv": client latency not spent in the server's request. */
  networkServerUs?: number;
  errors: Record<string, number>;
  errorCount: number;
  /** Open loop: sends that waited because every connection was busy. */
  delayed?: number;
  server?: ServerBreakdown;
  gpu?: GpuStats;
  /** Decoupled models: responses per request, time to first response, inter-response latency. */
  stream?: StreamSummary;
  /** Set when the level ended before its measurement did (interrupted, server gone). */
  partial?: string;
  /** The windows before the measured ones, until two in a row agreed (`warmUp`); absent: none run. */
  warmup?: WarmupResult;
  /** Wall-clock start and end of the windows the figures were merged from. */
  measuredFrom?: string;
  measuredTo?: string;
  /** Each figure's spread over the windows it was merged from. */
  noise?: LevelNoise;
  /** Why the caller's `stopEarly` ended the level before the stability rule held. */
  stoppedEarly?: string;
}

export interface ProfileContext {
  model: string;
  /** One version of the model (`-x`): its statistics alone. */
  version?: string;
  /** Models an ensemble's steps call, for the breakdown. */
  composing: readonly string[];
  batchSize: number;
  control: ControlClient;
  /** A fresh transport for one level; `maxConnections` is the concurrency or the open-loop cap. */
  makeTransport: (maxConnections: number) => InferTransport;
  windowMs: number;
  rule: StabilityRule;
  maxTrials: number;
  distribution: Distribution;
  /** Open loop: connections at most (and the in-flight count past which sends are "delayed"). */
  maxInFlight: number;
  gpuProbe?: GpuProbe;
  signal?: AbortSignal;
  onWindow?: (e: { kind: LevelKind; value: number; trial: number; window: WindowSummary; stable: boolean }) => void;
  /**
   * Asked after each window that left the level unstable: a reason ends the level there (tune's
   * candidate that clearly cannot win). The result keeps its windows, marked unstable.
   */
  stopEarly?: (windows: readonly WindowSummary[]) => string | undefined;
  /** A stateful model: requests go as sequences, with ids from `ids` (shared by the sweep's levels). */
  sequences?: { settings: SequenceSettings; ids: SequenceIds };
  /** The warm-up before each level's measured windows; absent or `maxMs` 0: none. */
  warmup?: WarmupRule;
  /** Told when a level's warm-up ended (settled or not). */
  onWarmup?: (e: { kind: LevelKind; value: number; warmup: WarmupResult }) => void;
}

/**
 * How a level warms up before it is measured: short windows, each at least `windowMs` long and
 * lasting until `minRequests` completed (at most the measurement window), until two in a row
 * agree within the stability threshold, or `maxMs` has passed. A model whose first calls do extra
 * work (a JIT compiling, a cache filling, a second instance's first request) has those calls in
 * windows that do not agree with the ones after them, so they fall in the warm-up, not the figures.
 */
export interface WarmupRule {
  windowMs: number;
  /** The longest a warm-up window waits for `minRequests`. */
  maxWindowMs: number;
  minRequests: number;
  /** The warm-up's whole length at most; 0: no warm-up. */
  maxMs: number;
}

/** The default warm-up for a measurement window: windows of a fifth of it, three windows' time at most. */
export function defaultWarmup(windowMs: number, maxMs = 3 * windowMs): WarmupRule {
  return {
    windowMs: Math.min(windowMs, Math.max(100, Math.round(windowMs / 5))),
    maxWindowMs: windowMs,
    minRequests: 20,
    maxMs,
  };
}

export interface WarmupResult {
  /** Whether two warm-up windows in a row agreed; false: `maxMs` passed first (or requests failed). */
  settled: boolean;
  windows: WindowSummary[];
  durationMs: number;
  /** Requests completed during the warm-up: none of them is in the figures. */
  requests: number;
  startedAt: string;
  endedAt: string;
}

/** Triton stopped answering during a run. */
export class ServerGoneError extends UserError {
  override name = "ServerGoneError";
  constructor(
    message: string,
    readonly partial: LevelResult | undefined,
  ) {
    super(message, {
      hint: "Check the server with `triton-dev status` and its log with `triton-dev logs`; the results measured before it stopped are shown.",
    });
  }
}

/**
 * The share of a window's requests that may fail before the level, and the run, fails. A run is
 * measured to compare figures, and the figures of a model failing one request in ten are not its
 * figures (perf_analyzer stops at the first failed request). Below it, failures are counted and
 * shown beside the figures (a queue policy's rejections, say).
 */
export const MAX_ERROR_SHARE = 0.1;

/** Too many requests of a window failed (every one, or over MAX_ERROR_SHARE): measuring on would count errors. */
export class AllFailingError extends UserError {
  override name = "AllFailingError";
  constructor(
    message: string,
    readonly partial: LevelResult | undefined,
  ) {
    super(message);
  }
}

/** Ctrl-C (or another abort) during a level. */
export class InterruptedError extends UserError {
  override name = "InterruptedError";
  constructor(readonly partial: LevelResult | undefined) {
    super("interrupted", { exitCode: 130 });
  }
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A window's bounds on the wall clock (performance.now() counts from the process's start). */
const wallClock = (ms: number) => new Date(performance.timeOrigin + ms).toISOString();

/** The spread of each figure over some windows (those with a completed request). */
export function windowNoise(windows: readonly WindowData[], batchSize: number): LevelNoise | undefined {
  const used = windows.filter((w) => w.success > 0 && w.endMs > w.startMs);
  if (used.length === 0) return undefined;
  const summaries = used.map((w) => w.histogram.summary());
  return {
    windows: used.length,
    throughput: figureNoise(used.map((w) => (w.success * batchSize * 1000) / (w.endMs - w.startMs)))!,
    avgLatencyUs: figureNoise(summaries.map((x) => x.avgUs))!,
    p50Us: figureNoise(summaries.map((x) => x.p50Us))!,
    p99Us: figureNoise(summaries.map((x) => x.p99Us))!,
  };
}

function summariseWindow(w: WindowData, batchSize: number): WindowSummary {
  const durationMs = w.endMs - w.startMs;
  const errors = [...w.errors.values()].reduce((a, b) => a + b, 0);
  return {
    durationMs,
    success: w.success,
    errors,
    throughput: durationMs > 0 ? (w.success * batchSize * 1000) / durationMs : 0,
    avgLatencyUs: w.histogram.mean,
    ...(w.stream ? { responses: w.stream.responses } : {}),
  };
}

function topError(w: WindowData): string {
  return [...w.errors.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "unknown error";
}

/** Merge the last `k` windows (and the server's counters over the same span) into one result. */
export function mergeWindows(
  kind: LevelKind,
  value: number,
  windows: readonly WindowData[],
  k: number,
  stable: boolean,
  batchSize: number,
  server: ServerBreakdown | undefined,
): LevelResult {
  const used = windows.slice(-k);
  const hist = LatencyHistogram.merge(used.map((w) => w.histogram));
  const latency = hist.summary();
  const durationMs = used.reduce((a, w) => a + (w.endMs - w.startMs), 0);
  const requests = used.reduce((a, w) => a + w.success, 0);
  const errors: Record<string, number> = {};
  for (const w of used) for (const [kindName, n] of w.errors) errors[kindName] = (errors[kindName] ?? 0) + n;
  const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
  const clientSendUs = requests ? used.reduce((a, w) => a + w.sendUsSum, 0) / requests : 0;
  const clientRecvUs = requests ? used.reduce((a, w) => a + w.recvUsSum, 0) / requests : 0;
  const delayed = used.reduce((a, w) => a + w.delayed, 0);
  const streamed = used.flatMap((w): StreamWindow[] => (w.stream ? [w.stream] : []));
  const noise = windowNoise(used, batchSize);
  return {
    kind,
    value,
    stable,
    trials: windows.length,
    windows: windows.map((w) => summariseWindow(w, batchSize)),
    durationMs,
    requests,
    throughput: durationMs > 0 ? (requests * batchSize * 1000) / durationMs : 0,
    latency,
    clientSendUs,
    clientRecvUs,
    ...(server && requests
      ? { networkServerUs: Math.max(0, latency.avgUs - clientSendUs - clientRecvUs - server.avgRequestUs) }
      : {}),
    errors,
    errorCount,
    ...(kind === "rate" ? { delayed } : {}),
    ...(server ? { server } : {}),
    ...(streamed.length ? { stream: summariseStream(streamed, durationMs) } : {}),
    ...(used.length
      ? { measuredFrom: wallClock(used[0]!.startMs), measuredTo: wallClock(used[used.length - 1]!.endMs) }
      : {}),
    ...(noise ? { noise } : {}),
  };
}

/**
 * Measure one load level with perf_analyzer's method: back-to-back time windows until the last
 * `rule.windows` agree within `rule.thresholdPct` on throughput and average latency, or
 * `maxTrials` windows have passed (then the result is marked unstable).
 */
export async function measureLevel(ctx: ProfileContext, kind: LevelKind, value: number): Promise<LevelResult> {
  const mode: LoadMode =
    kind === "concurrency"
      ? { kind: "concurrency", concurrency: value }
      : { kind: "rate", rate: value, distribution: ctx.distribution };
  const fetchSnapshot = async (): Promise<StatsSnapshot> =>
    snapshotOf(await ctx.control.modelStatistics(ctx.composing.length ? undefined : ctx.model, ctx.version));
  const snaps: Array<StatsSnapshot | undefined> = [];
  try {
    snaps.push(await fetchSnapshot());
  } catch (err) {
    if (isUnreachableError(err))
      throw new ServerGoneError(
        `Triton at ${ctx.control.endpoint} stopped answering before ${kind} ${value} started`,
        undefined,
      );
    snaps.push(undefined);
  }
  // Closed loop: one sequence per request in flight, as perf_analyzer keeps them.
  const pool = ctx.sequences
    ? new SequencePool(
        kind === "concurrency" ? value : ctx.sequences.settings.rateSequences,
        ctx.sequences.settings,
        ctx.sequences.ids,
      )
    : undefined;
  const transport = ctx.makeTransport(kind === "concurrency" ? value : ctx.maxInFlight);
  const gen = new LoadGenerator(transport, mode, {
    maxInFlight: ctx.maxInFlight,
    ...(pool ? { sequences: pool } : {}),
  });
  const sampler = ctx.gpuProbe ? new GpuSampler(ctx.gpuProbe) : undefined;
  const windows: WindowData[] = [];
  let stable = false;
  let stoppedEarly: string | undefined;
  let gpu: GpuStats | undefined;

  const result = (partial?: string): LevelResult | undefined => {
    const k = Math.min(ctx.rule.windows, windows.length);
    if (k === 0) return undefined;
    const a = snaps[snaps.length - 1];
    const b = snaps[snaps.length - 1 - k];
    const server = a && b ? breakdown(diffSnapshots(a, b), ctx.model, ctx.composing) : undefined;
    return {
      ...mergeWindows(kind, value, windows, k, stable, ctx.batchSize, server),
      ...(warmup ? { warmup } : {}),
      ...(gpu ? { gpu } : {}),
      ...(partial ? { partial } : {}),
      ...(stoppedEarly ? { stoppedEarly } : {}),
    };
  };

  let warmup: WarmupResult | undefined;
  gen.start();
  let failure: Error | undefined;
  try {
    if (ctx.warmup && ctx.warmup.maxMs > 0) {
      const w = await warmUp(gen, ctx.warmup, ctx.rule.thresholdPct, ctx.batchSize, ctx.signal);
      if (!w) failure = new InterruptedError(undefined);
      else {
        warmup = w;
        ctx.onWarmup?.({ kind, value, warmup });
        // The server's counters from here on: the warm-up's requests are in none of the figures.
        try {
          snaps[0] = await fetchSnapshot();
        } catch {
          snaps[0] = undefined;
        }
      }
    }
    if (!failure) sampler?.start();
    for (let trial = 1; trial <= ctx.maxTrials && !failure; trial++) {
      if (!(await abortableSleep(ctx.windowMs, ctx.signal))) {
        // The window cut short by Ctrl-C is dropped: it is shorter than the others.
        failure = new InterruptedError(undefined);
        break;
      }
      const w = gen.cut();
      windows.push(w);
      let snap: StatsSnapshot | undefined;
      let snapError: unknown;
      try {
        snap = await fetchSnapshot();
      } catch (err) {
        snapError = err;
      }
      snaps.push(snap);
      const summary = summariseWindow(w, ctx.batchSize);
      const summaries = windows.map((x) => summariseWindow(x, ctx.batchSize));
      const figures = summaries.map((s) => ({ throughput: s.throughput, latencyUs: s.avgLatencyUs }));
      const errorShare = summary.errors / Math.max(1, summary.errors + summary.success);
      // Figures of a window where many requests failed are no measurement of the model.
      stable = errorShare <= MAX_ERROR_SHARE && isStable(figures, ctx.rule);
      ctx.onWindow?.({ kind, value, trial, window: summary, stable });
      const gone =
        (snapError !== undefined && isUnreachableError(snapError)) ||
        (w.success === 0 && w.connectionErrors > 0 && !(await ctx.control.isLive()));
      if (gone) {
        windows.pop();
        snaps.pop();
        failure = new ServerGoneError(
          `Triton at ${ctx.control.endpoint} stopped answering during ${kind} ${value} (${topError(w)})`,
          undefined,
        );
        break;
      }
      if (w.success === 0 && summary.errors > 0) {
        // Kept, so the report shows what the errors were.
        failure = new AllFailingError(
          `every request failed for ${((w.endMs - w.startMs) / 1000).toFixed(1)} s at ${kind} ${value}: ${topError(w)}`,
          undefined,
        );
        break;
      }
      if (errorShare > MAX_ERROR_SHARE) {
        failure = new AllFailingError(
          `${shareText(errorShare)} of requests failed (${summary.errors} of ${summary.errors + summary.success}) in ${((w.endMs - w.startMs) / 1000).toFixed(1)} s at ${kind} ${value}, more than the ${MAX_ERROR_SHARE * 100}% a measurement allows: ${topError(w)}`,
          undefined,
        );
        break;
      }
      if (stable) break;
      stoppedEarly = trial < ctx.maxTrials ? ctx.stopEarly?.(summaries) : undefined;
      if (stoppedEarly) break;
    }
  } finally {
    gpu = sampler?.stop();
    await gen.stop(failure ? 2000 : 10_000);
    transport.close();
  }
  if (failure instanceof InterruptedError) throw new InterruptedError(result("interrupted"));
  if (failure instanceof ServerGoneError)
    throw new ServerGoneError(failure.message, result("server stopped answering"));
  if (failure instanceof AllFailingError)
    throw new AllFailingError(failure.message, result("too many requests failed"));
  return result()!;
}

/**
 * Run `rule`'s warm-up windows on a started generator; undefined when aborted. Ends once the last
 * two windows agree within `thresholdPct` (throughput and average latency, isStable's test), after
 * `rule.maxMs`, or at a window whose every request failed (the measurement then says why).
 */
export async function warmUp(
  gen: LoadGenerator,
  rule: WarmupRule,
  thresholdPct: number,
  batchSize: number,
  signal?: AbortSignal,
): Promise<WarmupResult | undefined> {
  const started = performance.now();
  const windows: WindowData[] = [];
  let settled = false;
  const poll = Math.max(10, Math.min(50, rule.windowMs / 4));
  for (;;) {
    const opened = performance.now();
    // At least rule.windowMs, and long enough for minRequests (the measurement window at most):
    // two windows of a handful of slow requests would agree or not by chance.
    for (;;) {
      if (!(await abortableSleep(poll, signal))) return undefined;
      const elapsed = performance.now() - opened;
      if (elapsed >= rule.maxWindowMs) break;
      if (elapsed >= rule.windowMs && gen.completedInWindow >= rule.minRequests) break;
    }
    const w = gen.cut();
    windows.push(w);
    const figures = windows.map((x) => summariseWindow(x, batchSize));
    const last = figures[figures.length - 1]!;
    if (last.success === 0 && last.errors > 0) break;
    if (
      isStable(
        figures.map((f) => ({ throughput: f.throughput, latencyUs: f.avgLatencyUs })),
        { windows: 2, thresholdPct },
      )
    ) {
      settled = true;
      break;
    }
    if (performance.now() - started >= rule.maxMs) break;
  }
  const first = windows[0]!;
  const lastW = windows[windows.length - 1]!;
  return {
    settled,
    windows: windows.map((w) => summariseWindow(w, batchSize)),
    durationMs: lastW.endMs - first.startMs,
    requests: windows.reduce((a, w) => a + w.success, 0),
    startedAt: wallClock(first.startMs),
    endedAt: wallClock(lastW.endMs),
  };
}

/** A failure share as the user reads it: never "100%" while a request succeeded, never "10%" above the 10% limit. */
export function shareText(share: number): string {
  const pct = share * 100;
  if (pct > 99) return `${(Math.floor(pct * 10) / 10).toFixed(1)}%`;
  if (pct < 11) return `${(Math.ceil(pct * 10) / 10).toFixed(1)}%`;
  return `${Math.round(pct)}%`;
}
