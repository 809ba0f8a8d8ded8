import { afterEach, describe, expect, it } from "vitest";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { previousComparable, saveRun } from "../../src/perf/history.js";
import type { SweepResult } from "../../src/perf/report.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await fsp.rm(d, { recursive: true, force: true });
});

const sweep = (streaming?: SweepResult["streaming"]): SweepResult => ({
  model: "text_streamer",
  servedModel: "text_streamer",
  engine: "builtin",
  protocol: "http",
  endpoint: "127.0.0.1:8000",
  kind: "concurrency",
  batchSize: 1,
  measurementIntervalMs: 1000,
  startedAt: "",
  finishedAt: "",
  ...(streaming ? { streaming } : {}),
  levels: [{ value: 1, requests: 10 } as SweepResult["levels"][number]],
});

describe("perf history", () => {
  it("compares a streamed sweep only with an earlier one streamed the same way", async () => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), "perf-history-"));
    dirs.push(root);
    await saveRun(root, { model: "text_streamer", sweeps: [sweep()] }, new Date("2026-01-01T00:00:00Z"));
    expect(await previousComparable(root, sweep("generate_stream"))).toBeUndefined();
    const { saved } = await saveRun(
      root,
      { model: "text_streamer", sweeps: [sweep("generate_stream")] },
      new Date("2026-01-02T00:00:00Z"),
    );
    expect((await previousComparable(root, sweep("generate_stream")))?.id).toBe(saved.id);
    expect((await previousComparable(root, sweep()))?.sweeps[0]?.streaming).toBeUndefined();
  });
});
