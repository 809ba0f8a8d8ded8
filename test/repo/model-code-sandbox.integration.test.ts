/**
 * `lint --run-model-code` on a hostile model.py, through the built CLI and real processes: what
 * its module-level code starts (a new session included) is gone when lint exits, what it writes
 * outside the scratch folder is refused and nothing is left behind, $HOME is an empty folder to
 * it, its memory and process counts are bounded, and it sees nothing of the machine but its own
 * folder and Python: no socket, no planted variable, no /run, /root or /home, and as root it runs
 * as a uid of its own. Where it cannot be walled in, it is not run. The limits are made small
 * here (TRITON_DEV_MODEL_CODE_MEMORY_MB, TRITON_DEV_MODEL_CODE_PROCESSES) so the hostile code
 * stays cheap on a shared machine: every loop in it is bounded.
 */
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { EnvironmentBuilder } from "../../src/envs/builder.js";
import { createConfigCompleter, type CompletionOutcome } from "../../src/repo/auto-complete-run.js";
import { containmentMode, NOBODY_UID, SANDBOX_UID } from "../../src/repo/model-code-sandbox.js";
import { CLI, runCli, testEnv } from "../helpers/cli.js";
import { managedPython, moduleWheel, offlinePip } from "../helpers/wheels.js";
import { removeTempRepos, tempRepo, writeFiles } from "./helpers.js";

afterAll(removeTempRepos);

const execFileP = promisify(execFile);

const python = path.join(resolvePaths().venv, "bin", "python");
const managed = fs.existsSync(resolvePaths().envMarker);
const linux = process.platform === "linux";

const MEMORY_MB = 768;
const PROCESSES = 8;

/**
 * Module-level code that tries each escape and raises with what happened (lint reports the
 * raise, with its message, at model.py): the one channel out that containment leaves open.
 */
function hostileModel(home: string, repo: string, mark: string): string {
  return `import json, os, subprocess, time
HOME = ${JSON.stringify(home)}
REPO = ${JSON.stringify(repo)}
r = {}
subprocess.Popen(["setsid", "sh", "-c", "sleep 300; : ${mark}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def attempt(tag, file):
    try:
        with open(file, "w") as f:
            f.write("escaped")
        r[tag] = "written"
    except OSError as e:
        r[tag] = e.strerror
attempt("home", os.path.join(HOME, "escaped.txt"))
attempt("repo", os.path.join(REPO, "escaped.txt"))
attempt("model", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "escaped.txt"))
attempt("scratch", os.path.join(os.environ["HOME"], "scratch.txt"))
try:
    r["listing"] = sorted(os.listdir(HOME))
except OSError as e:
    r["listing"] = e.strerror
try:
    block = bytearray(${MEMORY_MB * 2} * 2**20)
    r["alloc"] = "allocated"
    del block
except MemoryError:
    r["alloc"] = "MemoryError"
forked = 0
for i in range(5 * ${PROCESSES}):
    try:
        pid = os.fork()
    except OSError as e:
        r["fork"] = e.strerror
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    forked += 1
r["forked"] = forked
raise RuntimeError("HOSTILE " + json.dumps(r) + " END")

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        return config
`;
}

