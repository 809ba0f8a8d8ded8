import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ReloadController } from "../../src/reload/controller.js";
import type { EditEvent, EditPhase } from "../../src/reload/events.js";
import { StagingRepository } from "../../src/reload/stage.js";
import type { ModelFileLimits } from "../../src/repo/model-files.js";
import { RepositoryWatcher, type ModelChange, type ModelWatcher } from "../../src/reload/watch.js";
import { TritonHttpClient, type RepositoryIndexEntry } from "../../src/triton/http-client.js";
import {
  ECHO_IO,
  ECHO_MODEL_PY,
  pythonConfig,
  pythonModel,
  removeTempRepos,
  tempRepo,
  writeFiles,
} from "../repo/helpers.js";
import { startFakeTriton, type FakeTriton } from "./fake-triton.js";
import { lintFacts } from "../../src/runtimes/kinds.js";
import { FakeClock } from "../../src/fake-clock.js";
import { advanceUntil } from "../helpers/fake-time.js";

afterAll(removeTempRepos);

/** Hands the controller the changes a test makes up, as RepositoryWatcher would once they settle. */
class FakeWatcher implements ModelWatcher {
  private readonly listeners = new Set<(c: ModelChange) => void>();
  /** Every listener ever registered, also those since removed. */
  readonly everListening: Array<(c: ModelChange) => void> = [];
  starts = 0;
  closes = 0;

  onChange(listener: (c: ModelChange) => void): () => void {
    this.listeners.add(listener);
    this.everListening.push(listener);
    return () => this.listeners.delete(listener);
  }

  async start(): Promise<void> {
    this.starts++;
  }

  async close(): Promise<void> {
    this.closes++;
  }

  save(model: string): void {
    for (const l of [...this.listeners]) l({ model, firstEventAt: Date.now(), events: 1 });
  }
}

