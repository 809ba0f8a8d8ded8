import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { requireTrustedHome } from "../../config/home-trust.js";
import type { Paths } from "../../config/paths.js";
import { log as rootLog } from "../../log/logger.js";
import { findProcesses, isOurProcess, processGroupOf, runsAsUs, runsOurExecutable } from "../../state/process.js";
import type { Leftovers } from "../driver.js";
import { groupMembers, stopProcessGroup } from "./process-group.js";

const log = rootLog.child("local");

/**
 * `down`: what crashed local runs of this state folder left: servers of ours still running, and
 * python stubs whose server is gone, with the processes their model code started. `procRoot`:
 * where processes are read (tests); `clock`: what the stops' grace and kill waits run on.
 */
export async function removeLocalLeftovers(
  graceMs: number,
  paths: Pick<Paths, "envMarker" | "home" | "runsDir">,
  procRoot?: string,
  clock: Clock = REAL_CLOCK,
): Promise<Leftovers> {
  const orphans: number[] = [];
  const stubs: number[] = [];
  // Without the managed environment no server or stub of ours can run.
  const environment = await managedBinaries(paths);
  if (environment) {
    for (const pid of findOrphanServers(paths.runsDir, environment.serverBin, procRoot)) {
      await stopProcessGroup(pid, { graceMs, clock });
      orphans.push(pid);
    }
    // Stubs whose server is gone (it crashed), with the processes their model code started.
    for (const [pgid, pids] of findStubs(paths.runsDir, environment.stubBin, procRoot)) {
      if (isOurProcess(pgid, environment.serverBin, procRoot)) continue;
      if (await endLeftGroup(pgid, pids, graceMs, procRoot, clock)) stubs.push(...pids);
    }
  }
  return {
    json: { orphans, ...(stubs.length ? { orphanStubs: stubs } : {}) },
    lines: [
      ...(orphans.length
        ? [`stopped ${orphans.length} leftover tritonserver process(es) of ours: pid ${orphans.join(", ")}`]
        : []),
      ...(stubs.length
        ? [`stopped ${stubs.length} python model process(es) a crashed server of ours left: pid ${stubs.join(", ")}`]
        : []),
    ],
  };
}

/**
 * Servers we started: of our uid, running the managed environment's tritonserver (by
 * /proc/PID/exe, which argv cannot fake), with our runs folder in their --model-repository flag.
 */
export function findOrphanServers(runsDir: string, serverBin: string, procRoot = "/proc"): number[] {
  const marker = `--model-repository=${runsDir}${path.sep}`;
  return findProcesses(
    (argv, pid) => argv.some((a) => a.startsWith(marker)) && runsOurExecutable(pid, serverBin, procRoot),
    procRoot,
  );
}

/**
 * The managed environment's tritonserver and python stub (what runs a python model's code), from
 * setup's marker, read without loading setup's code (`down` stays light); undefined without one.
 */
async function managedBinaries(
  paths: Pick<Paths, "envMarker" | "home">,
): Promise<{ serverBin: string; stubBin: string } | undefined> {
  try {
    // A marker in a home another user can change names nothing of ours.
    requireTrustedHome(paths.home);
    const m = JSON.parse(await fsp.readFile(paths.envMarker, "utf8")) as { serverBin?: unknown; backendDir?: unknown };
    if (typeof m.serverBin !== "string" || typeof m.backendDir !== "string") return undefined;
    return { serverBin: m.serverBin, stubBin: path.join(m.backendDir, "python", "triton_python_backend_stub") };
  } catch {
    return undefined;
  }
}

/**
 * Python stubs of ours (our uid, the managed environment's stub binary by /proc/PID/exe) serving a
 * model of a run folder under `runsDir` (the model's path is the stub's first argument), grouped by
 * their process group: the server that started them.
 */
export function findStubs(runsDir: string, stubBin: string, procRoot = "/proc"): Map<number, number[]> {
  const prefix = `${runsDir}${path.sep}`;
  const groups = new Map<number, number[]>();
  const pids = findProcesses(
    (argv, pid) => (argv[1] ?? "").startsWith(prefix) && runsOurExecutable(pid, stubBin, procRoot),
    procRoot,
  );
  for (const pid of pids) {
    const pgid = processGroupOf(pid, procRoot);
    if (pgid !== undefined) groups.set(pgid, [...(groups.get(pgid) ?? []), pid]);
  }
  return groups;
}

/**
 * End what is left of a server's process group once the server is gone (a crash): its python
 * stubs and the processes the model code started, SIGTERM then SIGKILL after `graceMs`. Only a
 * group holding a stub of ours is touched, and only when every member runs as us (the group is
 * the dead server's session: nothing else can join it, but a member could have changed uid).
 */
async function endLeftGroup(
  pgid: number,
  stubs: number[],
  graceMs: number,
  procRoot = "/proc",
  clock: Clock = REAL_CLOCK,
): Promise<boolean> {
  const members = (groupMembers(pgid, procRoot) ?? []).filter((m) => m.state !== "Z" && m.state !== "X");
  if (stubs.length === 0 || members.length === 0) return false;
  const strangers = members.filter((m) => !runsAsUs(Number(m.pid), procRoot));
  if (strangers.length) {
    log.warn("a process in the group of our crashed server runs as another user; it is left alone", {
      pgid,
      pids: strangers.map((m) => m.pid),
    });
    return false;
  }
  await stopProcessGroup(pgid, { graceMs, what: "python model processes a crashed server left", clock });
  return true;
}
