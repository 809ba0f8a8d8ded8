import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, freePorts, portArgs, runCli, tempDir, testEnv, type CliResult } from "../helpers/cli.js";

/**
 * The users' repositories corpus in test/fixtures/repos (written by us in the shapes of public
 * repositories; its README says which each mirrors) on the real tritonserver, through lint, `up
 * --detach`, requests (plain HTTP, and perf's own), perf or tune, an edit, and `down`:
 *
 * - workspace/: a generated workspace whose model folders and tokenizer are folder links;
 * - models/: an iterative-sequence model, one reading request parameters, a dynamic-shape one
 *   for tune, a stateful one checking flags == START, and one quoting the folder it was loaded
 *   from in its error.
 */
const CORPUS = path.join(ROOT, "test/fixtures/repos");

type InferOut = { outputs?: Array<{ name: string; data: number[] }>; error?: string };

async function infer(port: number, model: string, inputs: unknown[]): Promise<InferOut> {
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ inputs }),
  });
  return (await res.json()) as InferOut;
}

const int32 = (name: string, data: number[]) => ({ name, datatype: "INT32", shape: [data.length], data });

/** Polls `check` every 200 ms for at most `ms`: the watcher settles, stages and reloads. */
async function until<T>(check: () => Promise<T | undefined>, ms = 60_000): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  return undefined;
}

const perfFlags = ["-p", "500", "-r", "4"];

describe("a generated workspace with folder links (lmdeploy's shape) on the real tritonserver", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let ws: string;
  let lint: CliResult;
  let up: CliResult;

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    ws = path.join(await tempDir("workspace"), "workspace");
    // verbatimSymlinks: the links stay as written (relative), as the converter writes them.
    await fs.cp(path.join(CORPUS, "workspace"), ws, { recursive: true, verbatimSymlinks: true });
    const repo = path.join(ws, "model_repository");
    lint = await runCli(["lint", repo], env);
    up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
  }, 180_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("lints and serves both linked models, the tokenizer folder they link copied into the snapshot", async () => {
    expect(lint.stdout).toMatch(/2 models checked: 0 errors.*\(2 of 2 would load\)/);
    expect(lint.code).toBe(0);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/2 of 2 models READY/);
    // vocab: the quick brown fox jumps over lazy dogs
    const pre = await infer(ports.http, "preprocessing", [int32("IDS", [0, 1, 2, 9])]);
    expect(pre.outputs?.[0]?.data).toEqual([3, 5, 5, 5]);
    const post = await infer(ports.http, "postprocessing", [int32("IDS", [0, 0, 7, 15])]);
    expect(post.outputs?.[0]?.data).toEqual([2, 0, 0, 0, 0, 0, 0, 2]);
  });

  it("an edit to the shared tokenizer's file reloads both models that link it", async () => {
    const vocab = path.join(ws, "triton_models", "tokenizer", "vocab.txt");
    await fs.writeFile(vocab, "a\nbb\nccc\n");
    const served = await until(async () => {
      const [pre, post] = await Promise.all([
        infer(ports.http, "preprocessing", [int32("IDS", [0, 1, 2, 3])]),
        infer(ports.http, "postprocessing", [int32("IDS", [0, 1, 2, 3])]),
      ]);
      const a = pre.outputs?.[0]?.data;
      const b = post.outputs?.[0]?.data;
      return a?.join() === "1,2,3,1" && b?.length === 3 ? { a, b } : undefined;
    });
    expect(served).toEqual({ a: [1, 2, 3, 1], b: [2, 1, 1] });
  }, 90_000);

  it("down stops it", async () => {
    const r = await runCli(["down"], env);
    expect(r.code).toBe(0);
  }, 60_000);
});

