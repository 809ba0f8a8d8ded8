import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { scaffoldPythonModel, validateModelName } from "../../src/repo/init.js";
import { lintRepository } from "../../src/repo/lint.js";
import { summary, tempRepo, removeTempRepos } from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

describe("scaffoldPythonModel", () => {
  it("writes a python model that lints clean for every runtime", async () => {
    const repo = path.join(await tempRepo(), "models");
    const r = await scaffoldPythonModel(repo, "my_model");
    expect(r.files).toEqual([
      path.join(repo, "my_model", "config.pbtxt"),
      path.join(repo, "my_model", "1", "model.py"),
    ]);
    expect(fs.readFileSync(r.files[0]!, "utf8")).toContain('name: "my_model"');
    for (const runtime of ["local", "docker", "kind"] as const) {
      const result = await lintRepository(repo, { ...lintFacts(runtime), gpuAvailable: false });
      expect(summary(result.diagnostics), runtime).toEqual([]);
    }
  });

  it("never overwrites a model", async () => {
    const repo = await tempRepo();
    await scaffoldPythonModel(repo, "m");
    fs.writeFileSync(path.join(repo, "m", "config.pbtxt"), "# mine");
    await expect(scaffoldPythonModel(repo, "m")).rejects.toThrow(UserError);
    expect(fs.readFileSync(path.join(repo, "m", "config.pbtxt"), "utf8")).toBe("# mine");
  });

  it.each(["", ".hidden", "a/b", "-x", "spa ce"])("refuses the name %j", async (name) => {
    expect(validateModelName(name)).toBeDefined();
    await expect(scaffoldPythonModel(await tempRepo(), name)).rejects.toThrow(UserError);
  });

  it.each(["m", "resnet50_fp16", "bert-large.v2", "_x"])("accepts the name %j", (name) => {
    expect(validateModelName(name)).toBeUndefined();
  });
});
