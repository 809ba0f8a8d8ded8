import { execFileSync } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../src/repo/lint.js";
import { ModelFileError, hashModelDir, listModelFiles } from "../../src/repo/model-files.js";
import { StagingError, StagingRepository } from "../../src/reload/stage.js";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

const problemOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => (err instanceof ModelFileError ? err.problem : err),
  );

describe("listModelFiles", () => {
  it("lists files and folders depth first, through links to files anywhere and to folders inside the model", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, { "weights.bin": "wwww" });
    await writeFiles(repo, { "m/config.pbtxt": "c", "m/1/model.py": "p", "m/shared/util.py": "u", "m/.git/x": "g" });
    await fsp.symlink(path.join(outside, "weights.bin"), path.join(repo, "m", "1", "weights.bin"));
    await fsp.symlink("../shared", path.join(repo, "m", "1", "shared"));
    const entries = await listModelFiles(path.join(repo, "m"), "m");
    expect(entries.map((e) => [e.rel, e.kind, e.size, e.outside])).toEqual([
      ["1", "dir", 0, false],
      [path.join("1", "model.py"), "file", 1, false],
      [path.join("1", "shared"), "dir", 0, false],
      [path.join("1", "shared", "util.py"), "file", 1, false],
      [path.join("1", "weights.bin"), "file", 4, true],
      ["config.pbtxt", "file", 1, false],
      ["shared", "dir", 0, false],
      [path.join("shared", "util.py"), "file", 1, false],
    ]);
  });

  it("judges links from where the model folder resolves to, when the model folder is itself a link", async () => {
    const repo = await tempRepo();
    const elsewhere = await tempRepo();
    await writeFiles(elsewhere, { "m/config.pbtxt": "c", "m/1/model.py": "p", "other/x": "x" });
    await fsp.symlink("..", path.join(elsewhere, "m", "1", "up"));
    await fsp.symlink(path.join(elsewhere, "m"), path.join(repo, "m"));
    expect(await problemOf(listModelFiles(path.join(repo, "m"), "m"))).toBe("link-loop");
    await fsp.rm(path.join(elsewhere, "m", "1", "up"));
    // A folder beside the model where its folder really is, is in its repository: followed.
    await fsp.symlink("../../other", path.join(elsewhere, "m", "1", "other"));
    const entries = await listModelFiles(path.join(repo, "m"), "m");
    expect(entries.find((e) => e.rel === path.join("1", "other", "x"))).toMatchObject({
      kind: "file",
      outside: true,
      real: path.join(await fsp.realpath(elsewhere), "other", "x"),
    });
    // Nothing else outside both repositories is.
    const third = await tempRepo();
    await fsp.rm(path.join(elsewhere, "m", "1", "other"));
    await fsp.symlink(third, path.join(elsewhere, "m", "1", "other"));
    expect(await problemOf(listModelFiles(path.join(repo, "m"), "m"))).toBe("link-outside");
  });

  it("follows a generated workspace's folder links (lmdeploy's shape) and copies them, but never /usr, the repository itself or a loop", async () => {
    const ws = await tempRepo();
    await writeFiles(ws, {
      "triton_models/tokenizer/vocab.txt": "a b c",
      "triton_models/tokenizer/sub/merges.txt": "m",
      "triton_models/preprocessing/config.pbtxt": "c",
      "triton_models/preprocessing/1/model.py": "p",
      "model_repository/.keep": "",
    });
    await fsp.symlink("../triton_models/preprocessing", path.join(ws, "model_repository", "preprocessing"));
    await fsp.symlink("../../tokenizer", path.join(ws, "triton_models", "preprocessing", "1", "tokenizer"));
    const dir = path.join(ws, "model_repository", "preprocessing");
    const entries = await listModelFiles(dir, "preprocessing");
    expect(entries.map((e) => [e.rel, e.kind, e.outside])).toEqual([
      ["1", "dir", false],
      [path.join("1", "model.py"), "file", false],
      [path.join("1", "tokenizer"), "dir", true],
      [path.join("1", "tokenizer", "sub"), "dir", true],
      [path.join("1", "tokenizer", "sub", "merges.txt"), "file", true],
      [path.join("1", "tokenizer", "vocab.txt"), "file", true],
      ["config.pbtxt", "file", false],
    ]);
    const run = await tempRepo();
    const staging = new StagingRepository(run);
    expect(await staging.init(path.join(ws, "model_repository"))).toEqual(["preprocessing"]);
    const snap = staging.snapshotDir("preprocessing", 1);
    expect((await fsp.lstat(path.join(snap, "1", "tokenizer"))).isDirectory()).toBe(true);
    expect(await fsp.readFile(path.join(snap, "1", "tokenizer", "vocab.txt"), "utf8")).toBe("a b c");
    expect(await hashModelDir(snap)).toBe(await hashModelDir(dir));

    const link = path.join(ws, "triton_models", "preprocessing", "1", "x");
    for (const [target, problem] of [
      ["/usr", "link-outside"],
      ["/usr/share", "link-outside"],
      ["/", "link-loop"],
      ["../..", "link-loop"], // triton_models, which holds the model
      ["../../../model_repository", "link-loop"], // holds a link to the model
    ] as const) {
      await fsp.rm(link, { force: true });
      await fsp.symlink(target, link);
      expect([target, await problemOf(listModelFiles(dir, "preprocessing"))]).toEqual([target, problem]);
    }
    // Two folders linking each other: the second is a loop.
    await fsp.rm(link);
    await fsp.symlink("../preprocessing/1", path.join(ws, "triton_models", "tokenizer", "back"));
    expect(await problemOf(listModelFiles(dir, "preprocessing"))).toBe("link-loop");
  });

  it("collects what is wrong with single files when asked, but always stops at a limit", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "c", "m/1/model.py": "p" });
    await fsp.symlink("nowhere", path.join(repo, "m", "1", "a"));
    execFileSync("mkfifo", [path.join(repo, "m", "1", "b")]);
    const problems: ModelFileError[] = [];
    const entries = await listModelFiles(path.join(repo, "m"), "m", { problems });
    expect(problems.map((p) => p.problem)).toEqual(["dangling-link", "special-file"]);
    expect(entries.map((e) => e.rel)).toEqual(["1", path.join("1", "model.py"), "config.pbtxt"]);
    const limits = { maxDepth: 32, maxEntries: 2, maxBytes: 100 };
    expect(await problemOf(listModelFiles(path.join(repo, "m"), "m", { limits, problems: [] }))).toBe(
      "too-many-entries",
    );
  });
});

