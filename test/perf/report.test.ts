import { describe, expect, it } from "vitest";
import { PERF_ANALYZER_HEADER } from "./helpers.js";
import type { LevelResult } from "../../src/perf/profile.js";
import {
  chart,
  compareSweeps,
  csvHeader,
  describeClientServerGap,
  diffSweeps,
  formatComparison,
  formatDiff,
  formatTable,
  parseCsv,
  seriesOf,
  toCsv,
  type SweepResult,
} from "../../src/perf/report.js";

function level(value: number, throughput: number, p50: number): LevelResult {
  return {
    kind: "concurrency",
    value,
    stable: true,
    trials: 3,
    windows: [],
    durationMs: 3000,
    requests: Math.round(throughput * 3),
    throughput,
    latency: {
      count: 1,
      avgUs: p50 * 1.1,
      minUs: 1,
      maxUs: p50 * 3,
      stdDevUs: 1,
      p50Us: p50,
      p90Us: p50 * 1.5,
      p95Us: p50 * 2,
      p99Us: p50 * 2.5,
    },
    clientSendUs: 35.7,
    clientRecvUs: 1.2,
    networkServerUs: 117.9,
    errors: value === 2 ? { "HTTP 503: Request timeout expired": 4 } : {},
    errorCount: value === 2 ? 4 : 0,
    server: {
      requests: 1,
      failures: 0,
      inferenceCount: 8,
      executionCount: 2,
      avgBatchSize: 4,
      avgRequestUs: 277,
      queueUs: 24.4,
      computeInputUs: 11,
      computeInferUs: 203,
      computeOutputUs: 37,
      overheadUs: 1.6,
    },
  };
}

const sweep = (levels: LevelResult[], label?: string): SweepResult => ({
  model: "m",
  servedModel: label ? `m__perf_${label}` : "m",
  ...(label ? { label } : {}),
  engine: "builtin",
  protocol: "http",
  endpoint: "127.0.0.1:8000",
  kind: "concurrency",
  batchSize: 1,
  measurementIntervalMs: 5000,
  startedAt: "",
  finishedAt: "",
  levels,
});

