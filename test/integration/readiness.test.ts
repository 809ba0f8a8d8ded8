import fs from "node:fs/promises";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findProcesses } from "../../src/state/process.js";
import type { RunState } from "../../src/state/run-state.js";
import { servedModels } from "../../src/reload/stage.js";
import { closingFetch, TritonHttpClient } from "../../src/triton/http-client.js";
import { ServerPoller } from "../../src/ui/controllers/server-poller.js";
import { applySessionEvent, initialState, type DashboardState } from "../../src/ui/state.js";
import { Store } from "../../src/ui/store.js";
import { userPathsOf } from "../../src/state/staged-paths.js";
import type { SessionEvent } from "../../src/session/events.js";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { UpProcess } from "../helpers/up-process.js";
import { endedBeforeExitTimeout, runLogFile } from "../helpers/exit-wait.js";

/*
 * Readiness, the reasons of models that do not load, the user's paths
 * in what Triton says, and how long stopping takes after failed reloads, on the
 * real tritonserver of the local runtime, in poll and explicit mode.
 */

const CONFIG = (name: string) => `name: "${name}"
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const MODEL = (offset: number, o: { initRaises?: boolean; executeRaises?: boolean } = {}) => `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
${o.initRaises ? '    def initialize(self, args):\n        raise RuntimeError("cannot initialize on purpose")\n\n' : ""}    def execute(self, requests):
${o.executeRaises ? '        raise RuntimeError("cannot execute on purpose")\n' : ""}        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + ${offset.toFixed(1)}).astype(np.float32))]))
        return out
`;

/** An ensemble of `step`: Triton gives no reason of its own when its step fails. */
const ENSEMBLE = (name: string, step: string) => `name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [ { model_name: "${step}" model_version: -1 input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" } } ]
}
`;

async function writeModel(repo: string, name: string, modelPy: string): Promise<void> {
  await fs.mkdir(path.join(repo, name, "1"), { recursive: true });
  await fs.writeFile(path.join(repo, name, "config.pbtxt"), CONFIG(name));
  await saveFile(path.join(repo, name, "1", "model.py"), modelPy);
}

/** An editor's save: a temp file beside the target, renamed over it. */
async function saveFile(file: string, content: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${Date.now()}`);
  await fs.writeFile(tmp, content);
  await fs.rename(tmp, file);
}

interface Status {
  serverReady: boolean;
  readiness: { ready: boolean; waitingFor: string[]; notServed: string[]; means: string };
  models: Array<{ name: string; state: string; reason?: string; served: boolean }>;
  edits?: Array<{ model: string; outcome: string; reason?: string; phases: Array<{ phase: string }> }>;
  runDir?: string;
}

const status = async (env: NodeJS.ProcessEnv): Promise<Status> =>
  JSON.parse((await runCli(["status", "--json"], env)).stdout) as Status;

/** Triton's own answer, from outside triton-dev. */
const tritonReady = async (http: number): Promise<boolean> =>
  (await fetch(`http://127.0.0.1:${http}/v2/health/ready`)).status === 200;