/** Processes whose environment or command line carries the test's mark. */
function marked(mark: string): number[] {
  const found: number[] = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${d}/environ`, "latin1");
      const cmdline = fs.readFileSync(`/proc/${d}/cmdline`, "latin1");
      if (environ.includes(mark) || cmdline.includes(mark)) found.push(Number(d));
    } catch {
      // gone, or a kernel thread
    }
  }
  return found;
}

async function listing(dir: string): Promise<string[]> {
  return (await fsp.readdir(dir, { recursive: true })).map(String).sort();
}

interface Escape {
  home: string;
  repo: string;
  model: string;
  scratch: string;
  listing: string[] | string;
  alloc: string;
  fork?: string;
  forked: number;
}

/** A repository inside a $HOME holding a secret, linted with --run-model-code under `containment`. */
async function lintHostile(containment?: string): Promise<{ r: Escape; home: string; repo: string; left: number[] }> {
  const base = await tempRepo();
  const home = path.join(base, "home");
  const repo = path.join(home, "models");
  const mark = `td-hostile-${randomUUID()}`;
  await writeFiles(base, { "home/secret.txt": "private\n" });
  await writeFiles(repo, { "m/1/model.py": hostileModel(home, repo, mark) });
  const before = await listing(base);
  const env = await testEnv({
    HOME: home,
    TD_HOSTILE_MARK: mark,
    TRITON_DEV_MODEL_CODE_MEMORY_MB: String(MEMORY_MB),
    TRITON_DEV_MODEL_CODE_PROCESSES: String(PROCESSES),
    ...(containment ? { TRITON_DEV_MODEL_CODE_CONTAINMENT: containment } : {}),
  });
  const res = await runCli(["lint", repo, "--run-model-code", "--json"], env, 120_000);
  const text = res.stdout + res.stderr;
  const m = /HOSTILE (\{.*?\}) END/.exec(text.replace(/\\"/g, '"'));
  expect(m, text).not.toBeNull();
  const left = marked(mark);
  for (const pid of left) process.kill(pid, "SIGKILL"); // a failing run must not leave them either
  const after = await listing(base);
  // Without a mount namespace its files are as writable as the user's (the README says so).
  if (containment !== "plain") expect(after, "files left behind").toEqual(before);
  return { r: JSON.parse(m![1]!) as Escape, home, repo, left };
}

describe.skipIf(!managed || !linux)("model code run by lint is contained", () => {
  it("in namespaces: nothing left running, no file written outside its scratch folder, $HOME empty, memory and processes bounded", async () => {
    const { mode } = await containmentMode(python, {});
    expect(mode, "this machine allows PID, mount and network namespaces").toBe("namespaces");
    const { r, left } = await lintHostile();
    expect(left, "processes left running").toEqual([]);
    // The test's $HOME lies under /tmp, which is the model code's own private /tmp: what it may
    // write there never reaches the machine's (the listing before and after is the same).
    expect(r.model).toBe("Read-only file system");
    expect(r.scratch).toBe("written");
    // Only the model's folder is put back; the folders on its way can be crossed, not listed.
    expect(r.listing).toBe("Permission denied");
    expect(r.alloc).toBe("MemoryError");
    expect(r.forked).toBeLessThan(PROCESSES);
    expect(r.fork).toBe("Resource temporarily unavailable");
  }, 180_000);

  it("walls in with a Python whose virtual environment lies under a scratch folder (/tmp), as a clone's or CI's does", async () => {
    const work = await tempRepo();
    const venv = path.join(work, "venv");
    // Made from the managed Python's own interpreter, so the only difference is where it lies.
    await execFileP(python, ["-m", "venv", "--without-pip", venv]);
    expect(venv.startsWith(os.tmpdir())).toBe(true);
    const probe = await containmentMode(path.join(venv, "bin", "python"), {});
    expect(probe, "the same Python outside /tmp walls in").toEqual(await containmentMode(python, {}));
  }, 60_000);

  it("without namespaces: what it starts (a new session too) is still killed, memory and processes still bounded", async () => {
    const { r, left } = await lintHostile("plain");
    expect(left, "processes left running").toEqual([]);
    expect(r.alloc).toBe("MemoryError");
    expect(r.forked).toBeLessThan(PROCESSES);
  }, 180_000);

  it("runs a model in its requirements.txt environment (kept visible under a hidden temporary folder), contained", async () => {
    const { python: base, sitePackages } = managedPython();
    const work = await tempRepo();
    const wheels = path.join(work, "wheels");
    await fsp.mkdir(wheels);
    await moduleWheel(base, wheels, { name: "tdcontained", version: "1.0", code: 'NAME = "FROM_ENV"\n' });
    const repo = path.join(work, "repo");
    await writeFiles(repo, {
      "m/requirements.txt": "tdcontained==1.0\n",
      "m/1/model.py": `import os, tdcontained
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": tdcontained.NAME, "data_type": "TYPE_FP32", "dims": [4]})
        config.add_output({"name": "UNDER_TMP_" + str(os.path.exists(${JSON.stringify(wheels)})), "data_type": "TYPE_FP32", "dims": [4]})
        return config
`,
    });
    const dir = path.join(repo, "m");
    const builder = new EnvironmentBuilder({
      root: path.join(work, "envs"),
      base: { python: base, sitePackages },
      env: { ...process.env, ...offlinePip(wheels) },
    });
    const built = (await builder.build({
      model: "m",
      file: path.join(dir, "requirements.txt"),
      userFile: path.join(dir, "requirements.txt"),
    }))!;
    const out = await createConfigCompleter({
      cacheDir: path.join(work, "cache"),
      interpreterFor: async () => ({ python: path.join(built.dir, "bin", "python") }),
    }).complete({
      model: "m",
      dir,
      file: path.join(dir, "1", "model.py"),
      config: { name: "m", backend: "python", max_batch_size: 0, input: [], output: [] },
    });
    expect(out.outcome, JSON.stringify(out)).toBe("completed");
    const config = (out as Extract<CompletionOutcome, { outcome: "completed" }>).config as {
      input: Array<{ name: string }>;
      output: Array<{ name: string }>;
    };
    expect(config.input.map((i) => i.name)).toEqual(["FROM_ENV"]);
    // The temporary folder around the environment and the model is an empty one to the model.
    const { mode } = await containmentMode(python, {});
    expect(config.output.map((o) => o.name)).toEqual([mode === "namespaces" ? "UNDER_TMP_False" : "UNDER_TMP_True"]);
  }, 120_000);
});

/**
 * A model.py whose auto_complete_config tries each way out of its view and raises with what it
 * saw (lint reports the raise, with its message): a unix socket the test listens on (a path
 * under /run, given, and an abstract name), Docker's socket, the planted variable, who it runs
 * as, /etc/shadow, /root, a file in the host's /tmp, its capabilities and network interfaces.
 */
function peekingModel(o: { socket?: string; abstract: string; planted: string; hostFile: string }): string {
  return `import json, os, socket

def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(5)
        s.connect(addr)
        s.sendall(b"escaped\\n")
        return "connected"
    finally:
        s.close()

def seen():
    r = {}
    def attempt(tag, f):
        try:
            r[tag] = f()
        except OSError as e:
            r[tag] = "error: " + (e.strerror or type(e).__name__)
    if ${JSON.stringify(o.socket ?? "")}:
        attempt("socket", lambda: connect(${JSON.stringify(o.socket ?? "")}))
    attempt("abstract", lambda: connect("\\0" + ${JSON.stringify(o.abstract)}))
    attempt("docker", lambda: connect("/run/docker.sock"))
    attempt("shadow", lambda: "read " + str(len(open("/etc/shadow").read())))
    # /root and /home may be passages to the interpreter (pyenv's, in a home): crossed, never listed.
    attempt("rootHome", lambda: "listed " + str(os.listdir("/root")))
    attempt("homes", lambda: "listed " + str(os.listdir("/home")))
    r["visible"] = sorted(p for p in ["/run", "/var/run", "/run/docker.sock", "/var/run/docker.sock", "/etc/shadow", ${JSON.stringify(o.hostFile)}] if os.path.lexists(p))
    r["planted"] = os.environ.get(${JSON.stringify(o.planted)})
    r["env"] = sorted(os.environ)
    r["uid"] = [os.getuid(), os.geteuid(), os.getgid()]
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    r["caps"] = {k: status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs")}
    r["interfaces"] = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:] if l.strip())
    r["root"] = sorted(os.listdir("/"))
    r["home"] = os.environ.get("HOME")
    return r

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        raise RuntimeError("SEEN " + json.dumps(seen()) + " END")
`;
}

interface Seen {
  socket?: string;
  abstract: string;
  docker: string;
  shadow: string;
  rootHome: string;
  homes: string;
  visible: string[];
  planted: string | null;
  env: string[];
  uid: number[];
  caps: Record<string, string>;
  interfaces: string[];
  root: string[];
  home: string;
}

/**
 * What another process of the uid model code runs as tries on it (its pid the argument): each of
 * its /proc files opened or listed, and PTRACE_ATTACH (detached again at once where it worked),
 * printed as what worked or the error.
 */
const ATTACK = String.raw`
import ctypes, errno, json, os, sys
pid = int(sys.argv[1])
r = {}
def attempt(tag, f):
    try:
        f()
        r[tag] = "done"
    except OSError as e:
        r[tag] = errno.errorcode.get(e.errno, str(e.errno))
