import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, SAMPLE_MODELS, tempDir, testEnv } from "../helpers/cli.js";
import { testToolsPython } from "../helpers/test-tools.js";
import type { PerfReport } from "../../src/perf/run.js";
import type { LevelResult } from "../../src/perf/profile.js";
import { PERF_ANALYZER_HEADER, runPerfCli } from "./helpers.js";

const TEXT = "The quick brown fox jumps over the lazy dog, twice!";

/** The streamer's responses for TEXT, counted by tritonclient's own gRPC stream, not by our code. */
function tritonclientCount(grpcPort: number): Promise<number> {
  const script = `
import queue, sys
import numpy as np
import tritonclient.grpc as g
q = queue.Queue()
c = g.InferenceServerClient("127.0.0.1:${grpcPort}")
c.start_stream(callback=lambda result, error: q.put((result, error)))
i = g.InferInput("TEXT", [1], "BYTES")
i.set_data_from_numpy(np.array([sys.argv[1].encode()], dtype=object))
c.async_stream_infer("text_streamer", [i], enable_empty_final_response=True)
n = 0
while True:
    result, error = q.get(timeout=30)
    if error is not None:
        raise SystemExit(str(error))
    r = result.get_response()
    if r.outputs:
        n += 1
    if r.parameters["triton_final_response"].bool_param:
        break
# The count is what the test needs: said before the stream is closed, whose end may be slow.
print(n, flush=True)
c.stop_stream()
`;
  return new Promise((resolve, reject) =>
    // Generous: python, numpy and tritonclient's gRPC start slowly on a busy machine.
    execFile(testToolsPython(), ["-c", script, TEXT], { timeout: 180_000 }, (err, stdout, stderr) => {
      const n = /^(\d+)$/m.exec(stdout)?.[1];
      // A count printed whole stands even if closing the stream afterwards did not finish.
      if (n !== undefined) return resolve(Number(n));
      reject(
        new Error(
          `${err?.message ?? "no count printed"}${err?.killed ? " (killed at the 180 s limit)" : ""}\n${stdout}\n${stderr}`,
        ),
      );
    }),
  );
}

/**
 * `triton-dev perf` on the decoupled sample model text_streamer, on the real tritonserver: over
 * gRPC's ModelStreamInfer and HTTP's generate_stream, closed and open loop, with the model's own
 * error stream mixed in. Windows are 1 s and at most 4 per level, so every level is bounded.
 */
