import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { StagingError, StagingRepository, stagingLayout, toUserPaths } from "../../src/reload/stage.js";
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

  it("leaves out a model it cannot copy, with why in the user's path, and stages the others", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, {
      ...pythonModel("good"),
      ...pythonModel("dangling"),
      ...pythonModel("fifo"),
      ...pythonModel("loop"),
    });
    await fsp.symlink(path.join(src, "nowhere.txt"), path.join(src, "dangling", "1", "data.txt"));
    execFileSync("mkfifo", [path.join(src, "fifo", "1", "pipe")]);
    await fsp.symlink("..", path.join(src, "loop", "1", "up"));
    const refused: StagingError[] = [];
    const staging = new StagingRepository(run);
    const t0 = Date.now();
    expect(
      await staging.init(
        src,
        () => true,
        (e) => refused.push(e),
      ),
    ).toEqual(["good"]);
    // A FIFO is never opened (that would block) and a link back up is not followed forever.
    expect(Date.now() - t0).toBeLessThan(5_000);
    const byModel = Object.fromEntries(refused.map((e) => [e.model, e.message]));
    expect(byModel.dangling).toBe(
      `dangling: ${path.join(src, "dangling", "1", "data.txt")} vanished or is a symbolic link to nothing`,
    );
    expect(byModel.fifo).toBe(`fifo: ${path.join(src, "fifo", "1", "pipe")} is a FIFO, not a file Triton can read`);
    expect(byModel.loop).toBe(
      `loop: ${path.join(src, "loop", "1", "up")} leads back to ${path.join(src, "loop")}, a folder it is inside of`,
    );
    expect(refused.every((e) => e.hint)).toBe(true);
    // No partial snapshot is left of the refused ones.
    expect((await fsp.readdir(path.join(run, "store"))).sort()).toEqual(["good@1"]);
  });

  it("keeps the served snapshot when a later publish cannot copy, and without onError still throws", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, pythonModel("m"));
    const staging = new StagingRepository(run);
    await staging.init(src);
    await fsp.symlink(path.join(src, "gone"), path.join(src, "m", "1", "extra.py"));
    await expect(staging.publish(src, "m")).rejects.toBeInstanceOf(StagingError);
    expect(staging.current("m")).toBe(1);
    expect(await fsp.readlink(path.join(run, "repository", "m"))).toBe(path.join("..", "store", "m@1"));
    await expect(staging.init(src)).rejects.toBeInstanceOf(StagingError);
  });
});
