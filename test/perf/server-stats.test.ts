import { describe, expect, it } from "vitest";
import { breakdown, diffSnapshots, snapshotOf } from "../../src/perf/server-stats.js";

const stats = (name: string, n: number, scale: number, executions: number) => ({
  name,
  version: "1",
  inference_count: n,
  execution_count: executions,
  inference_stats: {
    success: { count: n, ns: n * 1000_000 * scale },
    fail: { count: 0, ns: 0 },
    queue: { count: n, ns: n * 200_000 * scale },
    compute_input: { count: n, ns: n * 50_000 * scale },
    compute_infer: { count: n, ns: n * 600_000 * scale },
    compute_output: { count: n, ns: n * 100_000 * scale },
  },
  batch_stats: [],
});

describe("the server-side breakdown", () => {
  it("turns counter deltas into per-request microseconds and an average batch size", () => {
    const before = snapshotOf({ model_stats: [stats("m", 100, 1, 100)] });
    const after = snapshotOf({ model_stats: [stats("m", 500, 1, 150)] });
    const b = breakdown(diffSnapshots(after, before), "m")!;
    expect(b.requests).toBe(400);
    expect(b.avgRequestUs).toBeCloseTo(1000);
    expect(b.queueUs).toBeCloseTo(200);
    expect(b.computeInputUs).toBeCloseTo(50);
    expect(b.computeInferUs).toBeCloseTo(600);
    expect(b.computeOutputUs).toBeCloseTo(100);
    expect(b.overheadUs).toBeCloseTo(50);
    expect(b.avgBatchSize).toBeCloseTo(8);
  });

  it("sums an ensemble's steps, as perf_analyzer does", () => {
    const snap = snapshotOf({
      model_stats: [
        {
          ...stats("ens", 10, 5, 0),
          inference_stats: {
            ...stats("ens", 10, 5, 0).inference_stats,
            queue: { count: 0, ns: 0 },
            compute_infer: { count: 0, ns: 0 },
          },
        },
        stats("tok", 10, 1, 10),
        stats("cls", 10, 2, 5),
      ],
    });
    const b = breakdown(snap, "ens", ["tok", "cls"])!;
    expect(b.queueUs).toBeCloseTo(200 + 400);
    expect(b.computeInferUs).toBeCloseTo(600 + 1200);
    expect(b.composing?.map((c) => [c.model, c.avgBatchSize])).toEqual([
      ["tok", 1],
      ["cls", 2],
    ]);
    expect(b.queueUs + b.computeInputUs + b.computeInferUs + b.computeOutputUs).toBeLessThanOrEqual(b.avgRequestUs);
  });

  it("adds versions of one model together", () => {
    const snap = snapshotOf({ model_stats: [stats("m", 10, 1, 10), { ...stats("m", 30, 1, 10), version: "2" }] });
    expect(snap.get("m")!.success.count).toBe(40);
  });
});
