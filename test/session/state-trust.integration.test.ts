// The state folder holds the run record that `down` acts on (the processes it stops) and the run
// folders it prunes. Another local user (uid 65534) who made that folder first, under /tmp, must
// not get us to stop, or remove, anything of ours: every command refuses the folder instead.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, testEnv } from "../helpers/cli.js";

const asRoot = process.getuid?.() === 0;
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function temp(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A process of ours (root's when the tests run as root) to be named as a target. */
function target(command: string, args: string[]): ChildProcess {
  const c = spawn(command, args, { stdio: "ignore" });
  children.push(c);
  return c;
}
const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null && fs.existsSync(`/proc/${c.pid}`);

/** A state folder as uid 65534 would plant it under /tmp: a run record naming our processes, and old run folders. */
function plantedState(server: ChildProcess, watcher: ChildProcess, executable: string): string {
  const state = temp("planted-state-");
  fs.chmodSync(state, 0o755);
  const runDir = path.join(state, "runs", "20260101T000000-aaaaaa");
  fs.mkdirSync(runDir, { recursive: true });
  const record = {
    version: 1,
    runId: "20260101T000000-aaaaaa",
    runtime: "local",
    pid: server.pid,
    executable,
    detached: true,
    supervisorPid: watcher.pid,
    startedAt: new Date().toISOString(),
    modelsDir: state,
    runDir,
    repository: path.join(runDir, "repository"),
    logFile: path.join(runDir, "tritonserver.log"),
    host: "127.0.0.1",
    ports: { http: 1, grpc: 2, metrics: 3 },
    reload: "poll",
    pollSecs: 1,
    repositoryKey: { header: "x-key", value: "k" },
  };
  fs.writeFileSync(path.join(state, "run.json"), JSON.stringify(record));
  for (const p of [state, ...fs.readdirSync(state, { recursive: true }).map((e) => path.join(state, String(e)))])
    fs.lchownSync(p, 65534, 65534);
  return state;
}

describe("a state folder another user made", () => {
  it.skipIf(!asRoot)(
    "down and status refuse it, naming the folder and its owner, and stop none of the processes its record names",
    async () => {
      const sleepBin = fs.realpathSync("/bin/sleep");
      const server = target(sleepBin, ["300"]);
      const watcher = target(process.execPath, ["-e", "setTimeout(() => {}, 300_000)"]);
      const state = plantedState(server, watcher, sleepBin);
      const env = await testEnv({ TRITON_DEV_STATE_DIR: state });
      const results = [];
      for (const cmd of ["status", "down"]) results.push({ cmd, ...(await runCli([cmd], env, 120_000)) });
      expect(alive(server)).toBe(true);
      expect(alive(watcher)).toBe(true);
      for (const r of results) {
        expect(r.code, `${r.cmd}: ${r.stdout}${r.stderr}`).toBe(1);
        expect(r.stderr).toContain(state);
        expect(r.stderr).toMatch(/owned by .*65534/);
        expect(r.stderr).toContain("TRITON_DEV_STATE_DIR");
      }
      expect(fs.existsSync(path.join(state, "run.json"))).toBe(true);
    },
    240_000,
  );
});

describe("pruning old run folders", () => {
  it("follows no link: neither a `runs` link nor a link among the runs", async () => {
    const victim = temp("prune-victim-");
    for (let i = 0; i < 6; i++) fs.mkdirSync(path.join(victim, `keep-${i}`));
    // `runs` itself a link to the folder that must survive.
    const linked = await testEnv();
    dirs.push(linked.TRITON_DEV_STATE_DIR!);
    fs.symlinkSync(victim, path.join(linked.TRITON_DEV_STATE_DIR!, "runs"));
    let r = await runCli(["down"], linked, 120_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(fs.readdirSync(victim).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `keep-${i}`));

    // A real `runs` folder whose oldest entries are links: the links are left, the real old runs go.
    const env = await testEnv();
    dirs.push(env.TRITON_DEV_STATE_DIR!);
    const runs = path.join(env.TRITON_DEV_STATE_DIR!, "runs");
    fs.mkdirSync(runs);
    fs.symlinkSync(path.join(victim, "keep-0"), path.join(runs, "20200101T000000-000000"));
    fs.mkdirSync(path.join(runs, "20200102T000000-000000"));
    for (let i = 3; i < 7; i++) fs.mkdirSync(path.join(runs, `2020010${i}T000000-000000`));
    r = await runCli(["down"], env, 120_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(fs.readdirSync(runs).sort()).toEqual([
      "20200101T000000-000000",
      "20200104T000000-000000",
      "20200105T000000-000000",
      "20200106T000000-000000",
    ]);
    expect(fs.readdirSync(victim)).toHaveLength(6);
  }, 240_000);
});
