import { readFileSync } from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RepositoryWatcher, type ModelChange, type WatcherOptions } from "../../src/reload/watch.js";
import { FakeClock } from "../../src/fake-clock.js";
import { removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

/*
 * The settle windows run on a fake clock: chokidar's events come in real time, then the test moves
 * the watcher's time itself, so which window applied is exact (a change 3 s after the last event,
 * not 400 ms) and no test waits one out. What stays real is waiting for chokidar to deliver the
 * events of what a test wrote (`eventsIn`). Those waits are idle time, so the tests of each describe
 * run concurrently: each has its own repository, clock and watcher.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Watched {
  changes: Array<ModelChange & { at: number }>;
  timers: FakeClock;
  watcher: RepositoryWatcher;
}

/** A watcher on the fake clock whose settle windows are far apart: 400 ms after whole-file saves, 3 s otherwise. */
async function watchRepo(repo: string, options: WatcherOptions = {}): Promise<Watched> {
  const timers = new FakeClock();
  const changes: Watched["changes"] = [];
  const w = new RepositoryWatcher(repo, {
    settleMs: 3_000,
    completeSettleMs: 400,
    maxWaitMs: 10_000,
    ...options,
    timers,
  });
  w.onChange((c) => changes.push({ ...c, at: timers.now() }));
  await w.start();
  watchers.push(w);
  return { changes, timers, watcher: w };
}
const watchers: RepositoryWatcher[] = [];
// Not after each test: the tests of a describe run at once, each on its own repository and clock.
afterAll(async () => {
  for (const w of watchers.splice(0)) await w.close();
});

const until = async (cond: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await sleep(10);
};

/**
 * Waits (real time) until the watcher has taken in an event since `since` timers were set, and
 * chokidar has then been quiet for `quietMs`: the events of what the test wrote are all in.
 */
async function eventsIn(timers: FakeClock, since: number, quietMs = 250): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (timers.calls <= since && Date.now() < deadline) await sleep(10);
  let seen = timers.calls;
  let quietFrom = Date.now();
  while (Date.now() - quietFrom < quietMs && Date.now() < deadline) {
    await sleep(10);
    if (timers.calls !== seen) {
      seen = timers.calls;
      quietFrom = Date.now();
    }
  }
}

/**
 * Writes until the watcher takes the write in: a folder the watcher has just been told to follow
 * is being scanned by chokidar, and a write before that scan ends is not seen (nor is it an edit
 * the watcher missed: the scan reads the folder as it is).
 */
async function writeUntilSeen(timers: FakeClock, write: (attempt: number) => Promise<void>): Promise<void> {
  const since = timers.calls;
  for (let attempt = 0; attempt < 40 && timers.calls === since; attempt++) {
    await write(attempt);
    const deadline = Date.now() + 250;
    while (timers.calls === since && Date.now() < deadline) await sleep(10);
  }
  await eventsIn(timers, since);
}

/** Runs the settle timers due within `ms` of fake time, and waits for the changes they report. */
async function settle(w: Watched, ms: number, expected: number): Promise<void> {
  w.timers.advanceSync(ms);
  await until(() => w.changes.length >= expected);
  // A change is reported after the model folder is read again (real I/O): give every timer run
  // above the time to report, so that a change the test does not expect would show.
  await sleep(100);
}

