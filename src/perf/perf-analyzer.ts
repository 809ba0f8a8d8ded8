import { spawn } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { UserError } from "../errors.js";
import { findOnPath } from "./gpu.js";
import type { InputDataSource } from "./inputs.js";
import type { Distribution } from "./load.js";
import type { LevelKind, LevelResult } from "./profile.js";
import { parseCsv } from "./report.js";
import type { SequenceSettings } from "./sequences.js";
import type { Protocol } from "./protocol.js";

/** Where perf_analyzer is: --perf-analyzer, then $PERF_ANALYZER, then PATH. */
export function findPerfAnalyzer(env: NodeJS.ProcessEnv, explicit?: string): string {
  const bin = explicit ?? env.PERF_ANALYZER ?? findOnPath("perf_analyzer", env);
  if (!bin) {
    throw new UserError("--engine perf_analyzer needs perf_analyzer, which is not on PATH", {
      hint: "Install it (it ships in the tritonclient wheel for Linux, e.g. `pip install tritonclient==2.51.0`, and needs libb64 and libcudart), or pass --perf-analyzer PATH; or leave out --engine to use the built-in generator.",
    });
  }
  return bin;
}

export interface PerfAnalyzerLevelOptions {
  bin: string;
  model: string;
  /** host:port of the endpoint for `protocol`. */
  url: string;
  protocol: Protocol;
  kind: LevelKind;
  value: number;
  distribution: Distribution;
  windowMs: number;
  stabilityPct: number;
  maxTrials: number;
  batchSize: number;
  shapes: Record<string, number[]>;
  inputData: InputDataSource;
  stringLength: number;
  /** A decoupled model: perf_analyzer's `--streaming` (gRPC only). */
  streaming?: boolean;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** perf_analyzer's own --shared-memory (it makes and removes its regions itself). */
  sharedMemory?: "none" | "system";
  /** `-x`: one version of the model. */
  version?: string;
  /** A stateful model: the sequences the built-in generator would make, asked of perf_analyzer. */
  sequence?: SequenceSettings;
  /** `--request-parameter`, passed on as perf_analyzer's own flag. */
  requestParameters?: Record<string, string | number | boolean>;
}

/**
 * perf_analyzer's sequence flags for the same sequences as ours. --serial-sequences: ours never
 * have two requests of one sequence in flight, which perf_analyzer's open loop otherwise allows.
 */
function sequenceArgs(s: SequenceSettings, kind: LevelKind): string[] {
  return [
    "--sequence-length",
    String(s.length),
    "--sequence-length-variation",
    String(s.variationPct),
    "--sequence-id-range",
    s.idEnd !== undefined ? `${s.idStart}:${s.idEnd}` : String(s.idStart),
    ...(kind === "rate" ? ["--num-of-sequences", String(s.rateSequences), "--serial-sequences"] : []),
  ];
}

export function perfAnalyzerArgs(
  o: Omit<PerfAnalyzerLevelOptions, "bin" | "env" | "signal">,
  csvFile: string,
): string[] {
  return [
    "-m",
    o.model,
    ...(o.version ? ["-x", o.version] : []),
    "-u",
    o.url,
    "-i",
    o.protocol,
    ...(o.streaming ? ["--streaming"] : []),
    ...(o.kind === "concurrency"
      ? ["--concurrency-range", String(o.value)]
      : ["--request-rate-range", String(o.value), "--request-distribution", o.distribution]),
    "--measurement-interval",
    String(o.windowMs),
    "--stability-percentage",
    String(o.stabilityPct),
    "--max-trials",
    String(o.maxTrials),
    "-b",
    String(o.batchSize),
    ...Object.entries(o.shapes).flatMap(([n, d]) => ["--shape", `${n}:${d.join(",")}`]),
    "--input-data",
    typeof o.inputData === "object" ? o.inputData.file : o.inputData,
    "--string-length",
    String(o.stringLength),
    ...(o.sharedMemory === "system" ? ["--shared-memory", "system"] : []),
    ...(o.sequence ? sequenceArgs(o.sequence, o.kind) : []),
    ...Object.entries(o.requestParameters ?? {}).flatMap(([name, v]) => [
      "--request-parameter",
      `${name}:${String(v)}:${typeof v === "boolean" ? "bool" : typeof v === "number" ? "int" : "string"}`,
    ]),
    "--verbose-csv",
    "-f",
    csvFile,
  ];
}

const num = (cells: Record<string, string>, key: string): number | undefined => {
  const v = cells[key];
  return v === undefined || v === "" ? undefined : Number(v);
};

