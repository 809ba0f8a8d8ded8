import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { log } from "../log/logger.js";
import { CONTAIN_LAUNCHER } from "./contain-launcher.js";

const logger = log.child("repo");

/**
 * How model code is contained here, best first:
 * - `namespaces`: `unshare` gives it network, PID and mount namespaces of its own (with a user
 *   namespace when not root): no network, every process it starts dies with it, and the
 *   filesystem is read-only outside a scratch folder, with $HOME and the temporary folders
 *   replaced by empty ones (the model's folder and the Python it runs on are put back, read-only);
 * - `network`: only a network namespace (`unshare -n`);
 * - `plain`: no namespace: the proxy variables point at a closed port, its files are as writable
 *   as the user's, and what it starts is found again by ancestry (the launcher is their
 *   subreaper on Linux), by cgroup where one can be made, and by an environment marker.
 * Limits apply in every mode: RLIMIT_AS per process, and the process count by cgroup (pids)
 * where one can be made, else RLIMIT_NPROC (which Linux does not enforce for root).
 */
export type ContainmentMode = "namespaces" | "network" | "plain";

export interface ContainmentLimits {
  /** RLIMIT_AS of each process, and the memory cgroup's limit where there is one. */
  memoryBytes: number;
  /** How many processes the model code may run at once (itself included). */
  processes: number;
  /** Size of the scratch folder (a tmpfs in the `namespaces` mode). */
  scratchBytes: number;
}

export const DEFAULT_LIMITS: ContainmentLimits = {
  memoryBytes: 4096 * 2 ** 20,
  processes: 64,
  scratchBytes: 256 * 2 ** 20,
};

/** The limits, with TRITON_DEV_MODEL_CODE_MEMORY_MB and TRITON_DEV_MODEL_CODE_PROCESSES in place of the defaults. */
export function limitsFrom(env: NodeJS.ProcessEnv = process.env): ContainmentLimits {
  const num = (v: string | undefined) => (v && /^\d+$/.test(v.trim()) && Number(v) > 0 ? Number(v) : undefined);
  const mb = num(env.TRITON_DEV_MODEL_CODE_MEMORY_MB);
  const n = num(env.TRITON_DEV_MODEL_CODE_PROCESSES);
  return {
    ...DEFAULT_LIMITS,
    ...(mb ? { memoryBytes: mb * 2 ** 20 } : {}),
    ...(n ? { processes: n } : {}),
  };
}

export interface ContainRequest {
  /** The Python that runs the launcher: the managed one (run with -I -S: no site, nothing of the model's). */
  launcherPython: string;
  /** The program and its arguments, argv[0] an absolute path. */
  argv: string[];
  /** Folders the program needs to read (the model's, its interpreter's environment): kept visible, read-only. */
  keep: string[];
  env?: NodeJS.ProcessEnv;
  limits?: ContainmentLimits;
}

export interface Contained {
  /** What to spawn. */
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  mode: ContainmentMode;
  /** Kills whatever of it is still running and removes its scratch folder and cgroups; safe twice. */
  cleanup(): Promise<void>;
}

const MARKER = "TRITON_DEV_CONTAINED";
/** How the launcher starts what it says on stderr. */
export const CONTAIN_PREFIX = "triton-dev-contain:";
/** The launcher's exit status when the filesystem could not be walled in: nothing ran. */
export const CANNOT_WALL_IN = 97;

interface Probe {
  mode: ContainmentMode;
  why?: string;
}
const probes = new Map<string, Promise<Probe>>();
let warned = false;

function unshareArgs(mode: ContainmentMode, uid: number): string[] {
  const user = uid === 0 ? [] : ["--map-root-user"];
  if (mode === "namespaces")
    return ["--net", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--propagation", "private", ...user];
  if (mode === "network") return ["--net", ...user];
  return [];
}

function currentUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : -1;
}

/**
 * The best mode that works here, tried once per launcher Python by running the launcher itself
 * with walls (a kernel without user namespaces, a container without CAP_SYS_ADMIN, or seccomp
 * refuses at one step or another). TRITON_DEV_MODEL_CODE_CONTAINMENT names a mode instead.
 */
