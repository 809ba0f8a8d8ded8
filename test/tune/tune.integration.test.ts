import fsSync from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePorts, portArgs, runCli, ROOT, tempDir, testEnv } from "../helpers/cli.js";
import type { TuneReport } from "../../src/tune/run.js";
import { stripTritonPrefix } from "../../src/state/log-file.js";
import { loadStarted } from "../../src/triton/log-lines.js";
import { spawn } from "node:child_process";

/**
 * `triton-dev tune` on a real tritonserver (`up --detach`, poll mode) with a model that sleeps a
 * fixed cost plus a little per request (so batching and a second instance both help on two cores)
 * and refuses to start with three instances. Tiny spaces and 500 ms windows keep it to minutes.
 */
const FIXTURE = path.join(ROOT, "test/fixtures/tune/sleepy");

const ODD = `# odd: a config written by hand, comments everywhere
name:"odd"   # the name
backend :  "python"
max_batch_size:16
input [{name:"x",data_type:TYPE_FP32,dims:[4]}]   # one input
output [ { name: "y"
           data_type: TYPE_FP32
           dims: [ 4 ] } ]
instance_group [
\t{ kind: KIND_CPU   # tabs, and a comment inside the entry
\t  count:1 }
]
# a trailing comment and no newline at the end`;