def read(name):
    with open("/proc/%d/%s" % (pid, name), "rb") as f:
        f.read(1)
attempt("environ", lambda: read("environ"))
attempt("mem", lambda: open("/proc/%d/mem" % pid, "rb").close())
attempt("fd", lambda: os.listdir("/proc/%d/fd" % pid))
attempt("root", lambda: os.listdir("/proc/%d/root/" % pid))
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
    r["ptrace"] = "attached"
    os.waitpid(pid, 0x40000000)  # __WALL: its stop, then PTRACE_DETACH
    libc.ptrace(17, pid, None, None)
else:
    r["ptrace"] = errno.errorcode.get(ctypes.get_errno(), "?")
print(json.dumps(r))
`;

/**
 * Runs its arguments as root of a new user namespace mapping ids 0-65535 to the same host ids, as
 * a container's does: the map written by its parent, which may map more than its own id.
 */
const IN_CONTAINER_USERNS = String.raw`
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        os._exit(90)
    os.write(ready_w, b"x")
    os.read(go_r, 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    os.execv(sys.argv[1], sys.argv[1:])
os.read(ready_r, 1)
for m in ("uid_map", "gid_map"):
    with open("/proc/%d/%s" % (pid, m), "w") as f:
        f.write("0 0 65536\n")
os.write(go_w, b"x")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
`;

/** The pid of the process running the driver on `file` (argv: the interpreter, -B, ..., file), waited for 30 s. */
async function drivingProcess(file: string): Promise<number | undefined> {
  for (let i = 0; i < 300; i++) {
    for (const d of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const argv = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean);
        if (argv[1] === "-B" && argv.at(-1) === file) return Number(d);
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/** A unix socket listener at `where` (a path, or "\0name" for an abstract one) counting who connected. */
async function listener(where: string): Promise<{ connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server = net.createServer((c) => {
    n++;
    c.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(where, resolve);
  });
  // As reachable as a socket can be: only the walls stand in the way.
  if (!where.startsWith("\0")) await fsp.chmod(where, 0o777);
  return { connections: () => n, close: () => new Promise((r) => server.close(() => r())) };
}

const root = linux && process.getuid?.() === 0;

/**
 * The built CLI as a normal user, uid 1000 (in a user namespace of the test's own, which maps it
 * to this process's uid so that it reads the same files): its walls are made in a user namespace
 * of its own, as any normal user's are.
 */
function runCliAsUser(args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      "unshare",
      ["--user", "--map-user=1000", "--map-group=1000", "--", process.execPath, CLI, ...args],
      { env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (_err, stdout, stderr) => resolve({ stdout: String(stdout), stderr: String(stderr) }),
    ),
  );
}

describe.skipIf(!managed || !linux)("what model code run by lint sees", () => {
  it.each([
    { as: "the user running lint (root, as CI runs)", user: undefined },
    ...(root ? [{ as: "a normal user (uid 1000: walls in a user namespace)", user: 1000 }] : []),
  ])(
    "run by $as: no unix socket (under /run, Docker's, abstract), no planted variable, no /run, /root, /home or host /tmp; no capability, only loopback; never root",
    async ({ user }) => {
      const id = randomUUID();
      // Under /run where this process may write there (root: CI), as a service's socket would be.
      const runDir = root ? path.join("/run", `triton-dev-test-${id}`) : undefined;
      if (runDir) await fsp.mkdir(runDir, { mode: 0o755 });
      const base = await tempRepo();
      const hostFile = path.join(base, "host-tmp-file.txt");
      await writeFiles(base, { "host-tmp-file.txt": "host\n" });
      const sock = runDir ? path.join(runDir, "service.sock") : undefined;
      const viaPath = sock ? await listener(sock) : undefined;
      const abstract = await listener(`\0triton-dev-test-${id}`);
      try {
        const repo = path.join(base, "models");
        await writeFiles(repo, {
          "m/1/model.py": peekingModel({
            ...(sock ? { socket: sock } : {}),
            abstract: `triton-dev-test-${id}`,
            planted: "TD_PLANTED_TOKEN",
            hostFile,
          }),
        });
        const env = await testEnv({
          TD_PLANTED_TOKEN: `secret-${id}`,
          PYTHONPATH: base,
          MY_API_KEY: "k",
        });
        const args = ["lint", repo, "--run-model-code", "--json"];
        const res = user ? await runCliAsUser(args, env) : await runCli(args, env, 120_000);
        const text = (res.stdout + res.stderr).replace(/\\"/g, '"');
        const m = /SEEN (\{.*?\}) END/.exec(text);
        expect(m, text).not.toBeNull();
        // Each way out said on its own (soft), so that a failing run lists every one that was open.
        const seen = JSON.parse(m![1]!) as Seen;
        if (viaPath) {
          expect.soft(seen.socket).toMatch(/^error: /);
          expect.soft(viaPath.connections(), "connections to the socket under /run").toBe(0);
        }
        expect.soft(seen.abstract).toMatch(/^error: /);
        expect.soft(abstract.connections(), "connections to the abstract socket").toBe(0);
        expect.soft(seen.docker).toMatch(/^error: /);
        expect.soft(seen.visible, "paths it could see").toEqual([]);
        expect.soft(seen.planted).toBeNull();
        expect.soft(seen.env).not.toContain("MY_API_KEY");
        // Only the allowlist: PATH, the locale, HOME and TMPDIR in its scratch, our marker, the runner's settings.
        const allowed =
          /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|HOME|TMPDIR|TRITON_DEV_CONTAINED|PYTHON(DONTWRITEBYTECODE|NOUSERSITE)|(OPENBLAS|OMP|MKL)_NUM_THREADS)$/;
        expect
          .soft(
            seen.env.filter((k) => !allowed.test(k)),
            "variables beyond the allowlist",
          )
          .toEqual([]);
        expect.soft(seen.home.startsWith("/tmp/")).toBe(true);
        expect.soft(seen.caps).toEqual({
          CapEff: "0000000000000000",
          CapPrm: "0000000000000000",
          CapBnd: "0000000000000000",
          CapAmb: "0000000000000000",
          NoNewPrivs: "1",
        });
        expect.soft(seen.interfaces).toEqual(["lo"]);
        expect.soft(seen.root.filter((e) => ["run", "var", "srv", "mnt", "opt", "media"].includes(e))).toEqual([]);
        expect.soft(seen.shadow).toMatch(/^error: /);
        expect.soft(seen.rootHome).toMatch(/^error: /);
        expect.soft(seen.homes).toMatch(/^error: /);
        if (user) {
          // A normal user's run as that user, mapped back in its user namespace.
          expect.soft(seen.uid).toEqual([user, user, user]);
        } else if (root) {
          expect.soft(seen.uid).toEqual([SANDBOX_UID, SANDBOX_UID, SANDBOX_UID]);
        } else {
          expect.soft(seen.uid[0]).toBe(process.getuid!());
        }
      } finally {
        await viaPath?.close();
        await abstract.close();
        if (runDir) await fsp.rm(runDir, { recursive: true, force: true });
      }
    },
    180_000,
  );

  it.skipIf(!root)(
    "as root, refuses a model folder that others (the uid model code runs as) cannot read, naming it and what to do",
    async () => {
      const base = await tempRepo();
      const repo = path.join(base, "models");
      await writeFiles(repo, {
        // Content of its own: an outcome cached for the same content answers without running it.
        "m/1/model.py": `# ${randomUUID()}
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        return config
`,
      });
      const dir = path.join(repo, "m");
      await fsp.chmod(dir, 0o700);
      const res = await runCli(["lint", repo, "--run-model-code"], await testEnv(), 120_000);
      expect(res.stderr).toContain(
        `model code not run: ${dir} is not readable by uid ${SANDBOX_UID} (an account of model code's own), which model code runs as when triton-dev runs as root`,
      );
      expect(res.stderr).toContain(`chmod -R o+rX ${dir}`);
      expect(res.code).toBe(1);
    },
    120_000,
  );

  it.skipIf(!root)(
    "as root, model code runs as a uid nobody else has, and neither nobody nor another process of its uid can ptrace it or read its /proc files",
    async () => {
      const base = await tempRepo();
      const repo = path.join(base, "models");
      const dir = path.join(repo, "m");
      const file = path.join(dir, "1", "model.py");
      // Written by the test when it is done: the model sees its own folder as it is now.
      const release = path.join(dir, "release");
      await writeFiles(repo, {
        "m/1/model.py": `# ${randomUUID()}
import os, time
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        for _ in range(600):
            if os.path.exists(${JSON.stringify(release)}):
                break
            time.sleep(0.05)
        return config
`,
      });
      const completing = createConfigCompleter({ cacheDir: path.join(base, "cache"), timeoutMs: 60_000 }).complete({
        model: "m",
        dir,
        file,
        config: { name: "m", backend: "python", max_batch_size: 0, input: [], output: [] },
      });
      try {
        const pid = await drivingProcess(file);
        expect(pid, "the process running the model's code").toBeDefined();
        const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
        expect(uid).toBe(SANDBOX_UID);
        expect(fs.readFileSync("/etc/passwd", "utf8")).not.toMatch(new RegExp(`^[^:]*:[^:]*:${SANDBOX_UID}:`, "m"));
        // nobody, as any local daemon that drops to it runs; and the worst case, a process of its own uid.
        for (const as of [NOBODY_UID, SANDBOX_UID]) {
          const { stdout } = await execFileP(
            "setpriv",
            [`--reuid=${as}`, `--regid=${as}`, "--clear-groups", python, "-I", "-S", "-c", ATTACK, String(pid)],
            { timeout: 20_000 },
          );
          expect(JSON.parse(stdout), `as uid ${as}`).toEqual({
            environ: "EACCES",
            mem: "EACCES",
            fd: "EACCES",
            root: "EACCES",
            ptrace: "EPERM",
          });
        }
      } finally {
        await fsp.writeFile(release, "");
      }
      const out = await completing;
      expect(out.outcome, JSON.stringify(out)).toBe("completed");
    },
    120_000,
  );

  it.skipIf(!root)(
    "as root in a user namespace that does not map its own uid (a container's 65536), runs model code as nobody",
    async () => {
      const base = await tempRepo();
      const repo = path.join(base, "models");
      await writeFiles(repo, {
        "m/1/model.py": `# ${randomUUID()}
import os
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        raise RuntimeError("UIDS %s END" % (list(os.getresuid()),))
`,
      });
      const env = await testEnv();
      const out = await new Promise<string>((resolve) =>
        execFile(
          python,
          ["-I", "-S", "-c", IN_CONTAINER_USERNS, process.execPath, CLI, "lint", repo, "--run-model-code"],
          { env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
          (_err, stdout, stderr) => resolve(String(stdout) + String(stderr)),
        ),
      );
      const m = /UIDS (\[.*?\]) END/.exec(out.replace(/\\"/g, '"'));
      expect(m, out).not.toBeNull();
      expect(JSON.parse(m![1]!)).toEqual([NOBODY_UID, NOBODY_UID, NOBODY_UID]);
    },
    120_000,
  );

  /**
   * A normal user on a machine where user namespaces are off, for real: a user namespace of the
   * test's own whose limit on user namespaces is then set to 0 (the host's is left alone), holding
   * the CLI as uid 1000 in a namespace made before the limit. Linux refuses `unshare --user` there
   * as it does with user namespaces disabled.
   */
  it.skipIf(!root)(
    "refuses to run it where user namespaces are off for a normal user, saying why and what to do",
    async () => {
      const base = await tempRepo();
      const repo = path.join(base, "models");
      const ran = path.join(base, "ran.txt");
      await writeFiles(repo, {
        "m/1/model.py": `open(${JSON.stringify(ran)}, "w").write("ran")

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        return config
`,
      });
      const gate = path.join(base, "gate");
      await fsp.mkdir(gate);
      const script = `set -e
mkfifo "$GATE/go"
unshare --user --map-user=1000 --map-group=1000 -- sh -c 'echo > "$GATE/ready"; read x < "$GATE/go"; exec "$@"' sh "$@" &
i=0; while [ ! -e "$GATE/ready" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
echo 0 > /proc/sys/user/max_user_namespaces
echo go > "$GATE/go"
wait $!`;
      const env = { ...(await testEnv()), GATE: gate };
      const res = await new Promise<{ code: number; out: string }>((resolve) =>
        execFile(
          "unshare",
          [
            "--user",
            "--map-root-user",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            process.execPath,
            CLI,
            "lint",
            repo,
            "--run-model-code",
          ],
          { env, timeout: 120_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, out: stdout + stderr }),
        ),
      );
      expect(res.out).toContain("model code not run: it cannot be walled in here (");
      expect(res.out).toContain("Allow unprivileged user namespaces");
      expect(res.out).toContain("TRITON_DEV_MODEL_CODE_CONTAINMENT=plain");
      expect(res.code, res.out).toBe(1);
      expect(fs.existsSync(ran), "model.py ran").toBe(false);
    },
    180_000,
  );
});
