import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { StagingError, StagingRepository } from "../../src/reload/stage.js";
import { stagingLayout, toUserPaths } from "../../src/state/staged-paths.js";
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
    expect(Object.fromEntries(refused.map((e) => [e.model, [e.problem, e.file]]))).toEqual({
      dangling: ["dangling-link", path.join(src, "dangling", "1", "data.txt")],
      fifo: ["special-file", path.join(src, "fifo", "1", "pipe")],
      loop: ["link-loop", path.join(src, "loop", "1", "up")],
    });
    // Said in the user's path, with the model's name first.
    for (const e of refused) expect(e.message.startsWith(`${e.model}: ${e.file} `)).toBe(true);
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

describe("StagingRepository and the model-file rule", () => {
  it("copies links to files wherever they point, and refuses links to folders outside the model and to devices", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, { "weights.bin": "w".repeat(100), "tree/a.txt": "a" });
    await writeFiles(src, { ...pythonModel("shared"), ...pythonModel("usr"), ...pythonModel("zero") });
    await writeFiles(src, { "shared/common/util.py": "u = 1\n" });
    await fsp.symlink(path.join(outside, "weights.bin"), path.join(src, "shared", "1", "weights.bin"));
    await fsp.symlink("../common", path.join(src, "shared", "1", "common"));
    await fsp.rm(path.join(src, "usr", "1"), { recursive: true });
    await fsp.symlink(path.join(outside, "tree"), path.join(src, "usr", "1"));
    await fsp.rm(path.join(src, "zero", "config.pbtxt"));
    await fsp.symlink("/dev/zero", path.join(src, "zero", "config.pbtxt"));
    const refused: StagingError[] = [];
    const staging = new StagingRepository(run);
    expect(
      await staging.init(
        src,
        () => true,
        (e) => refused.push(e),
      ),
    ).toEqual(["shared"]);
    expect(refused.map((e) => [e.model, e.problem, e.file])).toEqual([
      ["usr", "link-outside", path.join(src, "usr", "1")],
      ["zero", "special-file", path.join(src, "zero", "config.pbtxt")],
    ]);
    // The snapshot holds copies, not links.
    const snap = staging.snapshotDir("shared", 1);
    expect((await fsp.lstat(path.join(snap, "1", "weights.bin"))).isFile()).toBe(true);
    expect(await fsp.readFile(path.join(snap, "1", "common", "util.py"), "utf8")).toBe("u = 1\n");
    expect((await fsp.readdir(path.join(run, "store"))).sort()).toEqual(["shared@1"]);
  });

  it("refuses a model whose snapshot name would be too long for the filesystem, and stages the others", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    // 254 characters fit a folder name; `<name>@1` does not. The name rule (repo/model-name.ts,
    // at most 240) refuses it before any copy is tried, so no ENAMETOOLONG can happen.
    const long = "m".repeat(254);
    await writeFiles(src, { ...pythonModel(long), ...pythonModel("short") });
    const refused: StagingError[] = [];
    const staging = new StagingRepository(run);
    expect(
      await staging.init(
        src,
        () => true,
        (e) => refused.push(e),
      ),
    ).toEqual(["short"]);
    expect(refused.map((e) => [e.model, e.problem])).toEqual([[long, "name-unsafe"]]);
    expect(await fsp.readdir(path.join(run, "store"))).toEqual(["short@1"]);
  });

  it("refuses a model over the limits, however its links multiply it, without copying any of it", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, { ...pythonModel("wide"), ...pythonModel("deep"), ...pythonModel("big") });
    // Eight levels of three links each to the next level: 3^8 paths inside the model folder.
    for (let i = 0; i < 8; i++) {
      await fsp.mkdir(path.join(src, "wide", `l${i}`));
      if (i > 0) for (const n of ["a", "b", "c"]) await fsp.symlink(`../l${i}`, path.join(src, "wide", `l${i - 1}`, n));
    }
    await fsp.mkdir(path.join(src, "deep", ...Array.from({ length: 12 }, () => "d")), { recursive: true });
    await writeFiles(src, { "big/1/data.bin": "x".repeat(5_000) });
    const limits = { maxDepth: 10, maxEntries: 500, maxBytes: 4_000 };
    const refused: StagingError[] = [];
    const t0 = Date.now();
    const staging = new StagingRepository(run, { limits });
    expect(
      await staging.init(
        src,
        () => true,
        (e) => refused.push(e),
      ),
    ).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(refused.map((e) => [e.model, e.problem])).toEqual([
      ["big", "too-large"],
      ["deep", "too-deep"],
      ["wide", "too-many-entries"],
    ]);
    expect(await fsp.readdir(path.join(run, "store"))).toEqual([]);
  });
});
