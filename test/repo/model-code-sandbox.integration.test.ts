/**
 * `lint --run-model-code` on a hostile model.py, through the built CLI and real processes: what
 * its module-level code starts (a new session included) is gone when lint exits, what it writes
 * outside the scratch folder is refused (namespaces) and nothing is left behind, $HOME is an
 * empty folder to it, and its memory and process counts are bounded. The limits are made small
 * here (TRITON_DEV_MODEL_CODE_MEMORY_MB, TRITON_DEV_MODEL_CODE_PROCESSES) so the hostile code
 * stays cheap on a shared machine: every loop in it is bounded.
 */
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { EnvironmentBuilder } from "../../src/envs/builder.js";
import { createConfigCompleter } from "../../src/repo/auto-complete-run.js";
import { containmentMode } from "../../src/repo/model-code-sandbox.js";
import { runCli, testEnv } from "../helpers/cli.js";
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
    expect(r.home).toBe("Read-only file system");
    expect(r.repo).toBe("Read-only file system");
    expect(r.model).toBe("Read-only file system");
    expect(r.scratch).toBe("written");
    // The repository is under $HOME and is put back; nothing else of $HOME is there.
    expect(r.listing).toEqual(["models"]);
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
    const config = (out as { config: { input: Array<{ name: string }>; output: Array<{ name: string }> } }).config;
    expect(config.input.map((i) => i.name)).toEqual(["FROM_ENV"]);
    // The temporary folder around the environment and the model is an empty one to the model.
    const { mode } = await containmentMode(python, {});
    expect(config.output.map((o) => o.name)).toEqual([mode === "namespaces" ? "UNDER_TMP_False" : "UNDER_TMP_True"]);
  }, 120_000);
});
