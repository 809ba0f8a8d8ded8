import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { OFFSET_CONFIG, OFFSET_MODEL, writeOffsetModel } from "../helpers/offset-model.js";
import { managedPython, offlinePip } from "../helpers/wheels.js";

/** A model whose model.py (and a sibling module of its own) import three packages this machine lacks. */
const VISION_MODEL = `import json
import numpy as np
import cv2
import triton_python_backend_utils as pb_utils
from preprocess import scale
from PIL import Image
try:
    import yaml
except ImportError:
    yaml = None

class TritonPythonModel:
    def execute(self, requests):
        return []
`;

/**
 * What a new user met with a python model's packages: each load named one missing module (cv2,
 * then PIL, then requests) and never the package to add; a numpy pin was refused although the
 * config ran the model in an environment of its own (EXECUTION_ENV_PATH). Real lint, real up on
 * the local runtime, pip without an index.
 */
describe("a python model's dependencies (real Triton, local runtime)", () => {
  let env: NodeJS.ProcessEnv;
  let repo: string;
  let empty: string;

  beforeAll(async () => {
    empty = await tempDir("no-wheels");
    env = await testEnv(offlinePip(empty));
    repo = await tempDir("deps");
    await writeOffsetModel(repo, "1");
    await fsp.mkdir(path.join(repo, "vision", "1"), { recursive: true });
    await fsp.writeFile(path.join(repo, "vision", "config.pbtxt"), OFFSET_CONFIG.replace('"offset"', '"vision"'));
    await fsp.writeFile(path.join(repo, "vision", "1", "model.py"), VISION_MODEL);
    await fsp.writeFile(
      path.join(repo, "vision", "1", "preprocess.py"),
      "import requests\n\ndef scale(x):\n    return x\n",
    );
    // An unpacked environment named by the config, written with text format's other quote: the
    // requirements.txt beside it (a numpy pin the stub's constraints refuse) is not installed.
    await fsp.mkdir(path.join(repo, "packed", "1"), { recursive: true });
    await fsp.writeFile(
      path.join(repo, "packed", "config.pbtxt"),
      OFFSET_CONFIG.replace('"offset"', '"packed"') +
        `parameters: { key: 'EXECUTION_ENV_PATH' value: { string_value: '${path.dirname(path.dirname(managedPython().python))}' } }\n`,
    );
    await fsp.writeFile(path.join(repo, "packed", "1", "model.py"), OFFSET_MODEL);
    await fsp.writeFile(path.join(repo, "packed", "requirements.txt"), "numpy==1.24.4\n");
    // Environments Triton cannot find when triton-dev starts it here: lint and up say the same.
    for (const [name, value] of [
      ["relenv", "envs/python-3-11.tar.gz"],
      ["absenv", "/nonexistent/triton-dev-env.tar.gz"],
    ]) {
      await fsp.mkdir(path.join(repo, name!, "1"), { recursive: true });
      await fsp.writeFile(
        path.join(repo, name!, "config.pbtxt"),
        OFFSET_CONFIG.replace('"offset"', `"${name}"`) +
          `parameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "${value}" } }\n`,
      );
      await fsp.writeFile(path.join(repo, name!, "1", "model.py"), OFFSET_MODEL);
    }
  }, 60_000);

  /** `<severity>: <message>` of each EXECUTION_ENV_PATH finding printed at its file:line:col, once each. */
  const envFindings = (out: string) =>
    out
      .split("\n")
      .map((l) => /^\S*config\.pbtxt:\d+:\d+: (error|warning): (EXECUTION_ENV_PATH .*)$/.exec(l.trim()))
      .filter((m): m is RegExpExecArray => !!m)
      .map((m) => `${m[1]}: ${m[2]}`)
      .filter((l, i, all) => all.indexOf(l) === i)
      .sort();
  let linted: string[] = [];

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    for (const d of [repo, empty]) if (d) await fsp.rm(d, { recursive: true, force: true });
  }, 60_000);

  it("lint names every missing module at its import, with the package to add", async () => {
    const r = await runCli(["lint", repo], env);
    const found = r.stdout.split("\n").filter((l) => l.includes("python-import-missing") || /is not installed/.test(l));
    expect(found).toEqual([
      `${path.join(repo, "vision/1/model.py")}:3:1: error: 'cv2' is not installed in the model's environment: the load fails with "No module named 'cv2'" (all 3 missing: cv2, PIL, requests)`,
      expect.stringMatching(/vision\/1\/model\.py:6:1: error: 'PIL' is not installed/),
      expect.stringMatching(/vision\/1\/preprocess\.py:1:1: error: 'requests' is not installed/),
    ]);
    expect(r.stdout).toContain(
      `hint: Add opencv-python-headless (the package that provides 'cv2') to ${path.join(repo, "vision", "requirements.txt")}`,
    );
    expect(r.stdout).not.toMatch(/packed.*error/);
    linted = envFindings(r.stdout);
    expect(linted).toEqual([
      expect.stringMatching(
        /^error: EXECUTION_ENV_PATH '\/nonexistent\/triton-dev-env\.tar\.gz' names .* does not exist/,
      ),
      expect.stringMatching(
        /^error: EXECUTION_ENV_PATH 'envs\/python-3-11\.tar\.gz' is relative: .*Failed to get the canonical path/,
      ),
    ]);
    expect(r.code).toBe(1);
  }, 60_000);

  it("up refuses the model with all of them at once, and serves the packed model its requirements.txt does not touch", async () => {
    const up = await runCli(["up", "--detach", "--models", repo, ...portArgs(await freePorts())], env);
    expect(up.stdout).toContain(
      "vision imports 3 modules the model's environment lacks: 'cv2' (package opencv-python-headless), 'PIL' (package pillow), 'requests'",
    );
    expect(up.stdout).toContain(`packed: ${path.join(repo, "packed", "requirements.txt")} is not used`);
    expect(envFindings(up.stdout)).toEqual(linted);
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout) as {
      models: Array<{ name: string; state: string; reason?: string }>;
    };
    const byName = new Map(status.models.map((m) => [m.name, m]));
    expect(byName.get("packed")?.state).toBe("READY");
    expect(byName.get("offset")?.state).toBe("READY");
    expect(byName.get("vision")).toMatchObject({ state: "REFUSED" });
    expect([byName.get("relenv")?.state, byName.get("absenv")?.state]).toEqual(["REFUSED", "REFUSED"]);
    expect(byName.get("vision")?.reason).toMatch(
      /'cv2' \(package opencv-python-headless\), 'PIL' \(package pillow\), 'requests'/,
    );
  }, 180_000);
});
