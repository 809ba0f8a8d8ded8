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
 * holds, and windows merge by addition.
 */
export class LatencyHistogram {
  private readonly h = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });

  record(us: number): void {
    this.h.recordValue(Math.min(3_600_000_000, Math.max(1, Math.round(us))));
  }

  add(other: LatencyHistogram): void {
    this.h.add(other.h);
  }

  get count(): number {
    return this.h.totalCount;
  }

  percentile(p: number): number {
    return this.h.totalCount ? this.h.getValueAtPercentile(p) : 0;
  }

  summary(): LatencySummary {
    const n = this.h.totalCount;
    return {
      count: n,
      avgUs: n ? this.h.mean : 0,
      minUs: n ? this.h.minNonZeroValue : 0,
      maxUs: n ? this.h.maxValue : 0,
      stdDevUs: n ? this.h.stdDeviation : 0,
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
