/**
 * The run owner's one dispatch (session/run-owner.ts) against the FakeDriver: each trigger, in the
 * phase it comes in, does what `up` and the detached watcher did with it. Signals come from an
 * EventEmitter, time from a FakeClock; the steps wait for the bus's events, not for time.
 */
import { EventEmitter } from "node:events";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { EventBus } from "../../src/events/bus.js";
import { FakeClock } from "../../src/fake-clock.js";
import { freePort } from "../../src/net/ports.js";
import type { SessionEvent } from "../../src/session/events.js";
import { createRunOwner, type RunOwner } from "../../src/session/run-owner.js";
import type { UpOptions } from "../../src/session/session.js";
import { runSupervisor } from "../../src/session/supervisor.js";
import { FakeDriver, fakeRuntimes, type FakeDriverBehaviour } from "../../src/runtimes/fake-driver.js";
import { pythonModel, writeFiles } from "../repo/helpers.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Resolves with the first event of `type` on `bus` (wrangler's waitFor on its fake bus). */
function waitFor<T extends SessionEvent["type"]>(
  bus: EventBus<SessionEvent>,
  type: T,
): Promise<Extract<SessionEvent, { type: T }>> {
  return new Promise((resolve) => {
    const off: () => void = bus.on((e) => {
      if (e.type !== type) return;
      off();
      resolve(e as Extract<SessionEvent, { type: T }>);
    });
  });
}

async function world(behaviour: FakeDriverBehaviour = {}) {
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-owner-"));
  const paths = resolvePaths({ TRITON_DEV_HOME: path.join(root, "home") });
  const models = path.join(root, "models");
  await writeFiles(models, { ...pythonModel("echo") });
  const driver = new FakeDriver("local", behaviour);
  const bus = new EventBus<SessionEvent>();
  const events: SessionEvent[] = [];
  bus.on((e) => events.push(e));
  const signals = new EventEmitter();
  const reraised: NodeJS.Signals[] = [];
  const clock = new FakeClock();
  const owner: RunOwner = createRunOwner(bus, {
    runtimes: fakeRuntimes(driver),
    signals,
    reraise: (s) => reraised.push(s),
    clock,
  });
  const options: Omit<UpOptions, "lifecycle" | "clock"> = {
    runtime: "local",
    modelsDir: models,
    reload: "explicit",
    pollSecs: 1,
    ports: { http: await freePort(), grpc: await freePort(), metrics: await freePort() },
    host: "127.0.0.1",
    detached: false,
    readyTimeoutMs: 20_000,
  };
  cleanups.push(async () => {
    owner.unlisten();
    await driver.close();
    await fsp.rm(root, { recursive: true, force: true });
  });
  return { paths, driver, bus, events, signals, reraised, clock, owner, start: () => owner.start(paths, options, {}) };
}

describe("the run owner's dispatch", () => {
  it("a signal while watching stops the watcher and the server once; a second one is not re-raised", async () => {
    const w = await world();
    w.owner.listen();
    const session = await w.start();
    const controller = await w.owner.watch(session);
    expect(controller).toBeDefined();
    const stopped = waitFor(w.bus, "stopped");
    w.signals.emit("SIGINT", "SIGINT");
    w.signals.emit("SIGINT", "SIGINT");
    await stopped;
    await w.owner.lifecycle.stopped;
    expect(w.driver.running).toEqual([]);
    expect(w.reraised).toEqual([]);
    expect(w.events.filter((e) => e.type === "stopping")).toHaveLength(1);
  });

  it("a signal before anything is staged ends the process at once (the signal is raised again)", async () => {
    const w = await world();
    w.owner.listen();
    w.owner.dispatch({ type: "signal", signal: "SIGTERM" });
    expect(w.reraised).toEqual(["SIGTERM"]);
    expect(w.signals.listenerCount("SIGTERM")).toBe(0);
  });

  it("the server exiting by itself ends the run, says so with its last lines, and marks a crash failed", async () => {
    const w = await world();
    const session = await w.start();
    await w.owner.watch(session);
    const exited = waitFor(w.bus, "server-exited");
    await w.driver.close();
    expect(await exited).toMatchObject({ type: "server-exited" });
    await w.owner.lifecycle.stopped;
    expect(w.owner.lifecycle.phase).toBe("stopped");
  });

  it("the dashboard's quit stops the run; a reload request reaches the reload controller", async () => {
    const w = await world();
    const session = await w.start();
    await w.owner.watch(session);
    const reloading = new Promise<SessionEvent>((resolve) =>
      w.bus.on((e) => e.type !== "watching" && "model" in e && e.model === "echo" && resolve(e)),
    );
    w.owner.dispatch({ type: "reload-request", model: "echo" });
    await reloading;
    w.owner.dispatch({ type: "dashboard-quit" });
    await w.owner.lifecycle.stopped;
    expect(w.driver.running).toEqual([]);
  });

  it("a detached run's watcher ends when its liveness poll (on the clock) finds the server gone", async () => {
    const w = await world();
    const session = await w.start();
    w.owner.handOver(session);
    const printed: SessionEvent[] = [];
    let printedWatching: () => void = () => {};
    const watching = new Promise<void>((resolve) => (printedWatching = resolve));
    const supervising = runSupervisor(
      w.paths,
      (e) => {
        printed.push(e);
        if (e.type === "watching") printedWatching();
      },
      {},
      fakeRuntimes(w.driver),
      new EventEmitter(),
      1000,
      w.clock,
    );
    await watching;
    w.driver.behaviour = { ...w.driver.behaviour, alive: () => false };
    await w.clock.advance(1000);
    await supervising;
    expect(w.driver.calls).toContain("supervision-stopped");
  });
});
