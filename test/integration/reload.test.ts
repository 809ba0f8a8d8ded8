import fs from "node:fs/promises";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TritonHttpClient } from "../../src/triton/http-client.js";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { UpProcess } from "../helpers/up-process.js";

const CONFIG = (name: string) => `name: "${name}"
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const MODEL = (offset: number, extra = "") => `import numpy as np
import triton_python_backend_utils as pb_utils

OFFSET = ${offset.toFixed(1)}
${extra}

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + OFFSET).astype(np.float32))]))
        return out
`;

const ENSEMBLE = `name: "offset_pipe"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [ { model_name: "offset" model_version: -1 input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" } } ]
}
`;

async function writeModel(repo: string, name: string, offset: number, modelPy = MODEL(offset)): Promise<void> {
  await fs.mkdir(path.join(repo, name, "1"), { recursive: true });
  await fs.writeFile(path.join(repo, name, "config.pbtxt"), CONFIG(name));
  await fs.writeFile(path.join(repo, name, "1", "model.py"), modelPy);
}

/** A model.py whose initialize raises: Triton fails to load it every time it tries. */
const brokenModel = (offset: number) =>
  MODEL(offset).replace(
    "class TritonPythonModel:\n",
    'class TritonPythonModel:\n    def initialize(self, args):\n        raise RuntimeError("cannot initialize on purpose")\n\n',
  );

/** An editor's save: write a temp file beside the target, then rename over it. */
async function editorSave(file: string, content: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${Date.now()}`);
  await fs.writeFile(tmp, content);
  await fs.rename(tmp, file);
}

