import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { UserError } from "../errors.js";
import { log } from "../log/logger.js";
import { CONTAIN_LAUNCHER } from "./contain-launcher.js";

const logger = log.child("repo");

/**
 * How model code is contained:
 * - `namespaces` (the only mode chosen on its own): `unshare` gives it network (loopback only),
 *   PID and mount namespaces of its own (inside a user namespace when not root), and the launcher
 *   pivots into a new root holding only the model's folder, its Python environments and the
 *   interpreter's prefix (read-only), a private /tmp and /dev/shm, /proc and a /dev of four
 *   devices. As root it runs as SANDBOX_UID, a uid of its own (nobody, 65534, where that uid is not
 *   mapped); every capability is dropped. The program itself starts with NON_DUMPABLE_PRELUDE, so
 *   that no other process of its uid can ptrace it or read its /proc files.
 * - `plain`: no walls, for a user who trusts the repository and names it
 *   (TRITON_DEV_MODEL_CODE_CONTAINMENT=plain): the limits, the environment allowlist and the
 *   killing of what it started still apply; its files are as readable and writable as the user's.
 * Where the namespaces cannot be had and plain was not asked for, contain() refuses with a
 * ModelCodeIsolationError: model code is never run unwalled by default.
 */
export type ContainmentMode = "namespaces" | "plain";

/** The machine cannot wall model code in (or the walled-in uid cannot read it): nothing ran. */
export class ModelCodeIsolationError extends UserError {
  override name = "ModelCodeIsolationError";
  /** Why, as a clause: "it cannot be walled in here (...)". */
  readonly reason: string;
  constructor(reason: string, hint: string) {
    super(`model code not run: ${reason}`, { hint });
    this.reason = reason;
  }
}

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
  /** Folders the program needs to read (the model's, its interpreter's environment): all it sees, read-only. */
  keep: string[];
  /** What the program must be able to read as the uid it runs as (the model's file): checked before it starts. */
  readable?: string[];
  /** The parent's environment: only the allowlist (environmentFor) passes. */
  env?: NodeJS.ProcessEnv;
  limits?: ContainmentLimits;
}

export interface Contained {
  /** What to spawn. */
  command: string;
  args: string[];
  /** The allowlisted environment: spawn with exactly this (runDriver adds only its own PYTHON* settings). */
  env: NodeJS.ProcessEnv;
  cwd: string;
  mode: ContainmentMode;
  /** Kills whatever of it is still running and removes its scratch folder and cgroups; safe twice. */
  cleanup(): Promise<void>;
}

const MARKER = "TRITON_DEV_CONTAINED";
/** How the launcher starts what it says on stderr. */
export const CONTAIN_PREFIX = "triton-dev-contain:";
/** The launcher's exit status when the walls could not be built, or the program could not be read: nothing ran. */
export const CANNOT_WALL_IN = 97;
/** The uid model code runs as when triton-dev runs as root and SANDBOX_UID is not mapped (a container's). */
export const NOBODY_UID = 65534;
/**
 * The uid (and gid) model code runs as when triton-dev runs as root: one no other process runs
 * as, so that none shares its uid (nobody's is any daemon's that drops to it). Below 2^31, so
 * tools that read uids as signed numbers see it as it is; above systemd's container range
 * (524288-1879048191) and below its foreign range (0x7FFE0000-0x7FFEFFFF); no distribution
 * gives it to a user or a service.
 */
export const SANDBOX_UID = 0x7ffd0000;
/**
 * The first lines of every Python program run through contain(), before it imports anything of
 * the model's: the process is made non-dumpable, and that is checked. The walls run it as an
 * unprivileged uid that other processes may share (nobody, 65534, when triton-dev is root), and a
 * dumpable process of that uid is theirs to PTRACE_ATTACH and to read through /proc/PID/mem,
 * environ, fd and root; a non-dumpable one's /proc files belong to root and ptrace needs
 * CAP_SYS_PTRACE. It has to be done here, in the program itself: execve makes the launcher's
 * program dumpable again. Where it cannot be done, the program says so and exits with
 * CANNOT_WALL_IN: nothing of the model's ran.
 */
