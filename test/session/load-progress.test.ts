import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ModelLoadTracker, followModelLoads } from "../../src/session/load-progress.js";
import { FakeClock } from "../../src/fake-clock.js";
import { removeTempRepos, tempRepo } from "../repo/helpers.js";
import { advanceUntil, ioDone } from "../helpers/fake-time.js";

afterAll(removeTempRepos);

// Lines of tritonserver 2.51's log while it starts with --load-model=* (two models, one slow).
const LOG = {
  loadingFast: 'I1201 22:49:38.586545 26563 model_lifecycle.cc:472] "loading: fast:1"',
  loadingSlow: 'I1201 22:49:38.586633 26563 model_lifecycle.cc:472] "loading: slow:1"',
  stub: 'I1201 22:49:38.593464 26563 stub_launcher.cc:385] "Starting Python backend stub: ..."',
  loadedFast: "I1201 22:49:40.658170 26563 model_lifecycle.cc:839] \"successfully loaded 'fast'\"",
  loadedSlow: "I1201 22:49:56.693783 26563 model_lifecycle.cc:839] \"successfully loaded 'slow'\"",
  failedBad:
    "E1201 22:47:24.481840 23468 model_lifecycle.cc:642] \"failed to load 'bad' version 1: Internal: ModuleNotFoundError: No module named 'torch'\"",
  loadingBad: 'I1201 22:47:20.513966 21184 model_lifecycle.cc:472] "loading: bad:1"',
};

describe("ModelLoadTracker", () => {
  it("names the models Triton is still loading, longest first, until each has loaded or failed", () => {
    let now = 1_000;
    const t = new ModelLoadTracker(() => now);
    t.line(LOG.loadingFast);
    now += 500;
    t.line(LOG.loadingSlow);
    t.line(LOG.loadingBad);
    t.line(LOG.stub);
    now += 11_600;
    expect(t.describe()).toBe("fast (12 s), bad (12 s), slow (12 s)");
    t.line(LOG.loadedFast);
    t.line(LOG.failedBad);
    now += 3_000;
    expect(t.stillLoading()).toEqual([{ model: "slow", ms: 14_600 }]);
    t.line(LOG.loadedSlow);
    expect(t.describe()).toBeUndefined();
  });

  it("counts a model from its first version queued, and lists at most a few", () => {
    let now = 0;
    const t = new ModelLoadTracker(() => now);
    t.line('I1201 22:49:38.586545 1 model_lifecycle.cc:472] "loading: m:1"');
    now = 2_000;
    t.line('I1201 22:49:38.586545 1 model_lifecycle.cc:472] "loading: m:2"');
    for (const n of ["a", "b", "c", "d", "e", "f"]) t.line(`"loading: ${n}:1"`);
    now = 4_000;
    expect(t.describe(3)).toBe("m (4 s), a (2 s), b (2 s) and 4 more");
  });
});

describe("followModelLoads", () => {
  it("reports the models still loading from a growing log every few seconds, with the note once, and nothing once they loaded", async () => {
    const dir = await tempRepo();
    const log = path.join(dir, "tritonserver.log");
    await fsp.writeFile(log, `${LOG.loadingSlow}\n`);
    const reports: string[] = [];
    const clock = new FakeClock();
    const follow = followModelLoads(log, (m) => reports.push(m), {
      fromOffset: 0,
      readMs: 10,
      note: "auto-complete is on",
      clock,
    });
    try {
      // The log's first read, 10 ms on: the model is loading from then.
      await clock.advance(10);
      await ioDone(clock, () => follow.describe() !== undefined);
      await clock.advance(4_989);
      expect(reports).toEqual([]);
      await clock.advance(1);
      await clock.advance(5_000);
      expect(reports).toEqual(["still loading: slow (5 s); auto-complete is on", "still loading: slow (10 s)"]);
      expect(follow.describe()).toBe("slow (10 s)");
      await fsp.appendFile(log, `${LOG.loadedSlow}\n`);
      await advanceUntil(clock, () => follow.describe() === undefined, 10);
      await clock.advance(15_000);
      expect(reports).toHaveLength(2);
    } finally {
      follow.stop();
    }
    expect(clock.pending).toBe(0);
  });

  it("reads only what the server wrote after the given offset (a reused log is appended to)", async () => {
    const dir = await tempRepo();
    const log = path.join(dir, "tritonserver.log");
    await fsp.writeFile(log, `${LOG.loadingSlow}\n`);
    const { size } = await fsp.stat(log);
    const clock = new FakeClock();
    const follow = followModelLoads(log, () => {}, { fromOffset: size, everyMs: 1_000, readMs: 10, clock });
    try {
      await fsp.appendFile(log, `${LOG.loadingFast}\n`);
      await advanceUntil(clock, () => follow.describe() !== undefined, 10);
      expect(follow.describe()).toMatch(/^fast \(\d+ s\)$/);
    } finally {
      follow.stop();
    }
  });
});
