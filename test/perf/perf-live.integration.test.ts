import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  copySampleModels,
  SAMPLE_MODELS,
  freePorts,
  portArgs,
  ROOT,
  runCli,
  tempDir,
  testEnv,
} from "../helpers/cli.js";
import type { PerfReport } from "../../src/perf/run.js";
import type { LevelResult } from "../../src/perf/profile.js";
import {
  PERF_ANALYZER_HEADER,
  runPerfCli,
  spawnPerfCli,
  tableRows,
  PERF_ANALYZER_BIN,
  perfAnalyzerEnv,
} from "./helpers.js";

/**
 * Triton counts an execution and its requests' inferences in two steps, so a statistics snapshot
 * taken between them (the load goes on at both edges of a window) can be short by the requests
 * in flight: at least one inference per execution, up to that.
 */
function expectBatchedAtLeastOne(l: LevelResult): void {
  const s = l.server!;
  expect(s.executionCount).toBeGreaterThan(0);
  expect(s.inferenceCount + 2 * l.value, JSON.stringify(s)).toBeGreaterThanOrEqual(s.executionCount);
}

/**
 * A model that sleeps a fixed 8 ms per call plus 0.5 ms per request it holds: what concurrency,
 * instances and batching do to it is known by construction and holds on a busy machine, where the
 * sample models' real (numpy) work would measure the machine's other load as much as the product.
 */
const SLEEPY = path.join(ROOT, "test/fixtures/tune/sleepy");

/**
 * `triton-dev perf` as a user runs it, against a real tritonserver started by `up --detach` on the
 * sample models (plus one model whose initialize() fails, to be an unready model, and two copies
 * of the sleep-bound fixture for the assertions on measured figures). Windows are short (1-1.5 s)
 * to keep the file within a couple of minutes on two cores.
 */
