import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UsageError, UserError } from "../../src/errors.js";
import { perfAnalyzerArgs } from "../../src/perf/perf-analyzer.js";
import { toCsv, type SweepResult } from "../../src/perf/report.js";
import {
  checkSharedMemoryTarget,
  layoutRegions,
  removeLeftovers,
  SHM_ALIGNMENT,
  SystemShmSession,
} from "../../src/perf/shared-memory.js";
import type { RawTensor } from "../../src/triton/binary.js";
import { SharedMemoryApiError, type RegionStatus, type SystemShmApi } from "../../src/triton/system-shm.js";

const tensor = (name: string, bytes: number, fill: number): RawTensor => ({
  name,
  datatype: "UINT8",
  shape: [bytes],
  data: Buffer.alloc(bytes, fill),
});

describe("layoutRegions", () => {
  it("gives each payload its own region and each input an aligned offset after the previous one", () => {
    const regions = layoutRegions(
      [
        [tensor("a", 10, 1), tensor("b", 64, 2), tensor("c", 1, 3)],
        [tensor("a", 200, 4), tensor("b", 0, 0), tensor("c", 5, 5)],
      ],
      "42_abc",
    );
    expect(regions.map((r) => [r.file, r.key])).toEqual([
      ["triton_dev_perf_42_abc_0", "/triton_dev_perf_42_abc_0"],
      ["triton_dev_perf_42_abc_1", "/triton_dev_perf_42_abc_1"],
    ]);
    const name = regions[0]!.name;
    expect(regions[0]!.inputs).toEqual([
      { region: name, offset: 0, byteSize: 10 },
      { region: name, offset: 64, byteSize: 64 },
      { region: name, offset: 128, byteSize: 1 },
    ]);
    expect(regions[0]!.byteSize).toBe(192);
    // An empty tensor takes no room; the next one starts where it would have.
    expect(regions[1]!.inputs.map((i) => i.offset)).toEqual([0, 256, 256]);
    expect(regions[1]!.byteSize).toBe(320);
    for (const r of regions) for (const i of r.inputs) expect(i.offset % SHM_ALIGNMENT).toBe(0);
  });

  it("names each region at Triton with 128 fresh random bits, unrelated to its file", () => {
    const regions = layoutRegions(
      Array.from({ length: 8 }, () => [tensor("a", 1, 1)]),
      "42_abc",
    );
    const names = regions.map((r) => r.name);
    for (const r of regions) {
      expect(r.name).toMatch(/^[0-9a-f]{32}$/);
      expect(r.name).not.toContain("42_abc");
      expect(r.file).not.toContain(r.name);
    }
    expect(new Set(names).size).toBe(names.length);
    const again = layoutRegions([[tensor("a", 1, 1)]], "42_abc")[0]!;
    expect(names).not.toContain(again.name);
  });

  it("never plans a region of 0 bytes (it could not be mapped)", () => {
    expect(layoutRegions([[tensor("a", 0, 0)]], "s")[0]!.byteSize).toBe(SHM_ALIGNMENT);
  });
});

describe("checkSharedMemoryTarget", () => {
  it("takes a local run and loopback addresses", () => {
    for (const host of ["127.0.0.1", "localhost", "::1", "127.0.1.1"])
      expect(() => checkSharedMemoryTarget({ host, url: `${host}:8000` })).not.toThrow();
    expect(() => checkSharedMemoryTarget({ host: "127.0.0.1", state: { runtime: "local" } })).not.toThrow();
  });

  it("refuses runs inside containers, even on a loopback port", () => {
    for (const runtime of ["docker", "kind"] as const) {
      const err = (() => {
        try {
          checkSharedMemoryTarget({ host: "127.0.0.1", state: { runtime } });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).hint).toMatch(/--runtime local/);
    }
  });

  it("refuses a server elsewhere", () => {
    for (const host of ["10.1.2.3", "triton.example.com", "::ffff:10.0.0.1", "0.0.0.0"])
      expect(() => checkSharedMemoryTarget({ host, url: `${host}:8000` })).toThrow(UsageError);
  });
});

class RecordingApi implements SystemShmApi {
  registered = new Map<string, RegionStatus>();
  unregistered: string[] = [];
  constructor(private readonly failOn?: number) {}
  async register(name: string, key: string, offset: number, byteSize: number): Promise<void> {
    if (this.failOn === this.registered.size) throw new SharedMemoryApiError("Unable to open shared memory region");
    this.registered.set(name, { name, key, offset, byteSize });
  }
  async unregister(name: string): Promise<void> {
    this.unregistered.push(name);
    this.registered.delete(name);
  }
  async status(): Promise<RegionStatus[]> {
    return [...this.registered.values()];
  }
}

describe("SystemShmSession", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "h15c-shm-"));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const payloads = [
    [tensor("a", 3, 7), tensor("b", 70, 8)],
    [tensor("a", 3, 9), tensor("b", 70, 10)],
  ];

  it("writes each input's bytes at its offset, registers whole regions, and removes everything on close", async () => {
    const api = new RecordingApi();
    const s = await SystemShmSession.create(api, payloads, { session: "t", shmDir: dir });
    expect((await fs.readdir(dir)).sort()).toEqual(["triton_dev_perf_t_0", "triton_dev_perf_t_1"]);
    expect(s.regions.map((r) => r.file)).toEqual(["triton_dev_perf_t_0", "triton_dev_perf_t_1"]);
    for (const [n, region] of s.regions.entries()) {
      const bytes = await fs.readFile(path.join(dir, region.file));
      expect(bytes.length).toBe(region.byteSize);
      payloads[n]!.forEach((t, i) => {
        const ref = s.refs[n]![i]!;
        expect(bytes.subarray(ref.offset, ref.offset + ref.byteSize).equals(t.data)).toBe(true);
      });
      expect(api.registered.get(region.name)).toEqual({
        name: region.name,
        key: `/${region.file}`,
        offset: 0,
        byteSize: region.byteSize,
      });
      expect((await fs.stat(path.join(dir, region.file))).mode & 0o777).toBe(0o600);
    }
    await s.close();
    await s.close();
    expect(await fs.readdir(dir)).toEqual([]);
    expect(api.registered.size).toBe(0);
    expect(api.unregistered.sort()).toEqual(s.regions.map((r) => r.name).sort());
  });

  it("undoes what it made when Triton refuses a region, and says so as a UserError", async () => {
    const api = new RecordingApi(1);
    const err = await SystemShmSession.create(api, payloads, { session: "t", shmDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).cause).toBeInstanceOf(SharedMemoryApiError);
    expect(await fs.readdir(dir)).toEqual([]);
    expect(api.registered.size).toBe(0);
    expect(api.unregistered).toHaveLength(1);
    expect(api.unregistered[0]).toMatch(/^[0-9a-f]{32}$/);
  });

  it("never takes over (nor removes) an shm object that is already there", async () => {
    await fs.writeFile(path.join(dir, "triton_dev_perf_t_1"), "someone else's");
    const api = new RecordingApi();
    const err = await SystemShmSession.create(api, payloads, { session: "t", shmDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toContain(dir);
    expect(await fs.readdir(dir)).toEqual(["triton_dev_perf_t_1"]);
    expect(await fs.readFile(path.join(dir, "triton_dev_perf_t_1"), "utf8")).toBe("someone else's");
    expect(api.registered.size).toBe(0);
  });
});

