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

const sweep = (streaming?: SweepResult["streaming"], extra: Partial<SweepResult> = {}): SweepResult => ({
  model: "text_streamer",
  servedModel: "text_streamer",
  repository: "/home/u/models",
  inputs: "random data",
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
  ...extra,
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

  it("compares a run only with one of the same repository's model sent the same inputs", async () => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), "perf-history-"));
    dirs.push(root);
    const other = { repository: "/home/u/other-repo" };
    const file = { inputs: `--input-data /home/u/data.json` };
    await saveRun(
      root,
      { model: "text_streamer", sweeps: [sweep(undefined, other)] },
      new Date("2026-01-01T00:00:00Z"),
    );
    await saveRun(root, { model: "text_streamer", sweeps: [sweep(undefined, file)] }, new Date("2026-01-02T00:00:00Z"));
    // Another repository's model of the same name, and a run with --input-data: neither.
    expect(await previousComparable(root, sweep())).toBeUndefined();
    expect((await previousComparable(root, sweep(undefined, other)))?.sweeps[0]?.repository).toBe(other.repository);
    expect((await previousComparable(root, sweep(undefined, file)))?.sweeps[0]?.inputs).toBe(file.inputs);
    // A record from before repositories and inputs were kept is compared with nothing.
    const { repository: _r, inputs: _i, ...old } = sweep();
    await saveRun(root, { model: "text_streamer", sweeps: [old] }, new Date("2026-01-03T00:00:00Z"));
    expect(await previousComparable(root, sweep())).toBeUndefined();
  });
});
