import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, freePorts, portArgs, runCli, tempDir, testEnv, type CliResult } from "../helpers/cli.js";
import { output, tritonclient, type Call, type TensorIn } from "../helpers/tritonclient.js";
import { endedBeforeExitTimeout, runLogFile } from "../helpers/exit-wait.js";

/**
 * The misplaced layouts of the examples corpus (test/fixtures/examples/misplaced; the README
 * beside the corpus says which public example each mirrors) as one repository on the real
 * tritonserver: lint's verdict, `up --detach` naming every model it does not serve with the
 * reason in the user's paths (stderr, status, status --json), requests through tritonclient
 * refused for those models, each layout fixed the way its hint says (a move, a new version
 * folder, a python wrapper), the fixed models READY and answering over HTTP and gRPC, and a
 * `down` after a failed load that does not wait out Triton's exit timeout.
 */
const FIXTURE = path.join(ROOT, "test/fixtures/examples/misplaced");
const MISPLACED = ["config_in_version", "multi_version", "no_version", "top_level_files"];
const ALL = [...MISPLACED, "onnx_no_config", "served"].sort();

interface StatusModel {
  name: string;
  state: string;
  version?: string;
  reason?: string;
  served: boolean;
}
interface Diagnostic {
  severity: string;
  code: string;
  file: string;
  line: number;
  column: number;
}
interface Status {
  serverReady: boolean;
  readiness: { ready: boolean; notServed: string[] };
  models: StatusModel[];
  edits: Array<{ model: string; outcome: string; diagnostics?: Diagnostic[] }>;
}

const fp32 = (data: number[], shape = [data.length]): TensorIn => ({ name: "INPUT0", datatype: "FP32", shape, data });
const infer = (
  protocol: "http" | "grpc",
  model: string,
  data: number[],
  version?: number,
): Extract<Call, { kind: "infer" }> => ({
  kind: "infer",
  protocol,
  model,
  inputs: [fp32(data)],
  ...(version === undefined ? {} : { version }),
});

