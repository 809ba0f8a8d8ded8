import { REAL_CLOCK, type Clock } from "../../clock.js";
import fs from "node:fs";
import { log as rootLog } from "../../log/logger.js";
import { followFile, stripTritonPrefix } from "../../state/log-file.js";
import { runsAsUs, signalReaches } from "../../state/process.js";
import { openShmFolder } from "../../state/shm-folder.js";
import { ExitTracker, exitProgress, versionsToUnload } from "../../triton/log-lines.js";
import type { StartOptions, StopOutcome, UnloadsToWaitFor } from "../driver.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";

const log = rootLog.child("local");

/**
 * Some member of the group has not exited. Zombies do not count: a detached run's server has init
 * for a parent, which may reap it only a second later (kill(2) still reaches a zombie).
 */
function groupAlive(pgid: number, procRoot = "/proc"): boolean {
  if (!signalReaches(-pgid)) return false;
  const members = groupMembers(pgid, procRoot);
  return members === undefined || members.some((m) => m.state !== "Z" && m.state !== "X");
}

/** The processes of group `pgid` with their state letter; undefined when /proc cannot be read. */
export function groupMembers(pgid: number, procRoot = "/proc"): Array<{ pid: string; state: string }> | undefined {
  let entries: string[];
  try {
    entries = fs.readdirSync(procRoot);
  } catch {
    return undefined;
  }
  const members: Array<{ pid: string; state: string }> = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`${procRoot}/${e}/stat`, "utf8");
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pgid) members.push({ pid: e, state: state ?? "" });
  }
  return members;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

/**
 * What tritonserver's exit waits for, followed in its log: `down` and the dashboard's `q` say which
 * models are still unloading, and stop waiting once everything loaded has unloaded, or, with
 * `waitFor`, once nothing of the user's is left to run.
 */
export interface UnloadWatch {
  /** Triton's log: it reports each model version it unloads while it exits. */
  logFile: string;
  /** The model versions loaded when the stop begins (Triton's repository index); [] when Triton does not say. */
  loaded: () => Promise<ReadonlyArray<{ name: string; version?: string; state?: string }>>;
  /** A line for the user when the stop takes longer than `progressAfterMs`, and each time it changes. */
  onProgress?: (message: string) => void;
  progressAfterMs?: number;
  /**
   * How long Triton may take to exit by itself once everything has unloaded. Its exit loop looks
   * once a second, and after a reload that failed beside a serving version it keeps counting
   * that load as live until its exit timeout (10 s) expires: nothing of ours is left to wait for.
   */
  settleMs?: number;
  /**
   * The unloads that run the user's code (a python model's `finalize`). With it, the group is ended
   * as soon as Triton has no inference in flight and those have unloaded: Triton 2.51 ends a model's
   * python stubs one at a time, about a second each, and nothing else of an unload needs waiting for.
   */
  waitFor?: UnloadsToWaitFor;
}

/**
 * What a stop of this run's server waits for: the model versions Triton has loaded, each reported
 * unloaded in its log (local-runtime and the driver's `down` share it).
 */
export function unloadWatch(
  run: Pick<StartOptions, "host" | "ports" | "logFile"> & { repositoryKey: { header: string; value: string } },
  onProgress?: (message: string) => void,
  waitFor?: UnloadsToWaitFor,
): UnloadWatch {
  return {
    logFile: run.logFile,
    ...(waitFor ? { waitFor } : {}),
    loaded: () => loadedBeforeStop(run),
    ...(onProgress ? { onProgress } : {}),
  };
}

export interface StopOptions {
  graceMs?: number;
  /** Where the python backend's shared-memory regions live (tests pass their own folder). */
  shmDir?: string;
  /** When we are the parent, the child's exit promise (reaps it, so it does not linger as a zombie). */
  exited?: Promise<unknown>;
  unloads?: UnloadWatch;
  /** What the group is, in the log: "server" unless told ("python model processes a crashed server left"). */
  what?: string;
  /**
   * The time the grace and kill waits and the log's reads run on (../../clock.ts); the outcome's
   * `ms` is measured on real time.
   */
  clock?: Clock;
}

/**
 * SIGTERM the whole process group (server and its python stubs), wait up to graceMs for
 * every member to go, then end whatever is left. Returns once the group is empty. With
 * `unloads`, the wait ends early once every model loaded at the start has unloaded, or with
 * `unloads.waitFor`, once no inference is in flight and the unloads that run the user's code are
 * over. A group ended before Triton removed its stubs' shared memory has it removed here.
 */
