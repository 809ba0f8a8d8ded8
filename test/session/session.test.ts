/**
 * The session's orchestration (start, a failed start and what it cleans up, a stop asked for at
 * each step, the hand-over to a detached run's watcher, reattaching, stale records, status and
 * down) against the FakeDriver: the session's own code and real files, a server on 127.0.0.1.
 */
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolvePaths, type Paths } from "../../src/config/paths.js";
import { ServerStartError, StartInterruptedError, UserError } from "../../src/errors.js";
import { EventBus } from "../../src/events/bus.js";
import { freePort } from "../../src/net/ports.js";
import type { ReloadController } from "../../src/reload/controller.js";
import { stopRun } from "../../src/session/down.js";
import type { SessionEvent } from "../../src/session/events.js";
import { RunLifecycle } from "../../src/session/lifecycle.js";
import { startSession, type Session, type UpOptions } from "../../src/session/session.js";
import { collectStatus } from "../../src/session/status.js";
import { runSupervisor } from "../../src/session/supervisor.js";
import { isOurProcess } from "../../src/state/process.js";
import { readRunState, writeRunState, type RunState } from "../../src/state/run-state.js";
import { FakeClock } from "../../src/fake-clock.js";
import { FakeDriver, fakeRuntimes, type FakeDriverBehaviour } from "../../src/runtimes/fake-driver.js";
import { ECHO_IO, pythonConfig, pythonModel, writeFiles } from "../repo/helpers.js";