export function containmentMode(launcherPython: string, env: NodeJS.ProcessEnv = process.env): Promise<Probe> {
  const forced = env.TRITON_DEV_MODEL_CODE_CONTAINMENT;
  if (forced === "namespaces" || forced === "network" || forced === "plain")
    return Promise.resolve({ mode: forced, why: "TRITON_DEV_MODEL_CODE_CONTAINMENT" });
  const key = launcherPython;
  let p = probes.get(key);
  if (!p) {
    p = probe(launcherPython);
    probes.set(key, p);
  }
  return p;
}

async function probe(python: string): Promise<Probe> {
  if (process.platform !== "linux") return { mode: "plain", why: `${process.platform} has no namespaces` };
  const reasons: string[] = [];
  for (const mode of ["namespaces", "network"] as const) {
    const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-probe-"));
    try {
      const settings = launcherSettings(mode, { keep: [], scratch, limits: DEFAULT_LIMITS, cgroups: [] });
      const args = [...unshareArgs(mode, currentUid()), python, "-I", "-S", "-c", CONTAIN_LAUNCHER, settings];
      const r = await new Promise<{ ok: boolean; out: string }>((resolve) =>
        execFile("unshare", [...args, python, "-I", "-S", "-c", "pass"], { timeout: 20_000 }, (err, _o, e) =>
          resolve({ ok: !err, out: String(e).trim() }),
        ),
      );
      if (r.ok && !r.out) return { mode };
      reasons.push(`${mode}: ${r.out.split("\n").slice(-1)[0] || "unshare failed"}`);
    } finally {
      await fsp.rm(scratch, { recursive: true, force: true });
    }
  }
  return { mode: "plain", why: reasons.join("; ") };
}

function launcherSettings(
  mode: ContainmentMode,
  o: { keep: string[]; scratch: string; limits: ContainmentLimits; cgroups: string[]; nprocBase?: number },
): string {
  const home = [os.homedir(), safeUserHome()].filter((h): h is string => !!h);
  return JSON.stringify({
    walls: mode === "namespaces",
    scratch: ["/tmp", "/var/tmp", "/dev/shm", os.tmpdir(), o.scratch],
    hide: [...new Set(home)],
    keep: o.keep,
    scratch_bytes: o.limits.scratchBytes,
    cwd: o.scratch,
    cgroups: o.cgroups,
    env: {},
    limits: {
      RLIMIT_AS: o.limits.memoryBytes,
      RLIMIT_NPROC: (o.nprocBase ?? 0) + o.limits.processes,
      RLIMIT_CORE: 0,
    },
  });
}

function safeUserHome(): string | undefined {
  try {
    return os.userInfo().homedir;
  } catch {
    return undefined;
  }
}

/** The tasks this uid runs now: RLIMIT_NPROC counts them all, so the model's allowance comes on top. */
function processesOfUser(uid: number): number {
  if (process.platform === "linux") {
    let n = 0;
    for (const d of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const status = fs.readFileSync(`/proc/${d}/status`, "utf8");
        // Linux counts threads against RLIMIT_NPROC, not processes (node alone runs about ten).
        if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid)
          n += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
      } catch {
        // gone meanwhile
      }
    }
    return n;
  }
  const r = spawnSync("ps", ["-U", String(uid), "-o", "pid="], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.split("\n").filter((l) => l.trim()).length : 0;
}

let cgroupSeq = 0;

/**
 * A pids (and memory) cgroup below this process's own, where this process may make one (root, or
 * a delegated cgroup v2 subtree): the process count limit that binds root, and a list of the
 * model's processes that setsid cannot leave. Empty where none can be made.
 */