export const NON_DUMPABLE_PRELUDE = String.raw`
import sys as _sys
if _sys.platform.startswith("linux"):
    import ctypes as _ctypes
    _libc = _ctypes.CDLL(None, use_errno=True)
    # PR_SET_DUMPABLE (4) to 0, then PR_GET_DUMPABLE (3) must answer 0.
    if _libc.prctl(4, 0, 0, 0, 0) != 0 or _libc.prctl(3, 0, 0, 0, 0) != 0:
        _sys.stderr.write("triton-dev-contain: cannot make the process non-dumpable\n")
        _sys.stderr.flush()
        import os as _os
        _os._exit(97)
    del _ctypes, _libc
del _sys
`;

/** $HOME and $TMPDIR inside the walls: the private /tmp is the scratch folder. */
const WALLED_HOME = "/tmp/home";
const WALLED_TMP = "/tmp";
/** What model code finds on PATH inside the walls (its interpreter's bin folder comes first). */
const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The environment model code gets, and nothing else of the parent's: PATH (the interpreter's
 * folder and the system's), the locale (LANG, LANGUAGE, LC_*), TZ, a HOME and TMPDIR in its
 * scratch folder, and the marker that finds its processes again. A token, a socket path or a
 * proxy in the parent's environment does not reach it.
 */
export function environmentFor(
  parent: NodeJS.ProcessEnv,
  o: { interpreter?: string; home: string; tmp: string; marker: string },
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(parent)) {
    if (v === undefined || v.includes("\0")) continue;
    if (k === "LANG" || k === "LANGUAGE" || k === "TZ" || /^LC_[A-Z]+$/.test(k)) env[k] = v;
  }
  const bin = o.interpreter ? path.dirname(o.interpreter) : undefined;
  return {
    ...env,
    PATH: bin ? `${bin}:${SYSTEM_PATH}` : SYSTEM_PATH,
    HOME: o.home,
    TMPDIR: o.tmp,
    [MARKER]: o.marker,
    // Thread pools reserve address space per thread; model code that is only completing a config needs none.
    OPENBLAS_NUM_THREADS: "1",
    OMP_NUM_THREADS: "1",
    MKL_NUM_THREADS: "1",
  };
}

interface Probe {
  mode: ContainmentMode;
  why?: string;
  /** The launcher's own lines, when it ran and could not wall in. */
  said?: string[];
}
const probes = new Map<string, Promise<Probe>>();

function unshareArgs(uid: number): string[] {
  const user = uid === 0 ? [] : ["--map-root-user"];
  return ["--net", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--propagation", "private", ...user];
}

function currentUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : -1;
}

/** `unshare`, found on the parent's PATH: model code's own PATH is the allowlist's. */
function unshareCommand(env: NodeJS.ProcessEnv): string {
  for (const dir of (env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (!path.isAbsolute(dir)) continue;
    const p = path.join(dir, "unshare");
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not there
    }
  }
  return "unshare";
}

/**
 * Whether model code can be walled in here, tried once per launcher Python by running the
 * launcher itself in its namespaces (a kernel without user namespaces, a container without
 * CAP_SYS_ADMIN, seccomp or AppArmor refuses at one step or another).
 * TRITON_DEV_MODEL_CODE_CONTAINMENT=plain runs it without walls instead.
 */
export function containmentMode(launcherPython: string, env: NodeJS.ProcessEnv = process.env): Promise<Probe> {
  if (env.TRITON_DEV_MODEL_CODE_CONTAINMENT === "plain")
    return Promise.resolve({ mode: "plain", why: "TRITON_DEV_MODEL_CODE_CONTAINMENT=plain" });
  const key = launcherPython;
  let p = probes.get(key);
  if (!p) {
    p = probe(launcherPython, env);
    probes.set(key, p);
  }
  return p;
}