interface World {
  paths: Paths;
  models: string;
  driver: FakeDriver;
  bus: EventBus<SessionEvent>;
  events: SessionEvent[];
  lifecycle: RunLifecycle;
  options: UpOptions;
  start(): Promise<Session>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function world(behaviour: FakeDriverBehaviour = {}, o: Partial<UpOptions> = {}): Promise<World> {
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-session-"));
  const paths = resolvePaths({ TRITON_DEV_HOME: path.join(root, "home") });
  const models = path.join(root, "models");
  await writeFiles(models, { ...pythonModel("echo") });
  const driver = new FakeDriver("local", behaviour);
  const bus = new EventBus<SessionEvent>();
  const events: SessionEvent[] = [];
  bus.on((e) => events.push(e));
  const lifecycle = new RunLifecycle(bus);
  const options: UpOptions = {
    runtime: "local",
    modelsDir: models,
    reload: "explicit",
    pollSecs: 1,
    ports: { http: await freePort(), grpc: await freePort(), metrics: await freePort() },
    host: "127.0.0.1",
    detached: false,
    readyTimeoutMs: 20_000,
    lifecycle,
    ...o,
  };
  cleanups.push(async () => {
    await driver.close();
    await fsp.rm(root, { recursive: true, force: true });
  });
  return {
    paths,
    models,
    driver,
    bus,
    events,
    lifecycle,
    options,
    start: () => startSession(paths, options, bus, {}, fakeRuntimes(driver)),
  };
}

const runFolders = (paths: Paths) => fsp.readdir(paths.runsDir).catch(() => [] as string[]);
const types = (events: SessionEvent[]) => events.map((e) => e.type);

describe("startSession with a driver", () => {
  it("plans, stages, delivers, starts, records the run and reports it ready; its stop ends the server once", async () => {
    const w = await world();
    const session = await w.start();
    expect(w.driver.calls).toEqual(["options", "plan", "deliver", "start", "server-listening"]);
    expect(session.lifecycle.phase).toBe("ready");
    expect(session.models).toEqual([expect.objectContaining({ name: "echo", state: "READY" })]);
    const record = await readRunState(w.paths);
    expect(record).toMatchObject({ runtime: "local", runId: session.state.runId, ownerPid: process.pid });
    expect(record!.repositoryKey.value).toBe(session.state.repositoryKey.value);
    expect(types(w.events)).toEqual(expect.arrayContaining(["progress", "staged", "starting", "ready"]));
    // The start lock is released: its file is gone.
    expect(fs.readdirSync(w.paths.stateDir).filter((n) => n.includes("lock"))).toEqual([]);

    await Promise.all([session.stop("test"), session.stop("twice")]);
    expect(w.driver.calls.filter((c) => c === "server-stopped")).toHaveLength(1);
    expect(types(w.events).filter((t) => t === "stopping")).toHaveLength(1);
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
    expect(types(w.events).slice(-2)).toEqual(["stopping", "stopped"]);
    expect(session.lifecycle.phase).toBe("stopped");
  });

  it("holds out an ensemble whose step is not served here, naming that step, and counts both in the ready event", async () => {
    const w = await world();
    await writeFiles(w.models, {
      // tensorrt: not a backend of the local runtime, so the step is skipped with where it runs.
      "plan/config.pbtxt": `name: "plan"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n${ECHO_IO}`,
      "plan/1/model.plan": "engine",
      "ens/config.pbtxt": `name: "ens"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling { step [ { model_name: "plan" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }
`,
      "ens/1/.keep": "",
    });
    const session = await w.start();
    expect(w.events.find((e) => e.type === "staged")).toMatchObject({ models: ["echo"] });
    expect(session.state.notServed).toEqual([
      expect.objectContaining({
        model: "plan",
        why: "skipped",
        reason: expect.stringContaining("nvcr.io/nvidia/tritonserver:24.10-py3"),
      }),
      { model: "ens", why: "skipped", reason: "it runs plan (skipped), which is not served; it loads once that loads" },
    ]);
    expect(w.events.filter((e) => e.type === "skipped").map((e) => (e as { model: string }).model)).toEqual([
      "plan",
      "ens",
    ]);
    expect(w.events.find((e) => e.type === "ready")).toMatchObject({
      notServed: [expect.objectContaining({ model: "plan" }), expect.objectContaining({ model: "ens" })],
    });
    await session.stop();
  });

  it("watches the models folder once asked, and a stop closes the watcher before the server", async () => {
    const w = await world();
    const session = await w.start();
    await session.watch();
    expect(session.lifecycle.phase).toBe("watching");
    expect(w.events.find((e) => e.type === "watching")).toMatchObject({ modelsDir: w.models, mode: "explicit" });
    await session.stop();
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
  });
});

describe("a start that fails", () => {
  it("creates nothing when the plan fails, and leaves the start lock free", async () => {
    const w = await world({ planError: new UserError("no runtime here") });
    await expect(w.start()).rejects.toThrow("no runtime here");
    expect(await runFolders(w.paths)).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
    expect(w.lifecycle.phase).toBe("stopped");
    w.driver.behaviour = {};
    const again = await startSession(
      w.paths,
      { ...w.options, lifecycle: new RunLifecycle(w.bus) },
      w.bus,
      {},
      fakeRuntimes(w.driver),
    );
    await again.stop();
  });

  it("stops the server and removes the record when the server never becomes ready", async () => {
    const clock = new FakeClock();
    const w = await world({ liveGate: new Promise(() => {}) }, { readyTimeoutMs: 120_000, clock });
    const starting = w.start().catch((e: unknown) => e);
    // The readiness wait's first pause: from here the timeout is on the clock.
    await clock.sleeping();
    await clock.advance(120_000);
    const err = await starting;
    expect(err).toBeInstanceOf(ServerStartError);
    expect((err as Error).message).toMatch(/Triton at 127\.0\.0\.1:\d+ not ready after 120 s/);
    expect(w.driver.calls).toContain("server-stopped");
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
    expect(types(w.events)).toEqual(expect.arrayContaining(["stopping", "stopped"]));
  });

  it("waits for what the started run's readiness strategy says, on the run's clock, and its timeout names it and says where to look", async () => {
    const clock = new FakeClock();
    const looked: string[] = [];
    const w = await world(
      {
        readiness: ({ host, ports }) => ({
          description: `the fake pod at ${host}:${ports.http} running`,
          timeoutHint: "The fake pod's events say why.",
          check: async () => (looked.push("pod"), false),
        }),
      },
      { readyTimeoutMs: 60_000, clock },
    );
    const starting = w.start().catch((e: unknown) => e);
    await clock.sleeping();
    await clock.advance(60_000);
    const err = await starting;
    expect(err).toBeInstanceOf(ServerStartError);
    expect((err as Error).message).toMatch(/the fake pod at 127\.0\.0\.1:\d+ running not ready after 60 s/);
    expect((err as ServerStartError).hint).toMatch(/^The fake pod's events say why\. Raise the limit with --timeout/);
    expect(looked.length).toBeGreaterThan(1);
    expect(w.driver.running).toEqual([]);
  });

  it("hands the driver the run's clock, which its waits run on", async () => {
    const clock = new FakeClock();
    const w = await world({}, { clock });
    const session = await w.start();
    expect(w.driver.planClock).toBe(clock);
    await session.stop("test");
  });

  it("says what the server's exit during start was, with the driver's advice", async () => {
    const w = await world({ exitDuringStart: { code: 1, signal: null } });
    const err = await w.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerStartError);
    expect((err as Error).message).toMatch(/tritonserver exited during start \(code 1\)/);
    expect((err as ServerStartError).hint).toMatch(/the fake driver's advice/);
    expect(w.events.find((e) => e.type === "server-exited")).toMatchObject({ code: 1 });
    expect(await readRunState(w.paths)).toBeUndefined();
  });

  it("removes the run folder when every model is refused (nothing to serve)", async () => {
    const w = await world();
    await writeFiles(w.models, {
      "echo/config.pbtxt": pythonConfig("echo").replace("max_batch_size", "max_batch_sise"),
    });
    await expect(w.start()).rejects.toThrow(/nothing to serve/);
    expect(w.driver.calls).not.toContain("start");
    expect(await runFolders(w.paths)).toEqual([]);
  });

  it("when every model is skipped for its backend, hints where that backend runs, not a GPU alone (vllm_backend's sample)", async () => {
    const w = await world();
    await fsp.rm(path.join(w.models, "echo"), { recursive: true });
    await writeFiles(w.models, {
      "vllm_model/config.pbtxt": 'backend: "vllm"\ninstance_group [ { count: 1 kind: KIND_MODEL } ]\n',
      "vllm_model/1/model.json": '{"model": "facebook/opt-125m"}\n',
    });
    const err = await w.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toMatch(/nothing to serve/);
    // The default image has no vllm backend: `--runtime docker --gpus all` would fail there too.
    expect((err as UserError).hint).toContain(
      "`triton-dev up --runtime docker --image nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3`",
    );
    expect((err as UserError).hint).not.toContain("--gpus all");
    expect(w.driver.calls).not.toContain("start");
  });
});

describe("a stop asked for during the start (Ctrl-C)", () => {
  it("before anything is staged: the caller may end at once, and the start creates no server", async () => {
    const w = await world();
    expect(w.lifecycle.requestStop("received SIGINT")).toBe("nothing-started");
    await expect(w.start()).rejects.toBeInstanceOf(StartInterruptedError);
    expect(w.driver.calls).not.toContain("start");
    expect(await runFolders(w.paths)).toEqual([]);
  });

  it("once staged: no server is started and the run folder is removed", async () => {
    const w = await world();
    w.bus.on((e) => {
      if (e.type === "staged") expect(w.lifecycle.requestStop("received SIGINT")).toBe("start-aborted");
    });
    await expect(w.start()).rejects.toBeInstanceOf(StartInterruptedError);
    expect(w.driver.calls).not.toContain("start");
    expect(await runFolders(w.paths)).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
  });

  it("while the runtime starts: the server it started is stopped", async () => {
    let release!: () => void;
    const w = await world({ startGate: new Promise<void>((r) => (release = r)) });
    const starting = w.start().catch((e: unknown) => e);
    await until(() => w.driver.calls.includes("server-listening"));
    expect(w.lifecycle.requestStop("received SIGTERM")).toBe("start-aborted");
    expect(w.lifecycle.requestStop("received SIGTERM")).toBe("already-stopping");
    release();
    expect(await starting).toBeInstanceOf(StartInterruptedError);
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
    expect(w.events.find((e) => e.type === "stopping")).toMatchObject({ reason: "interrupted during start" });
  });

  it("while its models load: the wait ends and the server is stopped", async () => {
    const w = await world({ liveGate: new Promise(() => {}) });
    w.bus.on((e) => {
      if (e.type === "starting") setTimeout(() => w.lifecycle.requestStop("received SIGINT"), 50);
    });
    await expect(w.start()).rejects.toBeInstanceOf(StartInterruptedError);
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
  });

  it("after the start's last look but before the watcher: the run stops as it becomes ready, and no watcher starts", async () => {
    const w = await world();
    w.bus.on((e) => {
      if (e.type === "ready") w.lifecycle.requestStop("received SIGINT");
    });
    const session = await w.start();
    await session.lifecycle.stopped;
    expect(w.driver.running).toEqual([]);
    const controller = await session.watch();
    expect(types(w.events)).not.toContain("watching");
    // Its file watcher would keep the process alive after the stop.
    expect(closed(controller)).toBe(true);
  });

  it("while watching: the watcher closes and the server stops", async () => {
    const w = await world();
    const session = await w.start();
    const controller = await session.watch();
    expect(closed(controller)).toBe(false);
    expect(w.lifecycle.requestStop("received SIGINT")).toBe("stopping");
    await w.lifecycle.stopped;
    expect(closed(controller)).toBe(true);
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
  });
});

describe("a run recorded before this `up`", () => {
  it("is refused while it runs, naming it", async () => {
    const w = await world();
    const first = await w.start();
    const second = startSession(
      w.paths,
      { ...w.options, lifecycle: new RunLifecycle(w.bus) },
      w.bus,
      {},
      fakeRuntimes(w.driver),
    );
    await expect(second).rejects.toThrow(/already running \(pid \d+, local runtime/);
    expect(w.driver.running).toHaveLength(1);
    await first.stop();
  });

  it("a stale record (its server gone) is removed and the new run starts", async () => {
    const w = await world();
    await writeRunState(w.paths, staleRecord(w));
    const session = await w.start();
    expect((await readRunState(w.paths))!.runId).toBe(session.state.runId);
    await session.stop();
  });

  it("a stale record is removed even when the new start then fails", async () => {
    const w = await world({ planError: new UserError("no runtime here") });
    await writeRunState(w.paths, staleRecord(w));
    await expect(w.start()).rejects.toThrow("no runtime here");
    expect(await readRunState(w.paths)).toBeUndefined();
  });

  it("a detached run the driver hands over: its watcher is stopped and the new `up` takes the run", async () => {
    const w = await world({ handsOver: true, alive: () => true });
    const watcher = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    cleanups.push(async () => void watcher.kill("SIGKILL"));
    await until(() => isOurProcess(watcher.pid!, process.execPath));
    await writeRunState(w.paths, {
      ...staleRecord(w),
      detached: true,
      ownerPid: undefined,
      supervisorPid: watcher.pid,
    });
    const exited = new Promise((resolve) => watcher.once("exit", resolve));
    const session = await w.start();
    await exited;
    expect(isOurProcess(watcher.pid!, process.execPath)).toBe(false);
    expect((await readRunState(w.paths))!.runId).toBe(session.state.runId);
    await session.stop();
  });

  it("a server to reuse (reattach): its run folder and key are kept, models added meanwhile are staged", async () => {
    const w = await world();
    const first = await w.start();
    const { runId, runDir } = first.state;
    const key = first.state.repositoryKey.value;
    // The foreground run ends; its run folder stays (as a detached container's does).
    first.handle.release();
    await first.stop();
    await writeFiles(w.models, pythonModel("added"));
    w.driver.behaviour = { reuse: { runId, runDir } };
    const second = await startSession(
      w.paths,
      { ...w.options, lifecycle: new RunLifecycle(w.bus) },
      w.bus,
      {},
      fakeRuntimes(w.driver),
    );
    expect(second.state.runDir).toBe(runDir);
    expect(second.state.repositoryKey.value).toBe(key);
    expect(second.models.map((m) => m.name).sort()).toEqual(["added", "echo"]);
    await second.stop();
    // A failed start of a reused server never removes its folder.
    w.driver.behaviour = { reuse: { runId, runDir }, exitDuringStart: { code: 1, signal: null } };
    await expect(
      startSession(w.paths, { ...w.options, lifecycle: new RunLifecycle(w.bus) }, w.bus, {}, fakeRuntimes(w.driver)),
    ).rejects.toBeInstanceOf(ServerStartError);
    expect(fs.existsSync(runDir)).toBe(true);
  });
});

describe("handing the run to a detached watcher", () => {
  it("ends the foreground's part without stopping the server; the watcher watches until told to stop", async () => {
    const w = await world({}, { detached: true });
    const session = await w.start();
    session.handle.release();
    session.lifecycle.handOver();
    expect(session.lifecycle.phase).toBe("stopped");
    await session.stop("after the hand-over");
    expect(w.driver.running).toHaveLength(1);
    expect(await readRunState(w.paths)).toBeDefined();

    const signals = new EventEmitter();
    const printed: SessionEvent[] = [];
    const supervising = runSupervisor(
      w.paths,
      (e) => printed.push(e),
      {},
      fakeRuntimes(w.driver),
      signals as unknown as NodeJS.Process,
    );
    await until(() => printed.some((e) => e.type === "watching"));
    expect(w.driver.calls).toContain("supervise");
    expect(fs.existsSync(path.join(session.state.runDir, "supervisor.ready"))).toBe(true);
    signals.emit("SIGTERM");
    await supervising;
    expect(w.driver.calls).toContain("supervision-stopped");
    // The server is `down`'s to stop, not the watcher's.
    expect(w.driver.running).toHaveLength(1);
    const down = await stopRun(w.paths, 1_000, {}, undefined, fakeRuntimes(w.driver));
    expect(down.stopped?.report.what).toBe("the fake server stopped");
    expect(w.driver.calls).toContain("cleanup");
    expect(w.driver.running).toEqual([]);
    expect(await readRunState(w.paths)).toBeUndefined();
  });

  it("the watcher ends when the run's server is gone", async () => {
    const w = await world({}, { detached: true });
    const session = await w.start();
    session.handle.release();
    session.lifecycle.handOver();
    const clock = new FakeClock();
    const supervising = runSupervisor(w.paths, () => {}, {}, fakeRuntimes(w.driver), new EventEmitter(), 1000, clock);
    await until(() => fs.existsSync(path.join(session.state.runDir, "supervisor.ready")));
    await w.driver.close();
    // The liveness poll's next look, on the clock.
    await clock.advance(1000);
    await supervising;
    expect(w.driver.calls).toContain("supervision-stopped");
  });
});

describe("status and down", () => {
  it("status describes a running run with the driver's own fields", async () => {
    const w = await world();
    const session = await w.start();
    const status = await collectStatus(w.paths, Date.now, {}, fakeRuntimes(w.driver));
    expect(status).toMatchObject({
      running: true,
      runtime: "local",
      runId: session.state.runId,
      where: `fake port ${w.options.ports.http}`,
      details: [["fake", `port ${w.options.ports.http}`]],
      fake: { port: w.options.ports.http },
      serverReady: true,
      models: [expect.objectContaining({ name: "echo", state: "READY", served: true })],
    });
    await session.stop();
    expect(await collectStatus(w.paths, Date.now, {}, fakeRuntimes(w.driver))).toEqual({ running: false });
  });

  it("a stale record: status says so, and down cleans it up as stale", async () => {
    const w = await world();
    await writeRunState(w.paths, staleRecord(w));
    const status = await collectStatus(w.paths, Date.now, {}, fakeRuntimes(w.driver));
    expect(status.running).toBe(false);
    expect(status.problem).toMatch(/the fake server is no longer running/);
    const down = await stopRun(w.paths, 1_000, {}, undefined, fakeRuntimes(w.driver));
    expect(down.stale?.state.runId).toBe("stale-run");
    expect(down.stopped).toBeUndefined();
    expect(await readRunState(w.paths)).toBeUndefined();
  });
});

/** Whether a reload controller was closed (its file watcher released): its own flag, read from outside. */
function closed(controller: ReloadController): boolean {
  return (controller as unknown as { closed: boolean }).closed;
}

function staleRecord(w: World): RunState {
  const runDir = path.join(w.paths.runsDir, "stale-run");
  return {
    version: 1,
    runId: "stale-run",
    runtime: "local",
    pid: 2 ** 22 + 1,
    executable: process.execPath,
    ownerPid: undefined,
    detached: false,
    startedAt: new Date().toISOString(),
    modelsDir: w.models,
    runDir,
    repository: path.join(runDir, "repository"),
    logFile: path.join(runDir, "tritonserver.log"),
    host: "127.0.0.1",
    ports: w.options.ports,
    reload: "explicit",
    pollSecs: 1,
    repositoryKey: { header: "triton-dev-key", value: "0".repeat(32) },
  };
}

/** Polls `check` (each step of these tests is event-driven; this only bounds the wait). */
async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("the condition did not hold within the test's bound");
    await new Promise((r) => setTimeout(r, 20));
  }
}
