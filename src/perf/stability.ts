/**
 * perf_analyzer's stability rule: a measurement is stable once the last `windows` windows each
 * lie within ±`thresholdPct` of their average, for throughput and for latency alike.
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
  const within = (values: number[]) => {
    const avg = values.reduce((a, b) => a + b, 0) / values.length;
    return values.every((v) => v >= avg * (1 - t) && v <= avg * (1 + t));
  };
  return within(last.map((w) => w.throughput)) && within(last.map((w) => w.latencyUs));
}
