/**
 * `triton-dev lint` on python models that complete their own config, with the managed environment
 * `triton-dev setup` made: no model code runs unless --run-model-code asks for it, while `up`'s
 * lint runs it; a model with a requirements.txt has its auto_complete_config run only in its own
 * environment, which lint looks for but never builds.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { runLint } from "../../src/cli/lint-action.js";
import { lintRepository } from "../../src/repo/lint.js";
import { lintOptionsFor } from "../../src/session/session.js";
import { freePorts, portArgs, runCli, testEnv } from "../helpers/cli.js";
import type { Output } from "../../src/cli/output.js";
import { resolvePaths } from "../../src/config/paths.js";
import { removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

const managed = fs.existsSync(resolvePaths().envMarker);

function capture(): Output & { text: () => string } {
  const lines: string[] = [];
  return { out: (s) => void lines.push(s), err: (s) => void lines.push(s), text: () => lines.join("\n") };
}

const COMPLETING = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]})
        config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]})
        return config

    def execute(self, requests):
        return []
`;

describe.skipIf(!managed)("lint with auto_complete_config and requirements.txt", () => {
  const saved = process.env.TRITON_DEV_ENVS_DIR;
  const savedContainment = process.env.TRITON_DEV_MODEL_CODE_CONTAINMENT;
  // The models here tell that they ran by writing a file outside their scratch folder, which
  // only the plain containment lets through (model-code-sandbox.integration.test.ts has the walls).
  beforeAll(() => {
    process.env.TRITON_DEV_MODEL_CODE_CONTAINMENT = "plain";
  });
  afterAll(() => {
    if (savedContainment === undefined) delete process.env.TRITON_DEV_MODEL_CODE_CONTAINMENT;
    else process.env.TRITON_DEV_MODEL_CODE_CONTAINMENT = savedContainment;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.TRITON_DEV_ENVS_DIR;
    else process.env.TRITON_DEV_ENVS_DIR = saved;
  });

  it("does not run a model whose environment is not built, says so as a note, and checks the config as written", async () => {
    process.env.TRITON_DEV_ENVS_DIR = await tempRepo(); // no environment built there
    const repo = await tempRepo();
    await writeFiles(repo, { "m/1/model.py": COMPLETING, "m/requirements.txt": "tdhello==1.0\n" });
    const out = capture();
    expect(await runLint(repo, { json: true, runModelCode: true }, { output: out, detectGpus: async () => 0 })).toBe(0);
    const m = JSON.parse(out.text()).models[0];
    expect(m.notes).toEqual([
      "auto_complete_config in 1/model.py not run: environment not built (`triton-dev up` builds it from requirements.txt); the config is checked as written",
    ]);
    expect(m.completed).toBeUndefined();
    expect(m.diagnostics.map((d: { code: string }) => d.code)).toEqual(["config-missing"]);
    expect(await fsp.readdir(process.env.TRITON_DEV_ENVS_DIR)).toEqual([]);
  });

  it("runs one whose requirements.txt lists nothing in the managed environment", async () => {
    process.env.TRITON_DEV_ENVS_DIR = await tempRepo();
    const repo = await tempRepo();
    await writeFiles(repo, { "m/1/model.py": COMPLETING, "m/requirements.txt": "# nothing yet\n" });
    const out = capture();
    expect(await runLint(repo, { json: true, runModelCode: true }, { output: out, detectGpus: async () => 0 })).toBe(0);
    const m = JSON.parse(out.text()).models[0];
    expect(m).toMatchObject({ completed: true, diagnostics: [] });
    expect(m.notes).toBeUndefined();
  });

  /** A model.py that writes `marker` when imported; its auto_complete_config adds the echo's input and output. */
  const sideEffect = (marker: string, body = COMPLETING) =>
    `import pathlib\npathlib.Path(${JSON.stringify(marker)}).write_text("imported")\n${body}`;

  it("by default imports no model.py: the config is not checked, a warning, and lint passes", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    await writeFiles(repo, { "m/1/model.py": sideEffect(marker) });
    const out = capture();
    expect(await runLint(repo, {}, { output: out, detectGpus: async () => 0 })).toBe(0);
    expect(fs.existsSync(marker)).toBe(false);
    expect(out.text()).toContain(
      "warning: not checked: completing this config runs 1/model.py (its auto_complete_config)",
    );
    expect(out.text()).toContain("hint: Pass --run-model-code");
    expect(out.text()).toMatch(/1 model checked: 0 errors, 2 warnings/);
  });

  it("with --run-model-code runs it and checks the config it completes, as before", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    const raising = COMPLETING.replace("        return config", '        raise ValueError("no such input")');
    await writeFiles(repo, { "m/1/model.py": sideEffect(marker), "bad/1/model.py": raising });
    const out = capture();
    expect(await runLint(repo, { json: true, runModelCode: true }, { output: out, detectGpus: async () => 0 })).toBe(1);
    expect(fs.readFileSync(marker, "utf8")).toBe("imported");
    const r = JSON.parse(out.text());
    expect(r.runModelCode).toBe(true);
    const byName = Object.fromEntries(r.models.map((m: { name: string }) => [m.name, m]));
    expect(byName.m).toMatchObject({ completed: true, diagnostics: [] });
    expect(byName.bad.diagnostics.map((d: { code: string }) => d.code)).toEqual(["auto-complete-raised"]);
  });

  it("up's lint (and the reload controller's, which takes the same options) still runs it", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    const raising = COMPLETING.replace("        return config", '        raise ValueError("no such input")');
    await writeFiles(repo, { "m/1/model.py": sideEffect(marker, raising) });
    const r = await lintRepository(repo, lintOptionsFor("local", 0));
    expect(fs.existsSync(marker)).toBe(true);
    expect(r.models[0]!.diagnostics.map((d) => `${d.severity} ${d.code}`)).toEqual(["error auto-complete-raised"]);
  });

  it("lint runs nothing where `up` on the same repository runs it and refuses the model whose auto_complete_config raises", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    const raising = COMPLETING.replace("        return config", '        raise ValueError("no such input")');
    await writeFiles(repo, { "good/1/model.py": COMPLETING, "bad/1/model.py": sideEffect(marker, raising) });
    const env = await testEnv();
    try {
      const lint = await runCli(["lint", repo], env);
      expect(lint.code, lint.stdout + lint.stderr).toBe(0);
      expect(fs.existsSync(marker)).toBe(false);
      const up = await runCli(
        ["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(await freePorts())],
        env,
      );
      expect(fs.existsSync(marker)).toBe(true);
      expect(up.stdout + up.stderr).toContain("auto_complete_config in 1/model.py raised ValueError: no such input");
      const status = JSON.parse((await runCli(["status", "--json"], env)).stdout) as {
        models: Array<{ name: string; state: string }>;
      };
      expect(status.models.find((m) => m.name === "good")?.state).toBe("READY");
      expect(status.models.find((m) => m.name === "bad")?.state).not.toBe("READY");
    } finally {
      await runCli(["down"], env);
    }
  }, 240_000);
});
