/**
 * perf_analyzer's stability rule (InferenceProfiler::DetermineStability since 2023, so in the
 * 2.51 client): a measurement is stable once, over the last `windows` windows, the largest value
 * is at most (1 + `thresholdPct`/100) times the smallest, for throughput and for average latency
 * alike. (Older perf_analyzers took ±threshold around the average, which lets a spread of up to
 * 1.22x pass at 10% and so stopped on windows still warming up.)
 */
export interface WindowFigures {
  throughput: number;
  latencyUs: number;
}

export interface StabilityRule {
  windows: number;
  thresholdPct: number;
}

export const DEFAULT_STABILITY: StabilityRule = { windows: 3, thresholdPct: 10 };

export function isStable(history: readonly WindowFigures[], rule: StabilityRule = DEFAULT_STABILITY): boolean {
  if (history.length < rule.windows) return false;
  const last = history.slice(-rule.windows);
  // A window with nothing completed says nothing about steady state.
  if (last.some((w) => w.throughput <= 0 || w.latencyUs <= 0)) return false;
  const t = rule.thresholdPct / 100;
  const within = (values: number[]) => Math.max(...values) / Math.min(...values) <= 1 + t;
  return within(last.map((w) => w.throughput)) && within(last.map((w) => w.latencyUs));
}