describe("triton-dev tune (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;
  let work: string;
  let busyFile: string;

  const json = (stdout: string) => JSON.parse(stdout) as TuneReport;
  const space = async (name: string, s: object) => {
    const f = path.join(work, `${name}.json`);
    await fs.writeFile(f, JSON.stringify(s));
    return f;
  };
  const fast = ["-p", "500", "-r", "4", "--json"];
  const served = async () => {
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
      repository: string;
      repositoryKey: { header: string; value: string };
    };
    const index = (await (
      await fetch(`http://127.0.0.1:${ports.http}/v2/repository/index`, {
        method: "POST",
        headers: { [state.repositoryKey.header]: state.repositoryKey.value },
      })
    ).json()) as Array<{ name: string; state?: string }>;
    return { index, folders: await fs.readdir(state.repository) };
  };
  const logFile = async () =>
    (JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as { logFile: string })
      .logFile;
  /** How often Triton began loading each of tune's variants in its log, from `offset` on. */
  const variantLoads = async (offset: number) => {
    const text = (await fs.readFile(await logFile())).subarray(offset).toString("utf8");
    const loads = new Map<string, number>();
    for (const raw of text.split("\n")) {
      const name = loadStarted(stripTritonPrefix(raw.trimEnd()));
      if (name?.includes("__perf_tune")) loads.set(name, (loads.get(name) ?? 0) + 1);
    }
    return loads;
  };
  const expectNoVariantsLeft = async () => {
    const { index, folders } = await served();
    expect(index.filter((e) => e.name.includes("__perf_") && e.state === "READY")).toEqual([]);
    expect(folders.filter((f) => f.includes("__perf_"))).toEqual([]);
  };

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    work = await tempDir("tune");
    models = await tempDir("tune-models");
    await fs.cp(FIXTURE, path.join(models, "sleepy"), { recursive: true });
    const modelPy = await fs.readFile(path.join(FIXTURE, "1", "model.py"), "utf8");
    const sleepyConfig = await fs.readFile(path.join(FIXTURE, "config.pbtxt"), "utf8");
    const add = async (name: string, config: string) => {
      await fs.mkdir(path.join(models, name, "1"), { recursive: true });
      await fs.writeFile(path.join(models, name, "1", "model.py"), modelPy);
      await fs.writeFile(path.join(models, name, "config.pbtxt"), config);
    };
    await add("odd", ODD);
    busyFile = path.join(work, "busy");
    await add(
      "busy",
      sleepyConfig.replace('name: "sleepy"', 'name: "busy"') +
        `parameters { key: "SLOWDOWN_FILE" value: { string_value: "${busyFile}" } }\n`,
    );
    await add(
      "sleepy_nobatch",
      sleepyConfig
        .replace('name: "sleepy"', 'name: "sleepy_nobatch"')
        .replace("max_batch_size: 16", "max_batch_size: 0"),
    );
    await fs.mkdir(path.join(models, "pipeline", "1"), { recursive: true });
    await fs.writeFile(
      path.join(models, "pipeline", "config.pbtxt"),
      `name: "pipeline"
platform: "ensemble"
max_batch_size: 16
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling { step [ { model_name: "sleepy" model_version: -1 input_map { key: "x" value: "x" } output_map { key: "y" value: "y" } } ] }
`,
    );
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout, up.stderr).toMatch(/5 of 5 models? READY/);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("finds what meets a budget only some candidates meet, and records the one that fails to load with why", async () => {
    const before = await fs.readFile(path.join(models, "sleepy", "config.pbtxt"), "utf8");
    const logOffset = (await fs.stat(await logFile())).size;
    const s = await space("budget", {
      batching: [false, true],
      maxBatchSize: [16],
      preferredBatchSize: [[]],
      maxQueueDelayMicroseconds: [0, 4000],
      // 3 is the neighbour of the user's 1, so the climb tries it whatever the machine's noise
      // makes of the other steps (through 2, it is reached only when 2 beats 1 by more than that).
      instances: [1, 3],
    });
    const r = await runCli(
      [
        "tune",
        "sleepy",
        "--concurrency",
        "8",
        "--min-throughput",
        "200",
        "--space",
        s,
        "--csv",
        path.join(work, "t.csv"),
        ...fast,
      ],
      env,
      300_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const rep = json(r.stdout);
    // The user's config (no batching, one instance) is measured first, and misses the budget.
    expect(rep.trials[0]!.servedModel).toBe("sleepy");
    expect(rep.trials[0]!.status).toBe("over-budget");
    expect(rep.trials[0]!.why).toMatch(/throughput .* < minimum 200/);
    const ok = rep.trials.filter((t) => t.status === "ok");
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.every((t) => t.measured!.throughput >= 200)).toBe(true);
    const winner = rep.trials.find((t) => t.index === rep.winner)!;
    expect(winner.status).toBe("ok");
    // The best the search measured, unless the side-by-side check overturned it for the runner-up.
    const searchBest = ok.reduce((a, b) => (b.measured!.throughput > a.measured!.throughput ? b : a));
    expect(rep.confirmation).toBeDefined();
    expect(winner.index).toBe(rep.confirmation!.pick === "runnerUp" ? rep.confirmation!.runnerUp : searchBest.index);
    // Each measured candidate has the server's breakdown of its own requests.
    for (const t of rep.trials.filter((x) => x.level))
      expect(t.level!.server!.requests).toBeGreaterThan(0.9 * t.level!.requests);
    // Three instances do not fit: recorded with Triton's reason, not a crash of the search.
    const failed = rep.trials.filter((t) => t.status === "failed");
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((t) => t.candidate.instances === 3)).toBe(true);
    expect(failed[0]!.why).toMatch(/3 instances do not fit/);
    expect(rep.ranking[rep.ranking.length - 1]).toBe(failed[failed.length - 1]!.index);
    expect(rep.diff.length).toBeGreaterThan(0);
    expect(rep.savedTo && (await fs.stat(rep.savedTo)).isFile()).toBe(true);
    const csv = (await fs.readFile(path.join(work, "t.csv"), "utf8")).trim().split("\n");
    expect(csv).toHaveLength(rep.trials.length + 1);
    // Nothing the user wrote changes without --apply; no variant is left behind.
    expect(await fs.readFile(path.join(models, "sleepy", "config.pbtxt"), "utf8")).toBe(before);
    await expectNoVariantsLeft();
    // Poll mode loads each variant once: its files keep their modification times, so the stub
    // finds model.py's compiled copy valid and writes nothing the next poll would take for an edit.
    // (A second load mid-measurement would restart the server's counters checked above.)
    const loads = await variantLoads(logOffset);
    const staged = rep.trials.filter((t) => t.servedModel !== "sleepy").map((t) => t.servedModel!);
    expect([...loads.keys()].sort()).toEqual([...staged].sort());
    expect([...loads.values()].every((n) => n === 1)).toBe(true);
  }, 300_000);

  it("ends on Ctrl-C with the best found so far and cleans up the candidate being measured", async () => {
    const s = await space("ctrlc", {
      batching: [false, true],
      maxQueueDelayMicroseconds: [0, 2000, 4000],
      instances: [1, 2],
    });
    const child = spawn(process.execPath, [CLI, "tune", "sleepy", "--concurrency", "4", "--space", s, ...fast], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const exit = new Promise<number | null>((res) => child.on("exit", (c) => res(c)));
    for (const deadline = Date.now() + 120_000; !/\[2\//.test(err) && Date.now() < deadline;)
      await new Promise((res) => setTimeout(res, 100));
    expect(err).toMatch(/\[2\//);
    // Soon after the second candidate starts: with its early stop a search of this space can be
    // over a few seconds later, and a Ctrl-C then finds nothing left to interrupt.
    await new Promise((res) => setTimeout(res, 300));
    child.kill("SIGINT");
    expect(await exit).toBe(130);
    const rep = json(out);
    expect(rep.ended).toBe("interrupted");
    expect(rep.trials.length).toBeGreaterThanOrEqual(1);
    expect(rep.trials.length).toBeLessThan(4);
    expect(rep.winner).toBeDefined();
    expect(err).toMatch(/interrupted: ending the search/);
    await expectNoVariantsLeft();
  }, 200_000);

  it("--apply writes the winning field into a config full of comments and odd layout, every other byte kept", async () => {
    const file = path.join(models, "odd", "config.pbtxt");
    const s = await space("apply", { batching: [false], instances: [1, 2] });
    const r = await runCli(["tune", "odd", "--concurrency", "4", "--space", s, "--apply", ...fast], env, 200_000);
    expect(r.code, r.stderr).toBe(0);
    const rep = json(r.stdout);
    expect(rep.trials.find((t) => t.index === rep.winner)!.candidate.instances).toBe(2);
    // Checked side by side against the runner-up, one instance (at about half its throughput; how
    // clearly that shows depends on what else the machine does, so no verdict is asserted).
    expect(rep.confirmation).toMatchObject({ pick: "winner", winner: 1, runnerUp: 0 });
    expect(rep.diff).toEqual([{ field: "instance_group[KIND_CPU].count", before: "1", after: "2" }]);
    const after = await fs.readFile(file, "utf8");
    const at = ODD.indexOf("count:1");
    const pre = ODD.slice(0, at);
    const post = ODD.slice(at + "count:1".length);
    expect(after.startsWith(pre)).toBe(true);
    expect(after.endsWith(post)).toBe(true);
    expect(after.slice(pre.length, after.length - post.length)).toMatch(/^count:\s*2$/);
    // The editor's one backup convention: the old bytes beside the file, as a `.bak` the watcher
    // and staging skip, so it is never served.
    expect(path.dirname(rep.applied!.backup)).toBe(path.dirname(file));
    expect(path.basename(rep.applied!.backup)).toMatch(/^config\.pbtxt\.triton-dev-backup-\d{8}T\d{6}Z\.bak$/);
    expect(await fs.readFile(rep.applied!.backup, "utf8")).toBe(ODD);
    // Hot reload serves the edit, as it would any save.
    let count = 0;
    for (const deadline = Date.now() + 60_000; count !== 2 && Date.now() < deadline;) {
      await new Promise((res) => setTimeout(res, 500));
      const cfg = (await (await fetch(`http://127.0.0.1:${ports.http}/v2/models/odd/config`)).json()) as {
        instance_group?: Array<{ count: number }>;
      };
      count = cfg.instance_group?.[0]?.count ?? 0;
    }
    expect(count).toBe(2);
    const { repository } = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
      repository: string;
    };
    expect((await fs.readdir(path.join(repository, "odd"))).filter((f) => f.includes("backup"))).toEqual([]);
  }, 200_000);

  it("checks the winner against the runner-up side by side, so a busy minute under one candidate does not decide", async () => {
    const s = await space("busy", { batching: [false], instances: [1, 2] });
    const child = spawn(process.execPath, [CLI, "tune", "busy", "--concurrency", "4", "--space", s, ...fast], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    // The machine is busy (the model four times slower) exactly while the second candidate, two
    // instances, is staged and measured, and quiet again from its result on.
    let phase: "before" | "busy" | "after" = "before";
    child.stderr.on("data", (d) => {
      err += d;
      if (phase === "before" && /\[2\/\d+\]/.test(err)) {
        phase = "busy";
        fsSync.writeFileSync(busyFile, "4");
      }
      if (phase === "busy" && /\[2\/\d+\][^\n]*\n\s+(\d|failed)[^\n]*\n/.test(err)) {
        phase = "after";
        fsSync.writeFileSync(busyFile, "1");
      }
    });
    const code = await new Promise<number | null>((res) => child.on("exit", (c) => res(c)));
    expect(code, err).toBe(0);
    expect(phase).toBe("after");
    const rep = json(out);
    expect(rep.trials.map((t) => t.candidate.instances)).toEqual([1, 2]);
    // The search alone would keep one instance: two measured slower in their busy minute.
    expect(rep.trials[1]!.measured!.throughput).toBeLessThan(rep.trials[0]!.measured!.throughput);
    expect(rep.confirmation).toMatchObject({ verdict: "overturned", pick: "runnerUp", winner: 0, runnerUp: 1 });
    expect(rep.confirmation!.rounds).toHaveLength(3);
    for (const r of rep.confirmation!.rounds) expect(r.runnerUp).toBeGreaterThan(1.5 * r.winner);
    expect(rep.trials.find((t) => t.index === rep.winner)!.candidate.instances).toBe(2);
    expect(rep.ranking[0]).toBe(1);
    expect(rep.diff).toEqual([{ field: "instance_group[KIND_CPU].count", before: "1", after: "2" }]);
    expect(err).toMatch(/overturned: /);
    expect(rep.timing.confirmMs).toBeGreaterThan(0);
    await expectNoVariantsLeft();
  }, 200_000);

  it("tunes only instances for a model with max_batch_size 0, and refuses to batch it", async () => {
    const s = await space("nobatch", { instances: [1, 2] });
    const r = await runCli(["tune", "sleepy_nobatch", "--concurrency", "4", "--space", s, ...fast], env, 200_000);
    expect(r.code, r.stderr).toBe(0);
    const rep = json(r.stdout);
    expect(rep.space.batching).toEqual([false]);
    expect(rep.trials.map((t) => t.candidate.batching)).toEqual([false, false]);
    // What decided, said when it is not the second instance (a busy machine's noise can be wider).
    const why = JSON.stringify({
      trials: rep.trials.map((t) => [t.key, t.measured?.throughput, t.measured?.noise]),
      confirmation: rep.confirmation,
      keptWithinNoise: rep.keptWithinNoise,
    });
    expect(rep.trials.find((t) => t.index === rep.winner)!.candidate.instances, why).toBe(2);

    const bad = await space("nobatch-bad", { batching: [true] });
    const refused = await runCli(["tune", "sleepy_nobatch", "--space", bad], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${bad}: sleepy_nobatch has max_batch_size 0`);
  }, 200_000);

  it("refuses an ensemble, naming the composing models to tune instead", async () => {
    const r = await runCli(["tune", "pipeline"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/pipeline is an ensemble/);
    expect(r.stderr).toContain("`triton-dev tune sleepy`");
  }, 60_000);
});
