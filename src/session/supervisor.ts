import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import type { Paths } from "../config/paths.js";
import { EventBus } from "../events/bus.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";
import { isOurProcess } from "../state/process.js";
import { writeRunState, type RunState } from "../state/run-state.js";
import type { SessionEvent } from "./events.js";
import { createRunOwner, supervisorReadyFile, type SignalSource } from "./run-owner.js";

/**
 * A detached run still hot-reloads: `up --detach` leaves this small process behind, running the
 * same reload controller as a foreground `up`. It exits with the server, and `down` stops it.
 */
export function spawnSupervisor(state: RunState, cliPath: string, env: NodeJS.ProcessEnv): number | undefined {
  // A watcher started again (the last one died) must not be taken as ready by the last one's file.
  fs.rmSync(supervisorReadyFile(state), { force: true });
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

/** A detached run's watcher (`up --detach` spawns it as `__supervise`): the run's owner, supervising. */
export async function runSupervisor(
  paths: Paths,
  print: (e: SessionEvent) => void,
  env: NodeJS.ProcessEnv = process.env,
  runtimes: Runtimes = RUNTIMES,
  signals: SignalSource = process,
  /** How often a runtime that cannot say when its run ends is asked whether the server lives. */
  alivePollMs = 1000,
  clock: Clock = REAL_CLOCK,
): Promise<void> {
  const bus = new EventBus<SessionEvent>();
  bus.on(print);
  await createRunOwner(bus, { runtimes, signals, alivePollMs, clock }, "ready").supervise(paths, env);
}

/** `up --detach` returns only once edits are being watched, so no save is missed. */
export async function waitForSupervisor(
  state: RunState,
  pid: number | undefined,
  timeoutMs = 20_000,
  clock: Clock = REAL_CLOCK,
): Promise<boolean> {
  const deadline = clock.now() + timeoutMs;
  while (clock.now() < deadline) {
    if (fs.existsSync(supervisorReadyFile(state))) return true;
    if (pid === undefined || !isOurProcess(pid, process.execPath)) return false;
    await clock.sleep(50);
  }
  return false;
}

export async function recordSupervisor(paths: Paths, state: RunState, pid: number | undefined): Promise<RunState> {
  const next = { ...state, supervisorPid: pid };
  await writeRunState(paths, next);
  return next;
}