function makeCgroups(limits: ContainmentLimits): string[] {
  if (process.platform !== "linux") return [];
  let lines: string[];
  try {
    lines = fs.readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
  } catch {
    return [];
  }
  const name = `triton-dev-${process.pid}-${++cgroupSeq}-${randomBytes(3).toString("hex")}`;
  const made: string[] = [];
  const tryMake = (dir: string, limitFile: string, value: string): boolean => {
    try {
      fs.mkdirSync(dir);
    } catch {
      return false;
    }
    try {
      fs.writeFileSync(path.join(dir, limitFile), value);
      made.push(dir);
      return true;
    } catch {
      fs.rmdirSync(dir);
      return false;
    }
  };
  const v2 = lines.find((l) => l.startsWith("0::"))?.slice(3);
  for (const [controller, v1File, v2File, value] of [
    ["pids", "pids.max", "pids.max", String(limits.processes + 1)],
    ["memory", "memory.limit_in_bytes", "memory.max", String(limits.memoryBytes + limits.scratchBytes)],
  ] as const) {
    const v1 = lines.map((l) => l.split(":")).find((p) => p[1]?.split(",").includes(controller));
    if (v1 && tryMake(path.join("/sys/fs/cgroup", controller, v1[2]!, name), v1File, value)) continue;
    if (v2 !== undefined) {
      const root = fs.existsSync("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
      const dir = path.join(root, v2, name);
      if (made.includes(dir)) fs.writeFileSync(path.join(dir, v2File), value);
      else tryMake(dir, v2File, value);
    }
  }
  return made;
}

async function removeCgroup(dir: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    let pids: number[];
    try {
      pids = fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
    } catch {
      return; // gone
    }
    for (const pid of pids) killQuietly(pid);
    if (pids.length === 0) {
      try {
        fs.rmdirSync(dir);
        return;
      } catch {
        // the last ones are still exiting
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  logger.warn("cgroup of model code not removed", { dir });
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Processes whose environment carries this run's marker: what left the launcher's ancestry and every cgroup. */
function killMarked(id: string): number {
  if (process.platform !== "linux") return 0;
  const needle = Buffer.from(`\0${MARKER}=${id}\0`);
  let n = 0;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const environ = Buffer.concat([Buffer.from([0]), fs.readFileSync(`/proc/${d}/environ`)]);
      if (environ.includes(needle)) {
        killQuietly(Number(d));
        n++;
      }
    } catch {
      // not ours to read, or gone
    }
  }
  return n;
}

/**
 * The command that runs `argv` contained (see ContainmentMode), with its scratch folder made and
 * its cgroups set up; `cleanup()` after it ended kills what is left and removes them.
 */
export async function contain(req: ContainRequest): Promise<Contained> {
  const env = req.env ?? process.env;
  const limits = req.limits ?? limitsFrom(env);
  const { mode, why } = await containmentMode(req.launcherPython, env);
  if (why) logger.debug("model code containment", { mode, why });
  if (mode !== "namespaces" && why && !warned && !env.TRITON_DEV_MODEL_CODE_CONTAINMENT) {
    warned = true;
    logger.warn(
      `model code runs without ${mode === "network" ? "PID and mount" : "any"} namespaces here (${why}): what it writes is not contained; see the README's "How model code is contained"`,
    );
  }
  const id = randomBytes(8).toString("hex");
  const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-model-code-"));
  const cgroups = makeCgroups(limits);
  const uid = currentUid();
  // In its own user namespace the count starts afresh; elsewhere RLIMIT_NPROC counts all the user's processes.
  const nprocBase = uid > 0 && mode !== "namespaces" ? processesOfUser(uid) : 0;
  const settings = launcherSettings(mode, {
    keep: req.keep,
    scratch,
    limits,
    cgroups: cgroups.map((c) => path.join(c, "cgroup.procs")),
    nprocBase,
  });
  const launcher = [req.launcherPython, "-I", "-S", "-c", CONTAIN_LAUNCHER, settings, ...req.argv];
  const [command, ...args] = mode === "plain" ? launcher : ["unshare", ...unshareArgs(mode, uid), ...launcher];
  let cleaned: Promise<void> | undefined;
  return {
    command: command!,
    args,
    env: {
      ...env,
      HOME: scratch,
      TMPDIR: scratch,
      [MARKER]: id,
      // Thread pools reserve address space per thread; model code that is only completing a config needs none.
      OPENBLAS_NUM_THREADS: "1",
      OMP_NUM_THREADS: "1",
      MKL_NUM_THREADS: "1",
    },
    cwd: scratch,
    mode,
    cleanup() {
      cleaned ??= (async () => {
        await Promise.all(cgroups.map(removeCgroup));
        const marked = killMarked(id);
        if (marked) logger.warn("model code left processes behind; killed", { count: marked });
        await fsp.rm(scratch, { recursive: true, force: true }).catch(() => {});
      })();
      return cleaned;
    },
  };
}