async function probe(python: string, env: NodeJS.ProcessEnv): Promise<Probe> {
  if (process.platform !== "linux")
    return { mode: "plain", why: `${process.platform} has no namespaces to wall model code in` };
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-probe-"));
  try {
    const uid = currentUid();
    const settings = launcherSettings({ keep: [], readable: [], root, limits: DEFAULT_LIMITS, cgroups: [] });
    const args = [...unshareArgs(uid), python, "-I", "-S", "-c", CONTAIN_LAUNCHER, settings];
    const childEnv = environmentFor(env, { home: WALLED_HOME, tmp: WALLED_TMP, marker: "probe" });
    const r = await new Promise<{ ok: boolean; out: string }>((resolve) =>
      execFile(
        unshareCommand(env),
        [...args, python, "-I", "-S", "-c", "pass"],
        { timeout: 20_000, env: childEnv, cwd: root },
        (err, _o, e) => resolve({ ok: !err, out: String(e).trim() }),
      ),
    );
    if (r.ok && !r.out) return { mode: "namespaces" };
    const lines = r.out.split("\n").filter(Boolean);
    const said = lines.filter((l) => l.startsWith(CONTAIN_PREFIX)).map((l) => l.slice(CONTAIN_PREFIX.length).trim());
    if (r.ok) {
      // It ran; what the launcher could not do (a mount left writable) is said where model code runs.
      return { mode: "namespaces" };
    }
    return { mode: "plain", why: said.join("; ") || lines.slice(-1)[0] || "unshare failed", said };
  } finally {
    await fsp.rm(root, { recursive: true, force: true }).catch(() => {});
  }
}

function launcherSettings(o: {
  keep: string[];
  readable: string[];
  /** The folder the new root is mounted on (walls), or the scratch folder itself (plain). */
  root: string;
  limits: ContainmentLimits;
  cgroups: string[];
  nprocBase?: number;
  walls?: boolean;
}): string {
  const walls = o.walls ?? true;
  const uid = currentUid();
  let name = "user";
  try {
    name = os.userInfo().username;
  } catch {
    // a uid without a passwd entry (a container's): the default name is as good
  }
  return JSON.stringify({
    walls,
    root: o.root,
    home: WALLED_HOME,
    keep: o.keep,
    readable: o.readable,
    scratch_bytes: o.limits.scratchBytes,
    cwd: walls ? WALLED_HOME : o.root,
    cgroups: o.cgroups,
    userns: uid !== 0,
    sandbox_uid: SANDBOX_UID,
    user: { uid, gid: typeof process.getgid === "function" ? process.getgid() : 0, name },
    limits: {
      RLIMIT_AS: o.limits.memoryBytes,
      RLIMIT_NPROC: (o.nprocBase ?? 0) + o.limits.processes,
      RLIMIT_CORE: 0,
    },
  });
}

/** Why the walls could not be had, as a user-fixable error saying what to do. */
function isolationError(p: Probe): ModelCodeIsolationError {
  const unreadable = p.said?.find((l) => l.startsWith("unreadable: "))?.slice("unreadable: ".length);
  if (unreadable) return unreadableError(unreadable, runUidSaid(p.said ?? []));
  const plainHint =
    "or, only if you trust this repository's code, set TRITON_DEV_MODEL_CODE_CONTAINMENT=plain to run it without walls";
  const hint =
    process.platform !== "linux"
      ? `triton-dev walls model code in with Linux namespaces; run it on Linux (or in a Linux container or VM), ${plainHint}.`
      : currentUid() === 0
        ? `Root needs mount, PID and network namespaces (a container needs CAP_SYS_ADMIN, or --privileged), ${plainHint}.`
        : `Allow unprivileged user namespaces (\`sysctl user.max_user_namespaces=15000\`, \`sysctl kernel.unprivileged_userns_clone=1\` on Debian before 11, and on Ubuntu 23.10 or later \`sysctl kernel.apparmor_restrict_unprivileged_userns=0\` or an AppArmor profile that allows them), run triton-dev as root, ${plainHint}.`;
  return new ModelCodeIsolationError(`it cannot be walled in here (${p.why ?? "unknown"})`, hint);
}

