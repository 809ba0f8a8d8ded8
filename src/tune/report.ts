/**
 * How a tune reads: the ranked table, the throughput-vs-latency chart with the budget and the
 * Pareto front, the winner as a diff of the user's config.pbtxt, and CSV.
 */
import type { TuneReport, TunedTrial } from "./run.js";
import { compareNoisy, plusMinus } from "../perf/noise.js";
import { describeConfirmation, roundsLed } from "./search.js";

const gpuPct = (t: TunedTrial): number | undefined => {
  const g = t.level?.gpu?.gpus ?? [];
  return g.length ? g.reduce((a, x) => a + x.utilizationAvg, 0) / g.length : undefined;
};
const ms = (us: number | undefined) => (us === undefined ? "-" : (us / 1000).toFixed(us >= 100_000 ? 0 : 1));
const rate = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === 1 || i === rows[0]!.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function config(t: TunedTrial): string {
  const c = t.candidate;
  const batching = c.batching
    ? `batch<=${c.maxBatchSize} pref[${c.preferredBatchSize.join(",")}] delay ${c.maxQueueDelayMicroseconds}us`
    : `no dynamic batching (max_batch_size ${c.maxBatchSize})`;
  return `${c.instances} inst, ${batching}`;
}

/** Ranked: throughput, p50/p99, the server's queue and compute, GPU utilisation where there is one. */
export function formatRanking(r: TuneReport): string {
  const byIndex = new Map(r.trials.map((t) => [t.index, t]));
  const gpu = r.trials.some((t) => t.level?.gpu);
  const front = new Set(r.pareto);
  const head = ["#", "config", "Infer/s", "±", "p50", "p99", "Queue", "Compute", ...(gpu ? ["GPU%"] : []), "result"];
  const rows = [head];
  const win = r.winner === undefined ? undefined : byIndex.get(r.winner)?.measured;
  r.ranking.forEach((i, n) => {
    const t = byIndex.get(i)!;
    // A candidate closer to the winner than the noise either was measured in did not lose to it.
    const tie =
      win && t.measured && i !== r.winner && t.status === "ok"
        ? compareNoisy(
            { value: win.throughput, noise: win.noise },
            { value: t.measured.throughput, noise: t.measured.noise },
          )
        : undefined;
    const withinNoise = tie?.verdict === "within noise" ? ", within noise of the winner" : "";
    const s = t.level?.server;
    const compute = s ? s.computeInputUs + s.computeInferUs + s.computeOutputUs : undefined;
    const early = t.stoppedEarly ? ", stopped early (dominated)" : "";
    const result =
      t.status === "ok"
        ? `${i === r.winner ? "winner" : "ok"}${withinNoise}${front.has(i) ? ", pareto" : ""}${t.servedModel === r.model ? ", your config" : ""}${early}`
        : `${t.status}: ${t.why ?? ""}${t.servedModel === r.model ? " (your config)" : ""}${early}`;
    rows.push([
      String(n + 1),
      config(t),
      t.measured ? rate(t.measured.throughput) : "-",
      t.measured ? plusMinus(t.measured.noise) : "-",
      ms(t.measured?.p50Us),
      ms(t.measured?.p99Us),
      ms(s?.queueUs),
      ms(compute),
      ...(gpu ? [gpuPct(t) !== undefined ? String(Math.round(gpuPct(t)!)) : "-"] : []),
      result,
    ]);
  });
  return table(rows);
}

/**
 * Throughput (up) against the budgeted percentile (right): `*` the Pareto front, `o` the other
 * candidates inside the budget, `x` those outside it, `W` the winner, `|` the budget.
 */
export function formatChart(r: TuneReport, width = 60, height = 14): string {
  const pct = r.objective.latency?.percentile ?? "p99";
  const pts = r.trials.filter((t) => t.measured);
  if (pts.length === 0) return "";
  const lat = (t: TunedTrial) => (pct === "p95" ? t.measured!.p95Us : t.measured!.p99Us) / 1000;
  const budget = r.objective.latency?.ms;
  const xMax = Math.max(...pts.map(lat), budget ?? 0) * 1.05 || 1;
  const yMax = Math.max(...pts.map((t) => t.measured!.throughput)) * 1.05 || 1;
  const grid = Array.from({ length: height }, () => Array.from({ length: width }, () => " "));
  const col = (x: number) => Math.min(width - 1, Math.round((x / xMax) * (width - 1)));
  const row = (y: number) => height - 1 - Math.min(height - 1, Math.round((y / yMax) * (height - 1)));
  if (budget !== undefined) for (let y = 0; y < height; y++) grid[y]![col(budget)] = "|";
  const front = new Set(r.pareto);
  const rank = (t: TunedTrial) => (t.index === r.winner ? 3 : front.has(t.index) ? 2 : t.status === "ok" ? 1 : 0);
  for (const t of [...pts].sort((a, b) => rank(a) - rank(b))) {
    const mark = t.index === r.winner ? "W" : front.has(t.index) ? "*" : t.status === "ok" ? "o" : "x";
    grid[row(t.measured!.throughput)]![col(lat(t))] = mark;
  }
  const label = (v: number) => rate(v).padStart(7);
  const lines = grid.map(
    (g, i) => `${i === 0 ? label(yMax) : i === height - 1 ? label(0) : " ".repeat(7)} |${g.join("")}`,
  );
  lines.push(`${" ".repeat(8)}+${"-".repeat(width)}`);
  lines.push(`${" ".repeat(9)}0${`${pct} ms`.padStart(width / 2)}${xMax.toFixed(1).padStart(width / 2 - 1)}`);
  lines.push(
    `infer/s vs ${pct}: W winner, * Pareto front, o inside the budget, x outside${budget !== undefined ? `, | budget ${budget} ms` : ""}`,
  );
  return lines.join("\n");
}

