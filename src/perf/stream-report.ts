import type { LatencySummary } from "./histogram.js";
import type { LevelKind, LevelResult, WindowSummary } from "./profile.js";
import type { SweepResult } from "./sweep.js";

/**
 * perf_analyzer 2.51's CSV for a decoupled model (`--streaming`, measured): "Response Throughput"
 * after "Inferences/Second", and its latency columns are the time from the request to its last
 * response with data: it skips an empty final response (`has_null_last_response_` in its
 * `ValidLatencyMeasurement`), whatever its "using the first response for measuring latency" line
 * says; on text_streamer its p50/p90/p99 equal those of its own profile export's timestamps to the
 * last data response, not to the first. Ours keeps that layout and meaning, so files of both read
 * alike, and appends what it lacks: responses per request, the whole request's latency (to the
 * final response), time to first response and inter-response latency in microseconds, output
 * elements per second.
 */
export function streamCsvHeader(base: readonly string[]): string[] {
  return [
    ...base.slice(0, 2),
    "Response Throughput",
    ...base.slice(2),
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
  ];
}

const g6 = (x: number) => String(Number(x.toPrecision(6)));
const us = (x: number | undefined) => String(Math.floor(x ?? 0));
/** A latency with nothing measured (no request had a second response) is no zero. */
const measured = (l: LatencySummary | undefined) => (l && l.count > 0 ? l : undefined);

/** A level's row in that layout, from its row in perf_analyzer's plain one (`base`). */
export function streamCsvRow(l: LevelResult, base: readonly string[]): string[] {
  const s = l.stream;
  const ttft = measured(s?.firstResponse);
  const last = measured(s?.lastResponse);
  const itl = measured(s?.interResponse);
  const toLast = last ? [last.p50Us, last.p90Us, last.p95Us, last.p99Us].map(us) : ["", "", "", ""];
  return [
    ...base.slice(0, 2),
    g6(s?.responsesPerSec ?? 0),
    ...base.slice(2, -4),
    ...toLast,
    g6(s?.responsesPerRequest ?? 0),
    us(l.latency.p50Us),
    us(l.latency.p90Us),
    us(l.latency.p99Us),
    ttft ? us(ttft.p50Us) : "",
    ttft ? us(ttft.p90Us) : "",
    ttft ? us(ttft.p99Us) : "",
    itl ? us(itl.p50Us) : "",
    itl ? us(itl.p90Us) : "",
    itl ? us(itl.p99Us) : "",
    g6(s?.outputElementsPerSec ?? 0),
  ];
}

function ms(v: number | undefined): string {
  if (v === undefined) return "-";
  const x = v / 1000;
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

function rate(x: number | undefined): string {
  if (x === undefined) return "-";
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

export const STREAM_TABLE_HEAD = [
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
];

/** A level's row of the streaming table, after its load column. */
export function streamTableCells(l: LevelResult): string[] {
  const s = l.stream;
  const ttft = measured(s?.firstResponse);
  const itl = measured(s?.interResponse);
  return [
    rate(s?.requestsPerSec ?? l.throughput),
    rate(s?.responsesPerSec),
    s ? s.responsesPerRequest.toFixed(1) : "-",
    ms(ttft?.p50Us),
    ms(ttft?.p90Us),
    ms(ttft?.p99Us),
    ms(itl?.p50Us),
    ms(itl?.p90Us),
    ms(itl?.p99Us),
    l.requests ? ms(l.latency.p50Us) : "-",
    l.requests ? ms(l.latency.p99Us) : "-",
    rate(s?.outputElementsPerSec),
    String(l.errorCount),
  ];
}

export function isStreamingSweep(sweep: SweepResult): boolean {
  return sweep.streaming !== undefined || sweep.levels.some((l) => l.stream);
}

/**
 * A measurement window's progress line. A streamed model's says what it counts: requests (each
 * complete at its final response) and the data responses they received, per second; any other
 * model's, inferences per second (requests times the batch size), as perf_analyzer's passes do.
 */
export function windowProgressLine(
  model: string,
  e: { kind: LevelKind; value: number; trial: number; window: WindowSummary; stable: boolean },
  streamed: boolean,
): string {
  const w = e.window;
  const perSec = (n: number) => (w.durationMs > 0 ? (n * 1000) / w.durationMs : 0);
  const rates = streamed
    ? `${perSec(w.success).toFixed(1)} requests/s, ${perSec(w.responses ?? 0).toFixed(0)} responses/s`
    : `${w.throughput.toFixed(1)} infer/s`;
  return (
    `  ${model} ${e.kind} ${e.value}, window ${e.trial}: ${rates}, avg ${(w.avgLatencyUs / 1000).toFixed(2)} ms` +
    `${w.errors ? `, ${w.errors} error(s)` : ""}${e.stable ? " (stable)" : ""}`
  );
}