describe("triton-dev perf on a streaming (decoupled) model, real Triton", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let work: string;
  let expected: number;
  const json = (stdout: string) => JSON.parse(stdout) as PerfReport;
  const data = async (name: string, texts: string[]) => {
    const file = path.join(work, name);
    await fs.writeFile(file, JSON.stringify({ data: texts.map((t) => ({ TEXT: [t] })) }));
    return file;
  };

  /** What holds for every level whose requests all sent TEXT. */
  const checkLevel = (l: LevelResult) => {
    const s = l.stream!;
    expect(s, "streaming figures").toBeDefined();
    expect(l.requests).toBeGreaterThan(0);
    expect(s.requests).toBe(l.requests);
    expect(s.responses).toBe(l.requests * expected);
    expect(s.responsesPerRequest).toBe(expected);
    // TOKEN_ID and SCORE, one element each, per response.
    expect(s.outputElements).toBe(2 * s.responses);
    expect(s.firstResponse.count).toBe(l.requests);
    expect(s.firstResponse.p50Us).toBeLessThanOrEqual(l.latency.p50Us);
    expect(s.firstResponse.p99Us).toBeLessThanOrEqual(l.latency.p99Us);
    expect(s.firstResponse.minUs).toBeLessThanOrEqual(l.latency.minUs);
    // The last data response (perf_analyzer's latency) lies between the first and the final one.
    expect(s.lastResponse.count).toBe(l.requests);
    expect(s.lastResponse.p50Us).toBeGreaterThanOrEqual(s.firstResponse.p50Us);
    expect(s.lastResponse.p50Us).toBeLessThanOrEqual(l.latency.p50Us);
    expect(s.interResponse.count).toBe(l.requests * (expected - 1));
    expect(s.interResponse.p50Us).toBeLessThanOrEqual(s.interResponse.p99Us);
    expect(s.responsesPerSec).toBeCloseTo(s.requestsPerSec * expected, 6);
    expect(l.trials).toBeLessThanOrEqual(4);
  };

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    work = await tempDir("perf-stream");
    const models = path.join(work, "models");
    await fs.cp(path.join(SAMPLE_MODELS, "text_streamer"), path.join(models, "text_streamer"), { recursive: true });
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout).toMatch(/1 of 1 models? READY/);
    expected = await tritonclientCount(ports.grpc);
    expect(expected).toBeGreaterThan(5);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("-i grpc: ModelStreamInfer, each request's real response count, TTFT within latency, ITL, CSV with the streaming columns", async () => {
    const csv = path.join(work, "stream.csv");
    const input = await data("text.json", [TEXT]);
    const r = await runPerfCli(
      [
        "text_streamer",
        "-i",
        "grpc",
        "--concurrency-range",
        "1,3",
        "-p",
        "1000",
        "-r",
        "4",
        "--input-data",
        input,
        "--json",
        "-f",
        csv,
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const sweep = json(r.stdout).sweeps[0]!;
    expect(sweep.streaming).toBe("ModelStreamInfer");
    expect(sweep.protocol).toBe("grpc");
    expect(sweep.levels.map((l) => l.value)).toEqual([1, 3]);
    for (const l of sweep.levels) {
      checkLevel(l);
      expect(l.errorCount).toBe(0);
    }
    // Two levels of at most 4 windows each (checkLevel: trials <= 4): the loop is bounded by its
    // windows, not by how fast this machine is; the test's timeout only keeps a hang from lasting.
    const lines = (await fs.readFile(csv, "utf8")).trim().split("\n");
    const header = lines[0]!.split(",");
    // perf_analyzer's streaming layout: Response Throughput third, then our columns after its own.
    expect(header.slice(0, 3)).toEqual(["Concurrency", "Inferences/Second", "Response Throughput"]);
    expect(header.slice(3, 14)).toEqual(PERF_ANALYZER_HEADER.split(",").slice(2));
    const at = header.indexOf("Responses/Request");
    expect(lines.slice(1).map((l) => Number(l.split(",")[at]))).toEqual([expected, expected]);
  }, 120_000);

  it("-i http: generate_stream (server-sent events) measures the same responses, and the table shows the streaming columns", async () => {
    const input = await data("text.json", [TEXT]);
    const r = await runPerfCli(
      ["text_streamer", "--concurrency-range", "2", "-p", "1000", "-r", "4", "--input-data", input, "--json"],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const sweep = json(r.stdout).sweeps[0]!;
    expect(sweep.streaming).toBe("generate_stream");
    expect(sweep.protocol).toBe("http");
    checkLevel(sweep.levels[0]!);
    const text = await runPerfCli(
      ["text_streamer", "--concurrency-range", "1", "-p", "1000", "-r", "3", "--input-data", input, "--no-history"],
      env,
    );
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/Concurrency\s+Req\/s\s+Resp\/s\s+Resp\/req\s+TTFT p50/);
    // The progress line says what a stream counts.
    expect(text.stderr).toMatch(/window 1: [\d.]+ requests\/s, \d+ responses\/s, avg/);
    expect(text.stderr).not.toMatch(/infer\/s/);
    expect(text.stdout).toMatch(new RegExp(`\\n1\\s+[\\d.]+\\s+[\\d.]+\\s+${expected}\\.0\\s`));
  }, 120_000);

  it("counts the model's error stream as errors, beside the requests that stream, over gRPC and HTTP", async () => {
    const input = await data("mixed.json", [TEXT, "   "]);
    for (const protocol of ["grpc", "http"]) {
      const r = await runPerfCli(
        [
          "text_streamer",
          "-i",
          protocol,
          "--concurrency-range",
          "2",
          "-p",
          "1000",
          "-r",
          "3",
          "--input-data",
          input,
          "--json",
          "--no-history",
        ],
        env,
      );
      // Half the requests failing is no measurement of the model: the run stops there, exit 1,
      // with what it counted.
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/failed/);
      const l = json(r.stdout).sweeps[0]!.levels[0]!;
      expect(l.stable).toBe(false);
      // Payloads alternate: as many error streams as good ones, give or take those in flight at the cuts.
      expect(l.errorCount).toBeGreaterThan(0);
      expect(Math.abs(l.errorCount - l.requests)).toBeLessThanOrEqual(3 * 2);
      expect(Object.keys(l.errors)).toHaveLength(1);
      expect(l.stream!.responsesPerRequest).toBe(expected);
    }
  }, 120_000);

  it("open loop (--request-rate-range): the same per-request counts at a fixed rate", async () => {
    const input = await data("text.json", [TEXT]);
    const r = await runPerfCli(
      [
        "text_streamer",
        "-i",
        "grpc",
        "--request-rate-range",
        "10",
        "-p",
        "1000",
        "-r",
        "4",
        "--input-data",
        input,
        "--json",
        "--no-history",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const l = json(r.stdout).sweeps[0]!.levels[0]!;
    checkLevel(l);
    expect(l.stream!.requestsPerSec).toBeGreaterThan(5);
    expect(l.stream!.requestsPerSec).toBeLessThan(15);
  }, 120_000);
});