describe.concurrent("RepositoryWatcher settle windows", () => {
  it("settles a write-then-rename save quickly: the file is complete when it appears", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const w = await watchRepo(repo);
    const file = path.join(repo, "m", "1", "model.py");
    await fsp.writeFile(path.join(repo, "m", "1", ".model.py.tmp"), "new");
    await fsp.rename(path.join(repo, "m", "1", ".model.py.tmp"), file);
    await eventsIn(w.timers, 0);
    const savedAt = w.timers.now();
    await settle(w, 399, 0);
    expect(w.changes).toEqual([]);
    // The 400 ms of a whole-file save, not the 3 s of a file written in place.
    await settle(w, 1, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["m"]);
    expect(w.changes[0]!.at - savedAt).toBe(400);
  });

  it("waits the full quiet time for a file written in place, and coalesces a burst into one change", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const w = await watchRepo(repo);
    const file = path.join(repo, "m", "1", "model.py");
    const first = w.timers.now();
    for (let i = 0; i < 5; i++) {
      await fsp.writeFile(file, `v${i}`);
      await sleep(20);
    }
    await eventsIn(w.timers, 0);
    await settle(w, 2_999, 0);
    expect(w.changes).toEqual([]);
    await settle(w, 1, 1);
    await settle(w, 10_000, 1);
    expect(w.changes).toHaveLength(1);
    expect(w.changes[0]!.at - first).toBe(3_000);
    expect(w.changes[0]!.firstEventAt).toBe(first);
    expect(w.changes[0]!.events).toBe(w.timers.calls);
  });

  it("takes a rename save followed by in-place writes as still being written", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const w = await watchRepo(repo);
    await fsp.writeFile(path.join(repo, "m", "1", ".tmp-save"), "new");
    await fsp.rename(path.join(repo, "m", "1", ".tmp-save"), path.join(repo, "m", "1", "model.py"));
    await eventsIn(w.timers, 0);
    // The rename alone would settle in 400 ms; the write after it holds the model for 3 s.
    w.timers.advanceSync(200);
    const since = w.timers.calls;
    await fsp.appendFile(path.join(repo, "m", "config.pbtxt"), "b");
    await eventsIn(w.timers, since);
    const written = w.timers.now();
    await settle(w, 2_999, 0);
    expect(w.changes).toEqual([]);
    await settle(w, 1, 1);
    expect(w.changes).toHaveLength(1);
    expect(w.changes[0]!.at - written).toBe(3_000);
  });

  it("settles no sooner than 60 ms after the last event, whatever it is told", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const w = await watchRepo(repo, { settleMs: 1, completeSettleMs: 1 });
    await fsp.writeFile(path.join(repo, "m", "1", "model.py"), "new");
    await eventsIn(w.timers, 0);
    await settle(w, 59, 0);
    expect(w.changes).toEqual([]);
    await settle(w, 1, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["m"]);
  });

  // On real time: what is tested is the floor above against chokidar's own (real) throttle.
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
    await sleep(30);
    await save("second");
    await until(() => read.at(-1) === "second");
    expect(read.at(-1)).toBe("second");
  });

  it("ignores swap files and __pycache__, and reports each model apart", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "a/config.pbtxt": "a", "a/1/model.py": "x", "b/config.pbtxt": "b", "b/1/model.py": "y" });
    const w = await watchRepo(repo);
    await writeFiles(repo, {
      "a/1/.model.py.swp": "s",
      "a/1/__pycache__/model.cpython-311.pyc": "c",
      "a/1/model.py~": "backup",
    });
    await fsp.writeFile(path.join(repo, "b", "1", ".n"), "1");
    await fsp.rename(path.join(repo, "b", "1", ".n"), path.join(repo, "b", "1", "model.py"));
    await eventsIn(w.timers, 0);
    await settle(w, 10_000, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["b"]);
  });
});

