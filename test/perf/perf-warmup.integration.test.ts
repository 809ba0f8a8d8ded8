import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, ROOT, runCli, tempDir, testEnv } from "../helpers/cli.js";
import type { PerfReport } from "../../src/perf/run.js";
import { runPerfCli, tableRows } from "./helpers.js";

/** Each of its first FIRST_CALLS calls per process builds a large table, as a JIT compiles; it records them. */
const FIRST_CALLS = path.join(ROOT, "test/fixtures/perf/first-calls");
/** Sleeps a fixed cost per call: two copies of one config measure alike on a busy machine. */
const SLEEPY = path.join(ROOT, "test/fixtures/tune/sleepy");

interface SlowCall {
  call: number;
  pid: number;
  started: number;
  ended: number;
}

/**
 * perf's warm-up and noise against a real tritonserver (`up --detach`): a model whose first calls
 * do extra work has them outside the measured windows, by the model's own record of when they
 * ended; two identical configurations compared side by side name no winner. Nothing here asserts
 * a speed: only the order of events and the verdicts' structure.
 */
describe("triton-dev perf warm-up and noise (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;
  let callsFile: string;

  const json = (stdout: string) => JSON.parse(stdout) as PerfReport;
  const slowCalls = async (): Promise<SlowCall[]> =>
    (await fs.readFile(callsFile, "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as SlowCall);

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    models = await tempDir("warmup-models");
    callsFile = path.join(await tempDir("warmup"), "calls.jsonl");
    await fs.cp(FIRST_CALLS, path.join(models, "first_calls"), { recursive: true });
    const config = await fs.readFile(path.join(FIRST_CALLS, "config.pbtxt"), "utf8");
    await fs.writeFile(
      path.join(models, "first_calls", "config.pbtxt"),
      `${config}parameters { key: "CALLS_FILE" value: { string_value: "${callsFile}" } }\n`,
    );
    await fs.cp(SLEEPY, path.join(models, "steady"), { recursive: true });
    const sleepy = await fs.readFile(path.join(SLEEPY, "config.pbtxt"), "utf8");
    await fs.writeFile(path.join(models, "steady", "config.pbtxt"), sleepy.replace('name: "sleepy"', 'name: "steady"'));
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout, up.stderr).toMatch(/2 of 2 models READY/);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("leaves a model's first, compiling calls in the warm-up, outside the concurrency-1 figures", async () => {
    // Three windows, the fewest perf takes: without a warm-up the first of them holds the model's
    // first calls, which then land in the figures however unstable the level is.
    const r = await runPerfCli(
      ["first_calls", "--concurrency-range", "1", "-p", "1000", "-r", "3", "--json", "--no-history"],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const level = json(r.stdout).sweeps[0]!.levels[0]!;
    const calls = await slowCalls();
    // The model was cold: it did all its first calls, in one process, during this run.
    expect(calls.map((c) => c.call)).toEqual([1, 2, 3, 4]);
    expect(new Set(calls.map((c) => c.pid)).size).toBe(1);
    // The warm-up ran windows of its own and counted what it did not measure: every first call
    // after perf's probe (one request) completed in it.
    expect(level.warmup, JSON.stringify(level)).toBeDefined();
    expect(level.warmup!.windows.length).toBeGreaterThanOrEqual(2);
    expect(level.trials).toBe(3);
    expect(level.warmup!.requests).toBeGreaterThanOrEqual(calls.length - 1);
    expect(r.stderr).toMatch(/first_calls: concurrency 1, warm-up (settled|did not settle) after \d+ window\(s\)/);
    // By the model's own clock: each first call ended before the measured windows began.
    const measuredFrom = Date.parse(level.measuredFrom!);
    for (const c of calls)
      expect(c.ended * 1000, JSON.stringify({ c, level: level.measuredFrom })).toBeLessThan(measuredFrom);
    expect(Date.parse(level.warmup!.endedAt)).toBeLessThanOrEqual(measuredFrom);
    // Every figure carries its spread over the windows it was merged from.
    expect(level.noise!.windows).toBe(Math.min(3, level.windows.length));
    for (const f of [level.noise!.throughput, level.noise!.p50Us, level.noise!.p99Us, level.noise!.avgLatencyUs]) {
      expect(f.min).toBeLessThanOrEqual(f.max);
      expect(f.spread).toBeGreaterThanOrEqual(0);
    }
    expect(level.noise!.throughput.min).toBeLessThanOrEqual(level.throughput * 1.0001);
    expect(level.noise!.throughput.max).toBeGreaterThanOrEqual(level.throughput * 0.9999);

    // The table shows the same: the spreads and the warm-up's length beside perf_analyzer's columns.
    const t = await runPerfCli(
      ["first_calls", "--concurrency-range", "1", "-p", "500", "-r", "4", "--no-history", "--no-chart"],
      env,
    );
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toMatch(/Errors\s+±Infer\/s\s+±p50\s+±p99\s+±Avg\s+Warm-up/);
    const row = tableRows(t.stdout).get(1)!;
    expect(
      row.slice(17, 21).every((c) => /^±\d+(\.\d)?%$/.test(c)),
      row.join(" "),
    ).toBe(true);
    expect(row[21]).toMatch(/^\d+\.\ds$/);
    // A warm model: its first calls were not made again.
    expect((await slowCalls()).length).toBe(4);
  }, 180_000);

  it("compares two identical configurations as within noise, naming no winner", async () => {
    const r = await runPerfCli(
      [
        "steady",
        "--compare",
        `config=${path.join(models, "steady", "config.pbtxt")}`,
        "--concurrency-range",
        "1:2",
        "-p",
        "1000",
        "-r",
        "6",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const rep = json(r.stdout);
    expect(rep.sweeps).toHaveLength(2);
    expect(rep.comparison!.map((c) => c.value)).toEqual([1, 2]);
    for (const row of rep.comparison!) {
      expect(row.verdict[1], JSON.stringify(row)).toBe("within noise");
      expect(row.noise.every((n) => typeof n === "number" && n >= 0)).toBe(true);
    }
    for (const s of rep.sweeps) for (const l of s.levels) expect(l.warmup).toBeDefined();
  }, 180_000);
});
