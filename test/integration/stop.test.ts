/**
 * Stopping on the real tritonserver (local runtime): Triton 2.51 ends a model's python stubs one at
 * a time while it exits (bert_tokenizer's four alone take seconds), but only a model that defines
 * `finalize` runs code then. `down` and a foreground `up`'s stop (Ctrl-C, the dashboard's q) end
 * the server once nothing is in flight and those unloads are over, leaving no process of its group
 * and no shared-memory region of its stubs.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { copySampleModels, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { UpProcess } from "../helpers/up-process.js";

const SHM_PREFIX = "/dev/shm/triton_python_backend_shm_region_";

/** Members of process group `pgid` that have not exited (a zombie waiting for init is gone). */
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

/** The python backend's shared-memory regions the group's members map (one per stub). */
function mappedRegions(pgid: number): string[] {
  const found = new Set<string>();
  for (const pid of groupMembers(pgid)) {
    const maps = fs.readFileSync(`/proc/${pid}/maps`, "utf8");
    for (const line of maps.split("\n")) {
      const at = line.indexOf(SHM_PREFIX);
      if (at >= 0) found.add(line.slice(at).replace(/ \(deleted\)$/, ""));
    }
  }
  return [...found].sort();
}

interface Run {
  pid: number;
  logFile: string;
}
const runOf = async (env: NodeJS.ProcessEnv): Promise<Run> =>
  JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as Run;

/** A python model: Y = X + 1; `finalize` writes `marker`; `sleepS` makes each request take that long (in flight). */
function model(name: string, o: { instances: number; marker?: string; sleepS?: number }) {
  const config = `name: "${name}"
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: ${o.instances} kind: KIND_CPU } ]
`;
  const py = `import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        ${o.sleepS ? `time.sleep(${o.sleepS})` : "pass"}
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + 1.0).astype(np.float32))]))
        return out
${o.marker ? `\n    def finalize(self):\n        with open(${JSON.stringify(o.marker)}, "a") as f:\n            f.write("finalized\\n")\n` : ""}`;
  return { config, py };
}

