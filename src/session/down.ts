import fsp from "node:fs/promises";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import { stopProcessGroup } from "../runtimes/local/process-group.js";
import { findProcesses, isOurProcess } from "../state/process.js";
import { currentRun, removeRunState, type RunState } from "../state/run-state.js";

export interface DownResult {
  stopped?: RunState;
  /** A record whose server was already gone (crash, reboot): cleaned up. */
  stale?: RunState;
  /** Servers of ours found without a record (a run that crashed mid-start) and stopped. */
  orphans: number[];
}

/** Servers we started carry our runs folder in their --model-repository flag; nothing else is touched. */
export function findOrphanServers(paths: Paths, procRoot = "/proc"): number[] {
  const marker = `--model-repository=${paths.runsDir}${path.sep}`;
  return findProcesses((argv) => argv[0]!.endsWith("tritonserver") && argv.some((a) => a.startsWith(marker)), procRoot);
}

export async function stopRun(paths: Paths, graceMs = 15_000): Promise<DownResult> {
  const run = await currentRun(paths);
  const result: DownResult = { orphans: [] };
  const sup = run?.state.supervisorPid;
  if (sup && isOurProcess(sup, process.execPath)) {
    try {
      process.kill(sup, "SIGTERM");
    } catch {
      // already gone
    }
  }
  if (run?.alive) {
    await stopProcessGroup(run.state.pid, { graceMs });
    result.stopped = run.state;
  } else if (run) {
    result.stale = run.state;
  }
  if (run) await removeRunState(paths);
  for (const pid of findOrphanServers(paths)) {
    await stopProcessGroup(pid, { graceMs });
    result.orphans.push(pid);
  }
  await pruneRuns(paths, 3);
  return result;
}

/** Keep the newest `keep` run folders (their logs help after a crash); remove the rest. */
export async function pruneRuns(paths: Paths, keep: number): Promise<void> {
  let names: string[];
  try {
    names = (await fsp.readdir(paths.runsDir)).sort();
  } catch {
    return;
  }
  const live = (await currentRun(paths))?.state.runDir;
  for (const n of names.slice(0, Math.max(0, names.length - keep))) {
    const dir = path.join(paths.runsDir, n);
    if (dir !== live) await fsp.rm(dir, { recursive: true, force: true });
  }
}
