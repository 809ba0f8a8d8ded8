import { Command, InvalidArgumentError, Option } from "commander";
import { parsePositiveInt } from "./options.js";
import { collectRequestParameter, collectShape } from "./perf-command.js";
import type { CliContext } from "./output.js";
import type { TuneFlags } from "./tune-action.js";
import { PROTOCOLS } from "../perf/protocol.js";

/** p99=MS or p95=MS. */
export function parseLatencyBudget(value: string): { percentile: "p95" | "p99"; ms: number } {
  const m = /^(p95|p99)=(\d+(?:\.\d+)?)$/.exec(value.trim());
  if (!m || Number(m[2]) <= 0)
    throw new InvalidArgumentError(`--latency-budget takes p99=MS or p95=MS (milliseconds > 0), got '${value}'`);
  return { percentile: m[1] as "p95" | "p99", ms: Number(m[2]) };
}

/** 90s, 10m, 1h, or bare seconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!m || Number(m[1]) <= 0)
    throw new InvalidArgumentError(`--budget takes a duration such as 90s, 10m or 1h, got '${value}'`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Number(m[1]) * unit;
}

export function parseConcurrency(value: string): number | "auto" {
  if (value === "auto") return "auto";
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new InvalidArgumentError(`--concurrency takes a whole number >= 1 or auto, got '${value}'`);
  return Number(value);
}

function positiveNumber(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n) || n <= 0)
      throw new InvalidArgumentError(`${flag} must be a number > 0, got '${value}'`);
    return n;
  };
}

export function registerTuneCommand(program: Command, ctx: CliContext): Command {
  return program
    .command("tune")
    .description(
      "Search a model's dynamic batching and instance counts on the running server: each candidate staged beside the model, measured, ranked against a latency budget.",
    )
    .argument("<model>", "the model to tune")
    .option("--latency-budget <p99=MS|p95=MS>", "the latency every candidate must stay inside", parseLatencyBudget)
    .option("--min-throughput <n>", "inferences per second a candidate must reach", positiveNumber("--min-throughput"))
    .option(
      "--concurrency <n|auto>",
      "requests in flight while measuring (auto: a short sweep on your config)",
      parseConcurrency,
      "auto",
    )
    .addOption(
      new Option("--budget <duration>", "time the search may take (e.g. 90s, 10m)")
        .argParser(parseDuration)
        .default(600_000, "10m"),
    )
    .option("--max-candidates <n>", "candidates measured at most", parsePositiveInt("--max-candidates"), 30)
    .option("--space <FILE>", "JSON that narrows or widens the search space's dimensions")
    .option("--apply", "write the winning fields into the model's config.pbtxt (a backup is kept)", false)
    .option("--exhaustive", "measure every candidate of the space instead of climbing", false)
    .addOption(new Option("-i, --protocol <protocol>", "http or grpc").choices(PROTOCOLS).default("http"))
    .option(
      "--shape <NAME:d1,d2>",
      "dimensions (without batch) for an input with -1 in its shape, as perf's; repeatable",
      collectShape,
      [],
    )
    .option(
      "--input-data <random|zero|FILE>",
      "synthetic data, zeros, or perf_analyzer's JSON data file, as perf's",
      "random",
    )
    .option(
      "--request-parameter <NAME:VALUE:TYPE>",
      "a parameter sent with every request, as perf's (TYPE string, int or bool); repeatable",
      collectRequestParameter,
      [],
    )
    .option(
      "-p, --measurement-interval <ms>",
      "length of one measurement window",
      parsePositiveInt("--measurement-interval", 100),
      2000,
    )
    .option(
      "-s, --stability-percentage <pct>",
      "windows agree within this percentage",
      parsePositiveInt("--stability-percentage"),
      10,
    )
    .option("-r, --max-trials <n>", "windows at most per candidate", parsePositiveInt("--max-trials", 3), 6)
    .option("--csv <FILE>", "also write the ranked candidates as CSV")
    .option("--json", "print the full result as JSON", false)
    .option("--no-chart", "leave out the throughput/latency chart")
    .option("--no-history", "do not keep this tune in the state folder")
    .action(async (model: string, flags: TuneFlags) =>
      (await import("./tune-action.js")).tuneAction(model, flags, ctx),
    );
}
