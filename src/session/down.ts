import type fs from "node:fs";
import fsp from "node:fs/promises";
import { requireTrustedState } from "../config/home-trust.js";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import type { StopReport, UnloadsToWaitFor } from "../runtimes/driver.js";
import { unloadsRunningCode } from "../repo/unload-code.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";
import { terminateOurs } from "../state/process.js";
import { readRunState, removeRunState, type RunState } from "../state/run-state.js";
import { currentRun } from "./current-run.js";

export interface DownResult {
  /** The recorded run, stopped, and what its runtime did. */
  stopped?: { state: RunState; report: StopReport };
  /** A record whose server was already gone (crash, reboot): cleaned up. */
  stale?: { state: RunState; report: StopReport };
  /** What crashed runs left (servers, containers, clusters...), by `down --json` key. */
  leftovers: Record<string, Array<string | number>>;
  /** One line for each kind of leftover found. */
  leftoverLines: string[];
}

/**
 * `down`: the recorded run through its runtime's driver (its watcher first), then what crashed
 * runs of this state folder left in any runtime, then old run folders.
 */
export async function stopRun(
  paths: Paths,
  graceMs = 15_000,
  env: NodeJS.ProcessEnv = process.env,
  onProgress?: (message: string) => void,
  runtimes: Runtimes = RUNTIMES,
): Promise<DownResult> {
  const run = await currentRun(paths, env, runtimes);
  const result: DownResult = { leftovers: {}, leftoverLines: [] };
  await run?.run.beforeStop?.().catch(() => undefined);
  terminateOurs(run?.state.supervisorPid, process.execPath);
  const stopping = run?.run.stop(graceMs, onProgress, stopWaitsFor(run.state.repository, env));
  if (run && stopping) {
    const report = await stopping;
    if (run.alive) result.stopped = { state: run.state, report };
    else result.stale = { state: run.state, report };
    await removeRunState(paths);
  }
  // The drivers the leftover search needs (dockerode among them) load once the stop is over:
  // loading them takes the event loop for a while, which the stop needs to see Triton's log.
  const drivers = runtimes.kinds.map((k) => runtimes.load(k));
  const found = await Promise.all(drivers.map(async (d) => (await d).cleanup(graceMs, { paths, env })));
  for (const left of found) {
    Object.assign(result.leftovers, left.json);
    result.leftoverLines.push(...left.lines);
  }
  await pruneRuns(paths, 3);
  return result;
}

/**
 * Which unloads a stop of the run serving `repository` waits for: those that run the models' code
 * (a python model's `finalize`, repo/unload-code.ts); every one, as Triton's own exit does, with
 * TRITON_DEV_STOP=wait-all (undefined: the driver then waits for all).
 */
export function stopWaitsFor(repository: string, env: NodeJS.ProcessEnv = process.env): UnloadsToWaitFor | undefined {
  if (env.TRITON_DEV_STOP === "wait-all") return undefined;
  return (loaded) => unloadsRunningCode(repository, loaded);
}

/**
 * Keep the newest `keep` run folders (their logs help after a crash); remove the rest. Only real
 * folders of ours are removed: a link (the `runs` folder itself or an entry in it) is never
 * followed, since whoever could plant one would have us remove what it points at.
 */
export async function pruneRuns(paths: Paths, keep: number, uid = process.geteuid?.() ?? 0): Promise<void> {
  requireTrustedState(paths);
  const ours = (st: fs.Stats) => st.isDirectory() && !st.isSymbolicLink() && (st.uid === uid || st.uid === 0);
  try {
    if (!ours(await fsp.lstat(paths.runsDir))) return;
  } catch {
    return;
  }
  let names: string[];
  try {
    names = (await fsp.readdir(paths.runsDir)).sort();
  } catch {
    return;
  }
  const live = (await readRunState(paths).catch(() => undefined))?.runDir;
  for (const n of names.slice(0, Math.max(0, names.length - keep))) {
    const dir = path.join(paths.runsDir, n);
    if (dir === live) continue;
    const st = await fsp.lstat(dir).catch(() => undefined);
    // fs.rm does not follow links inside the folder; the folder itself is checked here.
    if (st && ours(st)) await fsp.rm(dir, { recursive: true, force: true });
  }
}
