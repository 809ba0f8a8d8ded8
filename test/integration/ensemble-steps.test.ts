import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

/*
 * Ensembles and the models they run, on the real tritonserver of the local runtime (poll mode,
 * detached), as Triton itself treats them: a broken ensemble never blocks its step models, which
 * load, reload and show in `status` on their own; the ensemble follows once fixed and, while it
 * cannot load, names the step that keeps it out. The ready line and `status` say exactly which
 * models are READY. A backend this runtime lacks is named with where it runs.
 */

const STEP = (name: string) => `name: "${name}"
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const MODEL = (offset: number, o: { initRaises?: boolean } = {}) => `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
${o.initRaises ? '    def initialize(self, args):\n        raise RuntimeError("cannot initialize on purpose")\n\n' : ""}    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + ${offset.toFixed(1)}).astype(np.float32))]))
        return out
`;

/** first then second: IN -> X/Y -> X/Y -> OUT. */
const ENSEMBLE = (name: string, first: string, second: string) => `name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [
    { model_name: "${first}" model_version: -1 input_map { key: "X" value: "IN" } output_map { key: "Y" value: "MID" } },
    { model_name: "${second}" model_version: -1 input_map { key: "X" value: "MID" } output_map { key: "Y" value: "OUT" } }
  ]
}
`;

async function saveFile(file: string, content: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${Date.now()}`);
  await fs.writeFile(tmp, content);
  await fs.rename(tmp, file);
}

async function writeStep(repo: string, name: string, py: string): Promise<void> {
  await fs.mkdir(path.join(repo, name, "1"), { recursive: true });
  await fs.writeFile(path.join(repo, name, "config.pbtxt"), STEP(name));
  await saveFile(path.join(repo, name, "1", "model.py"), py);
}

interface Status {
  serverReady: boolean;
  readiness: {
    ready: boolean;
    waitingFor: string[];
    count: { ready: string[]; notReady: Array<{ name: string; state: string; reason?: string }>; total: number };
  };
  models: Array<{ name: string; state: string; reason?: string; served: boolean }>;
  edits?: Array<{
    id: number;
    model: string;
    outcome: string;
    reason?: string;
    diagnostics?: Array<{ file: string; code: string; hint?: string }>;
  }>;
}

const status = async (env: NodeJS.ProcessEnv): Promise<Status> =>
  JSON.parse((await runCli(["status", "--json"], env)).stdout) as Status;

