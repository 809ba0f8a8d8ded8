import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TritonHttpClient } from "../../src/triton/http-client.js";
import { freePorts, portArgs, runCli, tempDir, testEnv, type CliResult } from "../helpers/cli.js";
import { OFFSET_CONFIG, OFFSET_MODEL, writeOffsetModel } from "../helpers/offset-model.js";

/** The offset model under any folder name: without a name line, Triton takes the folder's. */
async function writeUnnamed(repo: string, name: string): Promise<void> {
  await fsp.mkdir(path.join(repo, name, "1"), { recursive: true });
  await fsp.writeFile(path.join(repo, name, "config.pbtxt"), OFFSET_CONFIG.replace('name: "offset"\n', ""));
  await fsp.writeFile(path.join(repo, name, "1", "model.py"), OFFSET_MODEL);
}

/** Every file named like `prefix` under `dirs`, however deep. */
function filesNamed(prefix: string, dirs: string[]): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.name.startsWith(prefix)) found.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  for (const d of dirs) if (fs.existsSync(d)) walk(d);
  return found;
}

/**
 * Model folder names that reach the python backend's `bash -c` command line, on the real
 * tritonserver: on the old code `inj$(touch PWNED)` created PWNED, and `with space`,
 * `semi;colon`, `dollar$(id)` made the whole `up` wait until its timeout. Now lint refuses them
 * with why and what to rename them to, nothing of them is staged, and the others serve.
 */
describe("model folder names Triton cannot serve safely (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;
  let home: string;
  let cwd: string;
  let up: CliResult;
  let upMs = 0;
  const LONG = "l".repeat(235);
  const BAD = ["inj$(touch PWNED)", "inj2$(cd;touch PWNED_HOME)", "with space", "semi;colon", "dollar$(id)", "modèle"];
  const watched = () => [models, home, cwd, env.TRITON_DEV_STATE_DIR!];

  beforeAll(async () => {
    home = await tempDir("home");
    cwd = await tempDir("cwd");
    env = await testEnv({ HOME: home });
    ports = await freePorts();
    models = await tempDir("models");
    await writeOffsetModel(models, "1");
    // Served: 235 characters made the old staging fail with ENAMETOOLONG (and the whole `up`).
    await writeUnnamed(models, LONG);
    for (const name of BAD) await writeUnnamed(models, name);
    // An ensemble whose step runs one of them: refused, pointing at the step.
    await fsp.mkdir(path.join(models, "pipe", "1"), { recursive: true });
    await fsp.writeFile(
      path.join(models, "pipe", "config.pbtxt"),
      `platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [ { model_name: "with space" model_version: -1 input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" } } ]
}
`,
    );
    const t0 = Date.now();
    up = await runCli(["up", "--detach", "--timeout", "90", "--models", models, ...portArgs(ports)], env, 180_000, cwd);
    upMs = Date.now() - t0;
  }, 240_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("serves the other models, refuses these with the lint reason and a name to rename to, and runs nothing", async () => {
    // The refused ones are counted and named, not left out of the count.
    expect(up.stdout).toMatch(
      new RegExp(`Triton is up in [\\d.]+ s: 2 of ${BAD.length + 3} models READY \\([^)]*\\); not READY: `),
    );
    for (const name of [...BAD, "pipe"]) expect(up.stdout).toContain(`${name}: not loaded, lint found errors`);
    expect(up.stdout).toContain("Rename the folder to 'inj_touch_PWNED'");
    expect(up.stdout).toContain("Rename the folder to 'modele'");
    expect(up.stdout).toMatch(
      /pipe\/config\.pbtxt:6:\d+: error: step 0 runs model 'with space', a name Triton cannot serve/,
    );
    // The run is ready (everything it serves is READY), so `up` exits 0 and names each model it
    // does not serve, with why.
    expect(up.code).toBe(0);
    expect(up.stderr.match(/: not served, refused: /g)).toHaveLength(7);
    expect(filesNamed("PWNED", watched())).toEqual([]);
    console.info(`up --detach with 7 refused names: ${(upMs / 1000).toFixed(1)} s`);

    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const byName = new Map<string, { state: string }>(status.models.map((m: { name: string }) => [m.name, m]));
    expect(byName.get("offset")).toMatchObject({ state: "READY" });
    expect(byName.get(LONG)).toMatchObject({ state: "READY" });
    for (const name of [...BAD, "pipe"]) expect(byName.get(name), name).toMatchObject({ state: "REFUSED" });
    // Nothing of them reached the served repository.
    expect((await fsp.readdir(status.repository)).sort()).toEqual([LONG, "offset"].sort());

    const client = new TritonHttpClient(`http://127.0.0.1:${ports.http}`, { timeoutMs: 30_000 });
    for (const m of ["offset", LONG]) {
      const r = await client.infer(m, [{ name: "X", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }]);
      expect(r.outputs[0]!.data).toEqual([2, 3, 4, 5]);
    }
  });

  it("refuses such a model added while it runs, still runs nothing, and keeps reloading the others", async () => {
    const live = ["live$(cd;touch PWNED_LIVE)", "naïve model"];
    for (const name of live) await writeUnnamed(models, name);
    const edits = async () =>
      new Map<string, { outcome: string; diagnostics?: Array<{ code: string; hint?: string }> }>(
        (JSON.parse((await runCli(["status", "--json"], env)).stdout).edits ?? []).map((e: { model: string }) => [
          e.model,
          e,
        ]),
      );
    const deadline = Date.now() + 60_000;
    let seen = await edits();
    while (!live.every((n) => seen.get(n)?.outcome === "refused") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      seen = await edits();
    }
    for (const name of live) {
      expect(seen.get(name), name).toMatchObject({ outcome: "refused" });
      expect(seen.get(name)!.diagnostics!.map((d) => d.code)).toEqual(["model-name-unsafe"]);
    }
    expect(seen.get("live$(cd;touch PWNED_LIVE)")!.diagnostics![0]!.hint).toContain("'live_cd_touch_PWNED_LIVE'");

    // The watcher goes on: a model added under a good name loads.
    await writeUnnamed(models, "added_ok");
    while (seen.get("added_ok")?.outcome !== "ready" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      seen = await edits();
    }
    expect(seen.get("added_ok")).toMatchObject({ outcome: "ready" });
    expect(filesNamed("PWNED", watched())).toEqual([]);
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const ready = status.models
      .filter((m: { state: string }) => m.state === "READY")
      .map((m: { name: string }) => m.name);
    expect(ready.sort()).toEqual(["added_ok", LONG, "offset"].sort());
  }, 120_000);

  // The python backend puts the state folder's path on the same command line: a space in it made
  // every python model's load hang (the old `up` waited for its whole timeout).
  it("refuses at once a state folder whose path the python backend's shell would split", async () => {
    const spaced = path.join(await tempDir("state-parent"), "my state");
    const r = await runCli(
      ["up", "--detach", "--timeout", "60", "--models", models, ...portArgs(await freePorts())],
      { ...env, TRITON_DEV_STATE_DIR: spaced },
      120_000,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the python backend cannot start models under");
    expect(r.stderr).toContain("TRITON_DEV_STATE_DIR");
    // At once: refused while planning, before any server was started or any model staged (the
    // hang it replaces came after both), whatever the machine's speed.
    expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/^starting tritonserver/m);
    expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/^staged /m);
  }, 150_000);
});