interface Setup {
  repo: string;
  staging: StagingRepository;
  triton: FakeTriton;
  watcher: FakeWatcher;
  controller: ReloadController;
  events: EditEvent[];
  logFile: string;
  phases: (model?: string) => EditPhase[];
  /** The config Triton is served for `m` now. */
  servedConfig: () => Promise<string>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A repository with one python model `m`, staged and loaded: the state `up` leaves the controller
 * in. `onEvent` sees each event as it is emitted (poll mode's fake Triton writes its log there).
 */
async function setup(
  o: {
    mode?: "explicit" | "poll";
    watcher?: ModelWatcher;
    repo?: string;
    onEvent?: (e: EditEvent, logFile: string) => void;
    stagingLimits?: ModelFileLimits;
    /** What `up` found in Triton's index (default: `m` READY). */
    adopted?: RepositoryIndexEntry[];
    /** Lines Triton logged before the controller started. */
    log?: string;
    /** The run's config auto-complete (the controller's option; default: not said). */
    autoCompleteConfig?: boolean;
    /** The controller's clock (default: real time). */
    clock?: FakeClock;
  } = {},
): Promise<Setup> {
  const repo = o.repo ?? (await tempRepo());
  if (!o.repo) await writeFiles(repo, pythonModel("m"));
  const run = await tempRepo();
  const staging = new StagingRepository(run, o.stagingLimits ? { limits: o.stagingLimits } : {});
  await staging.init(repo);
  const triton = await startFakeTriton();
  cleanups.push(() => triton.close());
  triton.models.set("m", { state: "READY", version: "1" });
  const logFile = path.join(run, "triton.log");
  await fsp.writeFile(logFile, "I0101 00:00:00.000000 1 server.cc:1] started\n" + (o.log ?? ""));
  triton.logFile = logFile;
  const events: EditEvent[] = [];
  const watcher = o.watcher ?? new FakeWatcher();
  const controller = new ReloadController({
    modelsDir: repo,
    watcher,
    staging,
    client: new TritonHttpClient(triton.url),
    mode: o.mode ?? "explicit",
    pollSecs: 1,
    logFile,
    bus: {
      emit: (e) => {
        events.push(e);
        o.onEvent?.(e, logFile);
      },
    },
    lint: { ...lintFacts("local") },
    loadTimeoutMs: 5_000,
    ...(o.autoCompleteConfig !== undefined ? { autoCompleteConfig: o.autoCompleteConfig } : {}),
    ...(o.clock ? { clock: o.clock } : {}),
  });
  cleanups.push(() => controller.close());
  await controller.adopt(o.adopted ?? [{ name: "m", version: "1", state: "READY" }]);
  await controller.start();
  return {
    repo,
    staging,
    triton,
    watcher: watcher as FakeWatcher,
    controller,
    events,
    logFile,
    phases: (model = "m") => events.filter((e) => e.model === model).map((e) => e.phase),
    servedConfig: () => fsp.readFile(path.join(staging.repository, "m", "config.pbtxt"), "utf8"),
  };
}

const loads = (t: FakeTriton, model = "m") => t.calls.filter((c) => c === `POST /v2/repository/models/${model}/load`);

const until = async (cond: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
};

describe("ReloadController", () => {
  it("starts and reconciles nothing when the repository matches what is served", async () => {
    const s = await setup();
    await s.controller.idle();
    expect(s.watcher.starts).toBe(1);
    expect(s.events).toEqual([]);
    expect(s.triton.calls).toEqual([]);
  });

  it("lints, stages and loads a valid edit", async () => {
    const s = await setup();
    const config = pythonConfig("m", ECHO_IO, 4);
    await fsp.writeFile(path.join(s.repo, "m", "config.pbtxt"), config);
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "validated", "staged", "loading", "ready"]);
    expect(s.events.at(-1)).toMatchObject({ phase: "ready", version: "1" });
    expect(loads(s.triton)).toHaveLength(1);
    expect(s.staging.current("m")).toBe(2);
    expect(await s.servedConfig()).toBe(config);
    expect(s.controller.summary()).toMatchObject([{ model: "m", outcome: "ready" }]);
  });

  it("refuses an invalid edit with its diagnostic, and the last good version keeps serving", async () => {
    const s = await setup();
    const before = await s.servedConfig();
    const file = path.join(s.repo, "m", "config.pbtxt");
    await fsp.writeFile(file, `name: "m"\nbackend: "python"\nmax_batch_size: lots\n${ECHO_IO}`);
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "refused"]);
    const refused = s.events.at(-1)!;
    expect(refused.reason).toBe("the last good version keeps serving");
    expect(refused.diagnostics?.length).toBeGreaterThan(0);
    expect(refused.diagnostics?.every((d) => d.severity === "error")).toBe(true);
    expect(refused.diagnostics?.[0]).toMatchObject({ file, line: 3 });
    expect(s.triton.calls).toEqual([]);
    expect(s.staging.current("m")).toBe(1);
    expect(await s.servedConfig()).toBe(before);
  });

  it("coalesces the changes that arrive while a model is loading into one more reload", async () => {
    const s = await setup();
    let release!: () => void;
    s.triton.gate = new Promise<void>((r) => (release = r));
    const file = path.join(s.repo, "m", "config.pbtxt");
    await fsp.writeFile(file, pythonConfig("m", ECHO_IO, 1));
    s.watcher.save("m");
    await until(() => loads(s.triton).length === 1);
    for (let n = 2; n <= 5; n++) {
      await fsp.writeFile(file, pythonConfig("m", ECHO_IO, n));
      s.watcher.save("m");
    }
    release();
    await s.controller.idle();
    expect(loads(s.triton)).toHaveLength(2);
    expect(s.phases().filter((p) => p === "saved")).toHaveLength(2);
    expect(s.phases().filter((p) => p === "ready")).toHaveLength(2);
    expect(await s.servedConfig()).toBe(pythonConfig("m", ECHO_IO, 5));
  });

  it("unloads a deleted model and stops serving it", async () => {
    const s = await setup();
    await fsp.rm(path.join(s.repo, "m"), { recursive: true });
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "removed", "unloaded"]);
    expect(s.triton.calls).toContain("POST /v2/repository/models/m/unload");
    expect(s.staging.has("m")).toBe(false);
    expect(fs.existsSync(path.join(s.staging.repository, "m"))).toBe(false);
  });

  it("withdraws a model whose load fails with nothing to fall back on, and has Triton forget it", async () => {
    const s = await setup();
    await writeFiles(s.repo, pythonModel("n"));
    s.triton.loadErrors.set("n", "failed to load 'n' version 1: Internal: boom");
    s.watcher.save("n");
    await s.controller.idle();
    expect(s.phases("n")).toEqual(["saved", "validated", "staged", "loading", "failed"]);
    const failed = s.events.at(-1)!;
    expect(failed).toMatchObject({
      withdrawn: true,
      reason: expect.stringMatching(/boom; not loaded until a fix is saved$/),
    });
    expect(s.staging.has("n")).toBe(false);
    // Unloading leaves Triton's failed version (and /v2/health/ready false); a placeholder of the
    // same name and version that loads, then unloads, leaves it "unloaded".
    const [edit, placeholder] = s.triton.loadParameters.get("n")!;
    expect(edit).toEqual({});
    expect(JSON.parse(placeholder!.config!)).toMatchObject({
      name: "n",
      backend: "python",
      version_policy: { specific: { versions: [1] } },
    });
    expect(Buffer.from(placeholder!["file:1/model.py"]!, "base64").toString()).toMatch(/class TritonPythonModel/);
    expect(s.triton.calls.filter((c) => c.includes("/models/n/")).slice(-2)).toEqual([
      "POST /v2/repository/models/n/load",
      "POST /v2/repository/models/n/unload",
    ]);

    // Its folder deleted: the timeline entry ends, with nothing left to unload in Triton.
    const before = s.triton.calls.length;
    await fsp.rm(path.join(s.repo, "n"), { recursive: true });
    s.watcher.save("n");
    await s.controller.idle();
    expect(s.phases("n").slice(5)).toEqual(["saved", "removed", "unloaded"]);
    expect(s.triton.calls.slice(before).filter((c) => c.includes("/repository/models/"))).toEqual([]);
  });

  it("ends the deletion of a model it never served (lint refused it) at removed", async () => {
    const s = await setup();
    await writeFiles(s.repo, { "r/config.pbtxt": 'name: "r"\nbackend: "python"\nmax_batch_size: -2\n' });
    s.watcher.save("r");
    await s.controller.idle();
    expect(s.phases("r")).toEqual(["saved", "refused"]);
    await fsp.rm(path.join(s.repo, "r"), { recursive: true });
    s.watcher.save("r");
    await s.controller.idle();
    expect(s.phases("r").slice(2)).toEqual(["saved", "removed"]);
    expect(s.events.at(-1)!.reason).toMatch(/not served/);
  });

  it("reports a model that failed at up with the reason Triton only logged, and has Triton forget it", async () => {
    const s = await setup({
      // Triton's index lists a folder it could not read a config from with no state and no reason.
      adopted: [{ name: "m" }],
      log: `E0101 00:00:00.500000 1 model_repository_manager.cc:1460] "Poll failed for model directory 'm': Invalid model name: Could not determine backend for model 'm' with no backend in model configuration."\n`,
    });
    expect(s.phases()).toEqual(["failed"]);
    expect(s.events[0]).toMatchObject({
      withdrawn: true,
      reason:
        "Poll failed for model directory 'm': Invalid model name: Could not determine backend for model 'm' with no backend in model configuration.; not loaded until a fix is saved",
    });
    expect(s.triton.calls).toContain("POST /v2/repository/models/m/unload");
  });

  it("unloads a model whose folder link now leads nowhere", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, pythonModel("m"));
    await fsp.symlink(path.join(outside, "m"), path.join(repo, "m"));
    const s = await setup({ repo });
    await fsp.rm(path.join(outside, "m"), { recursive: true });
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "removed", "unloaded"]);
    expect(s.staging.has("m")).toBe(false);
  });

  it("serves the last good version again when Triton fails to load an edit", async () => {
    const s = await setup();
    const before = await s.servedConfig();
    s.triton.loadErrors.set("m", "failed to load 'm' version 1: Internal: boom");
    await fsp.writeFile(path.join(s.repo, "m", "config.pbtxt"), pythonConfig("m", ECHO_IO, 4));
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "validated", "staged", "loading", "failed"]);
    expect(s.events.at(-1)!.reason).toBe(
      "failed to load 'm' version 1: Internal: boom; the last good version keeps serving",
    );
    // The edit, then the last good version again (explicit mode loads it back).
    expect(loads(s.triton)).toHaveLength(2);
    expect(await s.servedConfig()).toBe(before);
  });

  it("refuses an edit with a link to nothing, naming the link, loads nothing and keeps serving", async () => {
    const s = await setup();
    const before = await s.servedConfig();
    const link = path.join(s.repo, "m", "1", "weights.bin");
    await fsp.symlink(path.join(s.repo, "missing.bin"), link);
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "refused"]);
    expect(s.events.at(-1)!.diagnostics!.map((d) => [d.code, d.file])).toEqual([["model-files-dangling-link", link]]);
    expect(loads(s.triton)).toHaveLength(0);
    expect(await s.servedConfig()).toBe(before);
  });

  it("fails an edit it cannot stage, with the model's path and the reason, and keeps serving", async () => {
    const s = await setup({ stagingLimits: { maxDepth: 32, maxEntries: 100, maxBytes: 10_000 } });
    const before = await s.servedConfig();
    await writeFiles(s.repo, { "m/1/data.bin": "x".repeat(20_000) });
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "validated", "failed"]);
    const reason = s.events.at(-1)!.reason!;
    expect(reason.startsWith(`m: ${path.join(s.repo, "m")} `)).toBe(true);
    expect(s.events.at(-1)!.diagnostics!.map((d) => [d.code, d.file])).toEqual([
      ["staging-too-large", path.join(s.repo, "m")],
    ]);
    expect(reason.endsWith("; the last good version keeps serving")).toBe(true);
    expect(loads(s.triton)).toHaveLength(0);
    expect(await s.servedConfig()).toBe(before);
    expect(await fsp.readdir(path.dirname(s.staging.snapshotDir("m", 1)))).toEqual(["m@1"]);
  });

  it("ends an edit that fails in an unforeseen way as failed, instead of leaving it at its last phase", async () => {
    const s = await setup();
    await s.triton.close();
    await writeFiles(s.repo, { "m/config.pbtxt": pythonConfig("m", undefined, 4) });
    s.watcher.save("m");
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "validated", "staged", "loading", "failed"]);
    expect(s.events.at(-1)!.reason).toMatch(/; the last good version keeps serving$/);
  });

  it("reads the outcome of a load from Triton's log in poll mode", async () => {
    const loaded = "I0101 00:00:01.000000 1 model_lifecycle.cc:1] successfully loaded 'm'\n";
    const outcomes: string[] = [];
    // The log is read every 20 ms of the clock, Triton's lines come 30 ms of it after their cue.
    const clock = new FakeClock();
    const s = await setup({
      mode: "poll",
      clock,
      // Triton, polling the staged repository, logs its load a moment after the snapshot is swapped in.
      onEvent: (e, logFile) => {
        if (e.phase === "loading") clock.setTimeout(() => fs.appendFileSync(logFile, outcomes.shift() ?? loaded), 30);
        // And, after a failed load, the restored last good copy at its next poll.
        if (e.phase === "failed") clock.setTimeout(() => fs.appendFileSync(logFile, loaded), 30);
      },
    });
    const idle = async () => {
      let settled = false;
      const idling = s.controller.idle().finally(() => (settled = true));
      await advanceUntil(clock, () => settled, 10, "the controller idle");
      await idling;
    };
    const before = await s.servedConfig();
    await fsp.writeFile(path.join(s.repo, "m", "config.pbtxt"), pythonConfig("m", ECHO_IO, 4));
    s.watcher.save("m");
    await idle();
    expect(s.phases()).toEqual(["saved", "validated", "staged", "loading", "ready"]);
    expect(loads(s.triton)).toEqual([]);

    outcomes.push(
      "E0101 00:00:02.000000 1 model_lifecycle.cc:1] failed to load 'm' version 1: Internal: RuntimeError: boom\n",
    );
    const good = await s.servedConfig();
    expect(good).not.toBe(before);
    await fsp.writeFile(path.join(s.repo, "m", "1", "model.py"), ECHO_MODEL_PY + "\nraise RuntimeError('boom')\n");
    s.watcher.save("m");
    await idle();
    expect(s.phases().slice(5)).toEqual(["saved", "validated", "staged", "loading", "failed"]);
    expect(s.events.at(-1)!.reason).toBe(
      "failed to load 'm' version 1: Internal: RuntimeError: boom; the last good version keeps serving",
    );
    expect(await s.servedConfig()).toBe(good);
    expect(await fsp.readFile(path.join(s.staging.repository, "m", "1", "model.py"), "utf8")).toBe(ECHO_MODEL_PY);

    // The fix saved next is judged by its own load, not by the restored copy's "loaded" line: the
    // controller was idle only once that one was in.
    outcomes.push(
      "E0101 00:00:03.000000 1 model_lifecycle.cc:1] failed to load 'm' version 1: Internal: RuntimeError: again\n",
    );
    await fsp.writeFile(path.join(s.repo, "m", "1", "model.py"), ECHO_MODEL_PY + "\n# a second try\n");
    s.watcher.save("m");
    await idle();
    expect(s.events.at(-1)!.reason).toMatch(/RuntimeError: again/);
  });

  it("can be closed twice, closes its watcher, and acts on no change after", async () => {
    const s = await setup();
    await Promise.all([s.controller.close(), s.controller.close()]);
    await s.controller.close();
    expect(s.watcher.closes).toBe(1);
    await fsp.writeFile(path.join(s.repo, "m", "config.pbtxt"), pythonConfig("m", ECHO_IO, 4));
    s.watcher.save("m");
    // Even a change that reaches it (a watcher's last, fired while closing) is ignored.
    for (const l of s.watcher.everListening) l({ model: "m", firstEventAt: Date.now(), events: 1 });
    s.controller.reload("m");
    await s.controller.idle();
    expect(s.events).toEqual([]);
    expect(s.triton.calls).toEqual([]);
    expect(s.staging.current("m")).toBe(1);
  });

  it("reloads a symlinked model folder when a file in the link's target is saved", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, pythonModel("m"));
    await fsp.symlink(path.join(outside, "m"), path.join(repo, "m"));
    const s = await setup({ repo, watcher: new RepositoryWatcher(repo, { settleMs: 100 }) });
    const config = pythonConfig("m", ECHO_IO, 4);
    // An editor's save: a new file renamed over the old one, in the target folder.
    await fsp.writeFile(path.join(outside, "m", ".config.pbtxt.tmp"), config);
    await fsp.rename(path.join(outside, "m", ".config.pbtxt.tmp"), path.join(outside, "m", "config.pbtxt"));
    await until(() => s.phases().includes("ready"));
    await s.controller.idle();
    expect(s.phases()).toEqual(["saved", "validated", "staged", "loading", "ready"]);
    expect(await s.servedConfig()).toBe(config);
    // The snapshot holds a copy, not the user's link.
    const snapshot = s.staging.snapshotDir("m", s.staging.current("m")!);
    expect((await fsp.lstat(snapshot)).isDirectory()).toBe(true);
  });
});