describe.each(["poll", "explicit"] as const)("hot reload in %s mode (real Triton, real files)", (mode) => {
  let repo: string;
  let up: UpProcess;
  let client: TritonHttpClient;
  let env: NodeJS.ProcessEnv;
  let logFile: string;

  /** How many times Triton started loading `model` so far (its log's "loading: model:1" lines). */
  const loadsOf = (model: string) =>
    readFileSync(logFile, "utf8")
      .split("\n")
      .filter((l) => l.includes(`loading: ${model}:`)).length;
  /** Triton retries nothing more: no new "loading:" line for the model over a few seconds. */
  const expectNoRetries = async (model: string) => {
    // A retry Triton had already begun when the model was withdrawn may still be logged, and so is
    // the placeholder that makes Triton forget the failure: done once Triton says it is ready.
    const deadline = Date.now() + 30_000;
    while (!(await client.isReady()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 1_500));
    const settled = loadsOf(model);
    await new Promise((r) => setTimeout(r, 4_000));
    expect(loadsOf(model)).toBe(settled);
  };

  const served = async (model = "offset"): Promise<number> => {
    const r = await client.infer(model, [
      { name: model === "offset_pipe" ? "IN" : "X", shape: [1, 4], datatype: "FP32", data: [0, 0, 0, 0] },
    ]);
    return (r.outputs[0]!.data as number[])[0]!;
  };
  const modelPy = () => path.join(repo, "offset", "1", "model.py");
  /** The edit an event belongs to began (its "saved" phase) at or after `t`. */
  const startedAfter = (e: { id?: number }, t: number) =>
    up.events.some((x) => x.type === "edit" && x.id === e.id && x.phase === "saved" && Number(x.at) >= t);
  /** Polls until offset serves `value`; fails the test after `timeoutMs`. */
  const servedWithin = async (value: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while ((await served()) !== value) {
      if (Date.now() > deadline) throw new Error(`offset did not serve ${value} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const nextReady = (model: string) => {
    const from = up.events.length;
    return () =>
      up.waitFor(
        (e) =>
          e.type === "edit" &&
          e.model === model &&
          (e.phase === "ready" || e.phase === "failed" || e.phase === "refused"),
        60_000,
        from,
      );
  };

  beforeAll(async () => {
    repo = await tempDir("reload");
    await writeModel(repo, "offset", 1);
    await fs.mkdir(path.join(repo, "offset_pipe", "1"), { recursive: true });
    await fs.writeFile(path.join(repo, "offset_pipe", "config.pbtxt"), ENSEMBLE);
    // Fails at the first load: nothing earlier to fall back on.
    await writeModel(repo, "broken_at_up", 5, brokenModel(5));
    env = await testEnv();
    const ports = await freePorts();
    up = new UpProcess(["--models", repo, "--reload", mode, ...portArgs(ports)], env);
    await up.waitFor((e) => e.type === "watching", 120_000);
    logFile = String((await up.waitFor((e) => e.type === "starting")).logFile);
    client = new TritonHttpClient(`http://127.0.0.1:${ports.http}`);
    expect(await served()).toBe(1);
  }, 180_000);

  afterAll(async () => {
    await up?.stop();
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("serves a valid edit, and the ensemble follows its composing model", async () => {
    const done = nextReady("offset");
    await editorSave(modelPy(), MODEL(2));
    const e = await done();
    expect(e.phase).toBe("ready");
    expect(await served()).toBe(2);
    expect(await served("offset_pipe")).toBe(2);
  }, 90_000);

  it("refuses an invalid config with file:line:col while the old version answers", async () => {
    const done = nextReady("offset");
    await editorSave(
      path.join(repo, "offset", "config.pbtxt"),
      CONFIG("offset").replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput"),
    );
    const e = await done();
    expect(e.phase).toBe("refused");
    const d = e.diagnostics![0]!;
    expect(d.file).toBe(path.join(repo, "offset", "config.pbtxt"));
    expect(d.line).toBe(4);
    expect(d.column).toBeGreaterThan(1);
    expect(await served()).toBe(2);
    const fixed = nextReady("offset");
    // Counted before the save: the outcome can arrive before editorSave returns.
    const from = up.events.length;
    await editorSave(path.join(repo, "offset", "config.pbtxt"), CONFIG("offset"));
    // The fixed config equals what is served: nothing needs reloading.
    await up
      .waitFor((x) => x.type === "edit" && x.model === "offset" && x.phase === "unchanged", 30_000, from)
      .catch(() => fixed());
    expect(await served()).toBe(2);
  }, 90_000);

  it("keeps the old version when model.py raises, reports Triton's reason, then reloads the fix", async () => {
    let done = nextReady("offset");
    await editorSave(modelPy(), MODEL(3, 'raise RuntimeError("broken on purpose")'));
    const failed = await done();
    expect(failed.phase).toBe("failed");
    expect(failed.reason).toMatch(/broken on purpose/);
    expect(failed.reason).toMatch(/last good version keeps serving/);
    expect(failed.reason).toContain(path.join(repo, "offset")); // the user's path, not the staging copy
    expect(await served()).toBe(2);
    done = nextReady("offset");
    await editorSave(modelPy(), MODEL(4));
    expect((await done()).phase).toBe("ready");
    expect(await served()).toBe(4);
    expect(await served("offset_pipe")).toBe(4);
  }, 120_000);

  it("loads a new model folder and unloads a deleted one", async () => {
    const done = nextReady("offset_b");
    await writeModel(repo, "offset_b", 7);
    expect((await done()).phase).toBe("ready");
    const r = await client.infer("offset_b", [{ name: "X", shape: [1, 4], datatype: "FP32", data: [1, 1, 1, 1] }]);
    expect(r.outputs[0]!.data).toEqual([8, 8, 8, 8]);
    const from = up.events.length;
    await fs.rm(path.join(repo, "offset_b"), { recursive: true });
    await up.waitFor((e) => e.type === "edit" && e.model === "offset_b" && e.phase === "unloaded", 60_000, from);
    expect(await client.isModelReady("offset_b")).toBe(false);
  }, 90_000);

  it("ignores swap files, backups and __pycache__, and reloads an editor save once", async () => {
    const from = up.events.length;
    const dir = path.join(repo, "offset", "1");
    await fs.writeFile(path.join(dir, ".model.py.swp"), "swap");
    await fs.writeFile(path.join(dir, "model.py~"), "backup");
    await fs.writeFile(path.join(dir, "4913"), "");
    await fs.mkdir(path.join(dir, "__pycache__"), { recursive: true });
    await fs.writeFile(path.join(dir, "__pycache__", "model.cpython-311.pyc"), "x");
    await new Promise((r) => setTimeout(r, 2_000));
    expect(up.events.slice(from).filter((e) => e.type === "edit" && e.model === "offset")).toEqual([]);
    const done = nextReady("offset");
    await editorSave(modelPy(), MODEL(5));
    expect((await done()).phase).toBe("ready");
    await new Promise((r) => setTimeout(r, 1_500));
    expect(up.edits("offset", "loading", from)).toHaveLength(1);
    expect(await served()).toBe(5);
  }, 90_000);

  it("turns a burst of 20 saves within 200 ms into one reload serving the last content", async () => {
    const from = up.events.length;
    const at: number[] = [];
    for (let i = 0; i < 20; i++) {
      at.push(performance.now());
      await fs.writeFile(modelPy(), MODEL(100 + i));
      await new Promise((r) => setTimeout(r, 10));
    }
    await up.waitFor((e) => e.type === "edit" && e.model === "offset" && e.phase === "ready", 60_000, from);
    await new Promise((r) => setTimeout(r, 1_500));
    // The watcher settles an edit after 150 ms without events: a pause that long between two of
    // these saves (this process descheduled on a loaded machine) is a second edit, as it would be
    // for a user. Without one the burst is one reload.
    const pauses = at.slice(1).filter((t, i) => t - at[i]! >= 100).length;
    const loads = up.edits("offset", "loading", from).length;
    expect(loads).toBeGreaterThanOrEqual(1);
    expect(loads, `${pauses} pause(s) of 100 ms or more between the saves`).toBeLessThanOrEqual(1 + pauses);
    expect(await served()).toBe(119);
  }, 90_000);

  it("withdraws a model that fails at up: reported once with the user's path, not retried, loaded when fixed", async () => {
    const failed = await up.waitFor(
      (e) => e.type === "edit" && e.model === "broken_at_up" && e.phase === "failed",
      30_000,
    );
    expect(failed.withdrawn).toBe(true);
    expect(failed.reason).toMatch(/cannot initialize on purpose/);
    expect(failed.reason).toMatch(/not loaded until a fix is saved/);
    expect(failed.reason).toContain(path.join(repo, "broken_at_up", "1", "model.py"));
    expect(failed.reason).not.toContain(`${path.sep}runs${path.sep}`);
    // The first load's outcome, as `up` printed it, names the user's file too.
    const ready = await up.waitFor((e) => e.type === "ready");
    const atUp = (ready.models as Array<{ name: string; state?: string; reason?: string }>).find(
      (m) => m.name === "broken_at_up",
    )!;
    expect(atUp.state).toBe("UNAVAILABLE");
    expect(atUp.reason).toContain(path.join(repo, "broken_at_up", "1", "model.py"));
    expect(atUp.reason).not.toContain(`${path.sep}runs${path.sep}`);
    expect(up.edits("broken_at_up", "failed")).toHaveLength(1);

    await expectNoRetries("broken_at_up");
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout) as {
      models: Array<{ name: string; state: string; reason?: string }>;
    };
    const row = status.models.find((m) => m.name === "broken_at_up")!;
    expect(row.state).toBe("UNAVAILABLE");
    expect(row.reason).toMatch(/cannot initialize on purpose/);
    expect(row.reason).toContain(path.join(repo, "broken_at_up"));
    expect(row.reason).not.toContain(`${path.sep}runs${path.sep}`);

    const done = nextReady("broken_at_up");
    await editorSave(path.join(repo, "broken_at_up", "1", "model.py"), MODEL(6));
    expect((await done()).phase).toBe("ready");
    expect(await served("broken_at_up")).toBe(6);
  }, 90_000);

  it("withdraws a model added in a broken state, and loads it when the fix is saved", async () => {
    let done = nextReady("broken_new");
    await writeModel(repo, "broken_new", 8, brokenModel(8));
    const failed = await done();
    expect(failed.phase).toBe("failed");
    expect(failed.withdrawn).toBe(true);
    expect(failed.reason).toMatch(/cannot initialize on purpose/);
    expect(failed.reason).toContain(path.join(repo, "broken_new"));
    await expectNoRetries("broken_new");
    expect(await client.isModelReady("broken_new")).toBe(false);
    done = nextReady("broken_new");
    await editorSave(path.join(repo, "broken_new", "1", "model.py"), MODEL(9));
    expect((await done()).phase).toBe("ready");
    expect(await served("broken_new")).toBe(9);
  }, 90_000);

  it("has zero downtime: 50 edits, valid and invalid, while a client keeps sending requests", async () => {
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const client2 = new TritonHttpClient(client.baseUrl, { timeoutMs: 30_000 });
    const load = (async () => {
      const deadline = Date.now() + 120_000;
      while (!stop && Date.now() < deadline) {
        try {
          await client2.infer("offset", [{ name: "X", shape: [1, 4], datatype: "FP32", data: [0, 0, 0, 0] }]);
          ok++;
        } catch (err) {
          failures.push(String((err as Error).message));
        }
      }
    })();
    let lastValid = 119;
    let finalSaveFrom = 0;
    for (let i = 0; i < 50; i++) {
      const kind = i % 5;
      // The 50 end with the last valid edit (i = 47) and two invalid ones: a config that lint
      // refuses (48), then a model.py that raises (49). Saves that come faster than reloads are
      // coalesced, and one overwritten before its reload read it is never served; so edit 48
      // waits until edit 47 serves, and then neither invalid edit may displace it.
      if (i === 48) await servedWithin(lastValid, 60_000);
      if (kind === 3) {
        await editorSave(
          path.join(repo, "offset", "config.pbtxt"),
          CONFIG("offset").replace("max_batch_size: 8", "max_batch_size: -1"),
        );
      } else if (kind === 4) {
        await editorSave(path.join(repo, "offset", "config.pbtxt"), CONFIG("offset"));
        finalSaveFrom = Date.now();
        await editorSave(modelPy(), MODEL(200 + i, 'raise RuntimeError("bad edit")'));
      } else {
        lastValid = 200 + i;
        await editorSave(path.join(repo, "offset", "config.pbtxt"), CONFIG("offset"));
        await editorSave(modelPy(), MODEL(lastValid));
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(lastValid).toBe(247);
    // The edit that read the last save (a model.py that raises) fails and leaves edit 47 serving.
    const outcome = await up.waitFor(
      (e) => e.type === "edit" && e.model === "offset" && e.phase === "failed" && startedAfter(e, finalSaveFrom),
      90_000,
    );
    expect(outcome.reason).toMatch(/bad edit/);
    expect(outcome.reason).toMatch(/last good version keeps serving/);
    // Poll mode picks up the restored last good snapshot at its next poll; it serves throughout.
    await new Promise((r) => setTimeout(r, 2_500));
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(50);
    expect(await served()).toBe(lastValid);
    expect(await served("offset_pipe")).toBe(lastValid);
  }, 240_000);
});