describe("removeLeftovers", () => {
  it("removes the files and registrations of perf runs whose pid is gone, and nothing else", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "h15c-left-"));
    try {
      const names = {
        dead: "triton_dev_perf_111_abc123_0",
        deadToo: "triton_dev_perf_111_abc123_1",
        live: "triton_dev_perf_222_def456_0",
        foreign: "triton_python_backend_shm_region_1",
        lookalike: "triton_dev_perf_111_notours",
      };
      for (const n of Object.values(names)) await fs.writeFile(path.join(dir, n), "x");
      const api = new RecordingApi();
      const [dead, live, other] = ["a".repeat(32), "b".repeat(32), "c".repeat(32)];
      await api.register(dead, `/${names.dead}`, 0, 1);
      await api.register(live, `/${names.live}`, 0, 1);
      await api.register("someone_elses", "/someone_elses", 0, 1);
      // A name not of ours over a dead perf's file: not ours to unregister.
      await api.register("theirs", `/${names.deadToo}`, 0, 1);
      await api.register(other, `/${names.foreign}`, 0, 1);
      const removed = await removeLeftovers(api, { shmDir: dir, alive: (pid) => pid === 222 });
      expect(removed.sort()).toEqual([names.dead, names.deadToo]);
      expect(api.unregistered).toEqual([dead]);
      expect((await fs.readdir(dir)).sort()).toEqual([names.foreign, names.lookalike, names.live].sort());
      expect([...api.registered.keys()].sort()).toEqual([live, other, "someone_elses", "theirs"].sort());
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the mode in reports", () => {
  const sweep = (sharedMemory?: "system"): SweepResult => ({
    model: "m",
    servedModel: "m",
    engine: "builtin",
    protocol: "http",
    endpoint: "127.0.0.1:8000",
    kind: "concurrency",
    batchSize: 1,
    ...(sharedMemory ? { sharedMemory } : {}),
    measurementIntervalMs: 1000,
    startedAt: "",
    finishedAt: "",
    levels: [
      {
        kind: "concurrency",
        value: 1,
        throughput: 10,
        requests: 10,
        errorCount: 0,
        latency: { avgUs: 1, p50Us: 1, p90Us: 1, p95Us: 1, p99Us: 1 },
      } as unknown as SweepResult["levels"][number],
    ],
  });

  it("adds a last CSV column for shared memory runs and leaves perf_analyzer's 13 columns alone otherwise", () => {
    const plain = toCsv(sweep()).trim().split("\n");
    const shm = toCsv(sweep("system")).trim().split("\n");
    expect(plain[0]!.split(",")).toHaveLength(13);
    expect(shm[0]!.split(",")).toEqual([...plain[0]!.split(","), "Shared Memory"]);
    expect(shm[1]!.split(",")).toEqual([...plain[1]!.split(","), "system"]);
  });

  it("passes the mode on to perf_analyzer, whose flag is the same", () => {
    const base = {
      model: "m",
      url: "127.0.0.1:8000",
      protocol: "http" as const,
      kind: "concurrency" as const,
      value: 1,
      distribution: "constant" as const,
      windowMs: 1000,
      stabilityPct: 10,
      maxTrials: 3,
      batchSize: 1,
      shapes: {},
      inputData: "random" as const,
      stringLength: 16,
    };
    const args = perfAnalyzerArgs({ ...base, sharedMemory: "system" }, "/tmp/x.csv");
    expect(args.slice(args.indexOf("--shared-memory"), args.indexOf("--shared-memory") + 2)).toEqual([
      "--shared-memory",
      "system",
    ]);
    expect(perfAnalyzerArgs(base, "/tmp/x.csv")).not.toContain("--shared-memory");
  });
});
