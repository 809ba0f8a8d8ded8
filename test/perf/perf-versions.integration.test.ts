import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import type { PerfReport } from "../../src/perf/run.js";
import { runPerfCli } from "./helpers.js";

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/versions");

/**
 * `perf -x VERSION` on a real tritonserver serving two versions of one model side by side
 * (version_policy all): the load goes to that version alone, and so do the server's figures;
 * Triton's own per-version statistics say which version the requests reached.
 */
describe("triton-dev perf -x: one version of a model served in several (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let http: number;
  const short = ["--concurrency-range", "2", "-p", "600", "-r", "3", "--no-history"];

  /** Triton's inference count of each version of scorer. */
  const counts = async (): Promise<Record<string, number>> => {
    const r = await fetch(`http://127.0.0.1:${http}/v2/models/scorer/stats`);
    const body = (await r.json()) as { model_stats: Array<{ version: string; inference_count: number }> };
    return Object.fromEntries(body.model_stats.map((m) => [m.version, Number(m.inference_count)]));
  };

  beforeAll(async () => {
    env = await testEnv();
    const models = path.join(await tempDir("perf-versions"), "models");
    await fs.cp(FIXTURE, models, { recursive: true });
    const ports = await freePorts();
    http = ports.http;
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout, up.stderr).toMatch(/scorer\s+v1\s+READY/);
    expect(up.stdout).toMatch(/scorer\s+v2\s+READY/);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  for (const [version, protocol] of [
    ["1", "http"],
    ["2", "grpc"],
  ] as const) {
    it(`sends every request to version ${version} (${protocol}) and reads that version's statistics`, async () => {
      const other = version === "1" ? "2" : "1";
      const before = await counts();
      const r = await runPerfCli(["scorer", "-x", version, "-i", protocol, ...short, "--json"], env);
      expect(r.code, r.stderr).toBe(0);
      const after = await counts();
      const sweep = (JSON.parse(r.stdout) as PerfReport).sweeps[0]!;
      expect(sweep.version).toBe(version);
      const l = sweep.levels[0]!;
      expect(l.errorCount).toBe(0);
      expect(l.requests).toBeGreaterThan(100);
      expect(after[other]).toBe(before[other]);
      expect(after[version]! - before[version]!).toBeGreaterThanOrEqual(l.requests);
      // The breakdown is that version's own: its executions, not the model's across versions.
      expect(l.server!.inferenceCount).toBeLessThanOrEqual(after[version]! - before[version]!);
      expect(l.server!.inferenceCount).toBeGreaterThan(0);
    }, 90_000);
  }

  it("--compare versions=1,2 measures each version in place, one after the other, with the ratio", async () => {
    const before = await counts();
    const r = await runPerfCli(["scorer", "--compare", "versions=1,2", ...short, "--json"], env);
    expect(r.code, r.stderr).toBe(0);
    const after = await counts();
    const report = JSON.parse(r.stdout) as PerfReport;
    expect(report.sweeps.map((s) => [s.label, s.servedModel, s.version])).toEqual([
      ["version 1", "scorer", "1"],
      ["version 2", "scorer", "2"],
    ]);
    expect(report.comparison![0]!.ratio[1]).toBeGreaterThan(0);
    for (const [i, v] of ["1", "2"].entries()) {
      const l = report.sweeps[i]!.levels[0]!;
      expect(l.errorCount).toBe(0);
      expect(after[v]! - before[v]!).toBeGreaterThanOrEqual(l.requests);
    }
    // Nothing was staged: the versions are the model's own.
    expect(r.stderr).not.toMatch(/staging/);
    const bad = await runPerfCli(["scorer", "--compare", "versions=1,3", ...short], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/version 3 of scorer is not served/);
    expect(bad.stderr).not.toMatch(/scorer: concurrency/);
  }, 120_000);

  it("names the version in the table's header, and refuses one that is not served with the ones that are", async () => {
    const ok = await runPerfCli(["scorer", "-x", "1", ...short, "--no-chart"], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^scorer version 1 over HTTP at /m);
    const missing = await runPerfCli(["scorer", "-x", "3", ...short], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error: version 3 of scorer is not served/);
    expect(missing.stderr).toMatch(/Its versions: 1 \(READY\), 2 \(READY\)/);
    const bad = await runPerfCli(["scorer", "-x", "latest", ...short], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--model-version must be a whole number/);
  }, 90_000);
});
