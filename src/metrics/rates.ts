/** A counter's value at one scrape. */
export interface Point {
  /** ms since epoch */
  t: number;
  v: number;
}

/**
 * How much a counter grew across the points, as PromQL's increase() counts it: a drop means the
 * counter restarted from zero (Triton recreates a model's counters when it reloads the model), so
 * the value after the drop is all growth.
 */
export function increase(points: readonly Point[]): number {
  let total = 0;
  for (let i = 1; i < points.length; i++) {
    const prev = points[i - 1]!.v;
    const cur = points[i]!.v;
    total += cur >= prev ? cur - prev : cur;
  }
  return total;
}

/** The points no older than `rangeMs` before the last one, as a range selector `[range]` picks them. */
export function inRange(points: readonly Point[], rangeMs: number): Point[] {
  const last = points[points.length - 1];
  if (!last) return [];
  let i = points.length - 1;
  while (i > 0 && last.t - points[i - 1]!.t <= rangeMs) i--;
  return points.slice(i);
}

/**
 * Per-second rate over the range: PromQL's rate() without its extrapolation to the range's
 * edges (we always have the samples at both ends). Undefined until two scrapes exist.
 */
export function rate(points: readonly Point[], rangeMs: number): number | undefined {
  const pts = inRange(points, rangeMs);
  if (pts.length < 2) return undefined;
  const dt = (pts[pts.length - 1]!.t - pts[0]!.t) / 1000;
  return dt > 0 ? increase(pts) / dt : undefined;
}

/**
 * rate(num) / rate(den) over the same range, the article's way to get an average from Triton's
 * cumulative counters (for example queue microseconds per successful request). Undefined when
 * nothing was counted in the range: no requests means no average, not zero.
 */
export function ratioOfRates(num: readonly Point[], den: readonly Point[], rangeMs: number): number | undefined {
  const n = inRange(num, rangeMs);
  const d = inRange(den, rangeMs);
  if (n.length < 2 || d.length < 2) return undefined;
  const dd = increase(d);
  return dd > 0 ? increase(n) / dd : undefined;
}
