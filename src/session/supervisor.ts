import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import { EventBus } from "../events/bus.js";
import { detectNvidiaGpus } from "../gpu/detect.js";
import { log as rootLog } from "../log/logger.js";
import { lintModel } from "../repo/lint.js";
import { StagingRepository } from "../reload/stage.js";
import { isOurProcess } from "../state/process.js";
import { writeRunState, type RunState } from "../state/run-state.js";
import { clientForRun } from "../triton/http-client.js";
import { currentRun } from "./current-run.js";
import type { SessionEvent } from "./events.js";
import { eventWriter, takeReloadRequest } from "./run-events.js";
import { RunLifecycle } from "./lifecycle.js";
import { adaptersFor, lintOptionsFor } from "./session.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";

const log = rootLog.child("supervisor");

/**
 * A detached run still hot-reloads: `up --detach` leaves this small process behind, running the
 * same reload controller as a foreground `up`. It exits with the server, and `down` stops it.
 */
export function spawnSupervisor(state: RunState, cliPath: string, env: NodeJS.ProcessEnv): number | undefined {
  // A watcher started again (the last one died) must not be taken as ready by the last one's file.
  fs.rmSync(readyFile(state), { force: true });
  const out = fs.openSync(path.join(state.runDir, "supervisor.log"), "a");
  try {
    const child = spawn(process.execPath, [cliPath, "__supervise"], {
      detached: true,
      stdio: ["ignore", out, out],
      // Its steps, in its log: a watcher that never gets ready says where it stopped.
      env: { ...env, TRITON_DEV_LOG: env.TRITON_DEV_LOG ?? "info" },
    });
    child.unref();
    return child.pid;
  } finally {
    fs.closeSync(out);
  }
}

export async function runSupervisor(
  paths: Paths,
  print: (e: SessionEvent) => void,
  env: NodeJS.ProcessEnv = process.env,
  runtimes: Runtimes = RUNTIMES,
  signals: Pick<NodeJS.Process, "once" | "on"> = process,
  /** How often a runtime that cannot say when its run ends is asked whether the server lives. */
  alivePollMs = 1000,
): Promise<void> {
  const run = await currentRun(paths, env, runtimes);
  if (!run?.alive) {
    log.warn("no running server to supervise");
    return;
  }
  const state = run.state;
  log.info("supervising the run", { runId: state.runId, runtime: state.runtime });
  // What the runtime keeps going while the run is detached (kind: the port-forward and log
  // follower; docker: the container's log copied into the log file).
  const supervision = await run.run.supervise();
  const adapters = adaptersFor(state.runtime, supervision.environments, () => state.autoCompleteConfig !== false);
  const staging = new StagingRepository(state.runDir, {
    ...(supervision.prepareStaged ? { prepare: supervision.prepareStaged } : {}),
    ...(supervision.environments ? { environments: supervision.environments } : {}),
    ...(adapters ? { adapters } : {}),
  });
  await staging.load();
  log.info("the runtime's supervision is up and the staging repository read");
  const bus = new EventBus<SessionEvent>();
  bus.on(print);
  // Recorded for `triton-dev dashboard`, which replays and follows them.
  bus.on(eventWriter(state));
  // The same lifecycle as a foreground `up`'s, joined once the run is ready; its stop ends this
  // process's part (the watcher, the runtime's supervision), never the server.
  const lifecycle = new RunLifecycle(bus, "ready");
  lifecycle.attached(() => supervision.stop());
  const lintOptions = lintOptionsFor(
    state.runtime,
    await gpusOf(state),
    state.autoCompleteConfig !== false,
    state.image,
    state.imageBackends,
  );
  const index = await clientForRun(state)
    .repositoryIndex()
    .catch(() => []);
  const controller = await lifecycle.watch({
    state,
    staging,
    lintOptions,
    index,
    refusals: [],
    // What `up` left out, into the timeline and the events an attached dashboard replays, as a
    // foreground `up` reports it to its own dashboard.
    before: async (controller) => {
      log.info("watching; reporting the models up did not serve", { models: (state.notServed ?? []).length });
      for (const n of state.notServed ?? []) {
        if (n.why === "skipped") {
          bus.emit({ type: "skipped", model: n.model, reason: n.reason, diagnostics: [] });
          continue;
        }
        const lint = await lintModel(state.modelsDir, n.model, lintOptions).catch(() => undefined);
        const errors =
          lint?.models.find((m) => m.name === n.model)?.diagnostics.filter((d) => d.severity === "error") ?? [];
        controller.reportInitialRefusal(n.model, errors);
      }
    },
  });
  fs.writeFileSync(readyFile(state), String(process.pid));
  log.info("ready");
  // A runtime that knows when its run ends says so; otherwise liveness is polled.
  const timer = supervision.ended
    ? undefined
    : setInterval(() => {
        void run.run.alive().then((alive) => alive || lifecycle.requestStop("the server is gone"));
      }, alivePollMs);
  void supervision.ended?.then(() => lifecycle.requestStop("the run ended"));
  signals.once("SIGTERM", () => lifecycle.requestStop("received SIGTERM"));
  signals.once("SIGINT", () => lifecycle.requestStop("received SIGINT"));
  // An attached dashboard's `r`.
  signals.on("SIGUSR2", () => {
    const model = takeReloadRequest(state);
    if (model) controller.reload(model);
  });
  await lifecycle.stopped;
  clearInterval(timer);
}

/** The GPUs the run's server has, for lint's GPU rule: as recorded at `up`, else this machine's. */
async function gpusOf(state: RunState): Promise<number | undefined> {
  return state.gpus ?? (await detectNvidiaGpus());
}

function readyFile(state: RunState): string {
  return path.join(state.runDir, "supervisor.ready");
}

/** `up --detach` returns only once edits are being watched, so no save is missed. */
export async function waitForSupervisor(
  state: RunState,
  pid: number | undefined,
  timeoutMs = 20_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fs.existsSync(readyFile(state))) return true;
    if (pid === undefined || !isOurProcess(pid, process.execPath)) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

export async function recordSupervisor(paths: Paths, state: RunState, pid: number | undefined): Promise<RunState> {
  const next = { ...state, supervisorPid: pid };
  await writeRunState(paths, next);
  return next;
}
