import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { type RunVerdicts, VerdictWatch, verdictDiagnostics } from "../../src/lsp/verdict.js";
import type { RunState } from "../../src/state/run-state.js";
import { FakeClock } from "../../src/fake-clock.js";
import { advanceUntil } from "../helpers/fake-time.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

const CONFIG = `name: "det"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "images" data_type: TYPE_FP32 dims: [ 3, 640, 640 ] } ]
output [ { name: "boxes" data_type: TYPE_FP32 dims: [ 100, 4 ] } ]
`;

describe("a verdict as findings on the user's files", () => {
  it("a reason that quotes a tensor lands on that tensor in config.pbtxt", () => {
    const [d] = verdictDiagnostics(
      {
        model: "det",
        outcome: "failed",
        reason:
          "load failed for model 'det': version 1 is at UNAVAILABLE state: Invalid argument: model 'det', tensor 'boxes': the model expects 3 dimensions (shape [-1,100,6]) but the model configuration specifies 3 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,100,4])",
      },
      "/repo/det",
      "http://127.0.0.1:8000",
      CONFIG,
    );
    expect(d).toMatchObject({ file: "/repo/det/config.pbtxt", line: 5, column: 18, code: "triton-load-failed" });
    expect(d!.message).toMatch(/^Triton \(http:\/\/127\.0\.0\.1:8000\) could not load 'det': load failed/);
  });

  it("a reason that names nothing in the config lands on its first line", () => {
    const [d] = verdictDiagnostics(
      { model: "det", outcome: "failed", reason: "out of memory" },
      "/repo/det",
      "s",
      CONFIG,
    );
    expect(d).toMatchObject({ line: 1, column: 1 });
  });
});

describe("VerdictWatch: the run's state files", () => {
  it("Triton's refusals at the start (a detached run's events), replaced by each model's last edit, and gone with the run", async () => {
    const stateDir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-verdict-"));
    dirs.push(stateDir);
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: stateDir, TRITON_DEV_HOME: stateDir });
    const runDir = path.join(stateDir, "runs", "r1");
    await fsp.mkdir(runDir, { recursive: true });
    const state: RunState = {
      version: 1,
      runId: "r1",
      runtime: "local",
      pid: 1,
      executable: "/bin/tritonserver",
      detached: true,
      notServed: [{ model: "gpu_only", why: "skipped", reason: "needs a GPU" }],
      startedAt: new Date().toISOString(),
      modelsDir: "/repo",
      runDir,
      repository: path.join(runDir, "repository"),
      logFile: path.join(runDir, "triton.log"),
      host: "127.0.0.1",
      ports: { http: 8000, grpc: 8001, metrics: 8002 },
      reload: "explicit",
      pollSecs: 2,
      repositoryKey: { header: "k", value: "v" },
    };
    const seen: Array<RunVerdicts | undefined> = [];
    // The run's state and events are polled on the clock, every 20 ms of it; the files are real.
    const clock = new FakeClock();
    const watch = new VerdictWatch({ paths, intervalMs: 20, onChange: (v) => seen.push(v), clock });
    const until = async (pred: (v: RunVerdicts | undefined) => boolean) => {
      await advanceUntil(clock, () => seen.length > 0 && pred(seen.at(-1)), 20, "verdicts matching").catch(() => {
        throw new Error(`verdicts never matched; last: ${JSON.stringify(seen.at(-1) && [...seen.at(-1)!.verdicts])}`);
      });
      return seen.at(-1);
    };
    watch.start();
    try {
      await until((v) => v === undefined);
      await fsp.writeFile(paths.runFile, JSON.stringify(state));
      await fsp.writeFile(
        path.join(runDir, "events.jsonl"),
        JSON.stringify({
          type: "ready",
          endpoints: {},
          elapsedMs: 1,
          models: [
            {
              name: "a",
              version: "1",
              state: "UNAVAILABLE",
              reason: `${runDir}/repository/a/1/model.py(3): initialize`,
            },
            { name: "b", version: "1", state: "READY" },
          ],
        }) + "\n",
      );
      let v = await until((x) => x?.verdicts.has("a") === true);
      expect(v!.verdicts.get("a")).toEqual({
        model: "a",
        outcome: "failed",
        reason: "/repo/a/1/model.py(3): initialize",
      });
      expect(v!.verdicts.get("gpu_only")).toMatchObject({ outcome: "skipped", reason: "needs a GPU" });
      expect(v!.verdicts.has("b")).toBe(false);

      // A later edit that loaded replaces the failure; one that failed says Triton's reason.
      await fsp.writeFile(
        path.join(runDir, "edits.json"),
        JSON.stringify([
          { id: 1, model: "a", savedAt: "", outcome: "ready", latencyMs: 1, phases: [] },
          { id: 2, model: "b", savedAt: "", outcome: "failed", latencyMs: 1, phases: [], reason: "boom" },
        ]),
      );
      v = await until((x) => x?.verdicts.has("b") === true && !x.verdicts.has("a"));
      expect(v!.verdicts.get("b")).toEqual({ model: "b", outcome: "failed", reason: "boom" });

      // `down` removes the record: no run, no verdicts.
      await fsp.rm(paths.runFile);
      await until((x) => x === undefined);
    } finally {
      watch.stop();
      watch.stop();
    }
    // Stopped: neither its own poll nor the events' follower is left on the clock.
    expect(clock.pending).toBe(0);
  });
});
