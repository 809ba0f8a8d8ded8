import hdr from "hdr-histogram-js";

/** Latency percentiles the reports show, as perf_analyzer reports them. */
export const PERCENTILES = [50, 90, 95, 99] as const;

export interface LatencySummary {
  count: number;
  avgUs: number;
  minUs: number;
  maxUs: number;
  stdDevUs: number;
  p50Us: number;
  p90Us: number;
  p95Us: number;
  p99Us: number;
}

/**
 * Request latencies in microseconds, kept in an HDR histogram: 3 significant digits from 1 µs up
 * to an hour, in constant memory, so percentiles stay exact enough however many requests a window
 * holds, and windows merge by addition. Count, sum, sum of squares, min and max are kept beside it:
 * the histogram's own mean and standard deviation walk every bucket with an iterator (20-30 ms for
 * one window's), and perf asks for them after every window while its requests are in flight, so
 * the event loop stalled that long each time with responses waiting (an hour's range is 23,000
 * buckets); the percentiles' linear scan costs well under a millisecond.
 */
export class LatencyHistogram {
  private readonly h = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  private n = 0;
  private sum = 0;
  private sumSq = 0;
  private min = Infinity;
  private max = 0;

  record(us: number): void {
    const v = Math.min(3_600_000_000, Math.max(1, Math.round(us)));
    this.h.recordValue(v);
    this.n++;
    this.sum += v;
    this.sumSq += v * v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }

  add(other: LatencyHistogram): void {
    this.h.add(other.h);
    this.n += other.n;
    this.sum += other.sum;
    this.sumSq += other.sumSq;
    this.min = Math.min(this.min, other.min);
    this.max = Math.max(this.max, other.max);
  }

  get count(): number {
    return this.n;
  }

  /** The exact mean of the recorded values (0 when none). */
  get mean(): number {
    return this.n ? this.sum / this.n : 0;
  }

  percentile(p: number): number {
    return this.n ? this.h.getValueAtPercentile(p) : 0;
  }

  summary(): LatencySummary {
    const n = this.n;
    const mean = this.mean;
    return {
      count: n,
      avgUs: mean,
      minUs: n ? this.min : 0,
      maxUs: n ? this.max : 0,
      // The population's, as the histogram's own was.
      stdDevUs: n ? Math.sqrt(Math.max(0, this.sumSq / n - mean * mean)) : 0,
      p50Us: this.percentile(50),
      p90Us: this.percentile(90),
      p95Us: this.percentile(95),
      p99Us: this.percentile(99),
    };
  }

  static merge(parts: readonly LatencyHistogram[]): LatencyHistogram {
    const out = new LatencyHistogram();
    for (const p of parts) out.add(p);
    return out;
  }
}
