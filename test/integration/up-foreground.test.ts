import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findProcesses, isOurProcess } from "../../src/state/process.js";
import { copySampleModels, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { UpProcess } from "../helpers/up-process.js";

/** A foreground `up` lives as long as its server: when Triton dies, `up` ends too, saying why. */
describe("a foreground up whose tritonserver dies (real Triton)", () => {
  let env: NodeJS.ProcessEnv | undefined;
  let up: UpProcess | undefined;

  afterAll(async () => {
    await up?.stop();
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("exits non-zero with Triton's last log lines, leaving no record and no watcher behind", async () => {
    env = await testEnv();
    const ports = await freePorts();
    const models = await copySampleModels();
    up = new UpProcess(["--no-ui", "--models", models, ...portArgs(ports)], env);
    await up.waitFor((e) => e.type === "watching", 180_000);
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    expect(isOurProcess(state.pid, state.executable)).toBe(true);

    process.kill(state.pid, "SIGKILL");
    const t0 = Date.now();
    const code = await Promise.race([
      up.exited,
      new Promise<"lingering">((r) => setTimeout(() => r("lingering"), 30_000)),
    ]);
    expect(code).toBe(1);
    console.info(`foreground up ended ${((Date.now() - t0) / 1000).toFixed(1)} s after its server was killed`);
    const exited = up.events.find((e) => e.type === "server-exited");
    expect(exited).toMatchObject({ signal: "SIGKILL" });
    expect((exited!.lastLines as string[]).length).toBeGreaterThan(0);
    expect(up.events.map((e) => e.type)).toContain("stopped");
    await expect(fs.access(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"))).rejects.toThrow();
    // Nothing of the run is left: no python stub of the killed server serves on.
    expect(findProcesses((argv) => argv.join(" ").includes(state.runDir))).toEqual([]);
    const status = await runCli(["status"], env);
    expect(status.stdout).toMatch(/nothing is running/);
  }, 240_000);

  it("with nothing to serve exits non-zero, naming each model's reason, and starts nothing", async () => {
    const e = await testEnv();
    const repo = await tempDir("nothing-to-serve");
    await fs.mkdir(path.join(repo, "broken", "1"), { recursive: true });
    await fs.writeFile(path.join(repo, "broken", "config.pbtxt"), 'backend: "python"\nmax_batch_size: -4\n');
    await fs.writeFile(path.join(repo, "broken", "1", "model.py"), "class TritonPythonModel:\n    pass\n");
    const r = await runCli(["up", "--detach", "--models", repo, ...portArgs(await freePorts())], e);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error: nothing to serve: no model of .* can load here/);
    expect(r.stderr).toMatch(/broken: refused, lint found 1 error\(s\); the first: .*config\.pbtxt:2:\d+/);
    expect(r.stderr).toMatch(/hint: Fix what lint found/);
    await expect(fs.access(path.join(e.TRITON_DEV_STATE_DIR!, "run.json"))).rejects.toThrow();
    expect(findProcesses((argv) => argv.join(" ").includes(e.TRITON_DEV_STATE_DIR!))).toEqual([]);
  }, 120_000);

  it("status shows a refused edit's file:line:col, and a detached run whose watcher died as not watching", async () => {
    const e = await testEnv();
    const models = await copySampleModels();
    const ports = await freePorts();
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], e);
    expect(up.code, up.stderr).toBe(0);
    try {
      const before = JSON.parse((await runCli(["status", "--json"], e)).stdout);
      expect(before.watcher).toMatchObject({ alive: true, detached: true });

      // A save lint refuses: status names the file and position, --json carries every diagnostic.
      const config = path.join(models, "image_classifier", "config.pbtxt");
      const original = await fs.readFile(config, "utf8");
      await fs.writeFile(config, original + "\nmax_batch_size: -3\n");
      const deadline = Date.now() + 30_000;
      let refused: { diagnostics?: unknown[] } | undefined;
      while (!refused && Date.now() < deadline) {
        const s = JSON.parse((await runCli(["status", "--json"], e)).stdout);
        refused = s.edits?.find(
          (x: { model: string; outcome: string }) => x.model === "image_classifier" && x.outcome === "refused",
        );
        if (!refused) await new Promise((r) => setTimeout(r, 250));
      }
      expect(refused?.diagnostics?.length).toBeGreaterThan(0);
      const text = await runCli(["status"], e);
      expect(text.stdout).toMatch(/image_classifier\s+refused\s.*config\.pbtxt:\d+:\d+: error: /);

      process.kill(before.watcher.pid, "SIGKILL");
      await new Promise((r) => setTimeout(r, 300));
      const after = await runCli(["status"], e);
      expect(after.code).toBe(1);
      expect(after.stdout).toMatch(/reload\s+poll every 1 s \(NOT WATCHING: its watcher, pid \d+, is gone\)/);
      expect(after.stderr).toMatch(/warning: hot reload is not running: the detached run's watcher .* is gone/);
      expect(JSON.parse((await runCli(["status", "--json"], e)).stdout).watcher).toMatchObject({ alive: false });

      // `up --detach` again starts the watcher for the running server, and saves count again.
      const again = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], e);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/its watcher runs again \(pid \d+\)/);
      const repaired = JSON.parse((await runCli(["status", "--json"], e)).stdout);
      expect(repaired.watcher).toMatchObject({ alive: true });
      expect(repaired.pid).toBe(before.pid);
      await fs.writeFile(config, original);
      const fixedBy = Date.now() + 30_000;
      let fixed = false;
      while (!fixed && Date.now() < fixedBy) {
        const s = JSON.parse((await runCli(["status", "--json"], e)).stdout);
        fixed = s.edits?.some(
          (x: { model: string; outcome: string }) =>
            (x.model === "image_classifier" && x.outcome === "unchanged") ||
            (x.model === "image_classifier" && x.outcome === "ready"),
        );
        if (!fixed) await new Promise((r) => setTimeout(r, 250));
      }
      expect(fixed).toBe(true);
    } finally {
      await runCli(["down"], e);
    }
  }, 240_000);

  it("two `up` started at the same moment on one state folder: one runs, the other is refused naming it", async () => {
    const e = await testEnv();
    const [a, b] = await Promise.all([copySampleModels(), copySampleModels()]);
    const [pa, pb] = [await freePorts(), await freePorts()];
    try {
      const results = await Promise.all([
        runCli(["up", "--detach", "--models", a, ...portArgs(pa)], e),
        runCli(["up", "--detach", "--models", b, ...portArgs(pb)], e),
      ]);
      expect(results.map((r) => r.code).sort()).toEqual([0, 1]);
      const refused = results.find((r) => r.code === 1)!;
      expect(refused.stderr).toMatch(
        /another `triton-dev up` \(pid \d+, models .*\) is starting on this state folder|triton-dev is already running/,
      );
      const winner = results.findIndex((r) => r.code === 0);
      const status = JSON.parse((await runCli(["status", "--json"], e)).stdout);
      expect(status.modelsDir).toBe([a, b][winner]);
      expect(status.watcher).toMatchObject({ alive: true });
      // The refused one left nothing running: one tritonserver, serving the winner's folder.
      const servers = findProcesses(
        (argv) => argv[0]!.endsWith("tritonserver") && argv.join(" ").includes(e.TRITON_DEV_STATE_DIR!),
      );
      expect(servers).toHaveLength(1);
    } finally {
      await runCli(["down"], e);
    }
  }, 240_000);

  it("a model with a dangling link is refused with why; the others are served", async () => {
    const e = await testEnv();
    const models = await copySampleModels();
    const link = path.join(models, "image_classifier", "1", "weights.bin");
    await fs.symlink(path.join(models, "not-there.bin"), link);
    try {
      const r = await runCli(["up", "--detach", "--models", models, ...portArgs(await freePorts())], e);
      expect(r.stderr).not.toMatch(/internal error/);
      // Ready: it serves every other model; the one refused is named with why.
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/image_classifier: not served, refused: /);
      // Lint applies the model-file rule, so the link is named with its own file:line:col.
      expect(r.stdout).toMatch(/image_classifier\/1\/weights\.bin:1:1: error: 1\/weights\.bin is a symbolic link to /);
      const status = JSON.parse((await runCli(["status", "--json"], e)).stdout);
      const byName = Object.fromEntries(status.models.map((m: { name: string }) => [m.name, m]));
      expect(byName.bert_tokenizer.state).toBe("READY");
      expect(byName.image_classifier).toMatchObject({ state: "REFUSED" });
      expect(byName.image_classifier.reason).toContain("weights.bin");
    } finally {
      await runCli(["down"], e);
    }
  }, 240_000);
});
