import { describe, expect, it } from "vitest";
import { LatencyHistogram } from "../../src/perf/histogram.js";
import { isStable } from "../../src/perf/stability.js";

describe("perf_analyzer's stability rule", () => {
  const w = (throughput: number, latencyUs: number) => ({ throughput, latencyUs });

  it("needs three windows whose largest is at most 1.1x their smallest, on throughput and latency", () => {
    expect(isStable([w(100, 1000), w(101, 1010)])).toBe(false);
    expect(isStable([w(100, 1000), w(105, 1040), w(96, 980)])).toBe(true);
    expect(isStable([w(100, 1000), w(130, 1000), w(100, 1000)])).toBe(false);
    expect(isStable([w(100, 1000), w(100, 1300), w(100, 1000)])).toBe(false);
    // Within ±10% of the average (91..111 around 101), but 111/91 = 1.22: not stable.
    expect(isStable([w(91, 1000), w(101, 1000), w(111, 1000)])).toBe(false);
    expect(isStable([w(100, 1000), w(100, 1050), w(100, 1150)])).toBe(false);
    expect(isStable([w(100, 1000), w(109, 1000), w(105, 1090)])).toBe(true);
  });

  it("looks only at the last windows, and never calls empty windows stable", () => {
    expect(isStable([w(10, 9000), w(100, 1000), w(100, 1000), w(100, 1000)])).toBe(true);
    expect(isStable([w(0, 0), w(0, 0), w(0, 0)])).toBe(false);
    expect(isStable([w(100, 1000), w(115, 1000), w(100, 1000)], { windows: 3, thresholdPct: 20 })).toBe(true);
  });
});

describe("LatencyHistogram", () => {
  it("gives percentiles within HDR precision and merges by addition", () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    for (let i = 1; i <= 500; i++) a.record(i * 10);
    for (let i = 501; i <= 1000; i++) b.record(i * 10);
    const s = LatencyHistogram.merge([a, b]).summary();
    expect(s.count).toBe(1000);
    expect(s.p50Us).toBeGreaterThanOrEqual(4995);
    expect(s.p50Us).toBeLessThanOrEqual(5010);
    expect(Math.abs(s.p99Us - 9900) / 9900).toBeLessThan(0.002);
    expect(Math.abs(s.avgUs - 5005) / 5005).toBeLessThan(0.002);
    expect(new LatencyHistogram().summary().p99Us).toBe(0);
  });

  it("keeps the exact mean, spread, min and max of what it recorded, merged too", () => {
    const values = [12.4, 980, 15_000, 15_020, 2_000_000, 7];
    const parts = [new LatencyHistogram(), new LatencyHistogram()];
    values.forEach((v, i) => parts[i % 2]!.record(v));
    const s = LatencyHistogram.merge(parts).summary();
    // As recorded: whole microseconds.
    const whole = values.map(Math.round);
    const mean = whole.reduce((a, b) => a + b, 0) / whole.length;
    expect(s.avgUs).toBeCloseTo(mean, 9);
    expect(s.stdDevUs).toBeCloseTo(Math.sqrt(whole.reduce((a, v) => a + (v - mean) ** 2, 0) / whole.length), 6);
    expect([s.minUs, s.maxUs]).toEqual([7, 2_000_000]);
    expect(parts[0]!.mean).toBeCloseTo((12 + 15_000 + 2_000_000) / 3, 9);
    expect(new LatencyHistogram().mean).toBe(0);
  });
});