describe("reports", () => {
  it("writes perf_analyzer's CSV: its header, rows by level, latencies in whole microseconds", () => {
    expect(csvHeader("concurrency").join(",")).toBe(PERF_ANALYZER_HEADER);
    expect(csvHeader("rate")[0]).toBe("Request Rate");
    const csv = toCsv(sweep([level(2, 2343.861, 653), level(1, 2314.6612, 414)]));
    const { header, rows } = parseCsv(csv);
    expect(header.join(",")).toBe(PERF_ANALYZER_HEADER);
    expect(rows[0]).toEqual(["1", "2314.66", "35", "117", "24", "11", "203", "37", "1", "414", "621", "828", "1035"]);
    expect(rows[1]![0]).toBe("2");
  });

  it("prints a table with the breakdown, batch size, errors and stability", () => {
    const noisy: Partial<LevelResult> = {
      noise: {
        windows: 3,
        throughput: { min: 2280, max: 2350, spread: 0.03 },
        p50Us: { min: 410, max: 416, spread: 0.015 },
        p99Us: { min: 900, max: 1010, spread: 0.12 },
        avgLatencyUs: { min: 450, max: 460, spread: 0.02 },
      },
      warmup: { settled: true, windows: [], durationMs: 1800, requests: 40, startedAt: "", endedAt: "" },
    };
    const unsettled: Partial<LevelResult> = {
      stable: false,
      warmup: { settled: false, windows: [], durationMs: 15_000, requests: 9, startedAt: "", endedAt: "" },
    };
    const t = formatTable(
      sweep([
        { ...level(1, 2314.66, 414), ...noisy },
        { ...level(2, 2343.86, 653), ...unsettled },
      ]),
    );
    const lines = t.split("\n");
    expect(lines[0]).toMatch(
      /^Concurrency\s+Infer\/s\s+Send\s+Net\+Srv\s+Queue\s+In\s+Infer\s+Out\s+Recv\s+p50\s+p90\s+p95\s+p99\s+Avg\s+Server\s+Batch\s+Errors\s+±Infer\/s\s+±p50\s+±p99\s+±Avg\s+Warm-up$/,
    );
    // Each figure's spread over its windows, and the warm-up's length, after perf_analyzer's columns.
    expect(lines[1]).toMatch(
      /^1\s+2315\s+0\.04\s+0\.12\s+0\.02\s+0\.01\s+0\.20\s+0\.04\s+0\.00\s+0\.41\s+.*\s+0\.46\s+0\.28\s+4\.0\s+0\s+±3\.0%\s+±1\.5%\s+±12%\s+±2\.0%\s+1\.8s$/,
    );
    expect(lines[2]).toMatch(/4\s+-\s+-\s+-\s+-\s+15\.0s\s+\(unstable, warm-up did not settle\)$/);
  });

  it("notes where client latency is well above the server's time per request, and only there", () => {
    // level(): server 277 us per request, client avg 1.1 x p50.
    const close = sweep([level(1, 2000, 300), level(2, 2000, 400)]);
    expect(describeClientServerGap(close)).toBeUndefined();
    const far = sweep([level(1, 2000, 300), level(2, 1000, 2000), level(4, 900, 5000)]);
    const note = describeClientServerGap(far)!;
    expect(note).toContain("concurrency 2, 4;");
    expect(note).toContain("at 4: Avg 5.50 ms, Server 0.28 ms");
    expect(note).toContain("the other 5.22 ms are the client and the network");
    // The rule is a parameter: a stricter one leaves the 2 ms level out.
    expect(describeClientServerGap(far, { ratio: 10, minGapUs: 500 })).toContain("concurrency 4;");
    expect(describeClientServerGap(sweep([level(2, 1000, 2000)]))).toContain("(at every concurrency level; at 2:");
    expect(describeClientServerGap(sweep([{ ...level(1, 1, 5000), server: undefined }]))).toBeUndefined();
  });

  it("does not blame the client and the network for a streamed model's time between its responses", () => {
    const streamed = { ...sweep([level(1, 2, 502_000)]), streaming: "ModelStreamInfer" as const };
    const note = describeClientServerGap(streamed)!;
    expect(note).not.toContain("are the client and the network");
    expect(note).toContain("the time the model takes between its responses");
  });

  it("draws throughput against latency with one marker per variant", () => {
    const a = sweep([level(1, 100, 1000), level(2, 180, 1100), level(4, 200, 2000)], "a");
    const b = sweep([level(1, 100, 1000), level(2, 300, 1100), level(4, 500, 1500)], "b");
    const text = chart([seriesOf(a, "*"), seriesOf(b, "o")], { width: 40, height: 10 });
    const lines = text.split("\n");
    expect(lines[0]).toBe("avg latency (ms)");
    expect(lines.filter((l) => l.includes("|"))).toHaveLength(10);
    expect(text.match(/\*/g)!.length).toBeGreaterThanOrEqual(3);
    expect(text).toContain("* a   o b");
    expect(lines.find((l) => l.includes("o"))!.indexOf("o")).toBeGreaterThan(
      lines.find((l) => l.includes("*") && l.includes("|"))!.indexOf("*"),
    );
  });

  it("compares variants with throughput ratios, and runs with percentage changes", () => {
    const off = sweep([level(64, 450, 142000)], "no batching");
    const on = sweep([level(64, 1850, 34500)], "dynamic batching");
    const rows = compareSweeps([off, on]);
    expect(rows[0]!.ratio[1]).toBeCloseTo(1850 / 450);
    expect(formatComparison([off, on], rows)).toMatch(/64\s+450\s+-\s+142\s+1850\s+-\s+34\.5\s+4\.11x$/);
    expect(rows[0]!.verdict).toEqual([undefined, "higher"]);
    const d = diffSweeps(sweep([level(1, 110, 900)]), sweep([level(1, 100, 1000), level(2, 1, 1)]));
    // Two runs are two sweeps: no verdict on less than 5% (BETWEEN_SWEEPS), however quiet their windows.
    expect(d[0]).toMatchObject({ withinNoise: false, noisePct: 5 });
    expect(d).toHaveLength(1);
    expect(d[0]!.throughputPct).toBeCloseTo(10);
    expect(d[0]!.p50Pct).toBeCloseTo(-10);
  });

  it("names no winner where two variants differ by less than the noise either was measured in", () => {
    const windows = (...t: number[]) =>
      t.map((throughput) => ({ durationMs: 1000, success: throughput, errors: 0, throughput, avgLatencyUs: 1000 }));
    // The same config twice: 1000 and 1040 infer/s, windows spread 10% and 8%.
    const a = sweep([{ ...level(1, 1000, 900), windows: windows(950, 1000, 1050) }], "a");
    const b = sweep([{ ...level(1, 1040, 880), windows: windows(1000, 1040, 1080) }], "b");
    const rows = compareSweeps([a, b]);
    expect(rows[0]!.verdict).toEqual([undefined, "within noise"]);
    expect(rows[0]!.noise[0]).toBeCloseTo(0.1);
    const text = formatComparison([a, b], rows);
    expect(text).toMatch(/1000\s+±10%\s+0\.90\s+1040\s+±7\.7%\s+0\.88\s+1\.04x \(within noise\)$/m);
    // A history diff says the same of a change inside the noise.
    const d = diffSweeps(b, a);
    expect(d[0]).toMatchObject({ withinNoise: true });
    expect(formatDiff("concurrency", d)[0]).toMatch(/throughput \+4\.0% \(within the noise, ±10\.0%\)/);
  });
});
