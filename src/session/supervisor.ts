import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import { EventBus } from "../events/bus.js";
import { detectNvidiaGpus } from "../gpu/detect.js";
import { log as rootLog } from "../log/logger.js";
import { lintModel } from "../repo/lint.js";
import { StagingRepository } from "../reload/stage.js";
import { precompilePython, loadEnvironment } from "../runtimes/local/environment.js";
import { isOurProcess } from "../state/process.js";
import { currentRun, runAlive, writeRunState, type RunState } from "../state/run-state.js";
import type { SessionEvent } from "./events.js";
import { eventWriter, takeReloadRequest } from "./run-events.js";
import { clientFor, createController } from "./session.js";

const log = rootLog.child("supervisor");

/**
 * A detached run still hot-reloads: `up --detach` leaves this small process behind, running the
 * same reload controller as a foreground `up`. It exits with the server, and `down` stops it.
 */
export function spawnSupervisor(state: RunState, cliPath: string, env: NodeJS.ProcessEnv): number | undefined {
  const out = fs.openSync(path.join(state.runDir, "supervisor.log"), "a");
  try {
    const child = spawn(process.execPath, [cliPath, "__supervise"], {
      detached: true,
      stdio: ["ignore", out, out],
      env,
    });
    child.unref();
    return child.pid;
  } finally {
    fs.closeSync(out);
  }
}

export async function runSupervisor(paths: Paths, print: (e: SessionEvent) => void): Promise<void> {
  const run = await currentRun(paths);
  if (!run?.alive) {
    log.warn("no running server to supervise");
    return;
  }
  const state = run.state;
  // Docker: the store is mounted read-only, so nothing is precompiled for the container's Python.
  const environment = state.runtime === "local" ? await loadEnvironment(paths) : undefined;
  const staging = new StagingRepository(state.runDir, {
    prepare: environment ? (dir) => precompilePython(environment, dir) : undefined,
  });
  await staging.load();
  const bus = new EventBus<SessionEvent>();
  bus.on(print);
  // Recorded for `triton-dev dashboard`, which replays and follows them.
  bus.on(eventWriter(state));
  const gpus = await detectNvidiaGpus();
  const lintOptions = {
    runtime: state.runtime,
    gpuAvailable: gpus === undefined ? true : gpus > 0,
    gpuMissingSeverity: "error" as const,
  };
  const controller = createController(state, staging, bus, lintOptions);
  // kind: Triton is reached through a port-forward and its log through `kubectl logs`, both
  // handed over from the foreground `up`; they run here for as long as the run lasts.
  const kind = state.runtime === "kind" ? await connectKind(state) : undefined;
  const index = await clientFor(state)
    .repositoryIndex()
    .catch(() => []);
  await controller.adopt(index);
  await controller.start();
  // What `up` left out, into the timeline and the events an attached dashboard replays, as a
  // foreground `up` reports it to its own dashboard.
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
  bus.emit({ type: "watching", modelsDir: state.modelsDir, mode: state.reload });
  // A container writes its log to the daemon; while the run is detached this process copies it
  // into the log file, from where the foreground `up` stopped, for `logs` and the controller.
  const logs = state.runtime === "docker" ? await followDockerLogs(state) : undefined;
  fs.writeFileSync(readyFile(state), String(process.pid));
  await new Promise<void>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearInterval(timer);
      void Promise.all([controller.close(), logs?.stop(), kind?.stop()]).then(() => resolve());
    };
    // kind: the connection polls the cluster already and ends with the Deployment.
    const timer = kind
      ? undefined
      : setInterval(() => {
          void runAlive(state).then((alive) => alive || finish());
        }, 1000);
    void kind?.exited.then(finish);
    process.once("SIGTERM", finish);
    process.once("SIGINT", finish);
    // An attached dashboard's `r`.
    process.on("SIGUSR2", () => {
      const model = takeReloadRequest(state);
      if (model) controller.reload(model);
    });
  });
}

async function followDockerLogs(state: RunState) {
  if (!state.docker) return undefined;
  const [{ connectDocker }, { followLogs }] = await Promise.all([
    import("../runtimes/docker/client.js"),
    import("../runtimes/docker/logs.js"),
  ]);
  const container = connectDocker({ DOCKER_HOST: state.docker.daemon }).getContainer(state.docker.containerId);
  return followLogs(container, { logFile: state.logFile, runDir: state.runDir, resume: true }).catch((err) => {
    log.warn("could not follow the container's log", { error: String(err) });
    return undefined;
  });
}

async function connectKind(state: RunState) {
  if (!state.kind) return undefined;
  const { KindConnection } = await import("../runtimes/kind/connection.js");
  const { KindTools } = await import("../runtimes/kind/tools.js");
  const k = state.kind;
  const connection = new KindConnection({
    tools: new KindTools(),
    cluster: k.cluster,
    context: k.context,
    namespace: k.namespace,
    runId: state.runId,
    image: k.image,
    ports: state.ports,
    host: state.host,
    logFile: state.logFile,
    runDir: state.runDir,
    resume: true,
  });
  await connection.start();
  // The foreground `up`'s port-forward may still hold the ports for a moment; it is retried.
  await connection
    .forward(30_000)
    .catch((err: unknown) => log.warn("the port-forward did not start", { error: String(err) }));
  return connection;
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
