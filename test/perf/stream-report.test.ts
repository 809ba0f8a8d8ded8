import { describe, expect, it } from "vitest";
import type { LevelResult } from "../../src/perf/profile.js";
import {
  compareSweeps,
  formatComparison,
  formatTable,
  parseCsv,
  toCsv,
  type SweepResult,
} from "../../src/perf/report.js";
import { windowProgressLine } from "../../src/perf/stream-report.js";
import { factsOf, StreamWindow, summariseStream } from "../../src/perf/stream-stats.js";
import { PERF_ANALYZER_HEADER } from "./helpers.js";

const latency = (us: number) => ({
  count: 10,
  avgUs: us,
  minUs: us / 2,
  maxUs: us * 2,
  stdDevUs: 1,
  p50Us: us,
  p90Us: us * 1.5,
  p95Us: us * 1.8,
  p99Us: us * 2,
});

function level(value: number, responses: number[]): LevelResult {
  const w = new StreamWindow();
  for (const n of responses)
    w.record(
      factsOf(
        0,
        Array.from({ length: n }, (_, i) => 20 + 5 * i),
        n,
      ),
    );
  return {
    kind: "concurrency",
    value,
    stable: true,
    trials: 3,
    windows: [],
    durationMs: 1000,
    requests: responses.length,
    throughput: responses.length,
    latency: latency(60_000),
    clientSendUs: 0,
    clientRecvUs: 0,
    errors: { "stream error: TEXT has no words to tokenize": 2 },
    errorCount: 2,
    stream: summariseStream([w], 1000),
  };
}

const sweep = (levels: LevelResult[]): SweepResult => ({
  model: "text_streamer",
  servedModel: "text_streamer",
  engine: "builtin",
  protocol: "grpc",
  endpoint: "127.0.0.1:8001",
  kind: "concurrency",
  batchSize: 1,
  measurementIntervalMs: 1000,
  startedAt: "",
  finishedAt: "",
  streaming: "ModelStreamInfer",
  levels,
});

