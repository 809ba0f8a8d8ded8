import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { OFFSET_CONFIG, OFFSET_MODEL, writeOffsetModel } from "../helpers/offset-model.js";
import { UpProcess } from "../helpers/up-process.js";

/** The offset model named `name`, whose initialize (or, with `atImport`, whose import) waits `secs`. */
async function writeSlowModel(repo: string, name: string, secs: number, o: { atImport?: boolean } = {}) {
  await fsp.mkdir(path.join(repo, name, "1"), { recursive: true });
  await fsp.writeFile(path.join(repo, name, "config.pbtxt"), OFFSET_CONFIG.replace('"offset"', `"${name}"`));
  // A test fixture may simply wait; what matters is that Triton takes this long to load it.
  const code = o.atImport
    ? `import time\ntime.sleep(${secs})\n${OFFSET_MODEL}
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        return auto_complete_model_config
`
    : OFFSET_MODEL.replace(
        "class TritonPythonModel:\n",
        `class TritonPythonModel:\n    def initialize(self, args):\n        import time\n        time.sleep(${secs})\n\n`,
      );
  await fsp.writeFile(path.join(repo, name, "1", "model.py"), code);
}

const STILL_LOADING = /^local: still loading: slow \((\d+) s\)/m;

/**
 * A model that takes seconds to load: the old `up` said nothing between "starting tritonserver"
 * and "Triton is up" (with an import of 60 s, 128 s of silence), and its timeout message named only
 * Triton's last log line. Now it names the models still loading every few seconds, and on timeout.
 */
describe("up while a model loads slowly (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let models: string;
  let foreground: UpProcess | undefined;

  beforeAll(async () => {
    env = await testEnv();
    models = await tempDir("models");
    await writeOffsetModel(models, "1");
    await writeSlowModel(models, "slow", 8);
  });

  afterEach(async () => {
    await foreground?.stop();
    foreground = undefined;
    await runCli(["down"], env);
  }, 60_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("up --detach prints which models are still loading, and for how long, until they are ready", async () => {
    const t0 = Date.now();
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(await freePorts())], env);
    const secs = (Date.now() - t0) / 1000;
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    const lines = up.stdout.split("\n");
    const progress = lines.filter((l) => STILL_LOADING.test(l));
    expect(progress.length).toBeGreaterThanOrEqual(1);
    // The quick model loaded long before: only the slow one is named.
    expect(progress.every((l) => !l.includes("offset"))).toBe(true);
    // No auto-complete here (no model needs it), so no word about it.
    expect(progress.join("\n")).not.toContain("auto-complete");
    // Between starting the server and being ready, in that order.
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    expect(at(/^starting tritonserver/)).toBeLessThan(at(STILL_LOADING));
    expect(at(STILL_LOADING)).toBeLessThan(at(/^Triton is up in/));
    expect(up.stdout).toMatch(/2 of 2 models? READY/);
    console.info(`up --detach with an 8 s initialize: ${secs.toFixed(1)} s; progress lines: ${progress.join(" | ")}`);
  }, 120_000);

  it("a foreground up sends the same progress as events, and names auto-complete when it doubles an import", async () => {
    const repo = await tempDir("models-ac");
    await writeOffsetModel(repo, "1");
    // auto_complete_config keeps Triton's auto-complete on, whose stub imports model.py once more.
    await writeSlowModel(repo, "slow", 4, { atImport: true });
    foreground = new UpProcess(["--models", repo, ...portArgs(await freePorts())], env);
    const first = await foreground.waitFor((e) => e.type === "progress" && e.step === "models", 60_000);
    expect(first).toMatchObject({ runtime: "local" });
    expect(first.message).toMatch(/^still loading: slow \(\d+ s\); Triton's config auto-complete is on \(/);
    expect(first.message).toContain("1/model.py of slow defines auto_complete_config");
    expect(first.message).toContain("imports each model.py twice");
    const ready = await foreground.waitFor((e) => e.type === "ready", 60_000);
    // Said once, not in every line.
    const later = foreground.events.filter((e) => e.type === "progress" && e.step === "models").slice(1);
    expect(later.every((e) => !String(e.message).includes("auto-complete"))).toBe(true);
    // The import ran twice: at least 2 x 4 s before the model was ready.
    expect(Number(ready.elapsedMs)).toBeGreaterThanOrEqual(8_000);
    console.info(`foreground up with a 4 s import and auto-complete on: ready in ${ready.elapsedMs} ms`);
    // Ctrl-C right after ready: no connection of ours holds Triton's exit (a pooled keep-alive
    // one held every such stop by 4 s, which Triton logs as a live HTTP connection).
    const starting = await foreground.waitFor((e) => e.type === "starting");
    expect(await foreground.stop()).toBe(0);
    foreground = undefined;
    const log = await fsp.readFile(String(starting.logFile), "utf8");
    expect(log).toContain("Signal (15) received.");
    expect(log).not.toMatch(/Found [1-9]\d* HTTP service connections/);
  }, 120_000);

  it("Ctrl-C while a model loads stops the server it started, and says so", async () => {
    const repo = await tempDir("models-int");
    await writeSlowModel(repo, "slow", 30);
    foreground = new UpProcess(["--models", repo, ...portArgs(await freePorts())], env);
    const starting = await foreground.waitFor((e) => e.type === "starting", 60_000);
    await foreground.waitFor((e) => e.type === "progress" && e.step === "models", 60_000);
    const t0 = Date.now();
    // Before, the process died at once and left tritonserver loading the model with nobody to stop it.
    expect(await foreground.stop()).toBe(130);
    const secs = (Date.now() - t0) / 1000;
    expect(foreground.stderr).toContain("stopped during start (received SIGINT); nothing of this run is left running");
    expect(foreground.events.some((e) => e.type === "stopped")).toBe(true);
    expect(() => process.kill(Number(starting.pid), 0)).toThrow();
    const status = await runCli(["status"], env);
    expect(status.stdout).toContain("nothing is running");
    foreground = undefined;
    console.info(`Ctrl-C during a 30 s initialize: stopped in ${secs.toFixed(1)} s`);
  }, 120_000);

  it("names the models still loading when the readiness timeout ends up", async () => {
    const up = await runCli(
      ["up", "--detach", "--timeout", "5", "--models", models, ...portArgs(await freePorts())],
      env,
    );
    expect(up.code).not.toBe(0);
    expect(up.stderr).toMatch(/not ready after 5 s; still loading: slow \(\d+ s\)/);
    expect(up.stderr).toContain("--timeout");
  }, 120_000);
});
