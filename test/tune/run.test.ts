import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { chooseConcurrency, editsBetween, settleAfterPoll } from "../../src/tune/run.js";
import type { Candidate } from "../../src/tune/space.js";

const base: Candidate = {
  batching: true,
  maxBatchSize: 16,
  preferredBatchSize: [8],
  maxQueueDelayMicroseconds: 100,
  instances: 1,
};

describe("editsBetween", () => {
  it("names only the fields that differ from the user's config", () => {
    expect(editsBetween(base, { ...base, instances: 2 }, "KIND_CPU")).toEqual({
      instanceCounts: [{ kind: "KIND_CPU", count: 2 }],
    });
    expect(editsBetween(base, { ...base, maxQueueDelayMicroseconds: 5000 }, "KIND_CPU")).toEqual({
      dynamicBatching: { maxQueueDelayMicroseconds: 5000 },
    });
    expect(editsBetween(base, { ...base, batching: false }, "KIND_CPU")).toEqual({ dynamicBatching: false });
    expect(editsBetween({ ...base, batching: false }, base, "KIND_GPU")).toEqual({
      dynamicBatching: { preferredBatchSize: [8], maxQueueDelayMicroseconds: 100 },
    });
    expect(editsBetween(base, base, "KIND_CPU")).toEqual({});
  });
});

describe("chooseConcurrency", () => {
  const levels = [
    { concurrency: 1, throughput: 100, p99Us: 5_000 },
    { concurrency: 2, throughput: 190, p99Us: 8_000 },
    { concurrency: 4, throughput: 196, p99Us: 15_000 },
    { concurrency: 8, throughput: 300, p99Us: 40_000 },
  ];
  it("takes the smallest level within 5% of the best inside the budget", () => {
    expect(chooseConcurrency(levels, { latency: { percentile: "p99", ms: 20 } })).toBe(2);
    expect(chooseConcurrency(levels, {})).toBe(8);
    expect(chooseConcurrency(levels, { latency: { percentile: "p99", ms: 1 } })).toBe(1);
  });
});

describe("settleAfterPoll", () => {
  it("waits past Triton's second load of a fresh variant, read from its log", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "tune-settle-"));
    const log = path.join(dir, "tritonserver.log");
    const line = (msg: string) => `I1202 01:50:02.091724 19634 model_lifecycle.cc:472] "${msg}"\n`;
    await fs.writeFile(log, line("loading: other:1"));
    const offset = (await fs.stat(log)).size;
    await fs.appendFile(log, line("loading: v:1") + line("successfully loaded 'v'"));
    const started = Date.now();
    // The poll's reload of v begins 600 ms in and ends 1.2 s in.
    setTimeout(() => void fs.appendFile(log, line("loading: v:1")), 600);
    setTimeout(() => void fs.appendFile(log, line("successfully loaded 'v'")), 1200);
    await settleAfterPoll(log, offset, "v", 0);
    // Done only a quiet second (poll 0 s + 1 s) after the reload finished.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2100);
    expect(Date.now() - started).toBeLessThan(4000);
    await fs.rm(dir, { recursive: true, force: true });
  });
});
