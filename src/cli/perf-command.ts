import { Command, InvalidArgumentError, Option } from "commander";
import { parseRequestParameter, parseShapeFlag } from "../perf/inputs.js";
import { parsePositiveInt } from "./options.js";
import type { CliContext } from "./output.js";
import type { PerfFlags } from "./perf-action.js";
import { PROTOCOLS } from "../perf/protocol.js";

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

export function collectShape(value: string, previous: Array<[string, number[]]> = []): Array<[string, number[]]> {
  try {
    return [...previous, parseShapeFlag(value)];
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function collectRequestParameter(
  value: string,
  previous: Array<[string, string | number | boolean]> = [],
): Array<[string, string | number | boolean]> {
  try {
    return [...previous, parseRequestParameter(value)];
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

export function registerPerfCommand(program: Command, ctx: CliContext): Command {
  return program
    .command("perf")
    .description(
      "Measure a model's throughput and latency over a concurrency (or request-rate) sweep, with the server's breakdown; compare config variants.",
    )
    .argument("[model]", "the model to measure (or -m NAME, as perf_analyzer takes it)")
    .option("-m, --model-name <name>", "the model to measure")
    .option(
      "-x, --model-version <n>",
      "one version of the model (default: the one Triton picks, its highest served)",
      (v: string) => String(parsePositiveInt("--model-version")(v)),
    )
    .option(
      "-u, --url <host:port>",
      "the server's endpoint for the protocol (default: the server `triton-dev up` started)",
    )
    .addOption(new Option("-i, --protocol <protocol>", "http or grpc").choices(PROTOCOLS).default("http"))
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
    .option(
      "--max-warmup <ms>",
      "each level warms up until two short windows agree, this long at most (default: three measurement windows; 0: no warm-up)",
      intOption("--max-warmup", 0),
    )
    .option("-b, --batch-size <n>", "batch size of each request", parsePositiveInt("--batch-size"), 1)
    .option(
      "--shape <NAME:d1,d2>",
      "dimensions (without batch) for an input with -1 in its shape (or NAME=d1xd2); repeatable; an optional input is sent only when given one",
      collectShape,
      [],
    )
    .option(
      "--input-data <random|zero|FILE>",
      'synthetic data, zeros, or perf_analyzer\'s JSON data file (its "shape" sizes dynamic inputs)',
      "random",
    )
    .option("--string-length <n>", "characters of synthetic BYTES elements", parsePositiveInt("--string-length"), 128)
    .option(
      "--request-parameter <NAME:VALUE:TYPE>",
      "a parameter sent with every request, as perf_analyzer's (TYPE string, int or bool; a model reads them with request.parameters()); repeatable",
      collectRequestParameter,
      [],
    )
    .option("--priority <n>", "request priority parameter (1 is highest)", intOption("--priority", 1))
    .option(
      "--request-timeout-us <us>",
      "request timeout parameter, in microseconds (the queue policy must allow overrides)",
      intOption("--request-timeout-us", 1),
    )
    .option(
      "--compare <variant>",
      "A/B on staged copies of the model's config: batching | instances=N,M | config=FILE; or versions=N,M the server serves",
    )
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
    .addOption(
      new Option(
        "--shared-memory <kind>",
        "system: inputs written once into POSIX shared memory registered with Triton (a server on this machine), requests only name it; outputs stay in the response body",
      )
        .choices(["none", "system"])
        .default("none"),
    )
    .option(
      "--sequence-length <n>",
      "a stateful model (sequence batching): requests per sequence (default 20, or the steps of --input-data)",
      parsePositiveInt("--sequence-length"),
    )
    .option(
      "--sequence-length-variation <pct>",
      "a stateful model: each sequence's length within +/- this percentage (default 20)",
      parsePositiveInt("--sequence-length-variation", 0, 100),
    )
    .option(
      "--sequence-id-range <start[:end]>",
      "a stateful model: correlation ids from START up to END (excluded); default 1, unbounded",
    )
    .option(
      "--num-of-sequences <n>",
      "a stateful model, open loop: sequences open at once (default 4; closed loop: one per request in flight)",
      parsePositiveInt("--num-of-sequences"),
    )
    .option("-f, --file <OUT.csv>", "also write perf_analyzer's CSV (one file per variant with --compare)")
    .option("--json", "print the full result as JSON", false)
    .option("--no-chart", "leave out the throughput/latency chart")
    .option("--no-history", "do not keep this run (nor compare it with the previous one)")
    .action(async (modelArg: string | undefined, flags: PerfFlags & { file?: string; modelName?: string }) =>
      (await import("./perf-action.js")).perfAction(modelArg, flags, ctx),
    );
}
