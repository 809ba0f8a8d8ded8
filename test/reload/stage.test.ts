import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StagingRepository, stagingLayout, toUserPaths } from "../../src/reload/stage.js";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

describe("StagingRepository", () => {
  it("names the user's files in Triton's messages, whether they name the served link or a snapshot", () => {
    const layout = stagingLayout("/state/runs/r1");
    const text =
      "failed to load 'm' version 1: Internal: RuntimeError: boom\n\nAt:\n  /state/runs/r1/repository/m/1/model.py(64): initialize\n  /state/runs/r1/store/m@12/1/model.py(3): <module> \"/state/runs/r1/store/a@b@2\"";
    expect(toUserPaths(text, layout, "/home/me/models")).toBe(
      "failed to load 'm' version 1: Internal: RuntimeError: boom\n\nAt:\n  /home/me/models/m/1/model.py(64): initialize\n  /home/me/models/m/1/model.py(3): <module> \"/home/me/models/a@b\"",
    );
  });

  it("never reuses a snapshot folder after a model is withdrawn, and skips prepare when asked", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, pythonModel("m"));
    const prepared: string[] = [];
    const staging = new StagingRepository(run, { prepare: async (dir) => void prepared.push(path.basename(dir)) });
    expect(await staging.init(src)).toEqual(["m"]);
    await staging.remove("m");
    expect(staging.has("m")).toBe(false);
    expect(await staging.publish(src, "m", { prepare: false })).toBe(2);
    expect(prepared).toEqual(["m@1"]);
    expect(await fsp.readlink(path.join(run, "repository", "m"))).toBe(path.join("..", "store", "m@2"));
    // A later process (a detached run's supervisor) continues the numbering.
    const again = new StagingRepository(run);
    await again.load();
    await again.remove("m");
    expect(await again.publish(src, "m")).toBe(3);
  });
});
