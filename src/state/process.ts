import fs from "node:fs";

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
 * Whether `pid` is still the process we recorded: alive, not a zombie, and running the
 * executable we started. Guards against pid reuse after a crash.
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
  const argv = processCmdline(pid, procRoot);
  if (!argv || argv.length === 0) return false;
  return argv[0] === executable || argv[0]!.endsWith("/" + executable.split("/").pop());
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