describe("triton-dev perf (real Triton, sample models)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let work: string;

  const json = (stdout: string) => JSON.parse(stdout) as PerfReport;
  const partsUs = (l: LevelResult) =>
    l.server!.queueUs + l.server!.computeInputUs + l.server!.computeInferUs + l.server!.computeOutputUs;

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    work = await tempDir("perf");
    const models = await copySampleModels();
    await fs.mkdir(path.join(models, "broken_model", "1"), { recursive: true });
    await fs.writeFile(
      path.join(models, "broken_model", "config.pbtxt"),
      'name: "broken_model"\nbackend: "python"\nmax_batch_size: 8\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
    );
    await fs.writeFile(
      path.join(models, "broken_model", "1", "model.py"),
      "class TritonPythonModel:\n    def initialize(self, args):\n        raise RuntimeError('weights file missing')\n\n    def execute(self, requests):\n        return []\n",
    );
    const sleepyConfig = await fs.readFile(path.join(SLEEPY, "config.pbtxt"), "utf8");
    const addSleepy = async (name: string, config: string) => {
      await fs.cp(SLEEPY, path.join(models, name), { recursive: true });
      await fs.writeFile(path.join(models, name, "config.pbtxt"), config.replace('name: "sleepy"', `name: "${name}"`));
    };
    // Two instances, no batching: one request at a time gets half of what two or more in flight get.
    await addSleepy("sleeper", sleepyConfig.replace("count: 1", "count: 2"));
    // One instance that batches: 16 requests cost it 16 ms together, 136 ms one by one.
    await addSleepy("batcher", `${sleepyConfig}dynamic_batching { }\n`);
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout).toMatch(/9 of 11 models READY/);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  let sweep: PerfReport;

  it("sweeps concurrency 1:8: throughput rises and then flattens, latency grows, no errors", async () => {
    const csv = path.join(work, "sleeper.csv");
    const r = await runPerfCli(
      ["sleeper", "--concurrency-range", "1:8", "-p", "1000", "-r", "3", "--json", "-f", csv],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    sweep = json(r.stdout);
    const levels = sweep.sweeps[0]!.levels;
    expect(levels.map((l) => l.value)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(levels.every((l) => l.errorCount === 0 && l.requests > 100)).toBe(true);
    const thr = levels.map((l) => l.throughput);
    const figures = JSON.stringify(levels.map((l) => [l.value, Math.round(l.throughput), l.latency.p50Us]));
    console.info(`sleeper's sweep, [concurrency, infer/s, p50 us]: ${figures}`);
    // Rising: two in flight keep both instances sleeping at once, twice one at a time...
    expect(Math.max(...thr), figures).toBeGreaterThan(1.3 * thr[0]!);
    // ...then flattening: two instances of a call that sleeps 8 ms serve 250/s at most, however
    // many are in flight (the bound is the fixture's: a busy machine only lowers throughput)...
    expect(thr[7]!, figures).toBeLessThanOrEqual(2 * (1000 / 8));
    // ...so the other six wait their turn: at least three calls' sleep before their own.
    expect(levels[7]!.latency.p50Us, figures).toBeGreaterThan(levels[0]!.latency.p50Us);
    expect(levels[7]!.latency.p50Us, figures).toBeGreaterThan(3 * 8_000);
    for (const l of levels) {
      expect(l.latency.p50Us).toBeLessThanOrEqual(l.latency.p90Us);
      expect(l.latency.p90Us).toBeLessThanOrEqual(l.latency.p95Us);
      expect(l.latency.p95Us).toBeLessThanOrEqual(l.latency.p99Us);
      expectBatchedAtLeastOne(l);
    }
    const { header, rows } = await fs.readFile(csv, "utf8").then((t) => {
      const lines = t.trim().split("\n");
      return { header: lines[0], rows: lines.slice(1).map((l) => l.split(",")) };
    });
    expect(header).toBe(PERF_ANALYZER_HEADER);
    expect(rows.map((row) => Number(row[0]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(rows.every((row) => row.length === 13 && row.every((c) => c !== "" && Number.isFinite(Number(c))))).toBe(
      true,
    );
  }, 120_000);

  it("breaks each level down on the server, and the parts fit inside the client's latency", () => {
    for (const l of sweep.sweeps[0]!.levels) {
      const s = l.server!;
      expect(s.requests).toBeGreaterThan(0);
      expect(s.computeInferUs).toBeGreaterThan(0);
      expect(partsUs(l)).toBeLessThanOrEqual(s.avgRequestUs + 1);
      expect(partsUs(l)).toBeLessThanOrEqual(l.latency.avgUs);
      expect(l.networkServerUs).toBeGreaterThanOrEqual(0);
    }
  });

  it("speaks gRPC too, and breaks an ensemble down by its steps", async () => {
    const r = await runPerfCli(
      [
        "sentiment_pipeline",
        "-i",
        "grpc",
        "--concurrency-range",
        "1,2",
        "-p",
        "1000",
        "-r",
        "3",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const s = json(r.stdout).sweeps[0]!;
    expect(s.protocol).toBe("grpc");
    expect(s.endpoint).toBe(`127.0.0.1:${ports.grpc}`);
    for (const l of s.levels) {
      expect(l.errorCount).toBe(0);
      expect(l.throughput).toBeGreaterThan(0);
      expect(l.server!.composing!.map((c) => c.model)).toEqual(["bert_tokenizer", "sentiment_classifier"]);
      expect(partsUs(l)).toBeLessThanOrEqual(l.latency.avgUs);
    }
  }, 60_000);

  it("shows dynamic batching paying off at concurrency 16, on a staged sibling", async () => {
    // The sleep-bound fixture: 16 requests one by one take 16 x 8.5 ms, in one batch 16 ms, so
    // batching is worth about 8x by construction (the image model's numpy work would make the
    // ratio depend on what else the machine does while each side is measured).
    const loads = async () => {
      const { logFile } = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
        logFile: string;
      };
      return ((await fs.readFile(logFile, "utf8")).match(/loading: batcher:1/g) ?? []).length;
    };
    const loadsBefore = await loads();
    expect(loadsBefore).toBeGreaterThan(0);
    const r = await runPerfCli(
      ["batcher", "--compare", "batching", "--concurrency-range", "16", "-p", "1500", "-r", "4", "--json"],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = json(r.stdout);
    expect(report.sweeps.map((s) => [s.label, s.servedModel])).toEqual([
      ["no batching", "batcher__perf_nobatch"],
      ["dynamic batching", "batcher"],
    ]);
    const [off, on] = report.sweeps.map((s) => s.levels[0]!);
    const figures = JSON.stringify({
      comparison: report.comparison,
      batch: [off!.server!.avgBatchSize, on!.server!.avgBatchSize],
      p50Us: [off!.latency.p50Us, on!.latency.p50Us],
    });
    console.info(`batcher, no batching vs dynamic batching: ${figures}`);
    // One request per execution, give or take an execution caught between its two counters at a window's edge.
    expect(off!.server!.avgBatchSize, figures).toBeCloseTo(1, 2);
    expect(on!.server!.avgBatchSize, figures).toBeGreaterThan(4);
    // About 8x by construction (4x measured with both cores busy); 1.5x is what "pays off" asks.
    expect(report.comparison![0]!.ratio[1]!, figures).toBeGreaterThan(1.5);
    expect(on!.latency.p50Us, figures).toBeLessThan(off!.latency.p50Us);
    expect(r.stderr).toMatch(/staging batcher__perf_nobatch \(no batching\) beside batcher/);
    // The variant is gone again; the original kept serving throughout.
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    expect(await fs.readdir(state.repository)).not.toContain("batcher__perf_nobatch");
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const served = status.models.filter(
      (m: { name: string; state: string }) => m.name === "batcher__perf_nobatch" && m.state !== "UNAVAILABLE",
    );
    expect(served, JSON.stringify(status.models)).toEqual([]);
    expect(status.models.find((m: { name: string }) => m.name === "batcher").state).toBe("READY");
    // Staging and removing the sibling never touched the original's files: Triton did not reload it.
    expect(await loads()).toBe(loadsBefore);
    // Nor the sibling's own once it loaded: a second load mid-measurement (poll mode taking the
    // stub's fresh __pycache__ for an edit) would restart the server's counters, leaving the
    // variant with no server figures.
    const { logFile } = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
      logFile: string;
    };
    const log = await fs.readFile(logFile, "utf8");
    expect(log.match(/loading: batcher__perf_nobatch:1/g) ?? []).toHaveLength(1);
    expect(off!.server!.queueUs + off!.server!.computeInferUs, figures).toBeGreaterThan(0);
  }, 120_000);

  it("refuses a --compare config that lint rejects at once, naming the user's file, after showing the original's results", async () => {
    const bad = path.join(work, "bad-variant.pbtxt");
    const config = await fs.readFile(path.join(SAMPLE_MODELS, "image_classifier", "config.pbtxt"), "utf8");
    await fs.writeFile(bad, config.replace(/max_batch_size:\s*\d+/, "max_batch_size: -2"));
    const line = config.split("\n").findIndex((l) => /max_batch_size/.test(l)) + 1;
    const { logFile } = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
      logFile: string;
    };
    const logOffset = (await fs.stat(logFile)).size;
    const r = await runPerfCli(
      ["image_classifier", "--compare", `config=${bad}`, "--concurrency-range", "1", "-p", "500", "--no-history"],
      env,
    );
    expect(r.code, r.stderr).toBe(1);
    // At once: refused by lint before staging, so Triton never began loading a variant.
    const logSince = (await fs.readFile(logFile)).subarray(logOffset).toString("utf8");
    expect(logSince).not.toMatch(/loading: image_classifier__perf_/);
    expect(r.stderr).toMatch(
      new RegExp(
        `error: the variant bad-variant.pbtxt has \\d+ error\\(s\\), so it was not staged; the results above are those measured until then\\n {2}.*bad-variant\\.pbtxt:${line}:\\d+: error: `,
      ),
    );
    expect(r.stderr).toMatch(/hint: Fix .*bad-variant\.pbtxt/);
    expect(tableRows(r.stdout).get(1)).toBeDefined();
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    expect((await fs.readdir(state.repository)).filter((m: string) => m.includes("__perf_"))).toEqual([]);
  }, 90_000);

  it("prints the table and chart, and the difference from the previous run of the model", async () => {
    // The sweep above saved sleeper's first run, the previous one this is compared with.
    const r = await runPerfCli(["sleeper", "--concurrency-range", "2", "-p", "1000", "-r", "3"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(tableRows(r.stdout).get(2)).toBeDefined();
    expect(r.stdout).toMatch(/^avg latency \(ms\)$/m);
    expect(r.stdout).toMatch(/throughput \(infer\/s\)/);
    expect(r.stdout).toMatch(
      /compared with the previous run \(.*\):\n {2}concurrency 2: throughput [+-]\d+\.\d% \((within|beyond) the noise, ±\d+\.\d%\), p50 [+-]\d+\.\d%, p99 [+-]\d+\.\d%/,
    );
    expect(r.stdout).toMatch(/saved: .*perf\/sleeper\/.*\.json/);
  }, 60_000);

  it("sends an open-loop Poisson rate, data from a file, and request priorities", async () => {
    // The rate is the client's schedule; the sleep-bound batcher serves about 1000/s, so what
    // completes is what was sent, however busy the machine (a numpy model at 150/s need not keep up).
    const rate = await runPerfCli(
      [
        "batcher",
        "--request-rate-range",
        "150",
        "--request-distribution",
        "poisson",
        "-p",
        "1500",
        "-r",
        "3",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(rate.code, rate.stderr).toBe(0);
    const l = json(rate.stdout).sweeps[0]!.levels[0]!;
    expect(l.kind).toBe("rate");
    console.info(`batcher at a Poisson 150/s: ${l.throughput.toFixed(1)} infer/s`);
    expect(l.throughput, JSON.stringify(l)).toBeGreaterThan(150 * 0.75);
    expect(l.throughput, JSON.stringify(l)).toBeLessThan(150 * 1.25);

    const data = path.join(work, "texts.json");
    await fs.writeFile(
      data,
      JSON.stringify({ data: [{ TEXT_INPUT: ["a wonderful film"] }, { TEXT_INPUT: ["boring and awful"] }] }),
    );
    const file = await runPerfCli(
      [
        "bert_tokenizer",
        "--input-data",
        data,
        "--concurrency-range",
        "2",
        "-p",
        "1000",
        "-r",
        "3",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(file.code, file.stderr).toBe(0);
    expect(json(file.stdout).sweeps[0]!.levels[0]!.errorCount).toBe(0);

    const prio = await runPerfCli(
      [
        "sentiment_classifier",
        "--priority",
        "1",
        "--concurrency-range",
        "2",
        "-p",
        "1000",
        "-r",
        "3",
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(prio.code, prio.stderr).toBe(0);
    expect(json(prio.stdout).sweeps[0]!.levels[0]!.errorCount).toBe(0);
  }, 90_000);

  it("counts errors by kind instead of failing on them, and stops when every request fails", async () => {
    const r = await runPerfCli(
      [
        "sentiment_classifier",
        "--request-timeout-us",
        "1",
        "--concurrency-range",
        "4",
        "-p",
        "1000",
        "-r",
        "3",
        "--no-history",
      ],
      env,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/errors:\n {2}concurrency 4: \d+ x HTTP 503: Request timeout expired/);
    // A request that meets an idle instance can beat even a 1 µs timeout: then it stops on the share instead.
    expect(r.stderr).toMatch(
      /error: (every request failed for \d+\.\d s|99\.\d% of requests failed \(\d+ of \d+\) in \d+\.\d s) at concurrency 4(, more than the 10% a measurement allows)?: HTTP 503: Request timeout expired/,
    );
  }, 30_000);

  it("explains an unknown model, an unready model and flags it cannot use", async () => {
    const unknown = await runPerfCli(["no_such_model"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/error: model 'no_such_model' is not in the repository Triton serves/);
    expect(unknown.stderr).toMatch(/hint: Its models: .*bert_tokenizer.*image_classifier/);

    const unready = await runPerfCli(["broken_model"], env);
    expect(unready.code).toBe(1);
    expect(unready.stderr).toMatch(/error: model 'broken_model' is not ready \(UNAVAILABLE: .*weights file missing/);

    const shape = await runPerfCli(["bert_tokenizer", "--shape", "NOPE:3"], env);
    expect(shape.code).toBe(2);
    expect(shape.stderr).toMatch(/--shape names NOPE, which is not an input of bert_tokenizer/);

    const remote = await runPerfCli(
      ["image_classifier", "-u", `127.0.0.1:${ports.http}`, "--compare", "batching"],
      env,
    );
    expect(remote.code).toBe(2);
    expect(remote.stderr).toMatch(/--compare needs the server started by `triton-dev up`/);

    const nothing = await runPerfCli(["bert_tokenizer"], await testEnv());
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/nothing is running/);
  }, 60_000);

  it.skipIf(!PERF_ANALYZER_BIN)(
    "uses an installed perf_analyzer as the engine and reads its CSV into the same report",
    async () => {
      const paEnv = await perfAnalyzerEnv(env);
      const r = await runPerfCli(
        [
          "bert_tokenizer",
          "--engine",
          "perf_analyzer",
          "--perf-analyzer",
          PERF_ANALYZER_BIN!,
          "--concurrency-range",
          "2",
          "-p",
          "1000",
          "-s",
          "30",
          "--json",
          "--no-history",
        ],
        paEnv,
      );
      expect(r.code, r.stderr).toBe(0);
      const s = json(r.stdout).sweeps[0]!;
      expect(s.engine).toBe("perf_analyzer");
      const l = s.levels[0]!;
      expect(l.value).toBe(2);
      expect(l.throughput).toBeGreaterThan(100);
      expect(l.requests).toBeGreaterThan(100);
      expect(l.latency.p50Us).toBeGreaterThan(0);
      expect(l.server!.computeInferUs).toBeGreaterThan(0);
      expectBatchedAtLeastOne(l);
    },
    90_000,
  );

  it("on Ctrl-C stops, prints what it measured, removes the staged variant and exits 130", async () => {
    const p = spawnPerfCli(
      [
        "image_classifier",
        "--compare",
        "batching",
        "--concurrency-range",
        "4,8",
        "-p",
        "1000",
        "-r",
        "3",
        "--no-history",
      ],
      env,
    );
    await p.waitFor(/image_classifier__perf_nobatch concurrency 4, window 2/);
    p.child.kill("SIGINT");
    expect(await p.exit).toBe(130);
    expect(p.stderr()).toMatch(/interrupted: stopping the load and cleaning up/);
    expect(p.stderr()).toMatch(
      /error: interrupted \(Ctrl-C\) during concurrency 4; the results above are those measured until then/,
    );
    // A level cut short may also say its warm-up did not settle (a busy machine): "(interrupted, ...)".
    expect(tableRows(p.stdout()).get(4)?.join(" ")).toMatch(/\(interrupted(, [^)]*)?\)$/);
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    expect(await fs.readdir(state.repository)).not.toContain("image_classifier__perf_nobatch");
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const served = status.models.filter(
      (m: { name: string; state: string }) => m.name === "image_classifier__perf_nobatch" && m.state !== "UNAVAILABLE",
    );
    expect(served, JSON.stringify(status.models)).toEqual([]);
  }, 90_000);
});
