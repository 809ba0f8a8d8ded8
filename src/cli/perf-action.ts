import fsp from "node:fs/promises";
import path from "node:path";
import { UsageError } from "../errors.js";
import type { InputDataSource } from "../perf/inputs.js";
import {
  chart,
  describeClientServerGap,
  describeErrors,
  describeGpu,
  formatComparison,
  formatDiff,
  formatTable,
  seriesOf,
  toCsv,
  type SweepResult,
} from "../perf/report.js";
import { runPerf, type PerfOptions, type PerfReport } from "../perf/run.js";
import { recordedRun } from "../session/measured-run.js";
import { describeSequences, parseSequenceIdRange } from "../perf/sequences.js";
import { isStreamingSweep } from "../perf/stream-report.js";
import { parseCompareFlag } from "../perf/variants.js";
import type { CliContext, Output } from "./output.js";
import type { Protocol } from "../perf/protocol.js";

export interface PerfFlags {
  url?: string;
  protocol: Protocol;
  concurrencyRange?: number[];
  requestRateRange?: number[];
  requestDistribution: "constant" | "poisson";
  measurementInterval: number;
  stabilityPercentage: number;
  maxTrials: number;
  maxWarmup?: number;
  batchSize: number;
  shape: Array<[string, number[]]>;
  inputData: string;
  stringLength: number;
  priority?: number;
  requestTimeoutUs?: number;
  requestParameter: Array<[string, string | number | boolean]>;
  compare?: string;
  engine: "builtin" | "perf_analyzer";
  perfAnalyzer?: string;
  metricsUrl?: string;
  maxInFlight: number;
  sharedMemory: "none" | "system";
  modelVersion?: string;
  sequenceLength?: number;
  sequenceLengthVariation?: number;
  sequenceIdRange?: string;
  numOfSequences?: number;
  f?: string;
  json: boolean;
  chart: boolean;
  history: boolean;
}

function printSweep(output: Output, s: SweepResult, heading: boolean): void {
  if (heading) output.out(`\n== ${s.label ?? s.servedModel}${s.label ? ` (${s.servedModel})` : ""}`);
  output.out(formatTable(s));
  const gap = describeClientServerGap(s);
  if (gap) output.out(gap);
  const errors = describeErrors(s);
  if (errors.length) output.out(["errors:", ...errors].join("\n"));
  const gpu = describeGpu(s);
  if (gpu) output.out(gpu);
}

export function printReport(output: Output, r: PerfReport, o: { chart: boolean }): void {
  const first = r.sweeps[0];
  if (!first) return;
  output.out(
    `${r.model}${first.version ? ` version ${first.version}` : ""} over ${first.protocol.toUpperCase()} at ${first.endpoint}, ${first.engine === "perf_analyzer" ? "perf_analyzer" : "built-in generator"}, ` +
      `${first.measurementIntervalMs} ms windows, batch ${first.batchSize}${first.distribution ? `, ${first.distribution} arrivals` : ""}` +
      `${first.sharedMemory ? `, inputs in ${first.sharedMemory} shared memory (outputs in the response body)` : ""}` +
      `${first.sequence ? `, sequences of ${describeSequences(first.sequence, first.kind)}` : ""}; times in ms` +
      (isStreamingSweep(first)
        ? ""
        : "\n(Send to Avg as the client measured them; Server is Triton's own time per request, Queue to Out its parts)"),
  );
  for (const s of r.sweeps) printSweep(output, s, r.sweeps.length > 1 || r.compare !== undefined);
  if (r.comparison && r.sweeps.length > 1) {
    output.out(`\ncomparison (${r.compare ?? "variants"}):`);
    output.out(formatComparison(r.sweeps, r.comparison));
  }
  if (o.chart && r.sweeps.some((s) => s.levels.some((l) => l.requests > 0))) {
    const markers = ["*", "o", "+", "x", "#"];
    output.out("");
    const series = r.sweeps.map((s, i) => seriesOf(s, r.sweeps.length > 1 ? markers[i % markers.length]! : "*"));
    // A streamed model's points are requests per second, each complete at its final response.
    const streamed = r.sweeps.some(isStreamingSweep);
    output.out(chart(series, streamed ? { xLabel: "throughput (requests/s)" } : {}));
  }
  if (r.previous) {
    if (r.previous.diffs.length)
      output.out(
        [`\ncompared with the previous run (${r.previous.savedAt}):`, ...formatDiff(first.kind, r.previous.diffs)].join(
          "\n",
        ),
      );
    else output.out(`\nthe previous run (${r.previous.savedAt}) measured no level this one did`);
  }
  if (r.savedTo) output.out(`saved: ${r.savedTo}`);
}