describe.concurrent("RepositoryWatcher and the model-file rule", () => {
  it("follows no link out of a model folder and opens no device, and still reports the other models", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`d${i % 5}/f${i}.txt`, "x"])));
    await writeFiles(repo, { "bad/model.py": "x", "good/config.pbtxt": "a", "good/1/model.py": "y" });
    await fsp.symlink(outside, path.join(repo, "bad", "1"));
    await fsp.symlink("/dev/zero", path.join(repo, "bad", "config.pbtxt"));
    const w = await watchRepo(repo);
    await fsp.writeFile(path.join(outside, "d1", "f1.txt"), "edited");
    await fsp.writeFile(path.join(outside, "new.txt"), "new");
    await fsp.writeFile(path.join(repo, "good", "1", ".n"), "z");
    await fsp.rename(path.join(repo, "good", "1", ".n"), path.join(repo, "good", "1", "model.py"));
    await eventsIn(w.timers, 0);
    await settle(w, 10_000, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["good"]);
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
    const w = await watchRepo(repo);
    // ln -sfn: a new link renamed over the old one.
    await fsp.symlink("w2", path.join(repo, "m", "1", ".weights.new"));
    await fsp.rename(path.join(repo, "m", "1", ".weights.new"), path.join(repo, "m", "1", "weights"));
    await fsp.symlink(b, path.join(repo, ".linked.new"));
    await fsp.rename(path.join(repo, ".linked.new"), path.join(repo, "linked"));
    await until(() => w.timers.pending >= 2);
    await eventsIn(w.timers, 0);
    await settle(w, 10_000, 2);
    expect(w.changes.map((c) => c.model).sort()).toEqual(["linked", "m"]);
    w.changes.length = 0;
    // a is no longer watched: only b's edit is linked's.
    await fsp.writeFile(path.join(a, "1", "model.py"), "a2");
    await writeUntilSeen(w.timers, (n) => fsp.writeFile(path.join(b, "1", "model.py"), `b${n}`));
    await settle(w, 10_000, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["linked"]);
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
    const w = await watchRepo(path.join(ws, "model_repository"));
    await fsp.writeFile(path.join(ws, "triton_models", "tokenizer", "vocab.txt"), "a b c");
    await until(() => w.timers.pending >= 2);
    await eventsIn(w.timers, 0);
    await settle(w, 10_000, 2);
    expect(w.changes.map((c) => c.model).sort()).toEqual(["post", "pre"]);
    w.changes.length = 0;
    // plain's link leads outside its repository's own folder: refused by the rule, so not watched.
    const before = w.timers.calls;
    await fsp.writeFile(path.join(ws, "triton_models", "tokenizer2", "vocab.txt"), "x y z");
    await sleep(400);
    expect(w.timers.calls).toBe(before);
    // pre's link repointed at tokenizer2: a change of pre, and tokenizer2 is pre's from then on.
    const link = path.join(ws, "triton_models", "pre", "1", "tokenizer");
    await fsp.symlink("../../tokenizer2", `${link}.new`);
    await fsp.rename(`${link}.new`, link);
    await eventsIn(w.timers, before);
    await settle(w, 10_000, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["pre"]);
    w.changes.length = 0;
    await writeUntilSeen(w.timers, (n) =>
      fsp.writeFile(path.join(ws, "triton_models", "tokenizer2", "vocab.txt"), `x y z w ${n}`),
    );
    await settle(w, 10_000, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["pre"]);
  });

  it("does not watch into a linked model folder over the limits (lint and staging refuse it)", async () => {
    const repo = await tempRepo();
    const big = await tempRepo();
    await writeFiles(big, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`1/f${i}`, "x"])));
    await writeFiles(repo, { "small/config.pbtxt": "s", "small/1/model.py": "s" });
    await fsp.symlink(big, path.join(repo, "big"));
    const w = await watchRepo(repo, { limits: { maxDepth: 32, maxEntries: 10, maxBytes: 1_000_000 } });
    await fsp.writeFile(path.join(big, "1", "f1"), "edited");
    await fsp.writeFile(path.join(repo, "small", "1", "model.py"), "edited");
    await eventsIn(w.timers, 0);
    await settle(w, 10_000, 1);
    expect(w.changes.map((c) => c.model)).toEqual(["small"]);
  });
});

describe.concurrent("RepositoryWatcher closed while it starts", () => {
  it("watches nothing afterwards (a Ctrl-C right after ready used to leave a watcher that kept up alive)", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": "a", "m/1/model.py": "old" });
    const timers = new FakeClock();
    const w = new RepositoryWatcher(repo, { settleMs: 200, completeSettleMs: 20, timers });
    const starting = w.start();
    await w.close();
    await starting;
    await fsp.writeFile(path.join(repo, "m", "1", "model.py"), "new");
    await sleep(400);
    // Not one event taken in, not only none reported.
    expect(timers.calls).toBe(0);
    // And a second close, as shutdown paths do, is harmless.
    await w.close();
  });

  it("ends its start whenever the close comes, during the first scan included", async () => {
    const repo = await tempRepo();
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) Object.assign(files, { [`m${i}/config.pbtxt`]: "a", [`m${i}/1/model.py`]: "x" });
    await writeFiles(repo, files);
    const ends: Array<{ delayMs: number; timers: FakeClock }> = [];
    for (const delayMs of [0, 1, 3, 6, 10, 20, 40]) {
      const timers = new FakeClock();
      const w = new RepositoryWatcher(repo, { settleMs: 200, completeSettleMs: 20, timers });
      const starting = w.start();
      await sleep(delayMs);
      await w.close();
      const ended = await Promise.race([
        starting.then(() => "ended"),
        new Promise((r) => setTimeout(() => r("still starting"), 3_000)),
      ]);
      expect(ended, `closed ${delayMs} ms into start`).toBe("ended");
      ends.push({ delayMs, timers });
    }
    // One edit after all the closes: none of the closed watchers takes it in.
    await fsp.writeFile(path.join(repo, "m0", "1", "model.py"), "edited");
    await sleep(400);
    for (const { delayMs, timers } of ends) expect(timers.calls, `closed ${delayMs} ms into start`).toBe(0);
  }, 60_000);
});