describe("streaming report", () => {
  it("prints requests and responses per second, responses per request, TTFT and ITL percentiles, and errors", () => {
    const text = formatTable(sweep([level(2, [3, 3, 3, 3]), level(1, [1, 1])]));
    const [head, ...rows] = text.split("\n");
    expect(head!.split(/\s{2,}/)).toEqual([
      "Concurrency",
      "Req/s",
      "Resp/s",
      "Resp/req",
      "TTFT p50",
      "p90",
      "p99",
      "ITL p50",
      "p90",
      "p99",
      "Lat p50",
      "p99",
      "Out/s",
      "Errors",
      "±Req/s",
      "±Avg",
      "Warm-up",
    ]);
    const cells = rows.map((r) => r.trim().split(/\s+/));
    // Sorted by load; concurrency 1 had one response per request, so no inter-response latency.
    expect(cells[0]).toEqual([
      "1",
      "2.00",
      "2.00",
      "1.0",
      "20.0",
      "20.0",
      "20.0",
      "-",
      "-",
      "-",
      "60.0",
      "120",
      "2.00",
      "2",
      "-",
      "-",
      "-",
    ]);
    expect(cells[1]).toEqual([
      "2",
      "4.00",
      "12.0",
      "3.0",
      "20.0",
      "20.0",
      "20.0",
      "5.00",
      "5.00",
      "5.00",
      "60.0",
      "120",
      "12.0",
      "2",
      "-",
      "-",
      "-",
    ]);
  });

  it("writes perf_analyzer's streaming CSV (Response Throughput, latencies to the last data response), then what it lacks", () => {
    const { header, rows } = parseCsv(toCsv(sweep([level(1, [1, 1]), level(2, [3, 3, 3, 3])])));
    // As perf_analyzer 2.51 --streaming -f writes it (measured on text_streamer).
    expect(header.slice(0, 14).join(",")).toBe(
      "Concurrency,Inferences/Second,Response Throughput,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency",
    );
    expect(header.slice(14)).toEqual([
      "Responses/Request",
      "Request Latency p50",
      "Request Latency p90",
      "Request Latency p99",
      "First Response Latency p50",
      "First Response Latency p90",
      "First Response Latency p99",
      "Inter-Response Latency p50",
      "Inter-Response Latency p90",
      "Inter-Response Latency p99",
      "Output Elements/Second",
    ]);
    expect(rows.every((r) => r.length === header.length)).toBe(true);
    const [one, two] = rows as [string[], string[]];
    expect(one.slice(0, 3)).toEqual(["1", "2", "2"]);
    expect(two.slice(0, 3)).toEqual(["2", "4", "12"]);
    const near = (cells: string[], us: number) => cells.map(Number).every((v) => Math.abs(v - us) <= us / 1000);
    // perf_analyzer's latency columns hold the time to the last data response: 20 ms for one
    // response, 30 ms for three (20, 25, 30 ms), to 3 digits.
    expect(near(one.slice(10, 14), 20_000)).toBe(true);
    expect(near(two.slice(10, 14), 30_000)).toBe(true);
    // Then responses per request, the whole request's latency (60 ms p50), the first response
    // (20 ms), and no ITL for one response each.
    expect(one.slice(14, 18)).toEqual(["1", "60000", "90000", "120000"]);
    expect(near(one.slice(18, 21), 20_000)).toBe(true);
    expect(one.slice(21)).toEqual(["", "", "", "2"]);
    expect(near(two.slice(18, 21), 20_000)).toBe(true);
    expect(Math.abs(Number(two[21]) - 5000)).toBeLessThanOrEqual(5);
  });

  it("says what a streamed window counts: requests/s and responses/s, not infer/s", () => {
    const e = {
      kind: "concurrency" as const,
      value: 4,
      trial: 2,
      stable: true,
      window: { durationMs: 2000, success: 400, errors: 1, throughput: 200, avgLatencyUs: 19_870, responses: 5600 },
    };
    expect(windowProgressLine("text_streamer", e, true)).toBe(
      "  text_streamer concurrency 4, window 2: 200.0 requests/s, 2800 responses/s, avg 19.87 ms, 1 error(s) (stable)",
    );
    // A window in which no streamed request completed has no responses to count.
    const { responses: _none, ...bare } = e.window;
    expect(windowProgressLine("text_streamer", { ...e, window: { ...bare, success: 0 } }, true)).toMatch(
      /0\.0 requests\/s, 0 responses\/s/,
    );
    expect(windowProgressLine("bert_tokenizer", { ...e, window: bare }, false)).toBe(
      "  bert_tokenizer concurrency 4, window 2: 200.0 infer/s, avg 19.87 ms, 1 error(s) (stable)",
    );
  });

  it("keeps perf_analyzer's table and CSV for a model that does not stream", () => {
    const plain = sweep([{ ...level(1, [1]), stream: undefined }]);
    delete plain.streaming;
    expect(formatTable(plain).split("\n")[0]).toMatch(/^Concurrency\s+Infer\/s\s+Send/);
    expect(parseCsv(toCsv(plain)).header.join(",")).toBe(PERF_ANALYZER_HEADER);
  });

  it("compares streamed variants on requests/s, latency and time to first response", () => {
    const a = { ...sweep([level(1, [3, 3])]), label: "instances=1" };
    const b = { ...sweep([level(1, [3, 3, 3, 3])]), label: "instances=2" };
    const rows = compareSweeps([a, b]);
    expect(rows[0]!.ratio[1]).toBe(2);
    expect(rows[0]!.firstResponseP50Us?.every((v) => v !== undefined && Math.abs(v - 20_000) <= 20)).toBe(true);
    const [head, row] = formatComparison([a, b], rows).split("\n");
    expect(head!.split(/\s{2,}/)).toEqual([
      "Concurrency",
      "instances=1 req/s",
      "±",
      "p50 ms",
      "TTFT p50",
      "instances=2 req/s",
      "±",
      "p50 ms",
      "TTFT p50",
      "instances=2 / instances=1",
    ]);
    expect(row!.trim().split(/\s+/)).toEqual(["1", "2.00", "-", "60.0", "20.0", "4.00", "-", "60.0", "20.0", "2.00x"]);
  });
});
