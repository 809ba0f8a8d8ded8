import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import type { PerfReport } from "../../src/perf/run.js";
import { runPerfCli, tableRows, PERF_ANALYZER_BIN, perfAnalyzerEnv } from "./helpers.js";

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/sequence");

/**
 * Stateful models on a real tritonserver: test/fixtures/sequence holds an RNN cell whose hidden
 * state lives in the model between the requests of a sequence, under the direct strategy (8 batch
 * slots, one instance) and the oldest one. The model answers an error to a request that continues
 * a sequence it never saw start or restarts an open one, so any request sent out of its sequence's
 * order counts as an error; and it answers LIVE, the other sequences still open in it, which says
 * whether perf ended every sequence it opened. A third, decoupled, keeps a running mean per
 * sequence and answers each request with two responses.
 */
describe("triton-dev perf on stateful models (sequence batching, real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let work: string;
  let http: number;

  const json = (stdout: string) => JSON.parse(stdout) as PerfReport;
  /** Sequences still open in the model: a one-request sequence asks it. */
  const openSequences = async (model: string): Promise<number> => {
    const r = await fetch(`http://127.0.0.1:${http}/v2/models/${model}/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [{ name: "INPUT", shape: [1, 16], datatype: "FP32", data: Array(16).fill(0.5) }],
        outputs: [{ name: "LIVE" }],
        parameters: {
          sequence_id: 4_000_000_000 + Math.floor(Math.random() * 1e6),
          sequence_start: true,
          sequence_end: true,
        },
      }),
    });
    const body = (await r.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
    expect(r.status, body.error).toBe(200);
    return body.outputs![0]!.data[0]!;
  };

  beforeAll(async () => {
    env = await testEnv();
    work = await tempDir("perf-sequence");
    const models = path.join(work, "models");
    await fs.cp(FIXTURE, models, { recursive: true });
    const ports = await freePorts();
    http = ports.http;
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout, up.stderr).toMatch(/3 of 3 models? READY/);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("drives the direct strategy as sequences, past its batch slots too, and ends every sequence it opened", async () => {
    // 10 sequences at once on 8 slots: two wait for another's end, which only comes if perf ends
    // its sequences when a level stops rather than leaving them to idle out.
    const r = await runPerfCli(
      ["rnn_direct", "--concurrency-range", "2,10", "-p", "700", "-r", "4", "--json", "--no-history"],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const sweep = json(r.stdout).sweeps[0]!;
    expect(sweep.sequence).toEqual({ length: 20, variationPct: 20 });
    expect(r.stderr).toMatch(
      /rnn_direct is stateful: its requests go as sequences of 20 \+\/- 20% request\(s\), one per request in flight/,
    );
    for (const l of sweep.levels) {
      expect(l.errorCount, JSON.stringify(l.errors)).toBe(0);
      expect(l.requests).toBeGreaterThan(100);
    }
    // The direct strategy puts one request of each sequence holding a slot into a batch.
    expect(sweep.levels[1]!.server!.avgBatchSize).toBeGreaterThan(1.3);
    expect(await openSequences("rnn_direct")).toBe(0);
  }, 120_000);

  it("drives the oldest strategy over gRPC in an open loop with --num-of-sequences, and with the table's header saying so", async () => {
    const r = await runPerfCli(
      [
        "rnn_oldest",
        "-i",
        "grpc",
        "--request-rate-range",
        "150",
        "--num-of-sequences",
        "3",
        "--sequence-length",
        "6",
        "--sequence-length-variation",
        "0",
        "-p",
        "700",
        "-r",
        "4",
        "--no-history",
        "--no-chart",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/rnn_oldest over GRPC .*, sequences of 6 request\(s\), 3 open at once; times in ms/);
    // Rate/s Infer/s Send Net+Srv Queue In Infer Out Recv p50 p90 p95 p99 Avg Server Batch Errors
    const row = tableRows(r.stdout).get(150);
    expect(row, r.stdout).toBeDefined();
    expect(row![16], r.stdout).toBe("0");
    expect(Number(row![1])).toBeGreaterThan(100);
    expect(await openSequences("rnn_oldest")).toBe(0);
  }, 120_000);

  it("sends --input-data's steps in order as each sequence, when no --sequence-length is given", async () => {
    const file = path.join(work, "steps.json");
    const step = (v: number) => ({ INPUT: Array(16).fill(v) });
    await fs.writeFile(file, JSON.stringify({ data: [step(0.1), step(0.2), step(0.3)] }));
    const r = await runPerfCli(
      [
        "rnn_direct",
        "--input-data",
        file,
        "--concurrency-range",
        "3",
        "-p",
        "700",
        "-r",
        "3",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const sweep = json(r.stdout).sweeps[0]!;
    expect(sweep.sequence).toEqual({ length: 3, variationPct: 0 });
    expect(sweep.levels[0]!.errorCount).toBe(0);
    expect(await openSequences("rnn_direct")).toBe(0);
  }, 120_000);

  it("streams a decoupled stateful model's sequences over gRPC's stream, whatever -i says", async () => {
    const r = await runPerfCli(
      ["running_mean_stream", "--concurrency-range", "2", "-p", "700", "-r", "4", "--json", "--no-history"],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const sweep = json(r.stdout).sweeps[0]!;
    expect(sweep.streaming).toBe("ModelStreamInfer");
    const l = sweep.levels[0]!;
    expect(l.errorCount, JSON.stringify(l.errors)).toBe(0);
    expect(l.requests).toBeGreaterThan(100);
    expect(l.stream!.responsesPerRequest).toBe(2);
  }, 120_000);

  it("refuses --compare batching, -b above 1 and an id range too narrow for a level, saying what to do", async () => {
    const r = await runPerfCli(
      ["rnn_direct", "--compare", "batching", "--concurrency-range", "2", "--no-history"],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/rnn_direct is a stateful model: its sequence_batching batches its sequences/);
    expect(r.stderr).toMatch(/--compare config=FILE/);

    const batched = await runPerfCli(["rnn_direct", "-b", "2", "--concurrency-range", "2", "--no-history"], env);
    expect(batched.code).toBe(2);
    expect(batched.stderr).toMatch(/rnn_direct is a stateful model, whose sequence batcher takes one request per/);
    // Refused before the first level, rather than after measuring 2 and failing at 8.
    const narrow = await runPerfCli(
      ["rnn_direct", "--sequence-id-range", "1:5", "--concurrency-range", "2,8", "--no-history"],
      env,
    );
    expect(narrow.code).toBe(2);
    expect(narrow.stderr).toMatch(/8 sequences open at once need 8 correlation ids, but --sequence-id-range holds 4/);
    expect(narrow.stderr).not.toMatch(/concurrency 2/);
  }, 60_000);

  it("keeps ids apart in a narrow --sequence-id-range that wraps around", async () => {
    const r = await runPerfCli(
      [
        "rnn_direct",
        "--sequence-id-range",
        "1:4",
        "--concurrency-range",
        "3",
        "--sequence-length",
        "3",
        "-p",
        "700",
        "-r",
        "3",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const l = json(r.stdout).sweeps[0]!.levels[0]!;
    expect(l.errorCount, JSON.stringify(l.errors)).toBe(0);
    expect(l.requests).toBeGreaterThan(100);
    expect(await openSequences("rnn_direct")).toBe(0);
  }, 90_000);

  it.skipIf(!PERF_ANALYZER_BIN)(
    "hands perf_analyzer the same sequences, and it measures the model without errors",
    async () => {
      const paEnv = await perfAnalyzerEnv(env);
      const r = await runPerfCli(
        [
          "rnn_direct",
          "--engine",
          "perf_analyzer",
          "--perf-analyzer",
          PERF_ANALYZER_BIN!,
          "--concurrency-range",
          "4",
          "--sequence-length",
          "5",
          "-p",
          "700",
          // A loose rule, so a loaded machine still gives perf_analyzer a stable measurement to report.
          "--stability-percentage",
          "50",
          "--json",
          "--no-history",
        ],
        paEnv,
      );
      expect(r.code, r.stderr).toBe(0);
      const l = json(r.stdout).sweeps[0]!.levels[0]!;
      expect(l.requests).toBeGreaterThan(100);
      expect(l.server!.failures).toBe(0);
      expect(await openSequences("rnn_direct")).toBe(0);
    },
    90_000,
  );
});
