import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StagingError, StagingRepository } from "../../src/reload/stage.js";
import { MAX_MODEL_NAME_LENGTH } from "../../src/repo/model-name.js";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

describe("StagingRepository and model names", () => {
  it("never stages a model whose name Triton's python backend would hand to a shell", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    const bad = ["inj$(touch PWNED)", "with space", "modèle"];
    await writeFiles(src, { ...pythonModel("good"), ...Object.assign({}, ...bad.map((n) => pythonModel(n))) });
    const refused: StagingError[] = [];
    const staging = new StagingRepository(run);
    expect(
      await staging.init(
        src,
        () => true,
        (e) => refused.push(e),
      ),
    ).toEqual(["good"]);
    expect(refused.map((e) => e.model).sort()).toEqual([...bad].sort());
    expect(refused.every((e) => e instanceof StagingError && e.hint?.includes("Rename the folder to"))).toBe(true);
    // Nothing of them reached the served repository or the store.
    expect(await fsp.readdir(path.join(run, "repository"))).toEqual(["good"]);
    expect(await fsp.readdir(path.join(run, "store"))).toEqual(["good@1"]);
    // Also when published one by one (a model added during a live run).
    await expect(staging.publish(src, "with space")).rejects.toBeInstanceOf(StagingError);
  });

  // The temporary link was named after the model: a 235-character name made it longer than a
  // folder entry may be (ENAMETOOLONG), and the whole `up` failed.
  it("stages the longest name lint lets through, again and again", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    const long = "m".repeat(MAX_MODEL_NAME_LENGTH);
    await writeFiles(src, { ...pythonModel("m".repeat(235)), ...pythonModel(long) });
    const staging = new StagingRepository(run);
    expect(await staging.init(src)).toEqual(["m".repeat(235), long]);
    expect(await staging.publish(src, long)).toBe(2);
    await staging.restore(long, 1);
    expect(fs.readFileSync(path.join(run, "repository", long, "1", "model.py"), "utf8")).toContain("TritonPythonModel");
  });
});
