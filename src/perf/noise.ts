/**
 * The noise a figure was measured in, and the one rule every comparison of figures follows: no
 * verdict rests on a difference smaller than the noise either side was measured in. The noise of
 * a figure is the spread of the windows it was merged from, (max - min) / mean, shown as ±.
 */

/** The smallest relative difference taken as real, however quiet the windows were. */
export const MIN_STEP = 0.02;

/**
 * The same floor for figures of two sweeps measured one after the other (`--compare`, a run
 * against the history): a sweep's windows agree more closely than two sweeps do, as the load on
 * a shared machine drifts between them. Two sweeps of one and the same config, one after the
 * other on a busy 2-core machine, differed by 2.05% while each sweep's windows spread 0.1% and
 * 1.9% (test/perf/perf-warmup.integration.test.ts); no verdict between sweeps rests on less than 5%.
 */
export const BETWEEN_SWEEPS = 0.05;

/** (max - min) / mean of some figures; 0 for fewer than two. */
export function spread(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return mean > 0 ? (Math.max(...values) - Math.min(...values)) / mean : 0;
}

/** One figure's windows: the smallest, the largest, and their spread. */
export interface FigureNoise {
  min: number;
  max: number;
  /** (max - min) / mean, as a fraction. */
  spread: number;
}

export function figureNoise(values: readonly number[]): FigureNoise | undefined {
  if (values.length === 0) return undefined;
  return { min: Math.min(...values), max: Math.max(...values), spread: spread(values) };
}

/** The spread of a level's figures over the windows its result was merged from. */
export interface LevelNoise {
  /** How many windows the spread was taken over (1: none measurable). */
  windows: number;
  throughput: FigureNoise;
  avgLatencyUs: FigureNoise;
  p50Us: FigureNoise;
  p99Us: FigureNoise;
}

/** A figure, the noise (spread, a fraction) it was measured in, and its windows' range, where known. */
export interface Noisy {
  value: number;
  noise?: number | undefined;
  range?: { min: number; max: number } | undefined;
}

/** The band a relative difference of two figures must exceed: the larger noise, `floor` at least. */
export function noiseBand(a: Noisy, b: Noisy, floor = MIN_STEP): number {
  return Math.max(floor, a.noise ?? 0, b.noise ?? 0);
}

export type NoiseVerdict = "higher" | "lower" | "within noise";

/**
 * How `b` stands against `a`: higher or lower beyond the noise band, or within it. Where both
 * windows' ranges are known, windows of one that reach into the other's range are within noise
 * too, whatever the ratio: some window of each measured what a window of the other did.
 */
export function compareNoisy(
  a: Noisy,
  b: Noisy,
  floor = MIN_STEP,
): { verdict: NoiseVerdict; ratio: number; band: number } {
  const band = noiseBand(a, b, floor);
  const ratio = a.value > 0 ? b.value / a.value : b.value > 0 ? Infinity : 1;
  const apart = (lo: Noisy, hi: Noisy) => !lo.range || !hi.range || hi.range.min > lo.range.max;
  const verdict =
    ratio > 1 + band && apart(a, b) ? "higher" : ratio < 1 - band && apart(b, a) ? "lower" : "within noise";
  return { verdict, ratio, band };
}

/** ±x% of a spread (a fraction), for the tables: "±3%", "±0.4%", or "-" when unknown. */
export function plusMinus(s: number | undefined): string {
  if (s === undefined || !Number.isFinite(s)) return "-";
  const pct = s * 100;
  return `±${pct >= 10 ? pct.toFixed(0) : pct.toFixed(1)}%`;
}