/** One row of perf_analyzer's CSV as a LevelResult (what the CSV does not carry stays empty). */
export function levelFromCsvRow(header: readonly string[], row: readonly string[], requests = 0): LevelResult {
  const cells = Object.fromEntries(header.map((h, i) => [h.trim(), row[i]?.trim() ?? ""]));
  const kind: LevelKind = "Concurrency" in cells ? "concurrency" : "rate";
  const value = num(cells, kind === "concurrency" ? "Concurrency" : "Request Rate") ?? 0;
  const p50 = num(cells, "p50 latency") ?? 0;
  const hasServer = "Server Queue" in cells;
  return {
    kind,
    value,
    stable: true,
    trials: 0,
    windows: [],
    durationMs: 0,
    requests,
    throughput: num(cells, "Inferences/Second") ?? 0,
    latency: {
      count: requests,
      avgUs: num(cells, "Avg latency") ?? p50,
      minUs: 0,
      maxUs: 0,
      stdDevUs: 0,
      p50Us: p50,
      p90Us: num(cells, "p90 latency") ?? 0,
      p95Us: num(cells, "p95 latency") ?? 0,
      p99Us: num(cells, "p99 latency") ?? 0,
    },
    clientSendUs: num(cells, "Client Send") ?? 0,
    clientRecvUs: num(cells, "Client Recv") ?? 0,
    ...(hasServer ? { networkServerUs: num(cells, "Network+Server Send/Recv") ?? 0 } : {}),
    errors: {},
    errorCount: 0,
    ...(hasServer
      ? {
          server: {
            requests,
            failures: 0,
            inferenceCount: 0,
            executionCount: 0,
            avgBatchSize: 0,
            avgRequestUs: 0,
            queueUs: num(cells, "Server Queue") ?? 0,
            computeInputUs: num(cells, "Server Compute Input") ?? 0,
            computeInferUs: num(cells, "Server Compute Infer") ?? 0,
            computeOutputUs: num(cells, "Server Compute Output") ?? 0,
            overheadUs: 0,
          },
        }
      : {}),
  };
}

function lastLines(s: string, n: number): string {
  return s.trim().split("\n").slice(-n).join("\n  ");
}

/** Run perf_analyzer for one load level and read its CSV. */
export async function runPerfAnalyzerLevel(o: PerfAnalyzerLevelOptions): Promise<LevelResult> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-pa-"));
  const csvFile = path.join(dir, "out.csv");
  try {
    const args = perfAnalyzerArgs(o, csvFile);
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(o.bin, args, { env: o.env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      const onAbort = () => child.kill("SIGINT");
      o.signal?.addEventListener("abort", onAbort, { once: true });
      child.on("error", (err) => reject(new UserError(`cannot run ${o.bin}: ${err.message}`)));
      child.on("close", (c) => {
        o.signal?.removeEventListener("abort", onAbort);
        resolve({ code: c, output: out });
      });
    });
    const missingLib = /error while loading shared libraries: ([^:\s]+)/.exec(output)?.[1];
    if (missingLib) {
      throw new UserError(`perf_analyzer cannot start: the shared library ${missingLib} is missing`, {
        hint: /libcudart/.test(missingLib)
          ? "Install it with `pip install nvidia-cuda-runtime-cu12` and add its nvidia/cuda_runtime/lib folder to LD_LIBRARY_PATH."
          : /libb64/.test(missingLib)
            ? "Install Debian's libb64-0d (`apt-get install libb64-0d`)."
            : "Install the library that provides it, or use the built-in generator (leave out --engine).",
      });
    }
    const requests = Number(/Request count: (\d+)/.exec(output)?.[1] ?? 0);
    let text: string | undefined;
    try {
      text = await fsp.readFile(csvFile, "utf8");
    } catch {
      text = undefined;
    }
    const parsed = text ? parseCsv(text) : undefined;
    const row = parsed?.rows[0];
    if (!parsed || !row) {
      if (/stable measurement/i.test(output)) {
        return {
          ...levelFromCsvRow(["Concurrency"], [String(o.value)]),
          kind: o.kind,
          value: o.value,
          stable: false,
          partial: "perf_analyzer found no stable measurement",
        };
      }
      throw new UserError(`perf_analyzer failed (exit ${code}) at ${o.kind} ${o.value}:\n  ${lastLines(output, 8)}`, {
        hint: `The command was: ${o.bin} ${args.join(" ")}`,
      });
    }
    return levelFromCsvRow(parsed.header, row, requests);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}
