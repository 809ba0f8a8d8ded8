import { describe, expect, it } from "vitest";
import { MetricsHistory } from "../../src/metrics/history.js";
import { increase, inRange, rate, ratioOfRates } from "../../src/metrics/rates.js";
import type { ModelCounters, TritonMetricsSnapshot } from "../../src/metrics/triton.js";

const pts = (...vs: Array<[number, number]>) => vs.map(([t, v]) => ({ t, v }));

describe("counter maths", () => {
  it("counts growth across a counter reset as PromQL does", () => {
    expect(increase(pts([0, 10], [1, 15], [2, 3], [3, 8]))).toBe(5 + 3 + 5);
  });

  it("takes the points inside the range, ending at the newest", () => {
    const p = pts([0, 0], [2000, 1], [4000, 2], [6000, 3]);
    expect(inRange(p, 4000).map((x) => x.t)).toEqual([2000, 4000, 6000]);
    expect(rate(p, 4000)).toBeCloseTo(0.5);
    expect(rate(p.slice(0, 1), 4000)).toBeUndefined();
  });

  it("averages from cumulative counters: queue µs per request, undefined with no request", () => {
    const queueUs = pts([0, 1000], [2000, 5000], [4000, 9000]);
    const success = pts([0, 10], [2000, 12], [4000, 14]);
    expect(ratioOfRates(queueUs, success, 10_000)).toBe(2000);
    expect(ratioOfRates(pts([0, 5], [2000, 5]), pts([0, 1], [2000, 1]), 10_000)).toBeUndefined();
  });
});

function snap(
  at: number,
  models: Record<string, Partial<ModelCounters>>,
  extra: Partial<TritonMetricsSnapshot> = {},
): TritonMetricsSnapshot {
  const full: Record<string, ModelCounters> = {};
  for (const [name, m] of Object.entries(models)) {
    full[name] = {
      model: name,
      versions: ["1"],
      success: 0,
      failure: 0,
      inferences: 0,
      executions: 0,
      requestUs: 0,
      queueUs: 0,
      computeInputUs: 0,
      computeInferUs: 0,
      computeOutputUs: 0,
      pending: 0,
      ...m,
    };
  }
  return { at, models: full, gpus: [], summaries: false, ...extra };
}

describe("MetricsHistory", () => {
  it("computes throughput, mean queue latency and batch size over the range, and a point per scrape", () => {
    const h = new MetricsHistory({ rangeMs: 10_000 });
    h.push(snap(0, { a: { success: 0, inferences: 0, executions: 0, queueUs: 0 } }));
    h.push(snap(2000, { a: { success: 100, inferences: 400, executions: 50, queueUs: 50_000 } }));
    h.push(snap(4000, { a: { success: 300, inferences: 1200, executions: 150, queueUs: 250_000 } }));
    const m = h.view().models[0]!;
    expect(m.requestsPerSec).toBe(75);
    expect(m.inferencesPerSec).toBe(300);
    expect(m.queueAvgUs).toBeCloseTo(250_000 / 300);
    expect(m.avgBatch).toBe(8);
    expect(m.throughputSeries).toEqual([50, 100]);
    expect(m.queueSeries).toEqual([500, 1000]);
    expect(m.queueP99Us).toBeUndefined();
  });

  it("survives a reload resetting the counters, and uses the summary's p99 when there is one", () => {
    const h = new MetricsHistory({ rangeMs: 10_000 });
    const q = (p99: number) => ({ count: 1, sumUs: 1, q: { "0.99": p99 } });
    h.push(snap(0, { a: { success: 1000 } }, { summaries: true }));
    h.push(snap(2000, { a: { success: 20, queueSummary: q(700) } }, { summaries: true }));
    h.push(snap(4000, { a: { success: 60, queueSummary: q(900) } }, { summaries: true }));
    const v = h.view();
    expect(v.summaries).toBe(true);
    expect(v.models[0]!.requestsPerSec).toBe(15);
    expect(v.models[0]!.queueP99Us).toBe(900);
    expect(v.models[0]!.queueSeries).toEqual([700, 900]);
  });

  it("forgets scrapes older than it keeps, and ignores one that is not newer", () => {
    const h = new MetricsHistory({ keepMs: 5000 });
    for (let t = 0; t <= 20_000; t += 2000) h.push(snap(t, {}));
    h.push(snap(20_000, {}));
    expect(h.size).toBe(3);
    expect(new MetricsHistory().view()).toEqual({
      rangeMs: 10_000,
      scrapes: 0,
      summaries: false,
      models: [],
      gpus: [],
    });
  });
});