async function eventually(what: string, probe: () => Promise<boolean>, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The last edit of `model` ended with `outcome`, an edit later than `after` (its id). */
async function edited(env: NodeJS.ProcessEnv, model: string, outcome: string, after = 0): Promise<void> {
  await eventually(`${model}'s edit ending ${outcome}`, async () => {
    const e = ((await status(env)).edits ?? []).find((x) => x.model === model);
    return e !== undefined && e.id > after && e.outcome === outcome;
  });
}

const lastEditId = async (env: NodeJS.ProcessEnv, model: string): Promise<number> =>
  ((await status(env)).edits ?? []).find((x) => x.model === model)?.id ?? 0;

/** Triton's answer for `model` to [0, 1, 2, 3] (inference needs no key). */
async function infer(http: number, model: string, input = "IN"): Promise<number[]> {
  const res = await fetch(`http://127.0.0.1:${http}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ inputs: [{ name: input, shape: [1, 4], datatype: "FP32", data: [0, 1, 2, 3] }] }),
  });
  const body = (await res.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
  if (!res.ok) throw new Error(`${model}: ${res.status} ${body.error}`);
  return body.outputs![0]!.data;
}

describe("ensembles never block their steps; the ready line says what is READY (real Triton)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let up: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    repo = await tempDir("ens-steps");
    await writeStep(repo, "pre", MODEL(1));
    await writeStep(repo, "post", MODEL(10));
    // An ensemble without its version folder (git keeps no empty folder): lint refuses it.
    await fs.mkdir(path.join(repo, "pipe"), { recursive: true });
    await fs.writeFile(path.join(repo, "pipe", "config.pbtxt"), ENSEMBLE("pipe", "pre", "post"));
    // A step whose initialize raises at up, and the ensemble running it.
    await writeStep(repo, "post2", MODEL(100, { initRaises: true }));
    await fs.mkdir(path.join(repo, "pipe2", "1"), { recursive: true });
    await fs.writeFile(path.join(repo, "pipe2", "config.pbtxt"), ENSEMBLE("pipe2", "pre", "post2"));
    // A backend the local runtime does not have: named with the image that has it.
    await fs.mkdir(path.join(repo, "llm", "1"), { recursive: true });
    await fs.writeFile(path.join(repo, "llm", "config.pbtxt"), 'name: "llm"\nbackend: "vllm"\n');
    await fs.writeFile(path.join(repo, "llm", "1", "model.json"), '{"model": "facebook/opt-125m"}\n');
    env = await testEnv();
    ports = await freePorts();
    up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env, 60_000);
  }, 90_000);

  it("up's ready line counts every model of the repository and names each one not READY with its reason", () => {
    expect(up.code, up.stdout + up.stderr).toBe(0);
    const line = /^(?:ready|partly ready|nothing READY): .*$/m.exec(up.stdout)?.[0];
    expect(line).toMatch(/^partly ready: 2 of 6 models READY \(post, pre\); not READY: /);
    expect(line).toMatch(/llm \(SKIPPED: backend 'vllm' is not in the local runtime/);
    expect(line).toMatch(/pipe \(REFUSED: /);
    expect(line).toMatch(/post2 \(UNAVAILABLE: .*cannot initialize on purpose/);
    expect(line).toMatch(/pipe2 \((UNAVAILABLE|REFUSED): it runs post2/);
    expect(up.stdout).not.toMatch(/every model it serves is READY/);
  });

  it("a backend the local runtime lacks is named with the image that has it, at up and in status, never 'saving a fix loads it'", async () => {
    const said = /^llm: skipped, (.*)$/m.exec(up.stdout)?.[1];
    expect(said).toContain("nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3");
    expect(said).toContain("the default nvcr.io/nvidia/tritonserver:24.10-py3 has no vllm backend");
    expect(said).toContain("triton-dev up --runtime docker --image nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3");
    expect(up.stdout + up.stderr).not.toMatch(/llm[^\n]*saving a fix loads it/);
    expect(up.stdout + up.stderr).not.toMatch(/unable to find backend library/);
    const llm = (await status(env)).models.find((m) => m.name === "llm")!;
    expect(llm).toMatchObject({ state: "SKIPPED", served: false });
    expect(llm.reason).toContain("24.10-vllm-python-py3");
    // Saved again: no fix makes it load here, and the edit and status say where it runs instead.
    const before = await lastEditId(env, "llm");
    await saveFile(path.join(repo, "llm", "config.pbtxt"), 'name: "llm"\nbackend: "vllm"\n# edited\n');
    await edited(env, "llm", "refused", before);
    const after = await status(env);
    expect(after.edits!.find((e) => e.model === "llm")!.reason).toBe(
      "not served by this runtime (the finding says where it runs)",
    );
    expect(after.models.find((m) => m.name === "llm")!.reason).toContain("24.10-vllm-python-py3");
  }, 120_000);

  it("an ensemble that cannot load names the step keeping it out, and Triton's log never shows our placeholder's errors", async () => {
    const s = await status(env);
    const pipe2 = s.models.find((m) => m.name === "pipe2")!;
    expect(pipe2.state).not.toBe("READY");
    expect(pipe2.reason).toMatch(/it runs post2, which failed to load/);
    const logs = await runCli(["logs", "-n", "2000"], env);
    expect(logs.stdout).not.toMatch(/mapping to non-existing input/);
    expect((await runCli(["status"], env)).stdout).toMatch(
      /^ready {5}yes for the models it serves: 2 of 6 models READY \(post, pre\); not READY: llm \(SKIPPED\), pipe \(REFUSED\), pipe2 \(\w+\), post2 \(\w+\) \(see REASON\)$/m,
    );
  });

  it("a step of an ensemble that lint refuses still reloads, and the ensemble loads once its own fix is saved", async () => {
    expect(await infer(ports.http, "post", "X")).toEqual([10, 11, 12, 13]);
    const before = await lastEditId(env, "post");
    await saveFile(path.join(repo, "post", "1", "model.py"), MODEL(20));
    await edited(env, "post", "ready", before);
    expect(await infer(ports.http, "post", "X")).toEqual([20, 21, 22, 23]);

    // The fix of the ensemble itself: the folder git did not keep.
    await fs.mkdir(path.join(repo, "pipe", "1"));
    await edited(env, "pipe", "ready");
    expect(await infer(ports.http, "pipe")).toEqual([21, 22, 23, 24]);
  }, 180_000);

  it("a withdrawn step saved with an error stays in status as REFUSED, its good save loads it, and its ensemble follows", async () => {
    const before = await lastEditId(env, "post2");
    // An error of its own: a template saved over the filled config (tensorrtllm_backend's way).
    await saveFile(
      path.join(repo, "post2", "config.pbtxt"),
      STEP("post2").replace("max_batch_size: 8", "max_batch_size: ${triton_max_batch_size}"),
    );
    await edited(env, "post2", "refused", before);
    const after = await status(env);
    expect(after.models.find((m) => m.name === "post2")).toMatchObject({ state: "REFUSED", served: false });
    // The refusal names the file that was saved, with the tool that fills the template.
    const first = after.edits!.find((e) => e.model === "post2")!.diagnostics![0]!;
    expect(first).toMatchObject({ file: path.join(repo, "post2", "config.pbtxt"), code: "config-template" });
    expect(first.hint).toContain("tools/fill_template.py");

    const mid = await lastEditId(env, "post2");
    await saveFile(path.join(repo, "post2", "config.pbtxt"), STEP("post2"));
    await saveFile(path.join(repo, "post2", "1", "model.py"), MODEL(100));
    await edited(env, "post2", "ready", mid);
    await edited(env, "pipe2", "ready");
    expect(await infer(ports.http, "pipe2")).toEqual([101, 102, 103, 104]);

    const s = await status(env);
    expect(s.readiness.count.ready).toEqual(["pipe", "pipe2", "post", "post2", "pre"]);
    expect(s.readiness.count.notReady.map((m) => m.name)).toEqual(["llm"]);
    expect((await runCli(["status"], env)).stdout).toMatch(
      /^ready {5}yes for the models it serves: 5 of 6 models READY \(pipe, pipe2, post, post2, pre\); not READY: llm \(SKIPPED\)/m,
    );
  }, 240_000);
});
