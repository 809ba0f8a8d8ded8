import { readFileSync } from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { RepositoryWatcher, type ModelChange } from "../../src/reload/watch.js";
import { removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

/**
 * A watcher whose settle windows are far apart, so which one applied shows in the timing: even on a
 * loaded machine, where chokidar's events come tens of milliseconds late, 0.4 s and 3 s stay apart.
 */
async function watchRepo(repo: string) {
  const changes: Array<ModelChange & { at: number }> = [];
  const w = new RepositoryWatcher(repo, { settleMs: 3_000, completeSettleMs: 400, maxWaitMs: 10_000 });
  w.onChange((c) => changes.push({ ...c, at: Date.now() }));
  await w.start();
  watchers.push(w);
  return changes;
}
const watchers: RepositoryWatcher[] = [];
afterEach(async () => {
  for (const w of watchers.splice(0)) await w.close();
});

const until = async (cond: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
};

describe("RepositoryWatcher settle windows", () => {
  it("settles a write-then-rename save quickly: the file is complete when it appears", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const changes = await watchRepo(repo);
    const file = path.join(repo, "m", "1", "model.py");
    await fsp.writeFile(path.join(repo, "m", "1", ".model.py.tmp"), "new");
    const savedAt = Date.now();
    await fsp.rename(path.join(repo, "m", "1", ".model.py.tmp"), file);
    await until(() => changes.length > 0);
    expect(changes.map((c) => c.model)).toEqual(["m"]);
    // Far below the 3 s quiet time of a file written in place.
    expect(changes[0]!.at - savedAt).toBeLessThan(2_000);
  });

  it("waits the full quiet time for a file written in place, and coalesces a burst into one change", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const changes = await watchRepo(repo);
    const file = path.join(repo, "m", "1", "model.py");
    const first = Date.now();
    for (let i = 0; i < 5; i++) {
      await fsp.writeFile(file, `v${i}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const last = Date.now();
    await until(() => changes.length > 0);
    await new Promise((r) => setTimeout(r, 300));
    expect(changes).toHaveLength(1);
    expect(changes[0]!.at - last).toBeGreaterThanOrEqual(2_900);
    expect(changes[0]!.firstEventAt).toBeGreaterThanOrEqual(first - 5);
  });

  it("takes a rename save followed by in-place writes as still being written", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const changes = await watchRepo(repo);
    await fsp.writeFile(path.join(repo, "m", "1", ".tmp-save"), "new");
    await fsp.rename(path.join(repo, "m", "1", ".tmp-save"), path.join(repo, "m", "1", "model.py"));
    await new Promise((r) => setTimeout(r, 5));
    const written = Date.now();
    await fsp.appendFile(path.join(repo, "m", "config.pbtxt"), "b");
    await until(() => changes.length > 0);
    expect(changes).toHaveLength(1);
    expect(changes[0]!.at - written).toBeGreaterThanOrEqual(2_900);
  });

  it("reads a second save that chokidar's 50 ms change throttle swallows", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const file = path.join(repo, "m", "1", "model.py");
    // What a reload started at each reported change would read.
    const read: string[] = [];
    const w = new RepositoryWatcher(repo, { settleMs: 1_000, completeSettleMs: 10 });
    w.onChange(() => read.push(readFileSync(file, "utf8")));
    await w.start();
    watchers.push(w);
    const save = async (text: string) => {
      await fsp.writeFile(path.join(repo, "m", "1", ".tmp"), text);
      await fsp.rename(path.join(repo, "m", "1", ".tmp"), file);
    };
    await save("first");
    await new Promise((r) => setTimeout(r, 30));
    await save("second");
    await until(() => read.at(-1) === "second");
    expect(read.at(-1)).toBe("second");
  });

  it("ignores swap files and __pycache__, and reports each model apart", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "a/config.pbtxt": "a", "a/1/model.py": "x", "b/config.pbtxt": "b", "b/1/model.py": "y" });
    const changes = await watchRepo(repo);
    await writeFiles(repo, {
      "a/1/.model.py.swp": "s",
      "a/1/__pycache__/model.cpython-311.pyc": "c",
      "a/1/model.py~": "backup",
    });
    await fsp.writeFile(path.join(repo, "b", "1", ".n"), "1");
    await fsp.rename(path.join(repo, "b", "1", ".n"), path.join(repo, "b", "1", "model.py"));
    await until(() => changes.length > 0);
    await new Promise((r) => setTimeout(r, 3_300));
    expect(changes.map((c) => c.model)).toEqual(["b"]);
  });
});

describe("RepositoryWatcher and the model-file rule", () => {
  it("follows no link out of a model folder and opens no device, and still reports the other models", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`d${i % 5}/f${i}.txt`, "x"])));
    await writeFiles(repo, { "bad/model.py": "x", "good/config.pbtxt": "a", "good/1/model.py": "y" });
    await fsp.symlink(outside, path.join(repo, "bad", "1"));
    await fsp.symlink("/dev/zero", path.join(repo, "bad", "config.pbtxt"));
    const changes = await watchRepo(repo);
    await fsp.writeFile(path.join(outside, "d1", "f1.txt"), "edited");
    await fsp.writeFile(path.join(outside, "new.txt"), "new");
    await fsp.writeFile(path.join(repo, "good", "1", ".n"), "z");
    await fsp.rename(path.join(repo, "good", "1", ".n"), path.join(repo, "good", "1", "model.py"));
    await until(() => changes.length > 0);
    await new Promise((r) => setTimeout(r, 3_300));
    expect(changes.map((c) => c.model)).toEqual(["good"]);
  });

  it("reports a link in a model that comes to point elsewhere, and watches a linked model folder where it leads now", async () => {
    const repo = await tempRepo();
    const a = await tempRepo();
    const b = await tempRepo();
    await writeFiles(a, { "config.pbtxt": "a", "1/model.py": "a" });
    await writeFiles(b, { "config.pbtxt": "b", "1/model.py": "b" });
    await writeFiles(repo, { "m/config.pbtxt": "m", "m/1/model.py": "m", "m/1/w1": "1", "m/1/w2": "2" });
    await fsp.symlink("w1", path.join(repo, "m", "1", "weights"));
    await fsp.symlink(a, path.join(repo, "linked"));
    const changes = await watchRepo(repo);
    // ln -sfn: a new link renamed over the old one.
    await fsp.symlink("w2", path.join(repo, "m", "1", ".weights.new"));
    await fsp.rename(path.join(repo, "m", "1", ".weights.new"), path.join(repo, "m", "1", "weights"));
    await fsp.symlink(b, path.join(repo, ".linked.new"));
    await fsp.rename(path.join(repo, ".linked.new"), path.join(repo, "linked"));
    await until(() => changes.length >= 2);
    await new Promise((r) => setTimeout(r, 3_300));
    expect(changes.map((c) => c.model).sort()).toEqual(["linked", "m"]);
    changes.length = 0;
    await fsp.writeFile(path.join(a, "1", "model.py"), "a2");
    await fsp.writeFile(path.join(b, "1", "model.py"), "b2");
    await until(() => changes.length > 0);
    await new Promise((r) => setTimeout(r, 3_300));
    expect(changes.map((c) => c.model)).toEqual(["linked"]);
  });

  it("watches the folders a generated workspace's links lead to, under every model linking them, and follows a link repointed", async () => {
    const ws = await tempRepo();
    await writeFiles(ws, {
      "triton_models/tokenizer/vocab.txt": "a b",
      "triton_models/tokenizer2/vocab.txt": "x y",
      "triton_models/pre/config.pbtxt": "p",
      "triton_models/pre/1/model.py": "p",
      "triton_models/post/config.pbtxt": "q",
      "triton_models/post/1/model.py": "q",
      "model_repository/plain/config.pbtxt": "r",
      "model_repository/plain/1/model.py": "r",
    });
    for (const m of ["pre", "post"]) {
      await fsp.symlink(`../triton_models/${m}`, path.join(ws, "model_repository", m));
      await fsp.symlink("../../tokenizer", path.join(ws, "triton_models", m, "1", "tokenizer"));
    }
    // A model of the repository itself linking a folder beside it in the workspace's other folder.
    await fsp.symlink("../../../triton_models/tokenizer2", path.join(ws, "model_repository", "plain", "1", "tok"));
    const changes = await watchRepo(path.join(ws, "model_repository"));
    await fsp.writeFile(path.join(ws, "triton_models", "tokenizer", "vocab.txt"), "a b c");
    await until(() => changes.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(changes.map((c) => c.model).sort()).toEqual(["post", "pre"]);
    changes.length = 0;
    // plain's link leads outside its repository's own folder: refused by the rule, so not watched.
    await fsp.writeFile(path.join(ws, "triton_models", "tokenizer2", "vocab.txt"), "x y z");
    await new Promise((r) => setTimeout(r, 1_700));
    expect(changes).toEqual([]);
    // pre's link repointed at tokenizer2: a change of pre, and tokenizer2 is pre's from then on.
    const link = path.join(ws, "triton_models", "pre", "1", "tokenizer");
    await fsp.symlink("../../tokenizer2", `${link}.new`);
    await fsp.rename(`${link}.new`, link);
    await until(() => changes.length >= 1);
    await new Promise((r) => setTimeout(r, 1_700));
    expect(changes.map((c) => c.model)).toEqual(["pre"]);
    changes.length = 0;
    await fsp.writeFile(path.join(ws, "triton_models", "tokenizer2", "vocab.txt"), "x y z w");
    await until(() => changes.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(changes.map((c) => c.model)).toEqual(["pre"]);
  });

  it("does not watch into a linked model folder over the limits (lint and staging refuse it)", async () => {
    const repo = await tempRepo();
    const big = await tempRepo();
    await writeFiles(big, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`1/f${i}`, "x"])));
    await writeFiles(repo, { "small/config.pbtxt": "s", "small/1/model.py": "s" });
    await fsp.symlink(big, path.join(repo, "big"));
    const changes: ModelChange[] = [];
    const w = new RepositoryWatcher(repo, {
      settleMs: 100,
      limits: { maxDepth: 32, maxEntries: 10, maxBytes: 1_000_000 },
    });
    w.onChange((c) => changes.push(c));
    await w.start();
    watchers.push(w);
    await fsp.writeFile(path.join(big, "1", "f1"), "edited");
    await fsp.writeFile(path.join(repo, "small", "1", "model.py"), "edited");
    await until(() => changes.length > 0);
    await new Promise((r) => setTimeout(r, 500));
    expect(changes.map((c) => c.model)).toEqual(["small"]);
  });
});

describe("RepositoryWatcher closed while it starts", () => {
  it("watches nothing afterwards (a Ctrl-C right after ready used to leave a watcher that kept up alive)", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const changes: ModelChange[] = [];
    const w = new RepositoryWatcher(repo, { settleMs: 200, completeSettleMs: 20 });
    w.onChange((c) => changes.push(c));
    const starting = w.start();
    await w.close();
    await starting;
    await fsp.writeFile(path.join(repo, "m", "1", "model.py"), "new");
    await new Promise((r) => setTimeout(r, 800));
    expect(changes).toEqual([]);
    // And a second close, as shutdown paths do, is harmless.
    await w.close();
  });

  it("ends its start whenever the close comes, during the first scan included", async () => {
    const repo = await tempRepo();
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) Object.assign(files, { [`m${i}/config.pbtxt`]: "a", [`m${i}/1/model.py`]: "x" });
    await writeFiles(repo, files);
    for (const delayMs of [0, 1, 3, 6, 10, 20, 40]) {
      const changes: ModelChange[] = [];
      const w = new RepositoryWatcher(repo, { settleMs: 200, completeSettleMs: 20 });
      w.onChange((c) => changes.push(c));
      const starting = w.start();
      await new Promise((r) => setTimeout(r, delayMs));
      await w.close();
      const ended = await Promise.race([
        starting.then(() => "ended"),
        new Promise((r) => setTimeout(() => r("still starting"), 3_000)),
      ]);
      expect(ended, `closed ${delayMs} ms into start`).toBe("ended");
      await fsp.writeFile(path.join(repo, "m0", "1", "model.py"), `edit ${delayMs}`);
      await new Promise((r) => setTimeout(r, 300));
      expect(changes, `closed ${delayMs} ms into start`).toEqual([]);
    }
  }, 60_000);
});
