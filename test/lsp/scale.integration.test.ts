import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, tempDir, testEnv } from "../helpers/cli.js";
import { ECHO_IO, ECHO_MODEL_PY, pythonConfig } from "../repo/helpers.js";
import { LspClient } from "./client.js";

// A repository of thousands of models as the server meets it: the opened config is answered from
// its own model and the models it runs, before the rest of the repository is read; a completion
// of model names is capped and filtered by what is typed; a config saved in no repository (in the
// temporary folder itself) is checked alone. Times are bench/lsp.mjs --scale's to measure.

const MODELS = 3000;
const name = (i: number) => `m${String(i).padStart(4, "0")}`;

describe(`triton-dev lsp on ${MODELS} models`, () => {
  let repo: string;
  let client: LspClient;
  const cfg = (m: string) => path.join(repo, m, "config.pbtxt");

  beforeAll(async () => {
    repo = await tempDir("lsp-scale");
    for (let i = 0; i < MODELS; i++) {
      await fsp.mkdir(path.join(repo, name(i), "1"), { recursive: true });
      // Every model but the ones opened has a finding of its own (a name that is not its folder's).
      await fsp.writeFile(cfg(name(i)), pythonConfig(i < 10 ? name(i) : `other_${i}`));
      await fsp.writeFile(path.join(repo, name(i), "1", "model.py"), ECHO_MODEL_PY);
    }
    const io = ECHO_IO.replace("INPUT0", "IN").replace("OUTPUT0", "OUT");
    await fsp.mkdir(path.join(repo, "zens", "1"), { recursive: true });
    await fsp.writeFile(
      cfg("zens"),
      `name: "zens"\nplatform: "ensemble"\nmax_batch_size: 8\n${io}ensemble_scheduling { step [ { model_name: "m0003" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }\n`,
    );
    client = LspClient.spawn(process.execPath, [CLI, "lsp", "--stdio"], await testEnv());
    await client.initialize(repo);
  }, 240_000);
  afterAll(async () => {
    expect(await client.stop()).toBe(0);
    await fsp.rm(repo, { recursive: true, force: true });
  });

  it("an opened ensemble (last by name) gets its first diagnostics first: they need only it and the model it runs, not the repository", async () => {
    const text = (await fsp.readFile(cfg("zens"), "utf8")).replace('value: "OUT"', 'value: "OUTX"');
    await client.open(cfg("zens"), text);
    const ds = await client.waitForDiagnostics(cfg("zens"), (d) => d.length > 0, 120_000);
    // Checked against m0003's config, read for it: the step writes OUTX, which no output is.
    expect(ds.map((d) => d.message).join("\n")).toMatch(/OUTX/);
    const firstForEns = client.published.findIndex((p) => p.uri === client.uri(cfg("zens")));
    const others = client.published.slice(0, firstForEns).filter((p) => p.count > 0);
    expect(others, "findings of other models published before the opened config's").toEqual([]);
    // The rest of the repository follows: every other model's finding.
    await client.waitForDiagnostics(cfg(name(MODELS - 1)), (d) => d.length > 0, 200_000);
  }, 240_000);

  it("model names in a step: at most 100, those containing what is typed, marked incomplete", async () => {
    const text = await fsp.readFile(cfg("zens"), "utf8");
    await client.change(cfg("zens"), text.replace('model_name: "m0003"', 'model_name: "m12'));
    const line = 5;
    const character = text.split("\n")[line]!.indexOf('"m0003"') + 4;
    const all = await client.completionList(cfg("zens"), line, character - 2);
    expect(all.items.length).toBe(100);
    expect(all.isIncomplete).toBe(true);
    const typed = await client.completionList(cfg("zens"), line, character);
    expect(typed.items.length).toBeGreaterThan(0);
    expect(typed.items.every((i) => i.label.includes("m12"))).toBe(true);
  }, 60_000);
});

describe("triton-dev lsp: a config saved in no repository", () => {
  it("a config.pbtxt straight in the temporary folder is checked alone, not the folder as a model", async () => {
    const tmp = await tempDir("lsp-stray");
    // What a temporary folder holds: other people's folders, none a model.
    for (let i = 0; i < 20; i++) await fsp.mkdir(path.join(tmp, `junk_${i}`, "cache"), { recursive: true });
    const file = path.join(tmp, "config.pbtxt");
    await fsp.writeFile(file, pythonConfig("stray"));
    const client = LspClient.spawn(process.execPath, [CLI, "lsp", "--stdio"], await testEnv({ TMPDIR: tmp }));
    try {
      await client.initialize(tmp);
      await client.open(file, pythonConfig("stray"));
      // Clean alone: no version folder or name checks against a folder that is no model.
      expect(await client.waitForDiagnostics(file, () => true, 30_000)).toEqual([]);
      await client.change(file, pythonConfig("stray").replace("TYPE_FP32", "TYPE_FP99"));
      const ds = await client.waitForDiagnostics(file, (d) => d.length > 0, 30_000);
      expect(ds.map((d) => d.code)).toEqual(["config-enum"]);
      const items = await client.completion(file, 0, 0);
      expect(items.map((i) => i.label)).toContain("instance_group");
    } finally {
      expect(await client.stop()).toBe(0);
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  }, 60_000);
});