async function writeModel(repo: string, name: string, m: { config: string; py: string }): Promise<void> {
  await fsp.mkdir(path.join(repo, name, "1"), { recursive: true });
  await fsp.writeFile(path.join(repo, name, "config.pbtxt"), m.config);
  await fsp.writeFile(path.join(repo, name, "1", "model.py"), m.py);
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function upDetached(repo: string) {
  const env = await testEnv();
  const ports = await freePorts();
  cleanups.push(() => runCli(["down"], env, 60_000));
  const up = await runCli(["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(ports)], env);
  expect(up.code, up.stdout + up.stderr).toBe(0);
  return { env, ports, run: await runOf(env) };
}

describe("stopping the sample repository (real Triton)", () => {
  it("down ends the server without waiting for unloads that run no code, leaving no process and no shared memory", async () => {
    const repo = await copySampleModels();
    const { env, run } = await upDetached(repo);
    const regions = mappedRegions(run.pid);
    // One per stub of the served python models (bert_tokenizer alone has four instances).
    expect(regions.length).toBeGreaterThanOrEqual(5);
    expect(groupMembers(run.pid).length).toBeGreaterThan(1);

    const down = await runCli(["down", "--json"], env, 60_000);
    expect(down.code, down.stderr).toBe(0);
    const stop = (JSON.parse(down.stdout) as { stopped: { stop?: { waitedFor?: unknown[]; ended: string } } }).stopped
      .stop;
    expect(stop).toMatchObject({ waitedFor: [], ended: "ended" });
    // Nothing was in flight ("All models are stopped"), and the stop did not wait for the stubs'
    // unloads: bert_tokenizer's four end one after another, over seconds.
    const log = await fsp.readFile(run.logFile, "utf8");
    expect(log).toMatch(/All models are stopped, unloading models/);
    expect(log).not.toMatch(/successfully unloaded 'bert_tokenizer'/);
    expect(groupMembers(run.pid)).toEqual([]);
    expect(regions.filter((r) => fs.existsSync(r))).toEqual([]);
  }, 300_000);

  it("a foreground up's stop (Ctrl-C, as the dashboard's q) does the same", async () => {
    const repo = await copySampleModels();
    const env = await testEnv();
    const ports = await freePorts();
    const up = new UpProcess(["--runtime", "local", "--models", repo, ...portArgs(ports)], env);
    cleanups.push(async () => {
      await up.stop();
      await runCli(["down"], env, 60_000);
    });
    await up.waitFor((e) => e.type === "watching", 180_000);
    const run = await runOf(env);
    const regions = mappedRegions(run.pid);
    expect(regions.length).toBeGreaterThanOrEqual(5);
    expect(await up.stop()).toBe(0);
    const stopped = up.events.find((e) => e.type === "stopped");
    expect(stopped?.stop).toMatchObject({ waitedFor: [], ended: "ended" });
    expect(await fsp.readFile(run.logFile, "utf8")).not.toMatch(/successfully unloaded 'bert_tokenizer'/);
    expect(groupMembers(run.pid)).toEqual([]);
    expect(regions.filter((r) => fs.existsSync(r))).toEqual([]);
  }, 300_000);
});

describe("stopping a model that defines finalize, and requests in flight (real Triton)", () => {
  it("waits for the model with finalize (which runs), says so, and not for the others", async () => {
    const repo = await tempDir("finalize");
    const marker = path.join(await tempDir("marker"), "finalized.txt");
    await writeModel(repo, "fin", model("fin", { instances: 1, marker }));
    await writeModel(repo, "plain", model("plain", { instances: 4 }));
    const { env, run } = await upDetached(repo);
    const regions = mappedRegions(run.pid);

    const down = await runCli(["down", "--json"], env, 60_000);
    expect(down.code, down.stderr).toBe(0);
    const stop = (JSON.parse(down.stdout) as { stopped: { stop?: unknown } }).stopped.stop;
    expect(stop).toMatchObject({
      waitedFor: [{ model: "fin", why: expect.stringMatching(/^1\/model\.py:\d+ defines finalize$/) }],
      ended: "ended",
    });
    expect(down.stderr).toMatch(/waiting for Triton to unload fin \(1\/model\.py:\d+ defines finalize\)/);
    expect(fs.readFileSync(marker, "utf8")).toBe("finalized\n");
    const log = await fsp.readFile(run.logFile, "utf8");
    expect(log).toMatch(/successfully unloaded 'fin'/);
    // plain's four stubs end one after another, after fin's one: not waited for.
    expect(log).not.toMatch(/successfully unloaded 'plain'/);
    expect(groupMembers(run.pid)).toEqual([]);
    expect(regions.filter((r) => fs.existsSync(r))).toEqual([]);
  }, 300_000);

  it("lets a request in flight finish before it ends the server", async () => {
    const repo = await tempDir("inflight");
    await writeModel(repo, "slow", model("slow", { instances: 1, sleepS: 3 }));
    const { env, ports, run } = await upDetached(repo);
    // A client that closes its connection after the answer (an idle keep-alive one would hold
    // Triton's exit until its exit timeout, as it does without triton-dev).
    const answer = fetch(`http://127.0.0.1:${ports.http}/v2/models/slow/infer`, {
      method: "POST",
      headers: { "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ inputs: [{ name: "X", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { outputs?: Array<{ data: number[] }> } }));
    // In flight: 1 s into its 3 s.
    await new Promise((r) => setTimeout(r, 1000));
    const down = await runCli(["down", "--json"], env, 60_000);
    expect(down.code, down.stderr).toBe(0);
    const stop = (JSON.parse(down.stdout) as { stopped: { stop?: unknown } }).stopped.stop;
    expect(stop).toMatchObject({ waitedFor: [], ended: "ended" });
    const got = await answer;
    expect(got.status).toBe(200);
    expect(got.body.outputs?.[0]?.data).toEqual([2, 3, 4, 5]);
    // Triton finished it before it began to unload, which the stop waited for.
    const log = await fsp.readFile(run.logFile, "utf8");
    expect(log.indexOf("All models are stopped")).toBeGreaterThan(log.indexOf("Signal (15) received"));
    expect(groupMembers(run.pid)).toEqual([]);
  }, 300_000);
});