/** Polls `probe` until it holds; fails with `what` after `ms`. */
async function eventually(what: string, probe: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Every model is READY or not served, and triton-dev, status --json and Triton agree on it. While
 * Triton forgets a failed load it says ready for the moment its placeholder is READY, then not
 * while it unloads it (status, which includes Triton's answer, says the same): held three checks
 * in a row.
 */
async function expectReadyEverywhere(env: NodeJS.ProcessEnv, http: number): Promise<Status> {
  let inARow = 0;
  await eventually("triton-dev and Triton both saying ready", async () => {
    const s = await status(env);
    const triton = await tritonReady(http);
    inARow = s.serverReady && triton ? inARow + 1 : 0;
    if (inARow < 3) await new Promise((r) => setTimeout(r, 750));
    return inARow >= 3;
  });
  const s = await status(env);
  expect(s.readiness).toMatchObject({ ready: true, waitingFor: [] });
  expect((await runCli(["status"], env)).stdout).toMatch(
    /^ready {5}yes( for the models it serves)?: \d+ of \d+ models? READY/m,
  );
  return s;
}

/** The dashboard's readiness, as `triton-dev dashboard` builds it: the run's events, then a poll of Triton. */
async function dashboardState(state: RunState): Promise<DashboardState> {
  const events = readFileSync(path.join(state.runDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SessionEvent);
  const store = new Store<DashboardState>(
    events.reduce(applySessionEvent, initialState({ now: Date.now(), ownsServer: false })),
  );
  const client = new TritonHttpClient(`http://127.0.0.1:${state.ports.http}`, {
    repositoryKey: state.repositoryKey,
    fetch: closingFetch,
  });
  const poller = new ServerPoller({
    store,
    client,
    env: process.env,
    userPaths: userPathsOf(state),
    served: () => servedModels(state.runDir),
  });
  await poller.tick();
  poller.stop();
  return store.getState();
}

const runRecord = (env: NodeJS.ProcessEnv): RunState =>
  JSON.parse(readFileSync(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as RunState;

const noStagingPaths = (text: string | undefined) =>
  expect(text ?? "").not.toMatch(/[/\\]runs[/\\][^/\\]+[/\\](repository|store)[/\\]/);

describe("a detached run in poll mode: readiness, reasons and the user's paths (real Triton)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let up: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    repo = await tempDir("ready");
    await writeModel(repo, "good", MODEL(1));
    // Fails at up: its initialize raises.
    await writeModel(repo, "bad", MODEL(2, { initRaises: true }));
    // Runs bad: Triton never tries it, and says nothing of why.
    await fs.mkdir(path.join(repo, "pipe", "1"), { recursive: true });
    await fs.writeFile(path.join(repo, "pipe", "config.pbtxt"), ENSEMBLE("pipe", "bad"));
    // Loads, and raises at each request.
    await writeModel(repo, "raises", MODEL(3, { executeRaises: true }));
    env = await testEnv();
    ports = await freePorts();
    up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env, 60_000);
  }, 90_000);

  it("up --detach exits 0 when ready, naming each model it does not serve with Triton's reason in the user's paths", () => {
    expect(up.code, up.stdout + up.stderr).toBe(0);
    expect(up.stdout).toMatch(
      /^partly ready: 2 of 4 models READY \(good, raises\); not READY: bad \(UNAVAILABLE: .*cannot initialize on purpose.*\), pipe \(UNAVAILABLE: it runs bad, which failed to load\)$/m,
    );
    const bad = /^bad: not served, it failed to load: (.*)$/m.exec(up.stderr)?.[1];
    expect(bad).toMatch(/cannot initialize on purpose/);
    expect(bad).toContain(path.join(repo, "bad", "1", "model.py"));
    expect(up.stderr).toMatch(
      /^pipe: not served, it failed to load: it runs bad, which failed to load; it loads once that step loads$/m,
    );
    expect(up.stderr).not.toMatch(/reasons above|Triton did not load it/);
    noStagingPaths(up.stdout + up.stderr);
  });

  it("status, status --json, the dashboard and Triton's /v2/health/ready agree: ready, with the failed models listed apart", async () => {
    const s = await expectReadyEverywhere(env, ports.http);
    expect(s.readiness.notServed).toEqual(["bad", "pipe"]);
    const byName = Object.fromEntries(s.models.map((m) => [m.name, m]));
    expect(byName.good).toMatchObject({ state: "READY", served: true });
    expect(byName.bad).toMatchObject({ state: "UNAVAILABLE", served: false });
    expect(byName.bad!.reason).toContain(path.join(repo, "bad", "1", "model.py"));
    expect(byName.pipe!.reason).toMatch(/it runs bad, which failed to load/);
    for (const m of s.models) noStagingPaths(m.reason);

    const d = await dashboardState(runRecord(env));
    expect(d.server).toMatchObject({ ready: true, waitingFor: [] });
    expect(d.server.notServed).toEqual(expect.arrayContaining(["bad", "pipe"]));
    const row = d.models.find((m) => m.name === "bad")!;
    expect(row).toMatchObject({ state: "UNAVAILABLE", withdrawn: true });
    expect(row.reason).toContain(path.join(repo, "bad", "1", "model.py"));
  });

  it("shows the error a model raises at a request in the user's paths: perf and the log", async () => {
    const perf = await runCli(["perf", "raises", "--concurrency-range", "1", "--no-history"], env, 120_000);
    expect(perf.code).not.toBe(0);
    expect(perf.stderr).toMatch(/cannot execute on purpose/);
    expect(perf.stderr).toContain(path.join(repo, "raises", "1", "model.py"));
    noStagingPaths(perf.stderr);
    const logs = await runCli(["logs", "-n", "400"], env);
    expect(logs.stdout).toContain(path.join(repo, "bad", "1", "model.py"));
    noStagingPaths(logs.stdout);
  }, 150_000);

  it("a failed model deleted ends its timeline in unloaded; a broken one added later is listed apart and the run stays ready", async () => {
    await fs.rm(path.join(repo, "pipe"), { recursive: true });
    await fs.rm(path.join(repo, "bad"), { recursive: true });
    await eventually("the deletions' timeline entries ending", async () => {
      const e = (await status(env)).edits ?? [];
      return ["bad", "pipe"].every((m) => e.find((x) => x.model === m)?.outcome === "unloaded");
    });
    const s = await expectReadyEverywhere(env, ports.http);
    expect(s.edits!.find((e) => e.model === "bad")!.phases.map((p) => p.phase)).toEqual([
      "saved",
      "removed",
      "unloaded",
    ]);
    expect(s.readiness.notServed).toEqual([]);
    expect(s.models.map((m) => m.name)).toEqual(["good", "raises"]);

    await writeModel(repo, "later", MODEL(4, { initRaises: true }));
    await eventually("the broken model's edit failing", async () =>
      ((await status(env)).edits ?? []).some((e) => e.model === "later" && e.outcome === "failed"),
    );
    const after = await expectReadyEverywhere(env, ports.http);
    expect(after.readiness.notServed).toEqual(["later"]);
    const later = after.models.find((m) => m.name === "later")!;
    expect(later).toMatchObject({ state: "UNAVAILABLE", served: false });
    expect(later.reason).toContain(path.join(repo, "later", "1", "model.py"));
    const d = await dashboardState(runRecord(env));
    expect(d.server).toMatchObject({ ready: true, notServed: ["later"] });
    // A fix saved: served, and counted again.
    await saveFile(path.join(repo, "later", "1", "model.py"), MODEL(4));
    await eventually("the fix loading", async () =>
      ((await status(env)).edits ?? []).some((e) => e.model === "later" && e.outcome === "ready"),
    );
    expect((await expectReadyEverywhere(env, ports.http)).readiness.notServed).toEqual([]);
  }, 240_000);
});

/**
 * Edits as a user makes them, failed reloads included: an edit, a broken edit (which Triton 2.51
 * keeps counting as a live model until its exit timeout), the fix, a broken model added, then deleted.
 */
async function editSequence(repo: string, settled: (model: string, outcome: string) => Promise<void>): Promise<void> {
  await saveFile(path.join(repo, "good", "1", "model.py"), MODEL(2));
  await settled("good", "ready");
  await saveFile(path.join(repo, "good", "1", "model.py"), MODEL(3, { initRaises: true }));
  await settled("good", "failed");
  await saveFile(path.join(repo, "good", "1", "model.py"), MODEL(4));
  await settled("good", "ready");
  await writeModel(repo, "added", MODEL(5, { initRaises: true }));
  await settled("added", "failed");
  await fs.rm(path.join(repo, "added"), { recursive: true });
  await settled("added", "unloaded");
}

const ourServers = (env: NodeJS.ProcessEnv) =>
  findProcesses((argv) => argv[0]!.endsWith("tritonserver") && argv.join(" ").includes(env.TRITON_DEV_STATE_DIR!));

// These stops wait for every unload (TRITON_DEV_STOP=wait-all): the path a model with `finalize`
// takes, on which a failed reload's load that Triton keeps counting would hold the stop until its
// exit timeout. The default stop, which waits only for finalize, is test/integration/stop.test.ts.
describe("stopping after failed reloads (real Triton)", () => {
  it("down, in poll mode, stops within Triton's exit timeout, saying what it waits for", async () => {
    const repo = await tempDir("down");
    await writeModel(repo, "good", MODEL(1));
    await writeModel(repo, "other", MODEL(7));
    const env = await testEnv({ TRITON_DEV_STOP: "wait-all" });
    const ports = await freePorts();
    try {
      const up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
      expect(up.code, up.stderr).toBe(0);
      await editSequence(repo, (model, outcome) =>
        eventually(`${model} ${outcome}`, async () => {
          const e = ((await status(env)).edits ?? []).find((x) => x.model === model);
          return e?.outcome === outcome;
        }),
      );
      await expectReadyEverywhere(env, ports.http);
      const logFile = await runLogFile(env);
      const t0 = Date.now();
      const down = await runCli(["down"], env, 60_000);
      const ms = Date.now() - t0;
      expect(down.code, down.stderr).toBe(0);
      expect(ourServers(env)).toEqual([]);
      // Before: Triton waited out its 10 s exit timeout on the failed reload's load ("Found 3 live
      // models" with 2 there): 12-13 s. Now the stop ends it once the unloads are done: its log's
      // countdown never reaches 0, however long a busy machine makes the unloads and the CLI's start.
      const exit = endedBeforeExitTimeout(await fs.readFile(logFile, "utf8"));
      expect(exit, `down took ${ms} ms`).toMatchObject({ expired: false });
      if (ms > 2_000) expect(down.stderr).toMatch(/waiting for Triton to unload (good, other|good|other)/);
    } finally {
      await runCli(["down"], env, 60_000);
    }
  }, 300_000);

  it("a foreground up in explicit mode, stopped as the dashboard's q stops it, does too", async () => {
    const repo = await tempDir("quit");
    await writeModel(repo, "good", MODEL(1));
    await writeModel(repo, "other", MODEL(7));
    const env = await testEnv({ TRITON_DEV_STOP: "wait-all" });
    const ports = await freePorts();
    const up = new UpProcess(["--models", repo, "--reload", "explicit", ...portArgs(ports)], env);
    try {
      await up.waitFor((e) => e.type === "watching", 120_000);
      await editSequence(repo, async (model, outcome) => {
        await up.waitFor((e) => e.type === "edit" && e.model === model && e.phase === outcome, 60_000);
        up.events.length = 0;
      });
      // Explicit mode asks Triton to forget through the repository API: ready again.
      await expectReadyEverywhere(env, ports.http);
      const logFile = await runLogFile(env);
      const t0 = Date.now();
      expect(await up.stop()).toBe(0);
      const ms = Date.now() - t0;
      expect(ourServers(env)).toEqual([]);
      const exit = endedBeforeExitTimeout(await fs.readFile(logFile, "utf8"));
      expect(exit, `the stop took ${ms} ms`).toMatchObject({ expired: false });
      if (ms > 2_000)
        expect(up.events).toContainEqual(
          expect.objectContaining({ type: "progress", step: "stop", message: expect.stringMatching(/^waiting for/) }),
        );
    } finally {
      await up.stop();
      await runCli(["down"], env, 60_000);
    }
  }, 300_000);
});