/** `triton-dev perf`, loaded when the command runs. */
export async function perfAction(
  modelArg: string | undefined,
  flags: PerfFlags & { file?: string; modelName?: string },
  ctx: CliContext,
): Promise<void> {
  const { output, env } = ctx;
  if (modelArg && flags.modelName && modelArg !== flags.modelName)
    throw new UsageError(`two models given: ${modelArg} and -m ${flags.modelName}`);
  const model = modelArg ?? flags.modelName;
  if (!model)
    throw new UsageError("which model? Give its name: `triton-dev perf MODEL` (or -m MODEL)", {
      hint: "`triton-dev status` lists the models the server has.",
    });
  if (flags.concurrencyRange && flags.requestRateRange)
    throw new UsageError("give --concurrency-range or --request-rate-range, not both");
  const compare = flags.compare ? parseCompareFlag(flags.compare) : undefined;
  const inputData: InputDataSource =
    flags.inputData === "random" || flags.inputData === "zero"
      ? flags.inputData
      : { file: path.resolve(flags.inputData) };
  const shapes: Record<string, number[]> = {};
  for (const [name, dims] of flags.shape) shapes[name] = dims;
  const kind = flags.requestRateRange ? "rate" : "concurrency";
  const sequence = {
    ...(flags.sequenceLength !== undefined ? { length: flags.sequenceLength } : {}),
    ...(flags.sequenceLengthVariation !== undefined ? { variationPct: flags.sequenceLengthVariation } : {}),
    ...(flags.sequenceIdRange !== undefined ? parseSequenceIdRange(flags.sequenceIdRange) : {}),
    ...(flags.numOfSequences !== undefined ? { rateSequences: flags.numOfSequences } : {}),
  };
  const o: PerfOptions = {
    model,
    ...(flags.modelVersion ? { version: flags.modelVersion } : {}),
    ...(flags.url ? { url: flags.url } : {}),
    protocol: flags.protocol,
    kind,
    levels: flags.requestRateRange ?? flags.concurrencyRange ?? [1, 2, 4, 8],
    distribution: flags.requestDistribution,
    windowMs: flags.measurementInterval,
    stabilityPct: flags.stabilityPercentage,
    maxTrials: flags.maxTrials,
    ...(flags.maxWarmup !== undefined ? { maxWarmupMs: flags.maxWarmup } : {}),
    batchSize: flags.batchSize,
    shapes,
    inputData,
    stringLength: flags.stringLength,
    ...(flags.requestParameter.length ? { requestParameters: Object.fromEntries(flags.requestParameter) } : {}),
    ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
    ...(flags.requestTimeoutUs !== undefined ? { timeoutUs: flags.requestTimeoutUs } : {}),
    ...(compare ? { compare, compareText: flags.compare! } : {}),
    engine: flags.engine,
    ...(flags.perfAnalyzer ? { perfAnalyzer: flags.perfAnalyzer } : {}),
    ...(flags.metricsUrl ? { metricsUrl: flags.metricsUrl } : {}),
    maxInFlight: flags.maxInFlight,
    keepHistory: flags.history,
    ...(flags.sharedMemory === "system" ? { sharedMemory: "system" as const } : {}),
    ...(Object.keys(sequence).length ? { sequence } : {}),
  };

  const ac = new AbortController();
  const onSignal = () => {
    if (ac.signal.aborted) return;
    output.err("interrupted: stopping the load and cleaning up; the results measured so far follow");
    ac.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let report: PerfReport;
  try {
    report = await runPerf(o, { env, run: recordedRun(env), signal: ac.signal, progress: (line) => output.err(line) });
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }

  if (flags.file) {
    const base = path.resolve(flags.file);
    for (const s of report.sweeps) {
      const file = report.sweeps.length > 1 ? base.replace(/(\.csv)?$/i, `.${s.servedModel}.csv`) : base;
      await fsp.writeFile(file, toCsv(s));
      if (!flags.json) output.err(`wrote ${file}`);
    }
  }
  if (flags.json) output.out(JSON.stringify(report, null, 2));
  else printReport(output, report, { chart: flags.chart });
  if (report.stopped) {
    // The qualifier on the first line; a variant's diagnostics and the hint below it.
    const [first, ...details] = report.stopped.message.split("\n");
    output.err(
      `error: ${first}; ${report.sweeps.some((s) => s.levels.length) ? "the results above are those measured until then" : "nothing was measured"}`,
    );
    for (const d of details) output.err(`  ${d}`);
    if (report.stopped.hint) output.err(`  hint: ${report.stopped.hint}`);
    ctx.exitCode = report.stopped.reason === "interrupted" ? 130 : 1;
  }
}
