import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copySampleModels, freePorts, portArgs, runCli, testEnv } from "../helpers/cli.js";
import { spawnPerfCli, tableRows } from "./helpers.js";

/** A server that dies under load: perf says so and keeps what it measured. Own server, since it is killed. */
describe("triton-dev perf when the server is killed mid-run", () => {
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    env = await testEnv();
    const up = await runCli(
      ["up", "--detach", "--models", await copySampleModels(), ...portArgs(await freePorts())],
      env,
    );
    expect(up.code, up.stderr).toBe(0);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("reports the server gone, with the levels measured before, and exits 1", async () => {
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    const p = spawnPerfCli(["bert_tokenizer", "--concurrency-range", "1:4", "-p", "1000", "-r", "3"], env);
    await p.waitFor(/bert_tokenizer concurrency 2, window 1/);
    // The whole process group, as a crash or the OOM killer would take it: server and stubs.
    process.kill(-state.pid, "SIGKILL");
    expect(await p.exit).toBe(1);
    expect(p.stderr()).toMatch(
      /error: Triton at (http:\/\/)?127\.0\.0\.1:\d+ stopped answering during concurrency 2 \((connection refused|connection reset)\); the results above are those measured until then/,
    );
    const rows = tableRows(p.stdout());
    expect(rows.get(1)).toBeDefined();
    // Measured in full before the kill (possibly unstable on a busy machine, never partial).
    expect(rows.get(1)!.join(" ")).not.toMatch(/\((server stopped answering|interrupted|every request failed)\)/);
    expect(Number(rows.get(1)![1])).toBeGreaterThan(0);
    expect(rows.get(2)?.join(" ") ?? "(server stopped answering)").toMatch(/\(server stopped answering\)$/);
    expect(rows.has(3)).toBe(false);
  }, 90_000);
});
