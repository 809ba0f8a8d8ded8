import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { lintOfRun, removeVariant, stageVariant, type StagingTarget, type Variant } from "../../src/perf/variants.js";
import { renameConfig } from "../../src/repo/config-edit.js";
import { readRunState, type RunState } from "../../src/state/run-state.js";
import { clientForRun } from "../../src/triton/http-client.js";
import { freePorts, portArgs, ROOT, runCli, tempDir, testEnv } from "../helpers/cli.js";

/**
 * A variant taken away just after it was published (a Ctrl-C in tune or perf --compare) on a
 * real tritonserver in poll mode. Removing the folder while Triton starts a python model's stubs
 * wedges Triton 2.51's poll for good (every later load waits for ever), so the folder may go only
 * once Triton has settled the variant's load.
 */
describe("removing a variant just after it was published (real Triton, poll mode)", () => {
  let env: NodeJS.ProcessEnv;
  let state: RunState;
  let target: StagingTarget;

  beforeAll(async () => {
    env = await testEnv();
    const models = await tempDir("variant-models");
    await fs.cp(path.join(ROOT, "test/fixtures/tune/sleepy"), path.join(models, "sleepy"), { recursive: true });
    const up = await runCli(
      ["up", "--detach", "--reload", "poll", "--models", models, ...portArgs(await freePorts())],
      env,
    );
    expect(up.code, up.stderr).toBe(0);
    state = (await readRunState(resolvePaths(env)))!;
    target = {
      repository: state.repository,
      reload: state.reload,
      client: clientForRun(state),
      lint: lintOfRun(state),
    };
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  const variant = async (name: string, instances: number): Promise<Variant> => {
    const served = await fs.readFile(path.join(state.repository, "sleepy", "config.pbtxt"), "utf8");
    return {
      label: name,
      servedModel: name,
      configText: renameConfig(
        served.replace(/instance_group \[[^\]]*\]/, `instance_group [ { count: ${instances} kind: KIND_CPU } ]`),
        name,
      ),
    };
  };
  const log = () => fs.readFile(state.logFile, "utf8");

  it("waits for Triton to settle the load before the folder goes, and the server loads what comes next", async () => {
    const v = await variant("sleepy__perf_race", 2);
    const abort = new AbortController();
    // Interrupted the moment the variant is in place, as a Ctrl-C then would.
    await stageVariant(target, "sleepy", v, 60_000, abort.signal, () => abort.abort());
    await removeVariant(target, v);
    let text = await log();
    // Not served any more once removeVariant returns; the log's line may follow a moment later.
    for (const deadline = Date.now() + 30_000; !text.includes("unloaded 'sleepy__perf_race'") && Date.now() < deadline;)
      text = await new Promise<string>((res) => setTimeout(() => void log().then(res), 200));
    const loaded = text.indexOf("successfully loaded 'sleepy__perf_race'");
    const unloaded = text.indexOf("successfully unloaded 'sleepy__perf_race'");
    expect(loaded, "Triton loaded the variant before its folder went").toBeGreaterThan(-1);
    expect(unloaded).toBeGreaterThan(loaded);
    expect(text).not.toMatch(/sleepy__perf_race[^\n]*(model file not found|No module named)/);
    await expect(fs.stat(path.join(state.repository, "sleepy__perf_race"))).rejects.toThrow();

    // The poll still loads: a second variant becomes READY and serves.
    const next = await variant("sleepy__perf_next", 1);
    await stageVariant(target, "sleepy", next, 60_000);
    const r = await target.client.infer("sleepy__perf_next", [
      { name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] },
    ]);
    expect(r.outputs[0]!.data).toEqual([2, 4, 6, 8]);
    await removeVariant(target, next);
  }, 180_000);
});