describe("ReloadController and the run's config auto-complete", () => {
  // A model added without config.pbtxt: Triton completes one from 1/model.py with auto-complete on,
  // and refuses it ("config.pbtxt: No such file or directory") with it off.
  const added = { "n/1/model.py": ECHO_MODEL_PY };

  it("lints an edit with auto-complete off when the run started Triton with it off: refused, nothing loaded", async () => {
    const s = await setup({ autoCompleteConfig: false });
    await writeFiles(s.repo, added);
    s.watcher.save("n");
    await s.controller.idle();
    expect(s.phases("n")).toEqual(["saved", "refused"]);
    expect(s.events.at(-1)?.diagnostics?.map((d) => `${d.severity} ${d.code}`)).toEqual(["error config-missing"]);
    expect(s.events.at(-1)?.diagnostics?.[0]?.message).toContain("config auto-complete off");
    expect(loads(s.triton, "n")).toEqual([]);
    expect(s.staging.has("n")).toBe(false);
  });

  it("lints the same edit with auto-complete on when the run has it on: loaded, with the warning", async () => {
    const s = await setup({ autoCompleteConfig: true });
    await writeFiles(s.repo, added);
    s.watcher.save("n");
    await s.controller.idle();
    expect(s.phases("n")).toEqual(["saved", "validated", "staged", "loading", "ready"]);
    expect(s.events.find((e) => e.phase === "validated")?.diagnostics?.map((d) => d.code)).toEqual(["config-missing"]);
    expect(loads(s.triton, "n")).toHaveLength(1);
  });
});

describe("ReloadController and model names", () => {
  it("refuses a model added with a name the python backend would hand to a shell, with the lint reason, and loads nothing", async () => {
    const s = await setup();
    const name = "inj$(touch PWNED)";
    await writeFiles(s.repo, pythonModel(name, `backend: "python"\nmax_batch_size: 8\n${ECHO_IO}`));
    s.watcher.save(name);
    await s.controller.idle();
    expect(s.phases(name)).toEqual(["saved", "refused"]);
    const refused = s.events.at(-1)!;
    expect(refused.reason).toBe("not loaded until the errors are fixed");
    expect(refused.diagnostics?.map((d) => d.code)).toEqual(["model-name-unsafe"]);
    expect(refused.diagnostics?.[0]?.hint).toContain("Rename the folder to 'inj_touch_PWNED'");
    expect(s.triton.calls).toEqual([]);
    expect(s.staging.has(name)).toBe(false);
  });
});