describe("hashModelDir", () => {
  it("hashes a model as staging copies it: the same for the user's folder with links and for its snapshot", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, { "weights.bin": "w1" });
    await writeFiles(repo, pythonModel("m"));
    await fsp.symlink(path.join(outside, "weights.bin"), path.join(repo, "m", "1", "weights.bin"));
    const staging = new StagingRepository(await tempRepo());
    await staging.init(repo);
    const source = await hashModelDir(path.join(repo, "m"));
    expect(source).toBeDefined();
    expect(await hashModelDir(staging.snapshotDir("m", 1))).toBe(source);
    await fsp.writeFile(path.join(outside, "weights.bin"), "w2");
    expect(await hashModelDir(path.join(repo, "m"))).not.toBe(source);
  });

  it("reads nothing of a model the rule refuses: a version folder linked to a large tree outside", async () => {
    const repo = await tempRepo();
    const tree = await tempRepo();
    await writeFiles(tree, Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`d${i % 20}/f${i}`, "x"])));
    await writeFiles(repo, { "m/config.pbtxt": "c" });
    await fsp.symlink(tree, path.join(repo, "m", "1"));
    expect(await hashModelDir(path.join(repo, "m"))).toBeUndefined();
  });
});

describe("one rule for lint, staging and hashing", () => {
  it("refuses the same models in all three", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, { "w.bin": "w", "tree/x": "x" });
    const names = ["ok-file-link", "ok-inner-link", "dangling", "loop", "outside-dir", "fifo", "device"];
    for (const n of names) await writeFiles(repo, pythonModel(n));
    const v = (n: string, f: string) => path.join(repo, n, "1", f);
    await fsp.symlink(path.join(outside, "w.bin"), v("ok-file-link", "w.bin"));
    await fsp.symlink("model.py", v("ok-inner-link", "alias.py"));
    await fsp.symlink("gone", v("dangling", "x"));
    await fsp.symlink("../..", v("loop", "x"));
    await fsp.symlink(path.join(outside, "tree"), v("outside-dir", "x"));
    execFileSync("mkfifo", [v("fifo", "x")]);
    await fsp.symlink("/dev/null", v("device", "x"));
    const lint = await lintRepository(repo, { ...lintFacts("local") });
    const lintRefused = lint.models.filter((m) => !m.wouldLoad).map((m) => m.name);
    const stagingRefused: string[] = [];
    await new StagingRepository(await tempRepo()).init(
      repo,
      () => true,
      (e: StagingError) => stagingRefused.push(e.model),
    );
    const hashRefused: string[] = [];
    for (const n of names) if ((await hashModelDir(path.join(repo, n))) === undefined) hashRefused.push(n);
    const refused = ["dangling", "device", "fifo", "loop", "outside-dir"];
    expect(lintRefused.sort()).toEqual(refused);
    expect(stagingRefused.sort()).toEqual(refused);
    expect(hashRefused.sort()).toEqual(refused);
  });
});