/** The winner as changes to the user's file: only the fields it changes. */
export function formatDiff(r: TuneReport): string {
  if (r.winner === undefined) return "";
  if (r.diff.length === 0) return `your config is the best found: ${r.configFile} stays as it is`;
  return [
    `--- ${r.configFile}`,
    `+++ ${r.configFile} (tuned)`,
    ...r.diff.flatMap((d) => [
      ...(d.before !== undefined ? [`-  ${d.field}: ${d.before}`] : []),
      ...(d.after !== undefined ? [`+  ${d.field}: ${d.after}`] : [`+  (${d.field} removed)`]),
    ]),
  ].join("\n");
}

const CSV_HEAD = [
  "rank",
  "status",
  "instances",
  "dynamic_batching",
  "max_batch_size",
  "preferred_batch_size",
  "max_queue_delay_microseconds",
  "inferences_per_second",
  "p50_us",
  "p95_us",
  "p99_us",
  "server_queue_us",
  "server_compute_us",
  "gpu_utilisation_pct",
  "why",
];

export function toCsv(r: TuneReport): string {
  const byIndex = new Map(r.trials.map((t) => [t.index, t]));
  const q = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const rows = r.ranking.map((i, n) => {
    const t = byIndex.get(i)!;
    const s = t.level?.server;
    return [
      String(n + 1),
      t.status,
      String(t.candidate.instances),
      String(t.candidate.batching),
      String(t.candidate.maxBatchSize),
      t.candidate.preferredBatchSize.join(" "),
      String(t.candidate.maxQueueDelayMicroseconds),
      t.measured ? t.measured.throughput.toFixed(2) : "",
      t.measured ? String(Math.round(t.measured.p50Us)) : "",
      t.measured ? String(Math.round(t.measured.p95Us)) : "",
      t.measured ? String(Math.round(t.measured.p99Us)) : "",
      s ? String(Math.round(s.queueUs)) : "",
      s ? String(Math.round(s.computeInputUs + s.computeInferUs + s.computeOutputUs)) : "",
      gpuPct(t)?.toFixed(0) ?? "",
      [t.why, t.stoppedEarly].filter(Boolean).join("; "),
    ].map(q);
  });
  return [CSV_HEAD, ...rows].map((r) => r.join(",")).join("\n") + "\n";
}

/** What the side-by-side check of the winner against the runner-up found, or why there was none. */
export function formatConfirmation(r: TuneReport): string {
  const key = (i: number) => r.trials.find((t) => t.index === i)?.key ?? `#${i}`;
  if (r.confirmation) {
    const c = r.confirmation;
    const rounds = c.rounds.map((x) => `${x.winner.toFixed(1)}/${x.runnerUp.toFixed(1)}`).join(", ");
    const counted = { ...c, led: c.led ?? roundsLed(c.rounds, c.band) };
    const line = `side by side (${rounds} infer/s): ${describeConfirmation(counted, key(c.winner), key(c.runnerUp), c.rounds.length)}`;
    return r.keptWithinNoise ? `${line}\n${r.keptWithinNoise}` : line;
  }
  const not = r.notConfirmed ? `not checked side by side against the runner-up: ${r.notConfirmed}` : "";
  return [not, r.keptWithinNoise ?? ""].filter(Boolean).join("\n");
}

export function formatSummary(r: TuneReport): string {
  const why = {
    converged: "no single step helped any more",
    candidates: "the candidate limit was reached",
    time: "the time budget ran out",
    interrupted: "interrupted (Ctrl-C)",
    exhausted: "every candidate was measured",
  }[r.ended];
  const budget = [
    r.objective.latency ? `${r.objective.latency.percentile} <= ${r.objective.latency.ms} ms` : undefined,
    r.objective.minThroughput !== undefined ? `>= ${r.objective.minThroughput} infer/s` : undefined,
  ].filter(Boolean);
  return (
    `${r.model}: ${r.trials.length} of ${r.spaceSize} candidates measured at concurrency ${r.concurrency} in ${(r.elapsedMs / 1000).toFixed(0)} s ` +
    `(${r.mode}; ended: ${why})${budget.length ? `; budget ${budget.join(", ")}` : ""}`
  );
}
