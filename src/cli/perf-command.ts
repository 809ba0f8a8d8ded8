import fsp from "node:fs/promises";
import path from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { UsageError } from "../errors.js";
import { parseShapeFlag, type InputDataSource } from "../perf/inputs.js";
import {
  chart,
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
import { parseCompareFlag } from "../perf/variants.js";
import { parsePositiveInt } from "./options.js";
import type { CliContext, Output } from "./output.js";

interface PerfFlags {
  url?: string;
  protocol: "http" | "grpc";
  concurrencyRange?: number[];
  requestRateRange?: number[];
  requestDistribution: "constant" | "poisson";
  measurementInterval: number;
  stabilityPercentage: number;
  maxTrials: number;
  batchSize: number;
  shape: Array<[string, number[]]>;
  inputData: string;
  stringLength: number;
  priority?: number;
  requestTimeoutUs?: number;
  compare?: string;
  engine: "builtin" | "perf_analyzer";
  perfAnalyzer?: string;
  metricsUrl?: string;
  maxInFlight: number;
  f?: string;
  json: boolean;
  chart: boolean;
  history: boolean;
}

/**
 * perf_analyzer's range syntax START[:END[:STEP]] (END defaults to START, STEP to 1), or a list
 * such as 1,2,4,8 for sweeps that double.
 */
export function parseRange(flag: string, integer: boolean) {
  return (value: string): number[] => {
    const numeric = (s: string) => {
      const n = Number(s);
      if (s.trim() === "" || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
        throw new InvalidArgumentError(
          `${flag} takes START[:END[:STEP]] or a list like 1,2,4,8 of ${integer ? "whole numbers" : "numbers"} > 0, got '${value}'`,
        );
      }
      return n;
    };
    let out: number[];
    if (value.includes(",")) out = value.split(",").map(numeric);
    else {
      const parts = value.split(":");
      if (parts.length > 3) throw new InvalidArgumentError(`${flag} takes START[:END[:STEP]], got '${value}'`);
      const start = numeric(parts[0]!);
      const end = parts[1] !== undefined && parts[1] !== "" ? numeric(parts[1]) : start;
      const step = parts[2] !== undefined && parts[2] !== "" ? numeric(parts[2]) : 1;
      if (end < start) throw new InvalidArgumentError(`${flag}: END ${end} is below START ${start}`);
      out = [];
      for (let v = start; v <= end + 1e-9 && out.length <= 1000; v += step) out.push(Number(v.toFixed(6)));
    }
    if (out.length > 256) throw new InvalidArgumentError(`${flag} asks for ${out.length} levels; 256 at most`);
    return [...new Set(out)];
  };
}

function collectShape(value: string, previous: Array<[string, number[]]> = []): Array<[string, number[]]> {
  try {
    return [...previous, parseShapeFlag(value)];
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

const intOption =
  (flag: string, min = 0) =>
  (value: string) => {
    if (!/^\d+$/.test(value) || Number(value) < min)
      throw new InvalidArgumentError(`${flag} must be a whole number >= ${min}, got '${value}'`);
    return Number(value);
  };

function printSweep(output: Output, s: SweepResult, heading: boolean): void {
  if (heading) output.out(`\n== ${s.label ?? s.servedModel}${s.label ? ` (${s.servedModel})` : ""}`);
  output.out(formatTable(s));
  const errors = describeErrors(s);
  if (errors.length) output.out(["errors:", ...errors].join("\n"));
  const gpu = describeGpu(s);
  if (gpu) output.out(gpu);
}

export function printReport(output: Output, r: PerfReport, o: { chart: boolean }): void {
  const first = r.sweeps[0];
  if (!first) return;
  output.out(
    `${r.model} over ${first.protocol.toUpperCase()} at ${first.endpoint}, ${first.engine === "perf_analyzer" ? "perf_analyzer" : "built-in generator"}, ` +
      `${first.measurementIntervalMs} ms windows, batch ${first.batchSize}${first.distribution ? `, ${first.distribution} arrivals` : ""}; times in ms`,
  );
  for (const s of r.sweeps) printSweep(output, s, r.sweeps.length > 1 || r.compare !== undefined);
  if (r.comparison && r.sweeps.length > 1) {
    output.out(`\ncomparison (${r.compare ?? "variants"}):`);
    output.out(formatComparison(r.sweeps, r.comparison));
  }
  if (o.chart && r.sweeps.some((s) => s.levels.some((l) => l.requests > 0))) {
    const markers = ["*", "o", "+", "x", "#"];
    output.out("");
    output.out(chart(r.sweeps.map((s, i) => seriesOf(s, r.sweeps.length > 1 ? markers[i % markers.length]! : "*"))));
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

export function registerPerfCommand(program: Command, ctx: CliContext): Command {
  const { output, env } = ctx;
  return program
    .command("perf")
    .description(
      "Measure a model's throughput and latency over a concurrency (or request-rate) sweep, with the server's breakdown; compare config variants.",
    )
    .argument("[model]", "the model to measure (or -m NAME, as perf_analyzer takes it)")
    .option("-m, --model-name <name>", "the model to measure")
    .option(
      "-u, --url <host:port>",
      "the server's endpoint for the protocol (default: the server `triton-dev up` started)",
    )
    .addOption(new Option("-i, --protocol <protocol>", "http or grpc").choices(["http", "grpc"]).default("http"))
    .option(
      "--concurrency-range <range>",
      "closed loop: START:END:STEP or a list like 1,2,4,8 (default 1,2,4,8)",
      parseRange("--concurrency-range", true),
    )
    .option(
      "--request-rate-range <range>",
      "open loop: requests per second, START:END:STEP or a list",
      parseRange("--request-rate-range", false),
    )
    .addOption(
      new Option("--request-distribution <kind>", "open-loop arrivals")
        .choices(["constant", "poisson"])
        .default("constant"),
    )
    .option(
      "-p, --measurement-interval <ms>",
      "length of one measurement window",
      intOption("--measurement-interval", 100),
      5000,
    )
    .option(
      "-s, --stability-percentage <pct>",
      "windows agree when the largest is within this percentage of the smallest (throughput and latency)",
      intOption("--stability-percentage", 1),
      10,
    )
    .option(
      "-r, --max-trials <n>",
      "windows at most per level before it is reported unstable",
      intOption("--max-trials", 3),
      10,
    )
    .option("-b, --batch-size <n>", "batch size of each request", parsePositiveInt("--batch-size"), 1)
    .option(
      "--shape <NAME:d1,d2>",
      "dimensions (without batch) for an input with -1 in its shape; repeatable",
      collectShape,
      [],
    )
    .option("--input-data <random|zero|FILE>", "synthetic data, zeros, or perf_analyzer's JSON data file", "random")
    .option("--string-length <n>", "characters of synthetic BYTES elements", parsePositiveInt("--string-length"), 128)
    .option("--priority <n>", "request priority parameter (1 is highest)", intOption("--priority", 1))
    .option(
      "--request-timeout-us <us>",
      "request timeout parameter, in microseconds (the queue policy must allow overrides)",
      intOption("--request-timeout-us", 1),
    )
    .option("--compare <variant>", "A/B on staged copies of the model's config: batching | instances=N,M | config=FILE")
    .addOption(
      new Option("--engine <engine>", "who sends the load").choices(["builtin", "perf_analyzer"]).default("builtin"),
    )
    .option("--perf-analyzer <path>", "the perf_analyzer binary (--engine perf_analyzer)")
    .option("--metrics-url <url>", "Triton's metrics endpoint, for GPU figures when nvidia-smi is absent")
    .option(
      "--max-in-flight <n>",
      "open loop: connections and requests in flight at most",
      parsePositiveInt("--max-in-flight"),
      256,
    )
    .option("-f, --file <OUT.csv>", "also write perf_analyzer's CSV (one file per variant with --compare)")
    .option("--json", "print the full result as JSON", false)
    .option("--no-chart", "leave out the throughput/latency chart")
    .option("--no-history", "do not keep this run (nor compare it with the previous one)")
    .action(async (modelArg: string | undefined, flags: PerfFlags & { file?: string; modelName?: string }) => {
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
      const o: PerfOptions = {
        model,
        ...(flags.url ? { url: flags.url } : {}),
        protocol: flags.protocol,
        kind,
        levels: flags.requestRateRange ?? flags.concurrencyRange ?? [1, 2, 4, 8],
        distribution: flags.requestDistribution,
        windowMs: flags.measurementInterval,
        stabilityPct: flags.stabilityPercentage,
        maxTrials: flags.maxTrials,
        batchSize: flags.batchSize,
        shapes,
        inputData,
        stringLength: flags.stringLength,
        ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
        ...(flags.requestTimeoutUs !== undefined ? { timeoutUs: flags.requestTimeoutUs } : {}),
        ...(compare ? { compare, compareText: flags.compare! } : {}),
        engine: flags.engine,
        ...(flags.perfAnalyzer ? { perfAnalyzer: flags.perfAnalyzer } : {}),
        ...(flags.metricsUrl ? { metricsUrl: flags.metricsUrl } : {}),
        maxInFlight: flags.maxInFlight,
        keepHistory: flags.history,
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
        report = await runPerf(o, { env, signal: ac.signal, progress: (line) => output.err(line) });
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
    });
}
