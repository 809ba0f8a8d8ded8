import { describe, expect, it } from "vitest";
import { chooseConcurrency, sweepDone } from "../../src/tune/concurrency.js";

describe("chooseConcurrency", () => {
  const levels = [
    { concurrency: 1, throughput: 100, p99Us: 5_000 },
    { concurrency: 2, throughput: 190, p99Us: 8_000 },
    { concurrency: 4, throughput: 196, p99Us: 15_000 },
    { concurrency: 8, throughput: 300, p99Us: 40_000 },
  ];
  it("takes the smallest level within 5% of the best inside the budget", () => {
    expect(chooseConcurrency(levels, { latency: { percentile: "p99", ms: 20 } })).toBe(2);
    expect(chooseConcurrency(levels, {})).toBe(8);
    expect(chooseConcurrency(levels, { latency: { percentile: "p99", ms: 1 } })).toBe(1);
  });
});

describe("sweepDone", () => {
  const l = (throughput: number, p99Us = 1000) => ({ throughput, p99Us });
  it("goes on while each level adds 5% or more, and stops at the knee", () => {
    expect(sweepDone([l(100)], {})).toBe(false);
    expect(sweepDone([l(100), l(190)], {})).toBe(false);
    expect(sweepDone([l(100), l(190), l(196)], {})).toBe(true);
    // Against the best before it, not the level just before (a dip ends it too).
    expect(sweepDone([l(100), l(190), l(150)], {})).toBe(true);
  });
  it("stops at the first level over the latency budget", () => {
    expect(sweepDone([l(100, 5_000), l(300, 25_000)], { latency: { percentile: "p99", ms: 20 } })).toBe(true);
    expect(sweepDone([l(100, 5_000), l(300, 15_000)], { latency: { percentile: "p99", ms: 20 } })).toBe(false);
    expect(
      sweepDone([{ throughput: 300, p99Us: 30_000, p95Us: 10_000 }], { latency: { percentile: "p95", ms: 20 } }),
    ).toBe(false);
  });
  it("measures up to the knee of the curve, and all of it while each level still pays", () => {
    const levels = (ts: number[]) => ts.map((t, i) => ({ concurrency: 2 ** i, throughput: t, p99Us: 1000 }));
    const measured = (curve: ReturnType<typeof levels>) => {
      let n = 1;
      while (n < curve.length && !sweepDone(curve.slice(0, n), {})) n++;
      return curve.slice(0, n);
    };
    const knee = measured(levels([100, 190, 290, 300, 305, 306, 306]));
    expect(knee.map((l) => l.concurrency)).toEqual([1, 2, 4, 8]);
    expect(chooseConcurrency(knee, {})).toBe(4);
    expect(measured(levels([100, 190, 290, 400, 600, 800, 1000]))).toHaveLength(7);
  });
});
