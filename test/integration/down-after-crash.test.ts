/**
 * `down` after the server crashed (real Triton, local runtime): the python stub running the
 * model's code can outlive its server. This one ignores SIGTERM and holds the GIL in `execute`,
 * so the stub's own exit on its parent's death never finishes. `down` ends it (SIGKILL after the
 * grace time) and removes its shared-memory region; it touches only stubs of our uid and our runs.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { stopRun } from "../../src/session/down.js";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

const CONFIG = `name: "hang"
backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

/** `entered` is written once execute runs; then libc's sleep through ctypes.PyDLL keeps the GIL. */
const model = (entered: string) => `import ctypes
import signal


class TritonPythonModel:
    def initialize(self, args):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def execute(self, requests):
        with open(${JSON.stringify(entered)}, "w") as f:
            f.write("in execute\\n")
        ctypes.PyDLL(None).sleep(120)
        return []
`;

/** Pids of the live (not zombie) members of group `pgid`. */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z" && state !== "X") out.push(Number(e));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

const until = async (cond: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return cond();
};

const leftGroups: number[] = [];
afterAll(() => {
  for (const g of leftGroups) {
    try {
      process.kill(-g, "SIGKILL");
    } catch {
      // gone
    }
  }
});

describe("down after a crash of the server", () => {
  it("ends the python stub it left (SIGTERM ignored, SIGKILL after the grace time) and its shared memory", async () => {
    const repo = await tempDir("crash-models");
    const entered = path.join(await tempDir("crash-marker"), "entered");
    await fsp.mkdir(path.join(repo, "hang", "1"), { recursive: true });
    await fsp.writeFile(path.join(repo, "hang", "config.pbtxt"), CONFIG);
    await fsp.writeFile(path.join(repo, "hang", "1", "model.py"), model(entered));
    const env = await testEnv();
    const ports = await freePorts();
    const up = await runCli(["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(ports)], env);
    expect(up.code, up.stdout + up.stderr).toBe(0);
    const paths = resolvePaths(env);
    const run = JSON.parse(await fsp.readFile(paths.runFile, "utf8")) as { pid: number };
    leftGroups.push(run.pid);

    const stuck = new AbortController();
    void fetch(`http://127.0.0.1:${ports.http}/v2/models/hang/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "X", shape: [4], datatype: "FP32", data: [0, 0, 0, 0] }] }),
      signal: stuck.signal,
    }).catch(() => undefined);
    expect(await until(() => fs.existsSync(entered), 30_000)).toBe(true);
    const stubs = groupMembers(run.pid).filter((p) => p !== run.pid);
    expect(stubs.length).toBe(1);
    const region = fs
      .readFileSync(`/proc/${stubs[0]}/cmdline`, "utf8")
      .split("\0")
      .find((a) => a.startsWith("triton_python_backend_shm_region_"));
    expect(region).toBeDefined();

    // The crash; the stub notices its parent is gone within a second, and cannot exit.
    process.kill(run.pid, "SIGKILL");
    stuck.abort();
    await new Promise((r) => setTimeout(r, 3_000));
    expect(groupMembers(run.pid)).toEqual(stubs);

    const result = await stopRun(paths, 1_000, env);
    expect(result.stale).toBeDefined();
    expect(result.leftoverLines).toContain(
      `stopped 1 python model process(es) a crashed server of ours left: pid ${stubs[0]}`,
    );
    expect(await until(() => groupMembers(run.pid).length === 0, 5_000)).toBe(true);
    expect(fs.existsSync(`/dev/shm/${region}`)).toBe(false);
  }, 300_000);
});
