import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EnvironmentError, type BuiltEnvironment } from "../../src/envs/builder.js";
import { EXECUTION_ENV_KEY } from "../../src/envs/execution-env.js";
import type { ModelEnvironments } from "../../src/envs/model-environments.js";
import { hashModelDir } from "../../src/repo/model-files.js";
import { StagingError, StagingRepository } from "../../src/reload/stage.js";
import { ECHO_MODEL_PY, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

/**
 * The seam between staging and the environment builder (test/envs/builder.integration.test.ts
 * builds real ones): each model with a requirements.txt gets `envs/<its first line>`; a line
 * `conflict` is refused the way a real conflict with the stub is.
 */
function environments(root: string, asked: string[] = []): ModelEnvironments {
  return {
    prepareRuntime: async () => undefined,
    async prepare(model, dir, userDir, onBuild) {
      const file = path.join(dir, "requirements.txt");
      if (!fs.existsSync(file)) return undefined;
      const first = (await fsp.readFile(file, "utf8")).split("\n")[0]!;
      asked.push(`${model}:${first}`);
      if (first === "conflict") {
        throw new EnvironmentError(model, `${model}: requirements.txt conflicts with the python backend stub`, {
          hint: "Remove it.",
          refused: true,
          diagnostics: [
            {
              severity: "error",
              file: path.join(userDir, "requirements.txt"),
              line: 1,
              column: 1,
              message: "it asks for numpy>=2",
              code: "requirements-conflict",
              model,
            },
          ],
        });
      }
      onBuild?.(`building ${first}`);
      const built: BuiltEnvironment = { dir: path.join(root, first), key: first, cached: false, ms: 1, packages: [] };
      return built;
    },
  };
}

describe("staging a model that brings a requirements.txt", () => {
  it("names its environment in the staged config only, and the snapshot still hashes as the user's folder", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, { ...pythonModel("m"), "m/requirements.txt": "tdgreet==1.0\n", ...pythonModel("plain") });
    const userConfig = await fsp.readFile(path.join(src, "m", "config.pbtxt"), "utf8");
    const built: string[] = [];
    const staging = new StagingRepository(run, { environments: environments("/envs") });
    expect(await staging.init(src)).toEqual(["m", "plain"]);
    const staged = await fsp.readFile(path.join(run, "repository", "m", "config.pbtxt"), "utf8");
    expect(staged.startsWith(userConfig)).toBe(true);
    expect(staged).toContain(`key: "${EXECUTION_ENV_KEY}" value: { string_value: "/envs/tdgreet==1.0" }`);
    expect(await fsp.readFile(path.join(src, "m", "config.pbtxt"), "utf8")).toBe(userConfig);
    expect(await fsp.readFile(path.join(run, "repository", "plain", "config.pbtxt"), "utf8")).not.toContain(
      EXECUTION_ENV_KEY,
    );
    // An unchanged folder is not taken for an edit when the run is adopted (controller.adopt).
    expect(await hashModelDir(staging.snapshotDir("m", 1))).toBe(await hashModelDir(path.join(src, "m")));
    await staging.publish(src, "m", { onEnvironment: (what) => built.push(what) });
    expect(built).toEqual(["building tdgreet==1.0"]);
  });

  it("writes a config for a python model that has none, which still hashes as the user's folder", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, { "auto/1/model.py": ECHO_MODEL_PY, "auto/requirements.txt": "tdgreet==1.0\n" });
    const staging = new StagingRepository(run, { environments: environments("/envs") });
    await staging.init(src);
    const staged = await fsp.readFile(path.join(run, "repository", "auto", "config.pbtxt"), "utf8");
    expect(staged).toMatch(/^backend: "python"\n/);
    expect(staged).toContain(EXECUTION_ENV_KEY);
    expect(fs.existsSync(path.join(src, "auto", "config.pbtxt"))).toBe(false);
    expect(await hashModelDir(staging.snapshotDir("auto", 1))).toBe(await hashModelDir(path.join(src, "auto")));
  });

  it("refuses a conflicting requirements.txt as a StagingError at its line, and keeps serving the last snapshot", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, { ...pythonModel("m"), "m/requirements.txt": "tdgreet==1.0\n" });
    const staging = new StagingRepository(run, { environments: environments("/envs") });
    await staging.init(src);
    await fsp.writeFile(path.join(src, "m", "requirements.txt"), "conflict\n");
    const err = await staging.publish(src, "m").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StagingError);
    const e = err as StagingError;
    expect(e.refused).toBe(true);
    expect(e.cause).toBeInstanceOf(EnvironmentError);
    expect(e.diagnostics?.[0]).toMatchObject({ file: path.join(src, "m", "requirements.txt"), line: 1 });
    expect(staging.current("m")).toBe(1);
    expect(await fsp.readlink(path.join(run, "repository", "m"))).toBe(path.join("..", "store", "m@1"));
    // No half-made snapshot is left behind.
    expect(fs.existsSync(staging.snapshotDir("m", 2))).toBe(false);
  });

  it("at up, leaves out the model whose environment is refused and stages the others", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, {
      ...pythonModel("bad"),
      "bad/requirements.txt": "conflict\n",
      ...pythonModel("good"),
      "good/requirements.txt": "tdgreet==1.0\n",
    });
    const refused: StagingError[] = [];
    const staging = new StagingRepository(run, { environments: environments("/envs") });
    expect(
      await staging.init(
        src,
        () => true,
        (e) => refused.push(e),
      ),
    ).toEqual(["good"]);
    expect(refused.map((e) => [e.model, e.refused, e.diagnostics?.[0]?.code])).toEqual([
      ["bad", true, "requirements-conflict"],
    ]);
  });
});
