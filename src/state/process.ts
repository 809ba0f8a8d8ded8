import fs from "node:fs";
import path from "node:path";

/** True when a process with this pid exists (even if owned by another user). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  return signalReaches(pid);
}

/** Whether signal 0 reaches `target` (a pid, or a negated process group id). */
export function signalReaches(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The argv of a live process, or undefined (gone, or not Linux /proc). */
export function processCmdline(pid: number, procRoot = "/proc"): string[] | undefined {
  try {
    const raw = fs.readFileSync(`${procRoot}/${pid}/cmdline`, "utf8");
    return raw.split("\0").filter((s) => s.length > 0);
  } catch {
    return undefined;
  }
}

/**
 * The real and effective uid of a live process (the `Uid:` line of /proc/PID/status), or undefined
 * when it is gone.
 */
export function processUids(pid: number, procRoot = "/proc"): { real: number; effective: number } | undefined {
  try {
    const status = fs.readFileSync(`${procRoot}/${pid}/status`, "utf8");
    const m = /^Uid:\s+(\d+)\s+(\d+)/m.exec(status);
    return m ? { real: Number(m[1]), effective: Number(m[2]) } : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process runs as us: both its real and its effective uid are ours. */
export function runsAsUs(pid: number, procRoot = "/proc", uid = process.geteuid?.() ?? 0): boolean {
  const ids = processUids(pid, procRoot);
  return ids !== undefined && ids.real === uid && ids.effective === uid;
}

/**
 * The file a process runs (the kernel's /proc/PID/exe, which argv cannot fake), or undefined (gone,
 * or not ours to look at). A binary replaced while it runs reads as its old path.
 */
export function processExecutable(pid: number, procRoot = "/proc"): string | undefined {
  try {
    return fs.readlinkSync(`${procRoot}/${pid}/exe`).replace(/ \(deleted\)$/, "");
  } catch {
    return undefined;
  }
}

/** `executable` as /proc/PID/exe names it: through its links. */
function realExecutable(executable: string): string {
  try {
    return fs.realpathSync(executable);
  } catch {
    return path.resolve(executable);
  }
}

/** Whether `pid` runs as us and runs `executable` (by /proc/PID/exe, never by its own argv). */
export function runsOurExecutable(pid: number, executable: string, procRoot = "/proc"): boolean {
  if (!runsAsUs(pid, procRoot)) return false;
  const exe = processExecutable(pid, procRoot);
  return exe !== undefined && exe === realExecutable(executable);
}

/**
 * Whether `pid` is still the process we recorded: alive, not a zombie, of our uid, and running
 * the executable we started. Guards against pid reuse after a crash, and against another user's
 * process dressed as ours (`exec -a`).
 */
export function isOurProcess(pid: number, executable: string, procRoot = "/proc"): boolean {
  if (!pidAlive(pid)) return false;
  try {
    const stat = fs.readFileSync(`${procRoot}/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    if (state === "Z" || state === "X") return false;
  } catch {
    return false;
  }
  return runsOurExecutable(pid, executable, procRoot);
}

/** The process group of a live process (field 5 of /proc/PID/stat), or undefined. */
export function processGroupOf(pid: number, procRoot = "/proc"): number | undefined {
  try {
    const stat = fs.readFileSync(`${procRoot}/${pid}/stat`, "utf8");
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
    return Number.isInteger(pgrp) ? pgrp : undefined;
  } catch {
    return undefined;
  }
}

/** SIGTERM `pid` if it is still the process we started (never a stranger that reused the pid). */
export function terminateOurs(pid: number | undefined, executable: string): void {
  if (pid === undefined || !isOurProcess(pid, executable)) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    // it went away in between
  }
}

/** Pids of every process whose argv[0] or arguments contain `needle` (Linux /proc scan). */
export function findProcesses(predicate: (argv: string[], pid: number) => boolean, procRoot = "/proc"): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync(procRoot);
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    const argv = processCmdline(pid, procRoot);
    if (argv && argv.length > 0 && predicate(argv, pid)) out.push(pid);
  }
  return out;
}
