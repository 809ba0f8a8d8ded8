import type { LevelResult } from "../perf/profile.js";
import { runPerf } from "../perf/run.js";
import type { TunePlan } from "./plan.js";
import type { Objective } from "./search.js";
import type { TuneDeps, TuneOptions, TuneReport } from "./types.js";

/** Choose the concurrency: the smallest level of a short sweep within 5% of the best throughput inside the budget. */
export function chooseConcurrency(
  levels: Array<{ concurrency: number; throughput: number; p99Us: number; p95Us?: number }>,
  o: Objective,
): number {
  const lat = (l: { p99Us: number; p95Us?: number }) =>
    o.latency?.percentile === "p95" ? (l.p95Us ?? l.p99Us) : l.p99Us;
  const inside = levels.filter((l) => !o.latency || lat(l) <= o.latency.ms * 1000);
  if (inside.length === 0) return levels[0]?.concurrency ?? 1;
  const best = Math.max(...inside.map((l) => l.throughput));
  return inside.find((l) => l.throughput >= 0.95 * best)!.concurrency;
}

/** The levels `--concurrency auto` may try, in order; the sweep stops at the knee. */
export const SWEEP_LEVELS = [1, 2, 4, 8, 16, 32, 64];

/**
 * Whether the sweep has seen enough after its last level: that level broke the latency budget (a
 * closed loop's latency only grows with its concurrency), or it added less than 5% to the best
 * throughput before it, which is what chooseConcurrency would choose from anyway.
 */
export function sweepDone(
  levels: ReadonlyArray<{ throughput: number; p99Us: number; p95Us?: number }>,
  o: Objective,
): boolean {
  const last = levels[levels.length - 1];
  if (!last) return false;
  const lat = o.latency?.percentile === "p95" ? (last.p95Us ?? last.p99Us) : last.p99Us;
  if (o.latency && lat > o.latency.ms * 1000) return true;
  const before = levels.slice(0, -1);
  return before.length > 0 && last.throughput < 1.05 * Math.max(...before.map((l) => l.throughput));
}

function sweepPoint(l: LevelResult) {
  return { concurrency: l.value, throughput: l.throughput, p99Us: l.latency.p99Us, p95Us: l.latency.p95Us };
}

/** The concurrency every candidate is measured at, and how it was chosen. */
export interface ConcurrencyChoice {
  concurrency: number;
  /** The short sweep that chose it (`--concurrency auto`). */
  sweep?: TuneReport["concurrencySweep"];
  /** The user's config measured at the chosen level during the sweep: its trial, not measured again. */
  startLevel?: LevelResult;
}

/**
 * `--concurrency auto`: the user's config measured at SWEEP_LEVELS until `sweepDone`, the level
 * chosen by `chooseConcurrency`; a given concurrency is taken as it is.
 */
export async function settleConcurrency(plan: TunePlan, o: TuneOptions, deps: TuneDeps): Promise<ConcurrencyChoice> {
  if (o.concurrency !== "auto") return { concurrency: o.concurrency };
  deps.progress?.(`${o.model}: a short concurrency sweep on your config to find the load that matters`);
  const levels: LevelResult[] = [];
  for (const value of SWEEP_LEVELS) {
    const r = await runPerf({ ...plan.perfBase, model: o.model, levels: [value] }, plan.perfDeps);
    const level = r.sweeps[0]?.levels[0];
    if (level && !r.stopped) levels.push(level);
    if (r.stopped || !level) break;
    deps.progress?.(
      `  concurrency ${value}: ${level.throughput.toFixed(1)} infer/s, p99 ${(level.latency.p99Us / 1000).toFixed(1)} ms`,
    );
    if (sweepDone(levels.map(sweepPoint), o.objective)) break;
  }
  const sweep = levels.map((l) => ({ concurrency: l.value, throughput: l.throughput, p99Us: l.latency.p99Us }));
  const concurrency = chooseConcurrency(levels.map(sweepPoint), o.objective);
  const startLevel = levels.find((l) => l.value === concurrency);
  deps.progress?.(`${o.model}: measuring every candidate at concurrency ${concurrency}`);
  return { concurrency, sweep, ...(startLevel ? { startLevel } : {}) };
}
