import type { Clock } from "../clock.js";
import type { Paths } from "../config/paths.js";
import type { AttachedRun } from "../runtimes/driver.js";
import { attachRun, RUNTIMES, type Runtimes } from "../runtimes/registry.js";
import { isOurProcess } from "../state/process.js";
import { readRunState, type RunState } from "../state/run-state.js";

export interface LiveRun {
  state: RunState;
  /** The run's server is still the one we started: our process, our running container, our Deployment. */
  alive: boolean;
  run: AttachedRun;
}

/**
 * The recorded run, attached through its runtime's driver, and whether its server still runs;
 * `clock`: the time the attached run's waits run on (the caller's, where it has one).
 */
export async function currentRun(
  paths: Paths,
  env: NodeJS.ProcessEnv = process.env,
  runtimes: Runtimes = RUNTIMES,
  clock?: Clock,
): Promise<LiveRun | undefined> {
  const state = await readRunState(paths);
  if (!state) return undefined;
  const run = await attachRun(state, { paths, env, ...(clock ? { clock } : {}) }, runtimes);
  return { state, alive: await run.alive(), run };
}

/** Whether a recorded run's server still runs (the detached watcher and `logs -f` poll this). */
export async function runAlive(paths: Paths, state: RunState, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  return (await attachRun(state, { paths, env })).alive();
}

export interface Watcher {
  pid: number;
  alive: boolean;
  /** A detached run's watcher process; otherwise the foreground `up` itself. */
  detached: boolean;
}

/**
 * The process that acts on a run's edits: the foreground `up`, or a detached run's watcher; and
 * whether it still runs (killed, it leaves Triton serving, deaf to saves). Undefined until known.
 */
export function watcherOf(s: RunState, execPath = process.execPath): Watcher | undefined {
  const pid = s.detached ? s.supervisorPid : s.ownerPid;
  if (pid === undefined) return undefined;
  return { pid, alive: isOurProcess(pid, execPath), detached: s.detached };
}
