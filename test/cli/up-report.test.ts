import fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CliContext } from "../../src/cli/output.js";
import { reportDetached } from "../../src/cli/up-action.js";
import type { ExplainedIndexEntry } from "../../src/reload/load-reasons.js";
import type { RunState } from "../../src/state/run-state.js";

const dirs: string[] = [];
const servers: http.Server[] = [];
afterAll(async () => {
  for (const s of servers) s.close();
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

/** A run folder whose staged repository serves `models` (links to snapshots, as stage.ts writes them). */
async function runDirServing(models: string[]): Promise<string> {
  const runDir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-up-report-"));
  dirs.push(runDir);
  await fsp.mkdir(path.join(runDir, "repository"), { recursive: true });
  for (const m of models) await fsp.symlink(`../store/${m}@1`, path.join(runDir, "repository", m));
  return runDir;
}

function stateOf(runDir: string, http: number, extra: Partial<RunState> = {}): RunState {
  return {
    version: 1,
    runId: "r1",
    runtime: "local",
    pid: 1,
    executable: "/bin/tritonserver",
    detached: true,
    startedAt: new Date().toISOString(),
    modelsDir: "/repo",
    runDir,
    repository: path.join(runDir, "repository"),
    logFile: path.join(runDir, "triton.log"),
    host: "127.0.0.1",
    ports: { http, grpc: 1, metrics: 2 },
    reload: "explicit",
    pollSecs: 2,
    repositoryKey: { header: "k", value: "v" },
    ...extra,
  };
}

/** Triton's answers to what the report reads: readiness and the repository index. */
async function tritonAnswering(ready: boolean, index: ExplainedIndexEntry[]) {
  const server = http.createServer((req, res) => {
    if (req.url === "/v2/health/ready") res.writeHead(ready ? 200 : 400).end();
    else if (req.url === "/v2/repository/index")
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(index));
    else res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

function context(): CliContext & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { output: { out: (s) => void out.push(s), err: (s) => void err.push(s) }, env: {}, exitCode: 0, out, err };
}

describe("reportDetached", () => {
  it("says what the read failed on when Triton does not answer, and exits 1", async () => {
    const closed = await tritonAnswering(true, []);
    await new Promise<void>((r) => servers.pop()!.close(() => r()));
    const ctx = context();
    await reportDetached(stateOf(await runDirServing(["a"]), closed), [], ctx, false);
    expect(ctx.exitCode).toBe(1);
    expect(ctx.err.join("\n")).toMatch(/^not ready: Triton does not answer \(.+\)\. Triton keeps running/m);
    // The reason is the error itself, not an empty pair of brackets.
    expect(ctx.err.join("\n")).not.toContain("()");
    expect(ctx.out).toEqual([]);
  });

  it("is ready with every served model READY, and says how to follow the run", async () => {
    const port = await tritonAnswering(true, [{ name: "a", state: "READY" }]);
    const ctx = context();
    await reportDetached(stateOf(await runDirServing(["a"]), port), [{ name: "a", state: "READY" }], ctx, false);
    expect(ctx.exitCode).toBe(0);
    expect(ctx.err).toEqual([]);
    expect(ctx.out[0]).toBe("ready: 1 of 1 model READY (a)");
    expect(ctx.out[1]).toContain("triton-dev down");
  });

  it("says exactly what is READY: never 'ready' with a model of the repository not READY, and each other one with its reason", async () => {
    const index: ExplainedIndexEntry[] = [
      { name: "a", state: "READY" },
      { name: "b", state: "UNAVAILABLE", reason: "it raised" },
    ];
    const port = await tritonAnswering(true, index);
    const ctx = context();
    const state = stateOf(await runDirServing(["a"]), port, {
      notServed: [{ model: "c", why: "refused", reason: "lint found 1 error(s)" }],
    });
    await reportDetached(state, index, ctx, false);
    expect(ctx.out[0]).toBe(
      "partly ready: 1 of 3 models READY (a); not READY: b (UNAVAILABLE: it raised), c (REFUSED: lint found 1 error(s))",
    );
    // Triton serving nothing READY (every model failed) is never called ready.
    const failed: ExplainedIndexEntry[] = [{ name: "b", state: "UNAVAILABLE", reason: "it raised" }];
    const nothing = context();
    await reportDetached(stateOf(await runDirServing([]), await tritonAnswering(true, failed)), failed, nothing, false);
    expect(nothing.out[0]).toBe("nothing READY: 0 of 1 model READY; not READY: b (UNAVAILABLE: it raised)");
  });

  it("names a failed model with Triton's reason; ready for the others unless --require-ready", async () => {
    const index: ExplainedIndexEntry[] = [
      { name: "a", state: "READY" },
      { name: "b", state: "UNAVAILABLE", reason: "ModuleNotFoundError: No module named 'nope'" },
    ];
    const port = await tritonAnswering(true, index);
    const runDir = await runDirServing(["a"]);
    const loose = context();
    await reportDetached(stateOf(runDir, port), index, loose, false);
    expect(loose.exitCode).toBe(0);
    expect(loose.err[0]).toBe(
      "b: not served, it failed to load: ModuleNotFoundError: No module named 'nope'; saving a fix loads it",
    );
    expect(loose.err[1]).toMatch(
      /^1 model\(s\) of \/repo not READY: b \(UNAVAILABLE: failed to load\); Triton serves the others/,
    );

    const strict = context();
    await reportDetached(
      stateOf(runDir, port, { notServed: [{ model: "g", why: "skipped", reason: "needs a GPU" }] }),
      index,
      strict,
      false,
      true,
    );
    expect(strict.exitCode).toBe(1);
    expect(strict.err.join("\n")).toContain(
      "2 model(s) of /repo not READY: b (UNAVAILABLE: failed to load), g (skipped: needs a GPU)",
    );
    expect(strict.err.at(-1)).toMatch(/^not ready \(--require-ready\)/);
  });
});