describe("the users' models corpus on the real tritonserver", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let repo: string;
  let lint: CliResult;
  let up: CliResult;
  const t0 = Date.now();

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    repo = path.join(await tempDir("repos"), "models");
    await fs.cp(path.join(CORPUS, "models"), repo, { recursive: true });
    lint = await runCli(["lint", repo], env);
    up = await runCli(["up", "--detach", "--require-ready", "--models", repo, ...portArgs(ports)], env);
  }, 180_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    console.info(`users' models corpus: whole file ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }, 60_000);

  const perf = (args: string[]) => runCli(["perf", ...args, ...perfFlags], env, 120_000);

  it("lints all five; up serves four and says which one is UNAVAILABLE and why, with its two folders apart", async () => {
    expect(lint.code).toBe(0);
    expect(lint.stdout).toMatch(/5 models checked: 0 errors/);
    expect(up.stdout).toMatch(/4 of 5 models READY \([^)]*\); not READY: quotes_folder \(UNAVAILABLE/);
    // Said plainly, and an error for scripts that asked for every model.
    expect(up.stderr).toContain(`1 model(s) of ${repo} not READY: quotes_folder (UNAVAILABLE: failed to load)`);
    expect(up.stderr).toMatch(/not ready \(--require-ready\)/);
    expect(up.code).toBe(1);
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const q = s.models.find((m: { name: string }) => m.name === "quotes_folder");
    expect(q.state).toBe("UNAVAILABLE");
    const m = /expected (.+?), got (.+?)\s+At:/s.exec(q.reason);
    expect(m, q.reason).not.toBeNull();
    // Both sides name the user's folder, and stay two different paths.
    expect(m![1]).toContain(path.join(repo, "quotes_folder"));
    expect(m![2]).toContain(path.join(repo, "quotes_folder"));
    expect(m![1]).not.toBe(m![2]);
  });

  it("perf measures the iterative-sequence model: one request per sequence, START only, no error", async () => {
    const data = path.join(await tempDir("tokens"), "tokens.json");
    await fs.writeFile(data, JSON.stringify({ data: [{ TOKENS: [6] }] }));
    const r = await perf(["iterative", "--input-data", data, "--concurrency-range", "1:2"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/sequences of one request each \(an iterative sequence/);
    const rows = r.stdout.split("\n").filter((l) => /^[12] /.test(l));
    expect(rows).toHaveLength(2);
    // Six responses per request (one token each), and no error.
    for (const row of rows) expect(row.split(/\s+/).slice(3, 4)).toEqual(["6.0"]);
    // Errors, the column after Out/s (the noise and warm-up columns follow it).
    for (const row of rows) expect(row.split(/\s+/)[13]).toBe("0");
    expect(r.stdout).toMatch(/saved: /);
    // The same model with random data is another measurement: not compared with the file's.
    const random = await perf(["iterative", "--concurrency-range", "1"]);
    expect(random.code, random.stderr).toBe(0);
    expect(random.stdout).not.toMatch(/compared with the previous run/);
  }, 120_000);

  it("perf sends request parameters; a KeyError on one is hinted as such; a run with half its requests failing fails", async () => {
    const missing = await perf(["params", "--shape", "INPUT_IDS:8", "--concurrency-range", "1"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/KeyError: 'max_tokens'/);
    expect(missing.stderr).toMatch(/hint: .*--request-parameter max_tokens:VALUE:TYPE/);
    expect(missing.stderr).not.toMatch(/--input-data FILE/);
    const given = ["params", "--shape", "INPUT_IDS:8", "--request-parameter", "max_tokens:16:int"];
    const ok = await perf([...given, "--request-parameter", "ignore_eos:true:bool", "--concurrency-range", "1"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).not.toMatch(/errors:/);
    const failing = await perf([...given, "--request-parameter", "fail_every:2:int", "--concurrency-range", "1:2"]);
    expect(failing.code).toBe(1);
    // Every other request fails: about half of a window's, whatever request the window cut at.
    const share = /error: ([\d.]+)% of requests failed \((\d+) of (\d+)\) .* at concurrency 1/.exec(failing.stderr);
    expect(share, failing.stderr).not.toBeNull();
    expect(Math.abs(Number(share![2]) * 2 - Number(share![3]))).toBeLessThanOrEqual(2);
    expect(failing.stderr).not.toMatch(/\(stable\)/);
    expect(failing.stdout).not.toMatch(/saved: /);
  }, 120_000);

  it("perf takes the model that checks flags == START: no one-request sequence unless asked", async () => {
    const r = await perf(["start_check", "--concurrency-range", "1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/errors:/);
    const one = await perf(["start_check", "--concurrency-range", "1", "--sequence-length", "1"]);
    expect(one.code).toBe(1);
    expect(one.stderr).toMatch(/hint: The model refused the request's sequence flags, not its inputs/);
  }, 120_000);

  it("tune takes --shape for the dynamic-shape model and measures its candidates", async () => {
    const flags = ["--concurrency", "2", "--max-candidates", "2", "--budget", "90s", "-p", "500", "-r", "4"];
    const unsized = await runCli(["tune", "dynamic", ...flags, "--no-history"], env, 120_000);
    expect(unsized.code).toBe(2);
    expect(unsized.stderr).toMatch(/hint: Pass --shape FEATURES:N/);
    const r = await runCli(["tune", "dynamic", "--shape", "FEATURES:16", ...flags, "--no-history"], env, 150_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/2 of \d+ candidates measured at concurrency 2/);
    expect(r.stdout).toMatch(/your config/);
  }, 300_000);

  it("an edit fixing quotes_folder's config makes it READY, and it computes", async () => {
    const file = path.join(repo, "quotes_folder", "config.pbtxt");
    await fs.writeFile(
      file,
      (await fs.readFile(file, "utf8")).replace('string_value: "true"', 'string_value: "false"'),
    );
    const y = await until(async () => {
      const out = await infer(ports.http, "quotes_folder", [
        { name: "X", datatype: "FP32", shape: [3], data: [0, 0, Math.log(2)] },
      ]);
      return out.outputs?.[0]?.data;
    });
    expect(y!.map((v) => +v.toFixed(3))).toEqual([0.25, 0.25, 0.5]);
    const r = await runCli(["down"], env);
    expect(r.code).toBe(0);
  }, 90_000);
});