export async function stopProcessGroup(pgid: number, options: StopOptions = {}): Promise<StopOutcome> {
  const graceMs = options.graceMs ?? 15_000;
  const clock = options.clock ?? REAL_CLOCK;
  const started = Date.now();
  if (!groupAlive(pgid)) return { ms: 0, ended: "gone" };
  const watch = options.unloads;
  const loaded = watch
    ? versionsToUnload(
        await watch.loaded().catch((err: unknown) => {
          log.info("Triton did not say what it has loaded; the stop waits for its exit", { error: String(err) });
          return [];
        }),
      )
    : [];
  // Unknown (the models' files could not be read): every unload is waited for.
  const waits =
    watch?.waitFor && loaded.length
      ? await watch.waitFor(loaded).catch((err: unknown) => {
          log.debug("could not tell which unloads run code; waiting for all", { error: String(err) });
          return undefined;
        })
      : undefined;
  const tracker = watch && loaded.length ? new ExitTracker(loaded, waits) : undefined;
  const tell = tracker ? exitProgress(tracker, watch?.onProgress, watch?.progressAfterMs) : () => {};
  let allUnloadedAt: number | undefined;
  let canEnd = false;
  const stopFollowing =
    watch && tracker
      ? followFile(
          watch.logFile,
          fileSize(watch.logFile),
          (raw) => {
            if (tracker.feed(stripTritonPrefix(raw))) tell();
            if (tracker.done()) allUnloadedAt ??= clock.now();
            if (tracker.canEnd()) canEnd = true;
          },
          20,
          clock,
        )
      : undefined;
  let ended: StopOutcome["ended"] | undefined;
  try {
    signalGroup(pgid, "SIGTERM");
    const deadline = clock.now() + graceMs;
    while (clock.now() < deadline) {
      if (!groupAlive(pgid)) {
        ended = "exited";
        break;
      }
      tell();
      if (canEnd) {
        ended = "ended";
        log.info("no inference in flight and no unload left that runs the model's code; ending the server", {
          pgid,
          waitedFor: waits?.map((w) => w.model),
          stillUnloading: tracker?.unloading(),
        });
        break;
      }
      if (allUnloadedAt !== undefined && clock.now() - allUnloadedAt >= (watch?.settleMs ?? 250)) {
        ended = "unloaded";
        log.info("every model unloaded; Triton still waits, so it is stopped now", {
          pgid,
          tritonCountsLive: tracker?.liveModels,
        });
        break;
      }
      await clock.sleep(waits ? 20 : 50);
    }
  } finally {
    stopFollowing?.();
  }
  if (groupAlive(pgid)) {
    if (!ended) log.warn(`${options.what ?? "server"} did not stop in time; killing it`, { pgid, graceMs });
    ended ??= "killed";
    await endGroup(pgid, options.shmDir, clock);
  }
  if (options.exited) await options.exited;
  const outcome: StopOutcome = {
    ms: Date.now() - started,
    ...(waits ? { waitedFor: waits } : {}),
    ended: ended ?? "exited",
  };
  log.debug("server stopped", { pgid, loaded: loaded.length, ...outcome });
  return outcome;
}

/**
 * SIGKILL the group and remove the shared memory its members mapped. The group is stopped first
 * (SIGSTOP) so that no stub starts or maps a region between reading the maps and the kill.
 */
async function endGroup(pgid: number, shmDir?: string, clock: Clock = REAL_CLOCK): Promise<void> {
  signalGroup(pgid, "SIGSTOP");
  const regions = mappedShmRegions(pgid, shmDir);
  signalGroup(pgid, "SIGKILL");
  const killDeadline = clock.now() + 5_000;
  while (groupAlive(pgid) && clock.now() < killDeadline) await clock.sleep(20);
  if (!groupAlive(pgid)) removeRegions(regions, pgid, shmDir);
}

/**
 * The python backend's shared-memory regions (one per model instance, 1 MiB and growing with the
 * tensors it moves): Triton removes each when it unloads the instance, so a server killed before
 * that leaves them in /dev/shm, in RAM, until reboot. Only regions a member of this group of our
 * uid maps are taken, so another server's are never touched; only a file directly in the shm
 * folder whose name is of the backend's pattern, never a path as another process's maps read.
 */
export const PYTHON_SHM_PREFIX = "triton_python_backend_shm_region_";
/** The backend names its regions PREFIX + a UUID; nothing with a slash or a dot is one of them. */
export const PYTHON_SHM_NAME = new RegExp(`^${PYTHON_SHM_PREFIX}[A-Za-z0-9_-]{1,128}$`);

/** A line of /proc/PID/maps: address, perms, offset, device, inode, then the path. */
const MAPS_LINE = /^\S+\s+\S+\s+\S+\s+\S+\s+(\d+)\s+(\/.*)$/;

/** Region names (with the inode mapped) that members of group `pgid` running as us map from `shmDir`. */
export function mappedShmRegions(pgid: number, shmDir = "/dev/shm", procRoot = "/proc"): Map<string, number> {
  const found = new Map<string, number>();
  const folder = `${shmDir.replace(/\/$/, "")}/`;
  for (const { pid } of groupMembers(pgid, procRoot) ?? []) {
    if (!runsAsUs(Number(pid), procRoot)) continue;
    let maps: string;
    try {
      maps = fs.readFileSync(`${procRoot}/${pid}/maps`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    for (const line of maps.split("\n")) {
      const m = MAPS_LINE.exec(line);
      if (!m) continue;
      // A mapping of a file removed meanwhile reads "... (deleted)".
      const file = m[2]!.replace(/ \(deleted\)$/, "");
      if (!file.startsWith(folder)) continue;
      const name = file.slice(folder.length);
      if (PYTHON_SHM_NAME.test(name)) found.set(name, Number(m[1]));
    }
  }
  return found;
}

/** Remove the regions found mapped, each only if it still is that file of ours. */
export function removeRegions(regions: Map<string, number>, pgid: number, shmDir = "/dev/shm"): void {
  if (regions.size === 0) return;
  const folder = openShmFolder(shmDir);
  if (!folder) return;
  let bytes = 0;
  let removed = 0;
  try {
    for (const [name, ino] of regions) {
      const r = folder.remove(name, PYTHON_SHM_NAME, ino);
      if (r.removed) {
        bytes += r.bytes;
        removed++;
      } else if (r.why !== "gone")
        log.warn("left a shared-memory file that is not the one mapped", { name, why: r.why });
    }
  } finally {
    folder.close();
  }
  if (removed)
    log.info("removed the shared memory the ended server left", { pgid, regions: removed, mib: bytes / 2 ** 20 });
}

function fileSize(f: string): number {
  try {
    return fs.statSync(f).size;
  } catch {
    return 0;
  }
}