describe("misplaced layouts from lint through up, their fixes and down, on the real tritonserver", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let repo: string;
  let lint: CliResult;
  let lintLocal: CliResult;
  let up: CliResult;
  const t0 = Date.now();
  const status = async (): Promise<Status> => JSON.parse((await runCli(["status", "--json"], env)).stdout) as Status;
  const model = (s: Status, name: string) => s.models.find((m) => m.name === name);

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    repo = path.join(await tempDir("misplaced"), "models");
    await fs.cp(FIXTURE, repo, { recursive: true, filter: (src) => !src.includes("__pycache__") });
    [lint, lintLocal] = await Promise.all([
      runCli(["lint", "--json", repo], env),
      runCli(["lint", "--json", "--runtime", "local", repo], env),
    ]);
    up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
  }, 180_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    console.info(`examples misplaced: whole file ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }, 60_000);

  it("lint refuses each misplaced layout with its rule and the file it is about, and the onnx model needs a runtime with onnxruntime", () => {
    type Lint = { models: Array<{ name: string; wouldLoad: boolean; diagnostics: Diagnostic[] }> };
    for (const result of [lint, lintLocal]) expect(result.code).toBe(1);
    const byName = (r: CliResult) => new Map((JSON.parse(r.stdout) as Lint).models.map((m) => [m.name, m]));
    const any = byName(lint);
    const local = byName(lintLocal);
    const errors = (name: string) =>
      any
        .get(name)!
        .diagnostics.filter((d) => d.severity === "error")
        .map((d) => [d.code, path.relative(repo, d.file), d.line, d.column]);
    expect(errors("config_in_version")).toEqual([
      ["config-in-version-folder", "config_in_version/1/config.pbtxt", 1, 1],
    ]);
    // One error naming the first; its hint names the others to delete.
    expect(errors("multi_version")).toEqual([["config-in-version-folder", "multi_version/1/config.pbtxt", 1, 1]]);
    expect(errors("no_version")).toEqual([["version-missing", "no_version", 1, 1]]);
    expect(errors("top_level_files")).toEqual([["version-missing", "top_level_files/config.pbtxt", 1, 1]]);
    for (const name of MISPLACED)
      expect([any.get(name)!.wouldLoad, local.get(name)!.wouldLoad]).toEqual([false, false]);
    // The onnx model loads with or without a runtime named: Triton completes its config from
    // model.onnx, and the local runtime serves it through ONNX Runtime in the python backend.
    for (const verdict of [any, local])
      expect(verdict.get("onnx_no_config")).toMatchObject({
        wouldLoad: true,
        diagnostics: [{ severity: "warning", code: "config-missing" }],
      });
    expect([any.get("served")!.wouldLoad, local.get("served")!.wouldLoad]).toEqual([true, true]);
  });

  it("up --detach serves the good model and the onnx one, and names every other with its reason, in the user's paths", async () => {
    // Everything it serves is READY, so it exits 0; what it does not serve it names on stderr.
    expect(up.code).toBe(0);
    expect(up.stdout).toMatch(new RegExp(`2 of ${ALL.length} models READY \\(onnx_no_config, served\\); not READY: `));
    const lines = up.stderr.split("\n");
    for (const name of MISPLACED) {
      const line = lines.find((l) => l.startsWith(`${name}: not served, refused`));
      expect(line, up.stderr).toBeDefined();
    }
    expect(lines.find((l) => l.startsWith("config_in_version:"))).toContain("config_in_version/1/config.pbtxt:1:1");
    // The onnxruntime model is served through the local runtime's adapter, and says so.
    expect(up.stdout).toMatch(
      /^onnx_no_config: served through ONNX Runtime \d+\.\d+ in the python backend \(local runtime\)$/m,
    );
    expect(up.stderr).not.toContain(env.TRITON_DEV_STATE_DIR!);

    const s = await status();
    expect(s.models.map((m) => m.name).sort()).toEqual(ALL);
    expect(s.readiness).toMatchObject({ ready: true, notServed: MISPLACED });
    expect(s.serverReady).toBe(true);
    for (const name of MISPLACED) expect(model(s, name)).toMatchObject({ state: "REFUSED", served: false });
    expect(model(s, "config_in_version")!.reason).toContain("config_in_version/1/config.pbtxt:1:1");
    expect(model(s, "top_level_files")!.reason).toContain("top_level_files/config.pbtxt:1:1");
    expect(model(s, "onnx_no_config")).toMatchObject({ state: "READY", served: true });
    // The refused edits carry every diagnostic, located in the user's files.
    const refused = s.edits.filter((e) => e.outcome === "refused");
    expect(refused.map((e) => e.model).sort()).toEqual(MISPLACED);
    for (const e of refused)
      for (const d of e.diagnostics!) expect(d.file.startsWith(path.join(repo, e.model))).toBe(true);
    expect(JSON.stringify(s.models)).not.toContain(env.TRITON_DEV_STATE_DIR!);

    const plain = (await runCli(["status"], env)).stdout;
    for (const name of [...MISPLACED, "onnx_no_config"]) expect(plain).toMatch(new RegExp(`^${name} .*\\S`, "m"));
    expect(plain).toMatch(/^config_in_version +- +REFUSED .*config_in_version\/1\/config\.pbtxt:1:1/m);
  });

  it("tritonclient gets the served models' answers and Triton's refusals for the others, over HTTP and gRPC", async () => {
    const answers = await tritonclient(ports, [
      infer("http", "served", [1, -2]),
      infer("grpc", "served", [3]),
      // Completed as the onnxruntime backend completes it: a batch dimension over dims [1].
      { ...infer("http", "onnx_no_config", []), inputs: [fp32([1, -2], [2, 1])] },
      { ...infer("grpc", "onnx_no_config", []), inputs: [fp32([3], [1, 1])] },
      ...MISPLACED.flatMap((m) => [infer("http", m, [1]), infer("grpc", m, [1])]),
    ]);
    expect(output(answers[0], "OUTPUT0")).toEqual({ shape: [2], data: [-1, 2] });
    expect(output(answers[1], "OUTPUT0").data).toEqual([-3]);
    // model.onnx multiplies by 2, computed by ONNX Runtime.
    expect(output(answers[2], "OUTPUT0")).toEqual({ shape: [2, 1], data: [2, -4] });
    expect(output(answers[3], "OUTPUT0").data).toEqual([6]);
    for (const a of answers.slice(4))
      expect([a.status, a.outputs]).toEqual([expect.stringMatching(/404|NOT_FOUND/), undefined]);
  });

  it("each layout fixed as its hint says comes up READY and computes, over HTTP and gRPC", async () => {
    const at = (...p: string[]) => path.join(repo, ...p);
    const saved = Date.now();
    // The config moves out of the version folder.
    await fs.rename(at("config_in_version/1/config.pbtxt"), at("config_in_version/config.pbtxt"));
    // One config for every version: version 2's goes to the top, version 1's is deleted.
    await fs.rename(at("multi_version/2/config.pbtxt"), at("multi_version/config.pbtxt"));
    await fs.rm(at("multi_version/1/config.pbtxt"));
    // The version folder is added and the model file moves into it (no_version keeps no config:
    // Triton completes it from auto_complete_config).
    for (const m of ["no_version", "top_level_files"]) {
      await fs.mkdir(at(m, "1"));
      await fs.rename(at(m, "model.py"), at(m, "1/model.py"));
    }
    // No onnxruntime here: the model is wrapped in a python backend model computing the same.
    await fs.rm(at("onnx_no_config/1/model.onnx"));
    await fs.writeFile(
      at("onnx_no_config/config.pbtxt"),
      (await fs.readFile(at("served/config.pbtxt"), "utf8")).replace('name: "served"', 'name: "onnx_no_config"'),
    );
    await fs.writeFile(
      at("onnx_no_config/1/model.py"),
      (await fs.readFile(at("served/1/model.py"), "utf8")).replace("x * -1", "x * 2"),
    );

    let s = await status();
    // Bounded: five models staged and loaded by the watcher.
    // Status shows a model READY a moment before its edit's outcome is recorded: wait for both.
    const settled = () =>
      ALL.every((n) => model(s, n)?.state === "READY") &&
      [...MISPLACED, "onnx_no_config"].every((n) => s.edits.filter((e) => e.model === n).at(-1)?.outcome === "ready");
    while (Date.now() - saved < 90_000 && !settled()) {
      await new Promise((res) => setTimeout(res, 500));
      s = await status();
    }
    console.info(
      `examples misplaced: five layouts fixed, all READY ${((Date.now() - saved) / 1000).toFixed(1)} s after saving`,
    );
    expect(s.models.map((m) => [m.name, m.state])).toEqual(ALL.map((n) => [n, "READY"]));
    expect(model(s, "multi_version")!.version).toBe("2");
    expect(s.readiness).toMatchObject({ ready: true, notServed: [] });
    const last = new Map(s.edits.map((e) => [e.model, e.outcome]));
    for (const n of [...MISPLACED, "onnx_no_config"]) expect(last.get(n), n).toBe("ready");

    const x = [1, 2, 3];
    const a = await tritonclient(ports, [
      ...(["http", "grpc"] as const).flatMap((p) => [
        infer(p, "config_in_version", x),
        infer(p, "multi_version", x),
        infer(p, "no_version", x),
        infer(p, "top_level_files", x),
        infer(p, "onnx_no_config", x),
      ]),
      // Only the latest version is served (the default version_policy), and its config wants 3 values.
      infer("http", "multi_version", x, 1),
      infer("grpc", "multi_version", [1, 2]),
    ]);
    for (const k of [0, 5]) {
      expect(output(a[k], "OUTPUT0")).toEqual({ shape: [3], data: [2, 3, 4] });
      expect(output(a[k + 1], "OUTPUT0").data).toEqual([20, 40, 60]);
      expect(output(a[k + 2], "OUTPUT0").data).toEqual([0, 1, 2]);
      expect(output(a[k + 3], "OUTPUT0").data).toEqual([1, 4, 9]);
      expect(output(a[k + 4], "OUTPUT0").data).toEqual([2, 4, 6]);
    }
    // Measured on 2.51: a version that is not served is 404, like an unknown model.
    expect(a[10]).toMatchObject({ status: "404" });
    expect(a[11]).toMatchObject({ status: "StatusCode.INVALID_ARGUMENT" });
  }, 150_000);

  it("down stops well within Triton's 10 s exit timeout", async () => {
    const logFile = await runLogFile(env);
    const started = Date.now();
    const r = await runCli(["down"], env);
    const ms = Date.now() - started;
    const waits = r.stderr.split("\n").filter((l) => l.startsWith("waiting for Triton to unload")).length;
    console.info(`examples misplaced: down ${(ms / 1000).toFixed(1)} s with 6 models (${waits} "waiting for" lines)`);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/stopped Triton/);
    // Triton's exit timeout is 10 s; without the local runtime's unload tracking it waits it out
    // (its log counts down to 0). Asserted on that log, not on the duration a busy machine stretches.
    expect(endedBeforeExitTimeout(await fs.readFile(logFile, "utf8")), `down took ${ms} ms`).toMatchObject({
      expired: false,
    });
    await expect(fetch(`http://127.0.0.1:${ports.http}/v2/health/live`)).rejects.toThrow();
  });
});