function unreadableError(p: string, runUid = SANDBOX_UID): ModelCodeIsolationError {
  const uid = currentUid();
  if (uid !== 0)
    return new ModelCodeIsolationError(
      `${p} is not readable by uid ${uid}, which model code runs as`,
      `Make it readable to you (\`chmod -R u+rX ${p}\`).`,
    );
  return new ModelCodeIsolationError(
    `${p} is not readable by uid ${runUid} (${runUid === NOBODY_UID ? "nobody" : "an account of model code's own"}), which model code runs as when triton-dev runs as root`,
    `Make the model's folder and its Python environment readable by others (\`chmod -R o+rX ${p}\`), or run triton-dev as a normal user.`,
  );
}

/** The uid the launcher said the program runs as (`runs as: uid N`), where it said one. */
function runUidSaid(said: string[]): number | undefined {
  const m = said.map((l) => /^runs as: uid (\d+)$/.exec(l)).find(Boolean);
  return m ? Number(m[1]) : undefined;
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
 * its cgroups set up; `cleanup()` after it ended kills what is left and removes them. Throws
 * ModelCodeIsolationError where it cannot be walled in (and plain was not asked for).
 */
export async function contain(req: ContainRequest): Promise<Contained> {
  const env = req.env ?? process.env;
  const limits = req.limits ?? limitsFrom(env);
  const probed = await containmentMode(req.launcherPython, env);
  if (probed.mode !== "namespaces" && env.TRITON_DEV_MODEL_CODE_CONTAINMENT !== "plain") throw isolationError(probed);
  const { mode } = probed;
  const id = randomBytes(8).toString("hex");
  const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-model-code-"));
  const cgroups = makeCgroups(limits);
  const uid = currentUid();
  const walls = mode === "namespaces";
  // RLIMIT_NPROC counts every process of the uid it runs as: SANDBOX_UID's (or nobody's, where
  // the launcher falls back to it) elsewhere on the machine (root's walled runs), or all the
  // user's (plain); in a user namespace of its own the count starts afresh.
  const nprocBase = walls
    ? uid === 0
      ? Math.max(processesOfUser(SANDBOX_UID), processesOfUser(NOBODY_UID))
      : 0
    : uid > 0
      ? processesOfUser(uid)
      : 0;
  const settings = launcherSettings({
    keep: req.keep,
    readable: req.readable ?? [],
    root: scratch,
    limits,
    cgroups: cgroups.map((c) => path.join(c, "cgroup.procs")),
    nprocBase,
    walls,
  });
  const launcher = [req.launcherPython, "-I", "-S", "-c", CONTAIN_LAUNCHER, settings, ...req.argv];
  const [command, ...args] = walls ? [unshareCommand(env), ...unshareArgs(uid), ...launcher] : launcher;
  let cleaned: Promise<void> | undefined;
  return {
    command: command!,
    args,
    env: environmentFor(env, {
      interpreter: req.argv[0],
      home: walls ? WALLED_HOME : scratch,
      tmp: walls ? WALLED_TMP : scratch,
      marker: id,
    }),
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

/** The launcher's lines (without its prefix) as the error they amount to, when it could not start the program. */
export function launcherRefusal(said: string[]): ModelCodeIsolationError {
  const unreadable = said.find((l) => l.startsWith("unreadable: "))?.slice("unreadable: ".length);
  return unreadable
    ? unreadableError(unreadable, runUidSaid(said))
    : isolationError({ mode: "plain", why: said.join("; "), said });
}
