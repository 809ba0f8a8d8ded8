import fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TritonHttpClient } from "../../src/triton/http-client.js";
import { freePorts, portArgs, ROOT, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { UpProcess, type UpEvent } from "../helpers/up-process.js";
import { buildWheel, managedPython, offlinePip } from "../helpers/wheels.js";

const FIXTURE = path.join(ROOT, "test/fixtures/requirements");

/** An editor's save: a temp file beside the target, renamed over it. */
async function editorSave(file: string, content: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${Date.now()}`);
  await fsp.writeFile(tmp, content);
  await fsp.rename(tmp, file);
}

/** add_sub's request as a client sends it: tritonclient from the managed environment when it has it. */
const TRITONCLIENT_SCRIPT = String.raw`
import json, sys
import numpy as np
import tritonclient.http as httpclient
c = httpclient.InferenceServerClient(sys.argv[1])
a = np.array([1, 2, 3, 4], dtype=np.float32)
b = np.array([4, 3, 2, 1], dtype=np.float32)
n = np.array([b"triton"], dtype=np.object_)
inputs = []
for name, value, dt in (("INPUT0", a, "FP32"), ("INPUT1", b, "FP32"), ("NAME", n, "BYTES")):
    i = httpclient.InferInput(name, list(value.shape), dt)
    i.set_data_from_numpy(value)
    inputs.append(i)
r = c.infer("add_sub", inputs)
print(json.dumps({"sum": r.as_numpy("OUTPUT0").tolist(), "diff": r.as_numpy("OUTPUT1").tolist(),
                  "greeting": r.as_numpy("GREETING")[0].decode()}))
`;

/**
 * The fixture repository (test/fixtures/requirements: python_backend's add_sub with a pure-python
 * dependency, and a model whose requirements.txt conflicts with the stub) through lint, up, real
 * requests, edits of requirements.txt and down, on the real tritonserver. pip reads only a wheel
 * folder built here (PIP_NO_INDEX), and the environments go to a folder of this test's own, so
 * the first build is a cold one.
 */
describe("python models with a requirements.txt (real pip, real Triton)", () => {
  const { python } = managedPython();
  let repo: string;
  let envsDir: string;
  let env: NodeJS.ProcessEnv;
  let up: UpProcess;
  let url: string;
  let viaTritonClient = false;
  const figures: string[] = [];
  const temps: string[] = [];
  const requirementsOf = (model: string) => path.join(repo, model, "requirements.txt");

  const addSub = async (): Promise<{ sum: number[]; diff: number[]; greeting: string }> => {
    if (viaTritonClient) return JSON.parse((await execa(python, ["-c", TRITONCLIENT_SCRIPT, url])).stdout);
    const r = await new TritonHttpClient(`http://${url}`).infer("add_sub", [
      { name: "INPUT0", shape: [4], datatype: "FP32", data: [1, 2, 3, 4] },
      { name: "INPUT1", shape: [4], datatype: "FP32", data: [4, 3, 2, 1] },
      { name: "NAME", shape: [1], datatype: "BYTES", data: ["triton"] },
    ]);
    const out = (n: string) => r.outputs.find((o) => o.name === n)!.data;
    return { sum: out("OUTPUT0") as number[], diff: out("OUTPUT1") as number[], greeting: String(out("GREETING")[0]) };
  };
  /** The outcome of the next edit of `model` (ready, failed or refused), from the events after now. */
  const nextOutcome = (model: string) => {
    const from = up.events.length;
    return {
      from,
      done: () =>
        up.waitFor(
          (e) => e.type === "edit" && e.model === model && ["ready", "failed", "refused"].includes(String(e.phase)),
          180_000,
          from,
        ),
    };
  };
  const phasesOf = (e: UpEvent, from: number) =>
    up.events
      .slice(from)
      .filter((x) => x.type === "edit" && x.id === e.id)
      .map((x) => x.phase);

  beforeAll(async () => {
    const wheels = await tempDir("wheels");
    await buildWheel(python, wheels, {
      name: "tdgreet",
      version: "1.0",
      source: path.join(FIXTURE, "packages/tdgreet"),
    });
    // Version 2.0 of the same package greets differently.
    const v2 = await tempDir("tdgreet-2");
    await fsp.cp(path.join(FIXTURE, "packages/tdgreet"), v2, { recursive: true });
    const init = path.join(v2, "tdgreet", "__init__.py");
    await fsp.writeFile(
      init,
      (await fsp.readFile(init, "utf8")).replace('"1.0"', '"2.0"').replace('GREETING = "hello"', 'GREETING = "hi"'),
    );
    await buildWheel(python, wheels, { name: "tdgreet", version: "2.0", source: v2 });
    repo = await tempDir("req-models");
    await fsp.cp(path.join(FIXTURE, "models"), repo, { recursive: true });
    envsDir = await tempDir("req-envs");
    temps.push(wheels, v2, repo, envsDir);
    env = await testEnv({ ...offlinePip(wheels), TRITON_DEV_ENVS_DIR: envsDir });
    viaTritonClient = (await execa(python, ["-c", "import tritonclient.http"], { reject: false })).exitCode === 0;
  }, 60_000);

  afterAll(async () => {
    await up?.stop();
    if (env) await runCli(["down"], env);
    for (const d of temps) await fsp.rm(d, { recursive: true, force: true });
    console.info(
      `requirements.txt figures (requests via ${viaTritonClient ? "tritonclient" : "triton-dev's HTTP client"}):\n  ${figures.join("\n  ")}`,
    );
  }, 60_000);

  it("lint judges both models' configs (pip's verdict comes at up)", async () => {
    const r = await runCli(["lint", repo], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/2 of 2 would load/);
  });

  it("up builds add_sub's environment, serves the model with its package, and refuses the conflicting one at its line", async () => {
    const ports = await freePorts();
    url = `127.0.0.1:${ports.http}`;
    const t0 = Date.now();
    up = new UpProcess(["--models", repo, "--runtime", "local", ...portArgs(ports)], env);
    await up.waitFor((e) => e.type === "watching", 240_000);
    figures.push(`up with a cold environment build, to watching: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const built = up.events.find(
      (e) => e.type === "progress" && /add_sub: environment \w+ ready in/.test(String(e.message)),
    );
    expect(built).toBeDefined();
    figures.push(`environment build (cold, tdgreet==1.0): ${/ready in (\S+ s)/.exec(String(built!.message))![1]}`);
    // Refused before anything was installed: no "installing" step for it.
    const refusal = up.events.find((e) => e.type === "lint" && e.model === "needs_numpy2")!;
    expect(refusal.staged).toBe(false);
    const d = refusal.diagnostics![0]! as UpEvent["diagnostics"] extends Array<infer D> | undefined
      ? D & { code?: string; hint?: string }
      : never;
    expect(d).toMatchObject({
      file: requirementsOf("needs_numpy2"),
      line: 2,
      column: 1,
      code: "requirements-conflict",
    });
    expect(d.message).toMatch(/numpy>=2\.0.*numpy 1\.\d+\.\d+/);
    expect(d.hint).toMatch(/numpy<2/);
    expect(up.events.some((e) => e.type === "progress" && /needs_numpy2: installing/.test(String(e.message)))).toBe(
      false,
    );

    expect(await addSub()).toEqual({ sum: [5, 5, 5, 5], diff: [-3, -1, 1, 3], greeting: "hello triton (tdgreet 1.0)" });
    // The user's config is untouched; the staged copy names the environment.
    expect(await fsp.readFile(path.join(repo, "add_sub", "config.pbtxt"), "utf8")).not.toContain("EXECUTION_ENV_PATH");
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const staged = await fsp.readFile(path.join(status.repository, "add_sub", "config.pbtxt"), "utf8");
    expect(staged).toMatch(new RegExp(`EXECUTION_ENV_PATH" value: \\{ string_value: "${envsDir}/[0-9a-f]{20}" \\}`));
    expect(status.models.find((m: { name: string }) => m.name === "needs_numpy2")).toMatchObject({ state: "REFUSED" });
  }, 300_000);

  it("an edit of requirements.txt builds the new environment while the old one serves, then reloads into it", async () => {
    // The staged config differs from the user's, yet the run started without taking it for an edit.
    expect(up.edits("add_sub", "saved")).toEqual([]);
    let next = nextOutcome("add_sub");
    await editorSave(requirementsOf("add_sub"), "tdgreet==2.0\n");
    let e = await next.done();
    expect(e.phase).toBe("ready");
    expect(phasesOf(e, next.from)).toEqual(["saved", "validated", "environment", "staged", "loading", "ready"]);
    figures.push(
      `requirements.txt edit with a new environment (tdgreet==2.0), save to READY: ${(Number(e.sinceSavedMs) / 1000).toFixed(2)} s`,
    );
    expect((await addSub()).greeting).toBe("hi triton (tdgreet 2.0)");

    // Back to a set built before: the cached environment, no pip at all.
    next = nextOutcome("add_sub");
    await editorSave(requirementsOf("add_sub"), "# back to the first version\ntdgreet==1.0\n");
    e = await next.done();
    expect(e.phase).toBe("ready");
    expect(phasesOf(e, next.from)).not.toContain("environment");
    figures.push(
      `requirements.txt edit to a cached environment, save to READY: ${(Number(e.sinceSavedMs) / 1000).toFixed(2)} s`,
    );
    expect((await addSub()).greeting).toBe("hello triton (tdgreet 1.0)");
  }, 300_000);

  it("a pip install that fails keeps the last good version serving and shows pip's error at the line", async () => {
    const next = nextOutcome("add_sub");
    await editorSave(requirementsOf("add_sub"), "# a version that does not exist\ntdgreet==9.9\n");
    const e = await next.done();
    expect(e.phase).toBe("failed");
    expect(e.reason).toMatch(
      /pip could not install requirements\.txt: Could not find a version that satisfies the requirement tdgreet==9\.9/,
    );
    expect(e.reason).toMatch(/the last good version keeps serving/);
    expect(e.diagnostics![0]).toMatchObject({ file: requirementsOf("add_sub"), line: 2 });
    expect((await addSub()).greeting).toBe("hello triton (tdgreet 1.0)");
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const edit = status.edits.find((x: { model: string }) => x.model === "add_sub");
    expect(edit).toMatchObject({ outcome: "failed" });
    expect(edit.diagnostics[0].code).toBe("requirements-install-failed");
    expect(status.models.find((m: { name: string }) => m.name === "add_sub")).toMatchObject({ state: "READY" });
  }, 180_000);

  it("an edit that hides an index or names a file outside the model is refused before pip runs, at its file:line:col", async () => {
    let asked = 0;
    const index = http.createServer((_req, res) => {
      asked++;
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => index.listen(0, "127.0.0.1", r));
    const secretDir = await tempDir("req-secret");
    temps.push(secretDir);
    const secret = path.join(secretDir, "secret.txt");
    await fsp.writeFile(secret, "root:$6$never-printed-anywhere:19000:0:99999:7:::\n");
    try {
      const simple = `http://127.0.0.1:${(index.address() as AddressInfo).port}/simple`;
      let next = nextOutcome("add_sub");
      await editorSave(requirementsOf("add_sub"), `tdgreet==1.0\n# pinned \\\n--index-url ${simple}\n`);
      let e = await next.done();
      expect(e.phase).toBe("refused");
      expect(e.diagnostics![0]).toMatchObject({ file: requirementsOf("add_sub"), line: 2, column: 10 });
      expect((e.diagnostics![0] as { code?: string }).code).toBe("requirements-syntax");

      next = nextOutcome("add_sub");
      await editorSave(requirementsOf("add_sub"), `tdgreet==1.0\n--requirem ${secret}\n`);
      e = await next.done();
      expect(e.phase).toBe("refused");
      expect(e.diagnostics![0]).toMatchObject({ file: requirementsOf("add_sub"), line: 2, column: 1 });
      expect(JSON.stringify(up.events)).not.toContain("never-printed");
      const logs = path.join(envsDir, "logs");
      for (const f of await fsp.readdir(logs)) {
        expect(await fsp.readFile(path.join(logs, f), "utf8")).not.toContain("never-printed");
        expect((await fsp.stat(path.join(logs, f))).mode & 0o777).toBe(0o600);
      }
      expect((await fsp.stat(logs)).mode & 0o777).toBe(0o700);
      expect(asked).toBe(0);
      expect((await addSub()).greeting).toBe("hello triton (tdgreet 1.0)");
    } finally {
      await new Promise((r) => index.close(r));
    }
  }, 180_000);

  it("a requirement conflicting with the stub saved later is refused, and the fix of the refused model loads it", async () => {
    let next = nextOutcome("add_sub");
    await editorSave(requirementsOf("add_sub"), "tdgreet==1.0\nnumpy>=2\n");
    let e = await next.done();
    expect(e.phase).toBe("refused");
    expect(e.diagnostics![0]).toMatchObject({ file: requirementsOf("add_sub"), line: 2 });
    expect((await addSub()).greeting).toBe("hello triton (tdgreet 1.0)");

    next = nextOutcome("needs_numpy2");
    await editorSave(requirementsOf("needs_numpy2"), "tdgreet==1.0\n");
    e = await next.done();
    expect(e.phase).toBe("ready");
    const r = await new TritonHttpClient(`http://${url}`).infer("needs_numpy2", [
      { name: "X", shape: [1], datatype: "FP32", data: [2.5] },
    ]);
    expect(r.outputs[0]!.data).toEqual([2.5]);
  }, 180_000);

  it("a requirements.txt deleted: the edit is refused before the load, at the import of the module it lacks, saying where to list it", async () => {
    let next = nextOutcome("add_sub");
    await fsp.rm(requirementsOf("add_sub"));
    let e = await next.done();
    expect(e.phase).toBe("refused");
    expect(JSON.stringify(e)).toContain("add_sub imports a module the model's environment lacks: 'tdgreet'");
    // The user's model.py, not the staged copy, at the import.
    expect(e.diagnostics![0]).toMatchObject({
      file: path.join(repo, "add_sub", "1", "model.py"),
      line: 4,
      column: 1,
      code: "python-import-missing",
    });
    expect((e.diagnostics![0] as { hint?: string }).hint).toContain(`Add tdgreet to ${requirementsOf("add_sub")}`);
    expect((await addSub()).greeting).toBe("hello triton (tdgreet 1.0)");

    next = nextOutcome("add_sub");
    await editorSave(requirementsOf("add_sub"), "tdgreet==1.0\n");
    e = await next.done();
    expect(e.phase).toBe("ready");
    expect((await addSub()).greeting).toBe("hello triton (tdgreet 1.0)");
  }, 180_000);

  it("down stops everything; the environments stay cached for the next run", async () => {
    const code = await up.stop();
    expect(code).toBe(0);
    const down = await runCli(["down"], env);
    expect(down.code).toBe(0);
    expect((await fsp.readdir(envsDir)).filter((f) => /^[0-9a-f]{20}$/.test(f)).length).toBe(2);
  }, 60_000);
});
