import type { LevelKind, LevelResult } from "./profile.js";
import {
  isStreamingSweep,
  STREAM_TABLE_HEAD,
  streamCsvHeader,
  streamCsvRow,
  streamTableCells,
} from "./stream-report.js";
import type { SweepResult } from "./sweep.js";

export type { SweepResult } from "./sweep.js";
import { BETWEEN_SWEEPS, compareNoisy, plusMinus, spread, type Noisy, type NoiseVerdict } from "./noise.js";

/**
 * The spread of a level's throughput over its merged windows: measured by this version, else
 * taken from the windows a saved run kept (the last three that completed requests); undefined
 * where there are none (perf_analyzer's levels).
 */
export function throughputNoise(l: LevelResult): number | undefined {
  return noisyThroughput(l).noise;
}

/** A level's throughput with its noise and its windows' range, for compareNoisy. */
export function noisyThroughput(l: LevelResult): Noisy {
  if (l.noise) return { value: l.throughput, noise: l.noise.throughput.spread, range: l.noise.throughput };
  const used = (l.windows ?? [])
    .filter((w) => w.success > 0)
    .slice(-3)
    .map((w) => w.throughput);
  return used.length >= 2
    ? { value: l.throughput, noise: spread(used), range: { min: Math.min(...used), max: Math.max(...used) } }
    : { value: l.throughput };
}

