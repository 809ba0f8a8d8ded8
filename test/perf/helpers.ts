import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import { CLI, type CliResult } from "../helpers/cli.js";

export const PERF_ANALYZER_HEADER =
  "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";

// perf_analyzer is no npm or apt package: bench/vs-perf-analyzer.mjs installs it under /tmp.
const PA_VENV = "/tmp/triton-dev-bench/pa-venv";

/** An installed perf_analyzer ($PERF_ANALYZER, or the bench's venv), for the tests that need one. */
export const PERF_ANALYZER_BIN: string | undefined =
  process.env.PERF_ANALYZER ??
  (existsSync(`${PA_VENV}/bin/perf_analyzer`) ? `${PA_VENV}/bin/perf_analyzer` : undefined);

/** `env` with the venv's libcudart on LD_LIBRARY_PATH, which perf_analyzer links even without a GPU. */
export async function perfAnalyzerEnv(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  const libs = (await fs.readdir(`${PA_VENV}/lib`).catch(() => [] as string[])).map(
    (py) => `${PA_VENV}/lib/${py}/site-packages/nvidia/cuda_runtime/lib`,
  );
  return { ...env, LD_LIBRARY_PATH: [...libs, env.LD_LIBRARY_PATH].filter(Boolean).join(":") };
}

export function runPerfCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 170_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, "perf", ...args],
      { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === "number"
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

export interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves once stderr has matched `re`. */
  waitFor: (re: RegExp, timeoutMs?: number) => Promise<void>;
  exit: Promise<number | null>;
}

export function spawnPerfCli(args: string[], env: NodeJS.ProcessEnv): Spawned {
  const child = spawn(process.execPath, [CLI, "perf", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exit = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    waitFor: (re, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const t = setInterval(() => {
          if (re.test(err)) {
            clearInterval(t);
            resolve();
          } else if (Date.now() - started > timeoutMs || child.exitCode !== null) {
            clearInterval(t);
            reject(new Error(`no ${re} in perf's output:\n${err}\n${out}`));
          }
        }, 50);
      }),
  };
}

/** The rows of the table `perf` prints, keyed by load level. */
export function tableRows(stdout: string): Map<number, string[]> {
  const lines = stdout.split("\n");
  const rows = new Map<number, string[]>();
  let inTable = false;
  for (const l of lines) {
    if (/^(Concurrency|Rate\/s)\s+Infer\/s/.test(l)) inTable = true;
    else if (inTable && /^\d/.test(l)) rows.set(Number(l.split(/\s+/)[0]), l.trim().split(/\s+/));
    else inTable = false;
  }
  return rows;
}