/** What the last column says of a level: cut short, unstable, a warm-up that did not settle. */
function levelState(l: LevelResult): string {
  const parts = [
    ...(l.partial ? [l.partial] : !l.stable ? ["unstable"] : []),
    ...(l.warmup && !l.warmup.settled ? ["warm-up did not settle"] : []),
  ];
  return parts.length ? `(${parts.join(", ")})` : "";
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** perf_analyzer's CSV header (without --verbose-csv), so tools that read its files read ours. */
export function csvHeader(kind: LevelKind): string[] {
  return [
    kind === "concurrency" ? "Concurrency" : "Request Rate",
    "Inferences/Second",
    "Client Send",
    "Network+Server Send/Recv",
    "Server Queue",
    "Server Compute Input",
    "Server Compute Infer",
    "Server Compute Output",
    "Client Recv",
    "p50 latency",
    "p90 latency",
    "p95 latency",
    "p99 latency",
  ];
}

/** As C++'s default stream formatting prints a double (6 significant digits), like perf_analyzer. */
function g6(x: number): string {
  return String(Number(x.toPrecision(6)));
}

const us = (x: number | undefined) => String(Math.floor(x ?? 0));

export function csvRow(l: LevelResult): string[] {
  const s = l.server;
  return [
    g6(l.value),
    g6(l.throughput),
    us(l.clientSendUs),
    us(l.networkServerUs),
    us(s?.queueUs),
    us(s?.computeInputUs),
    us(s?.computeInferUs),
    us(s?.computeOutputUs),
    us(l.clientRecvUs),
    us(l.latency.p50Us),
    us(l.latency.p90Us),
    us(l.latency.p95Us),
    us(l.latency.p99Us),
  ];
}

/**
 * Rows in perf_analyzer's order: by load level, latencies in microseconds. A shared memory run
 * adds a last column saying so (perf_analyzer's CSV has none), its first columns where they were.
 */
export function toCsv(sweep: SweepResult): string {
  const streaming = isStreamingSweep(sweep);
  const shm = sweep.sharedMemory ? [sweep.sharedMemory] : [];
  const header = streaming ? streamCsvHeader(csvHeader(sweep.kind)) : csvHeader(sweep.kind);
  const rows = [
    [...header, ...(shm.length ? ["Shared Memory"] : [])],
    ...[...sweep.levels]
      .sort((a, b) => a.value - b.value)
      .map((l) => [...(streaming ? streamCsvRow(l, csvRow(l)) : csvRow(l)), ...shm]),
  ];
  return rows.map((r) => r.join(",")).join("\n") + "\n";
}

/** Parse a CSV in perf_analyzer's layout (ours or its own) into header and rows of cells. */
export function parseCsv(text: string): { header: string[]; rows: string[][] } {
  const lines = text.split(/\r?\n/).filter((l) => l.trim().length > 0);
  const [head, ...rest] = lines;
  return { header: (head ?? "").split(","), rows: rest.map((l) => l.split(",")) };
}

const pad = (s: string, n: number, right = false) =>
  s.length >= n ? s : right ? " ".repeat(n - s.length) + s : s + " ".repeat(n - s.length);

function ms(usValue: number | undefined): string {
  if (usValue === undefined) return "-";
  const v = usValue / 1000;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function rate(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

function textTable(rows: string[][], rightAlignFrom = 1): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => pad(c, widths[i]!, i >= rightAlignFrom))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/**
 * perf_analyzer's columns, in milliseconds for reading, plus the server's own time per request
 * beside the client's average (Avg), the batch size the server formed and errors.
 */
export function formatTable(sweep: SweepResult): string {
  if (isStreamingSweep(sweep)) return formatStreamTable(sweep);
  const head = [
    sweep.kind === "concurrency" ? "Concurrency" : "Rate/s",
    "Infer/s",
    "Send",
    "Net+Srv",
    "Queue",
    "In",
    "Infer",
    "Out",
    "Recv",
    "p50",
    "p90",
    "p95",
    "p99",
    "Avg",
    "Server",
    "Batch",
    "Errors",
    "±Infer/s",
    "±p50",
    "±p99",
    "±Avg",
    "Warm-up",
    "",
  ];
  const rows = [...sweep.levels]
    .sort((a, b) => a.value - b.value)
    .map((l) => [
      g6(l.value),
      rate(l.throughput),
      ms(l.clientSendUs),
      ms(l.networkServerUs),
      ms(l.server?.queueUs),
      ms(l.server?.computeInputUs),
      ms(l.server?.computeInferUs),
      ms(l.server?.computeOutputUs),
      ms(l.clientRecvUs),
      ms(l.latency.p50Us),
      ms(l.latency.p90Us),
      ms(l.latency.p95Us),
      ms(l.latency.p99Us),
      ms(l.latency.avgUs),
      ms(l.server?.avgRequestUs),
      l.server && l.server.avgBatchSize > 0 ? l.server.avgBatchSize.toFixed(1) : "-",
      String(l.errorCount),
      plusMinus(l.noise?.throughput.spread ?? throughputNoise(l)),
      plusMinus(l.noise?.p50Us.spread),
      plusMinus(l.noise?.p99Us.spread),
      plusMinus(l.noise?.avgLatencyUs.spread),
      l.warmup ? seconds(l.warmup.durationMs) : "-",
      levelState(l),
    ]);
  return textTable([head, ...rows]);
}

/** A decoupled model's sweep: requests and responses, time to first response, inter-response latency. */
function formatStreamTable(sweep: SweepResult): string {
  const head = [
    sweep.kind === "concurrency" ? "Concurrency" : "Rate/s",
    ...STREAM_TABLE_HEAD,
    "±Req/s",
    "±Avg",
    "Warm-up",
    "",
  ];
  const rows = [...sweep.levels]
    .sort((a, b) => a.value - b.value)
    .map((l) => [
      g6(l.value),
      ...streamTableCells(l),
      plusMinus(l.noise?.throughput.spread ?? throughputNoise(l)),
      plusMinus(l.noise?.avgLatencyUs.spread),
      l.warmup ? seconds(l.warmup.durationMs) : "-",
      levelState(l),
    ]);
  return textTable([head, ...rows]);
}

export interface GapRule {
  /** Client latency at least this many times the server's time per request... */
  ratio: number;
  /** ...and at least this much more, in microseconds, before it is worth a note. */
  minGapUs: number;
}

/** A gap smaller than this is within what a loaded two-core machine does between runs. */
export const CLIENT_GAP_RULE: GapRule = { ratio: 1.5, minGapUs: 500 };

/**
 * Where the client's average latency is well above the server's time per request, the difference
 * is spent outside Triton: in the client (ours or perf_analyzer, which differ in what a request
 * costs them) and the network. Said once per sweep, with the level where the gap is largest.
 */
export function describeClientServerGap(sweep: SweepResult, rule: GapRule = CLIENT_GAP_RULE): string | undefined {
  const gaps = sweep.levels
    .filter((l) => l.requests > 0 && l.server && l.server.avgRequestUs > 0)
    .map((l) => ({ l, server: l.server!.avgRequestUs, gap: l.latency.avgUs - l.server!.avgRequestUs }))
    .filter((g) => g.l.latency.avgUs >= rule.ratio * g.server && g.gap >= rule.minGapUs);
  if (gaps.length === 0) return undefined;
  const worst = gaps.reduce((a, b) => (b.gap > a.gap ? b : a));
  const levels =
    gaps.length === sweep.levels.length
      ? `at every ${sweep.kind} level`
      : `${sweep.kind} ${gaps.map((g) => g.l.value).join(", ")}`;
  // A decoupled model's request lasts until its final response, which its own thread may send
  // long after execute returned (waiting between responses, say); Triton counts only execute.
  if (sweep.streaming)
    return (
      `note: a streamed request lasts until its final response (${levels}; at ${worst.l.value}: ` +
      `Avg ${ms(worst.l.latency.avgUs)} ms), while Triton's time per request (Server ${ms(worst.server)} ms) counts only the model's execute calls: ` +
      `the other ${ms(worst.gap)} ms include the time the model takes between its responses (see time to first response and inter-response latency), not only the client and the network`
    );
  return (
    `note: client latency is well above the server's time per request (${levels}; at ${worst.l.value}: ` +
    `Avg ${ms(worst.l.latency.avgUs)} ms, Server ${ms(worst.server)} ms): the other ${ms(worst.gap)} ms are the client and the network, not the model`
  );
}

export function describeErrors(sweep: SweepResult): string[] {
  const lines: string[] = [];
  for (const l of sweep.levels) {
    for (const [kind, n] of Object.entries(l.errors).sort((a, b) => b[1] - a[1]))
      lines.push(`  ${sweep.kind} ${l.value}: ${n} x ${kind}`);
  }
  return lines;
}

export function describeGpu(sweep: SweepResult): string | undefined {
  const parts = sweep.levels
    .filter((l) => l.gpu)
    .map((l) => {
      const g = l.gpu!;
      const util = g.gpus.map((x) => `${(x.utilizationAvg * 100).toFixed(0)}%`).join("/");
      const mem = g.gpus
        .map((x) => `${(x.memoryUsedMaxBytes / 2 ** 30).toFixed(1)}/${(x.memoryTotalBytes / 2 ** 30).toFixed(0)} GiB`)
        .join(", ");
      return `${l.value}: util ${util}, memory ${mem}`;
    });
  if (parts.length === 0) return undefined;
  return `GPU (${sweep.levels.find((l) => l.gpu)!.gpu!.source}) per ${sweep.kind}: ${parts.join("; ")}`;
}

export interface Series {
  label: string;
  marker: string;
  points: Array<{ x: number; y: number; tag: string }>;
}

/**
 * Throughput (x) against average latency (y), the curve perf_analyzer summarises a sweep with:
 * it climbs flat while the server has headroom, then turns upward once requests start to queue.
 */
export function chart(
  series: readonly Series[],
  o: { width?: number; height?: number; xLabel?: string; yLabel?: string } = {},
): string {
  const W = o.width ?? 60;
  const H = o.height ?? 14;
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return "";
  const maxX = Math.max(...all.map((p) => p.x)) * 1.05 || 1;
  const maxY = Math.max(...all.map((p) => p.y)) * 1.1 || 1;
  const grid: string[][] = Array.from({ length: H }, () => Array.from({ length: W }, () => " "));
  const col = (x: number) => Math.min(W - 1, Math.max(0, Math.round((x / maxX) * (W - 1))));
  const row = (y: number) => Math.min(H - 1, Math.max(0, H - 1 - Math.round((y / maxY) * (H - 1))));
  for (const s of series) {
    const pts = [...s.points].sort((a, b) => Number(a.tag) - Number(b.tag) || a.x - b.x);
    for (let i = 1; i < pts.length; i++) {
      const a = pts[i - 1]!;
      const b = pts[i]!;
      const steps = Math.max(Math.abs(col(b.x) - col(a.x)), Math.abs(row(b.y) - row(a.y)));
      for (let k = 1; k < steps; k++) {
        const r = row(a.y + ((b.y - a.y) * k) / steps);
        const c = col(a.x + ((b.x - a.x) * k) / steps);
        if (grid[r]![c] === " ") grid[r]![c] = "·";
      }
    }
  }
  for (const s of series) for (const p of s.points) grid[row(p.y)]![col(p.x)] = s.marker;
  const yTicks = new Map([
    [0, maxY],
    [Math.floor((H - 1) / 2), maxY / 2],
    [H - 1, 0],
  ]);
  const yw = Math.max(...[...yTicks.values()].map((v) => ms(v * 1000).length));
  const lines = grid.map((r, i) => `${pad(yTicks.has(i) ? ms(yTicks.get(i)! * 1000) : "", yw, true)} |${r.join("")}`);
  lines.push(`${" ".repeat(yw)} +${"-".repeat(W)}`);
  const xl = `0`;
  const xm = rate(maxX / 2);
  const xr = rate(maxX);
  const axis = xl + " ".repeat(Math.max(1, Math.floor(W / 2) - xl.length - Math.floor(xm.length / 2))) + xm;
  lines.push(`${" ".repeat(yw + 2)}${axis}${" ".repeat(Math.max(1, W - axis.length - xr.length))}${xr}`);
  lines.unshift(`${o.yLabel ?? "avg latency (ms)"}`);
  lines.push(
    `${" ".repeat(yw + 2)}${o.xLabel ?? "throughput (infer/s)"}${series.length > 1 || series[0]?.label ? "   " + series.map((s) => `${s.marker} ${s.label}`).join("   ") : ""}`,
  );
  return lines.join("\n");
}

export function seriesOf(sweep: SweepResult, marker: string): Series {
  return {
    label: sweep.label ?? sweep.servedModel,
    marker,
    points: sweep.levels
      .filter((l) => l.requests > 0)
      .map((l) => ({ x: l.throughput, y: l.latency.avgUs / 1000, tag: String(l.value) })),
  };
}

export interface LevelDiff {
  value: number;
  throughputPct: number;
  p50Pct: number;
  p99Pct: number;
  /** The larger throughput noise of the two runs (2% at least), as a percentage. */
  noisePct: number;
  /** The throughput change is smaller than that noise: no verdict. */
  withinNoise: boolean;
}

const pct = (now: number, before: number) => (before > 0 ? ((now - before) / before) * 100 : 0);

/** Change at each load level both sweeps measured. */
export function diffSweeps(now: SweepResult, before: SweepResult): LevelDiff[] {
  const out: LevelDiff[] = [];
  for (const l of now.levels) {
    const b = before.levels.find((x) => x.value === l.value && x.requests > 0);
    if (!b || l.requests === 0) continue;
    const c = compareNoisy(noisyThroughput(b), noisyThroughput(l), BETWEEN_SWEEPS);
    out.push({
      value: l.value,
      throughputPct: pct(l.throughput, b.throughput),
      p50Pct: pct(l.latency.p50Us, b.latency.p50Us),
      p99Pct: pct(l.latency.p99Us, b.latency.p99Us),
      noisePct: c.band * 100,
      withinNoise: c.verdict === "within noise",
    });
  }
  return out.sort((a, b) => a.value - b.value);
}

const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(1)}%`;

export function formatDiff(kind: LevelKind, diffs: readonly LevelDiff[]): string[] {
  return diffs.map(
    (d) =>
      `  ${kind} ${g6(d.value)}: throughput ${signed(d.throughputPct)}${d.withinNoise ? ` (within the noise, ±${d.noisePct.toFixed(1)}%)` : ` (beyond the noise, ±${d.noisePct.toFixed(1)}%)`}, p50 ${signed(d.p50Pct)}, p99 ${signed(d.p99Pct)}`,
  );
}

export interface ComparisonRow {
  value: number;
  throughput: Array<number | undefined>;
  p50Us: Array<number | undefined>;
  /** Throughput of each variant divided by the first variant's. */
  ratio: Array<number | undefined>;
  /** Each variant's throughput noise: the spread of its windows (a fraction). */
  noise: Array<number | undefined>;
  /**
   * Each variant against the first: higher or lower by more than the noise either was measured
   * in (2% at least), or within it, when no variant wins (the first's own entry is undefined).
   */
  verdict: Array<NoiseVerdict | undefined>;
  /** Streamed sweeps (decoupled models): each variant's time to first response, p50. */
  firstResponseP50Us?: Array<number | undefined>;
}

/** Variants side by side at each load level, with throughput ratios against the first. */
export function compareSweeps(sweeps: readonly SweepResult[]): ComparisonRow[] {
  const values = [...new Set(sweeps.flatMap((s) => s.levels.map((l) => l.value)))].sort((a, b) => a - b);
  return values.map((value) => {
    const ls = sweeps.map((s) => s.levels.find((l) => l.value === value));
    const first = ls[0];
    const base = first?.throughput;
    return {
      value,
      throughput: ls.map((l) => l?.throughput),
      p50Us: ls.map((l) => l?.latency.p50Us),
      ratio: ls.map((l) => (l && base ? l.throughput / base : undefined)),
      noise: ls.map((l) => (l ? throughputNoise(l) : undefined)),
      verdict: ls.map((l, i) =>
        i === 0 || !l || !first || l.requests === 0 || first.requests === 0
          ? undefined
          : compareNoisy(noisyThroughput(first), noisyThroughput(l), BETWEEN_SWEEPS).verdict,
      ),
      ...(sweeps.some(isStreamingSweep)
        ? {
            firstResponseP50Us: ls.map((l) =>
              l?.stream && l.stream.firstResponse.count > 0 ? l.stream.firstResponse.p50Us : undefined,
            ),
          }
        : {}),
    };
  });
}

export function formatComparison(sweeps: readonly SweepResult[], rows: readonly ComparisonRow[]): string {
  const labels = sweeps.map((s) => s.label ?? s.servedModel);
  // A decoupled model's requests/s, and the time to its first response beside the whole stream's.
  const streamed = rows.some((r) => r.firstResponseP50Us);
  const head = [
    sweeps[0]?.kind === "rate" ? "Rate/s" : "Concurrency",
    ...labels.flatMap((l) => (streamed ? [`${l} req/s`, "±", "p50 ms", "TTFT p50"] : [`${l} infer/s`, "±", "p50 ms"])),
    ...labels.slice(1).map((l) => `${l} / ${labels[0]}`),
  ];
  const body = rows.map((r) => [
    g6(r.value),
    ...r.throughput.flatMap((t, i) => [
      t === undefined ? "-" : rate(t),
      t === undefined ? "-" : plusMinus(r.noise?.[i]),
      r.p50Us[i] === undefined ? "-" : ms(r.p50Us[i]),
      ...(streamed ? [ms(r.firstResponseP50Us?.[i])] : []),
    ]),
    // A ratio inside the noise names no winner.
    ...r.ratio
      .slice(1)
      .map((x, i) =>
        x === undefined ? "-" : `${x.toFixed(2)}x${r.verdict?.[i + 1] === "within noise" ? " (within noise)" : ""}`,
      ),
  ]);
  return textTable([head, ...body]);
}
