import { REAL_CLOCK, type Clock } from "../clock.js";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { UserError, describeCause, fsUserError } from "../errors.js";
import { log as rootLog } from "../log/logger.js";
import { writeFileAtomic } from "../state/atomic-write.js";
import { followFile, stripTritonPrefix } from "../state/log-file.js";
import { TritonHttpError, type RepositoryIndexEntry, type TritonHttpClient } from "../triton/http-client.js";
import { loadOutcome } from "../triton/log-lines.js";
import { autoCompleteOffDiagnostic, autoCompleteReason } from "../repo/auto-complete.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import { lintModel, type LintedModel, type LintOptions, type LintResult } from "../repo/lint.js";
import { isModelDir, listModelDirs } from "../repo/layout.js";
import { hashModelDir } from "../repo/model-files.js";
import type { EditEvent, EditPhase, EditSummary } from "./events.js";
import { forgetFailedLoad, versionsToForget } from "./forget.js";
import { explainIndex, oneLine, stepFailed, tritonLogLines } from "./load-reasons.js";
import { StagingError, stagingDiagnostics, type StagingRepository } from "./stage.js";
import type { ModelChange, ModelWatcher } from "./watch.js";

const log = rootLog.child("reload");

export interface ReloadControllerOptions {
  modelsDir: string;
  /** Reports the edits of `modelsDir`; the controller starts and closes it. */
  watcher: ModelWatcher;
  staging: StagingRepository;
  client: TritonHttpClient;
  mode: "poll" | "explicit";
  pollSecs: number;
  /** Triton's log file: in poll mode the outcome of a load is read from it. */
  logFile: string;
  bus: { emit(e: EditEvent): void };
  lint?: LintOptions;
  /** Where the last edit of each model is kept for `status --json` from another shell. */
  editsFile?: string;
  loadTimeoutMs?: number;
  /**
   * Whether Triton runs with config auto-complete (default: what `lint.autoComplete` says, and
   * Triton's default, on, when neither says). Edits are linted as that Triton loads them: with it
   * off, a model without config.pbtxt is refused and no auto_complete_config runs; a model saved
   * later that needs it is loaded with a warning saying so.
   */
  autoCompleteConfig?: boolean;
  /**
   * Staged paths in Triton's messages as the user's (state/staged-paths.ts userPathsOf, which also
   * knows where a container sees the staging folder); default: the staging folder's own paths.
   */
  userPaths?: (text: string) => string;
  now?: () => number;
  /** The time the waits for loads and unloads run on (../clock.ts); default: real time. */
  clock?: Clock;
}

/** Phases an edit ends with. */
const ENDED: ReadonlySet<EditPhase> = new Set(["refused", "unchanged", "ready", "failed", "unloaded"]);

/** Generation of the snapshot each model last loaded successfully from. */
type LastGood = Map<string, number>;

/** Emits the next phase of the edit being processed. */
type ReportPhase = (p: EditPhase, extra?: Partial<EditEvent>) => void;

/**
 * Keeps Triton in step with the user's repository: watch -> validate -> stage -> load -> observe,
 * one edit at a time per model. A refused or failed edit leaves the last good version serving.
 */
export class ReloadController {
  private stopListening: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private nextId = 1;
  private readonly running = new Map<string, Promise<void>>();
  private readonly dirty = new Map<string, ModelChange>();
  private readonly lastGood: LastGood = new Map();
  private readonly servedHash = new Map<string, string>();
  /**
   * Models whose load failed with no good version to fall back on, taken out of the served
   * repository, with the hash of the content that failed (to notice a fix saved meanwhile).
   */
  private readonly withdrawn = new Map<string, string | undefined>();
  /** Withdrawn models whose failed load Triton could not be made to forget yet, with its versions. */
  private readonly remembered = new Map<string, string[]>();
  private readonly summaries = new Map<string, EditSummary>();
  /** Models whose next run reloads even when their files match what is served. */
  private readonly forced = new Set<string>();
  private readonly now: () => number;
  private readonly clock: Clock;
  private closed = false;
  /** The last write of the edits file (see emit). */
  private recording: Promise<void> = Promise.resolve();

  /** `o.lint` with the server's auto-complete setting, when the run says what it is. */
  private readonly lintOptions: LintOptions;

  constructor(private readonly o: ReloadControllerOptions) {
    this.clock = o.clock ?? REAL_CLOCK;
    this.now = o.now ?? (() => this.clock.now());
    this.lintOptions = {
      ...o.lint,
      ...(o.autoCompleteConfig !== undefined ? { autoComplete: o.autoCompleteConfig } : {}),
    };
  }

  /**
   * Record what `up` staged and Triton loaded, so later edits know the last good version. A
   * model whose first load failed has no version to fall back on: it is withdrawn from the
   * served repository (in poll mode Triton would otherwise retry it at every poll, forever),
   * reported once with Triton's reason (from its log when the index has none), and forgotten by
   * Triton (reload/forget.ts) so that its readiness counts only what is served; saving a fix
   * loads it.
   */
  async adopt(loaded: RepositoryIndexEntry[]): Promise<void> {
    const settled = await this.settled(loaded);
    const staged = this.o.staging.names();
    const index = await explainIndex(settled, {
      staged,
      logLines: await tritonLogLines(this.o.logFile),
      userPaths: (t) => this.userPaths(t),
      fallback: stepFailed(
        this.o.staging,
        staged.filter((x) => !settled.some((m) => m.name === x && m.state === "READY")),
      ),
    });
    // The index lists every version Triton knows of; a model serves when one of them is READY.
    const serving = (n: string) => index.some((m) => m.name === n && m.state === "READY");
    // Every failed model leaves the served repository before Triton is asked to forget any: a
    // placeholder loaded under a step's name while its ensemble is still served makes Triton load
    // the ensemble against it and log the placeholder's errors ("mapping to non-existing input").
    const forgets: Array<() => Promise<unknown>> = [];
    for (const name of staged) {
      const g = this.o.staging.current(name)!;
      const dir = this.o.staging.snapshotDir(name, g);
      const h = await hashModelDir(dir);
      if (serving(name)) {
        if (h) this.servedHash.set(name, h);
        this.lastGood.set(name, g);
        continue;
      }
      const reason = index.find((m) => m.name === name && m.reason)!.reason!;
      const versions = versionsToForget(
        index.filter((m) => m.name === name).map((m) => m.version),
        await versionFolders(dir),
      );
      await this.withdraw(name, h);
      const at = this.now();
      this.emit({
        type: "edit",
        id: this.nextId++,
        model: name,
        phase: "failed",
        at,
        sinceSavedMs: 0,
        reason: `${reason}; not loaded until a fix is saved`,
        withdrawn: true,
      });
      forgets.push(() => this.forget(name, versions));
    }
    await Promise.all(forgets.map((f) => f()));
  }

  /**
   * The index once no staged model is loading. A detached run's supervisor reads the index a
   * moment after `up` did, when poll mode may be retrying a failed model: its outcome is awaited.
   */
  private async settled<T extends { name: string; state?: string }>(index: T[]): Promise<T[]> {
    const busy = (i: T[]) =>
      i.some((m) => this.o.staging.has(m.name) && (m.state === "LOADING" || m.state === "UNLOADING"));
    if (!busy(index)) return index;
    const deadline = this.now() + (this.o.loadTimeoutMs ?? 120_000);
    let current = index;
    while (busy(current) && this.now() < deadline && !this.closed) {
      await this.clock.sleep(100);
      current = (await this.o.client.repositoryIndex().catch(() => current)) as T[];
    }
    return current;
  }

  /** Take a model out of the served repository after a load that left nothing to serve. */
  private async withdraw(model: string, failedHash: string | undefined): Promise<void> {
    await this.o.staging.remove(model);
    this.lastGood.delete(model);
    this.servedHash.delete(model);
    this.withdrawn.set(model, failedHash);
  }

  /**
   * Have Triton forget the failed load of a model no longer served (reload/forget.ts); a model
   * Triton still remembers is tried again when its folder is deleted.
   */
  private async forget(model: string, versions: string[]): Promise<void> {
    const ok = await forgetFailedLoad(
      {
        client: this.o.client,
        staging: this.o.staging,
        mode: this.o.mode,
        pollSecs: this.o.pollSecs,
        logFile: this.o.logFile,
        loadTimeoutMs: this.o.loadTimeoutMs ?? 120_000,
        closed: () => this.closed,
        clock: this.clock,
      },
      model,
      versions,
    );
    if (ok) this.remembered.delete(model);
    else this.remembered.set(model, versions);
  }

  async start(): Promise<void> {
    // A stop that came while the first loads were being adopted closed this controller already:
    // starting the watcher now would keep the process alive after the server is gone.
    if (this.closed) return;
    this.stopListening = this.o.watcher.onChange((c) => this.enqueue(c));
    await this.o.watcher.start();
    if (this.closed) return;
    await this.reconcile();
  }

  /**
   * Edits saved while Triton was starting (before the watcher ran) are found by comparing the
   * user's folders with what was staged, and processed like any other edit.
   */
  private async reconcile(): Promise<void> {
    const names = new Set([
      ...(await listModelDirs(this.o.modelsDir).catch(() => [] as string[])),
      ...this.o.staging.names(),
    ]);
    for (const name of names) {
      const source = await hashModelDir(path.join(this.o.modelsDir, name));
      const staged = this.servedHash.get(name);
      const isStaged = this.o.staging.has(name);
      // A withdrawn model waits for a fix: only different content than what failed is tried.
      const fixed =
        !isStaged && this.withdrawn.has(name) && source !== undefined && source !== this.withdrawn.get(name);
      if ((source === undefined && isStaged) || (source !== undefined && isStaged && source !== staged) || fixed) {
        this.enqueue({ model: name, firstEventAt: this.now(), events: 0 });
      }
    }
  }

  /** Refused edits reported at start (lint errors in the initial repository). */
  reportInitialRefusal(model: string, diagnostics: Diagnostic[]): void {
    const id = this.nextId++;
    const at = this.now();
    this.emit({ type: "edit", id, model, phase: "refused", at, sinceSavedMs: 0, diagnostics });
  }

  /**
   * Validate, stage and load a model again although nothing was saved (the dashboard's `r`):
   * the same path as an edit, so a model that no longer validates is refused, not reloaded.
   */
  reload(model: string): void {
    if (this.closed) return;
    this.forced.add(model);
    this.enqueue({ model, firstEventAt: this.now(), events: 0 });
  }

  summary(): EditSummary[] {
    return [...this.summaries.values()].sort((a, b) => a.model.localeCompare(b.model));
  }

  /** Resolves when no edit is being processed (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }

  /** Stop watching and wait for the edit in progress; later changes are ignored. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.stopListening?.();
      this.stopListening = undefined;
      await this.o.watcher.close();
      await this.idle();
      await this.recording;
    })();
    return this.closing;
  }

  private enqueue(change: ModelChange): void {
    if (this.closed) return;
    if (this.running.has(change.model)) {
      const prev = this.dirty.get(change.model);
      this.dirty.set(
        change.model,
        prev ? { ...change, firstEventAt: prev.firstEventAt, events: prev.events + change.events } : change,
      );
      return;
    }
    const run = this.process(change)
      .catch((err) =>
        log.error("reload failed unexpectedly", { model: change.model, error: String(err?.stack ?? err) }),
      )
      .finally(() => {
        this.running.delete(change.model);
        const again = this.dirty.get(change.model);
        if (again) {
          this.dirty.delete(change.model);
          this.enqueue(again);
        }
      });
    this.running.set(change.model, run);
  }

  private emit(e: EditEvent): void {
    const iso = new Date(e.at).toISOString();
    const prev = this.summaries.get(e.model);
    const s: EditSummary =
      prev && prev.id === e.id
        ? prev
        : {
            id: e.id,
            model: e.model,
            savedAt: new Date(e.at - e.sinceSavedMs).toISOString(),
            outcome: e.phase,
            latencyMs: 0,
            phases: [],
          };
    s.phases.push({ phase: e.phase, at: iso, sinceSavedMs: e.sinceSavedMs });
    s.outcome = e.phase;
    s.latencyMs = e.sinceSavedMs;
    if (e.reason) s.reason = e.reason;
    if (e.diagnostics) s.diagnostics = e.diagnostics.slice(0, 20);
    if (e.withdrawn) s.withdrawn = true;
    this.summaries.set(e.model, s);
    this.o.bus.emit(e);
    if (this.o.editsFile) {
      // One write at a time, each of the summary as it is then: two phases in a row (removed,
      // unloaded) must not land out of order and leave the earlier one in the file.
      const file = this.o.editsFile;
      this.recording = this.recording
        .then(() => writeFileAtomic(file, JSON.stringify(this.summary(), null, 2) + "\n", 0o644))
        .catch((err) => log.warn("could not record edits", { error: String(err) }));
    }
  }

  private async process(change: ModelChange): Promise<void> {
    const { model } = change;
    const id = this.nextId++;
    const saved = change.firstEventAt;
    let last = "saved" as EditPhase;
    const phase = (p: EditPhase, extra: Partial<EditEvent> = {}) => {
      last = p;
      this.emit({ type: "edit", id, model, phase: p, at: this.now(), sinceSavedMs: this.now() - saved, ...extra });
    };
    phase("saved");
    try {
      await this.processEdit(change, phase);
    } catch (err) {
      // Whatever went wrong, the edit ends with why instead of staying at its last phase, and
      // the other models' edits go on.
      log.error("reload failed", { model, phase: last, error: String((err as Error)?.stack ?? err) });
      if (ENDED.has(last)) return;
      const why =
        err instanceof UserError
          ? err.message
          : (fsUserError(err)?.message ?? `internal error: ${describeCause(err)} (details in the log)`);
      const keeps = this.lastGood.has(model)
        ? "the last good version keeps serving"
        : "not loaded until a fix is saved";
      phase("failed", { reason: `${why}; ${keeps}` });
    }
  }

  /**
   * One edit through its phases: a model that is gone is unloaded; otherwise it is linted,
   * staged and loaded, and the outcome reported.
   */
  private async processEdit(change: ModelChange, phase: ReportPhase): Promise<void> {
    const { model } = change;
    const forced = this.forced.delete(model);

    const dir = path.join(this.o.modelsDir, model);
    // Gone, or no longer a model folder (a link now pointing at a file or nowhere): the same to Triton.
    if (!(await isModelDir(this.o.modelsDir, model))) {
      await this.unloadDeleted(model, phase);
      return;
    }

    const checked = await this.lintEdit(model, phase);
    if (!checked) return;
    const { lint, autoComplete } = checked;

    const hash = await hashModelDir(dir);
    if (!forced && hash && hash === this.servedHash.get(model) && this.lastGood.has(model)) {
      phase("unchanged");
      return;
    }

    const logOffset = fileSize(this.o.logFile);
    const generation = await this.stageEdit(model, phase);
    if (generation === undefined) return;
    phase("staged");
    phase("loading");
    const outcome = await this.load(model, logOffset);
    if (outcome.ok) {
      await this.reportLoaded(model, generation, hash, lint.models, phase);
      return;
    }
    const reason = autoComplete
      ? `${outcome.reason} (${autoComplete}, but Triton runs with config auto-complete off in this run: restart \`triton-dev up\` to turn it on)`
      : outcome.reason;
    const good = this.lastGood.get(model);
    if (good !== undefined) await this.restoreLastGood(model, good, reason, phase);
    else await this.withdrawFailedLoad(model, generation, hash, lint.models, reason, phase);
  }

  /** The edit of a model whose folder is gone: what served it leaves Triton. */
  private async unloadDeleted(model: string, phase: ReportPhase): Promise<void> {
    const wasWithdrawn = this.withdrawn.delete(model);
    if (!this.o.staging.has(model)) {
      // Nothing served: a model withdrawn after a failed load (Triton has forgotten it, or is
      // asked again now), or one lint refused. Either way the deletion ends here.
      phase("removed", wasWithdrawn ? {} : { reason: "it was not served: nothing to unload" });
      const versions = this.remembered.get(model);
      if (wasWithdrawn && versions) await this.forget(model, versions);
      if (wasWithdrawn) phase("unloaded");
      return;
    }
    await this.o.staging.remove(model);
    this.lastGood.delete(model);
    this.servedHash.delete(model);
    phase("removed");
    if (this.o.mode === "explicit") {
      await this.o.client.unloadModel(model).catch((err) => log.warn("unload failed", { model, error: String(err) }));
    }
    await this.waitUntilGone(model);
    phase("unloaded");
  }

  /**
   * Lint the edit as this run's Triton loads it: refused (and undefined) when the model has errors
   * of its own, else `validated` with every finding; `autoComplete` says why it needs Triton's
   * config auto-complete where this run has it off.
   */
  private async lintEdit(
    model: string,
    phase: ReportPhase,
  ): Promise<{ lint: LintResult; autoComplete: string | undefined } | undefined> {
    const lint = await lintModel(this.o.modelsDir, model, this.lintOptions);
    // Only the model's own errors refuse it: Triton loads a step model on its own whatever the
    // ensembles running it say, so an ensemble's error (a missing version folder, a step's tensor
    // it does not map) never keeps a fix of its steps from loading. Those findings still come with
    // the edit, as warnings naming the ensemble, which stays out until it is fixed itself.
    const own = (d: Diagnostic) => d.model === undefined || d.model === model;
    // A KIND_GPU model on a server without a GPU (a warning, as in `lint`) is not staged either:
    // Triton would refuse it.
    const errors = lint.diagnostics.filter(
      (d) => own(d) && (d.severity === "error" || d.code === "gpu-unavailable" || d.code === "backend-unavailable"),
    );
    if (errors.length > 0) {
      // A backend this server lacks is no error a save can fix: the finding says where it runs.
      const elsewhere = errors.every((d) => d.code === "backend-unavailable");
      phase("refused", {
        diagnostics: errors,
        reason: this.lastGood.has(model)
          ? "the last good version keeps serving"
          : elsewhere
            ? "not served by this runtime (the finding says where it runs)"
            : "not loaded until the errors are fixed",
      });
      return undefined;
    }
    const linted = lint.models.find((m) => m.name === model);
    const autoComplete = await this.autoCompleteNeed(model, linted);
    const diagnostics = [
      ...lint.diagnostics.map((d) => (own(d) ? d : ofEnsembleRunning(d))),
      ...(autoComplete && linted ? [autoCompleteOffDiagnostic(linted, autoComplete)] : []),
    ];
    phase("validated", diagnostics.length ? { diagnostics } : {});
    return { lint, autoComplete };
  }

  /** Why `linted` needs Triton's config auto-complete when this run has it off; else undefined. */
  private async autoCompleteNeed(model: string, linted: LintedModel | undefined): Promise<string | undefined> {
    const adapted = this.o.staging.adaptedBackends();
    // An adapted model needs Triton's auto-complete only where its backend would fill something
    // in, which only a lint with auto-complete on tells.
    const asCompleted =
      this.o.autoCompleteConfig === false && linted?.backend !== undefined && adapted.includes(linted.backend)
        ? (await lintModel(this.o.modelsDir, model, { ...this.lintOptions, autoComplete: true })).models.find(
            (m) => m.name === model,
          )
        : linted;
    return this.o.autoCompleteConfig === false && linted && asCompleted
      ? await autoCompleteReason(asCompleted, adapted)
      : undefined;
  }

  /** Publish the edit to the served repository: its generation, or undefined when staging failed, as reported. */
  private async stageEdit(model: string, phase: ReportPhase): Promise<number | undefined> {
    try {
      return await this.o.staging.publish(this.o.modelsDir, model, {
        prepare: this.o.mode === "poll",
        onEnvironment: (what) => phase("environment", { reason: what }),
      });
    } catch (err) {
      if (!(err instanceof StagingError)) throw err;
      // Nothing new was published: whatever served before still does.
      const keeps = this.lastGood.has(model)
        ? "the last good version keeps serving"
        : "not loaded until a fix is saved";
      // A requirement that conflicts with the stub is refused like a config error; a pip
      // failure fails the edit; both point at the requirements.txt line, other failures at the file.
      phase(err.refused ? "refused" : "failed", {
        reason: `${err.message}; ${keeps}`,
        diagnostics: stagingDiagnostics(err, this.o.modelsDir),
      });
      return undefined;
    }
  }

  /** The edit loaded: it is the last good version now, and the ensembles that waited for it load. */
  private async reportLoaded(
    model: string,
    generation: number,
    hash: string | undefined,
    linted: readonly LintedModel[],
    phase: ReportPhase,
  ): Promise<void> {
    this.lastGood.set(model, generation);
    this.withdrawn.delete(model);
    if (hash) this.servedHash.set(model, hash);
    const version = await this.readyVersion(model);
    phase("ready", version ? { version } : {});
    // Ensembles withdrawn because this model could not load, or held out at `up` because it
    // was not served, can load now (an ensemble with errors of its own waits for its fix).
    for (const m of linted)
      if (
        m.name !== model &&
        !this.o.staging.has(m.name) &&
        !m.diagnostics.some((d) => d.severity === "error") &&
        (m.config?.ensemble_scheduling?.step ?? []).every((st) => this.o.staging.has(st.model_name ?? "")) &&
        (this.withdrawn.has(m.name) || (await isModelDir(this.o.modelsDir, m.name)))
      )
        this.enqueue({ model: m.name, firstEventAt: this.now(), events: 0 });
    await this.o.staging.prune(model).catch(() => {});
  }

  /** The edit failed to load with a good version to fall back on: serve that one again. */
  private async restoreLastGood(model: string, good: number, reason: string, phase: ReportPhase): Promise<void> {
    // Serve the last good snapshot again: in poll mode this also ends Triton's retry of the
    // broken one at every poll; in explicit mode it reloads what was serving.
    const restoreOffset = fileSize(this.o.logFile);
    await this.o.staging.restore(model, good, { prepare: this.o.mode === "poll" });
    this.lastGood.set(model, this.o.staging.current(model)!);
    if (this.o.mode === "explicit") await this.o.client.loadModel(model).catch(() => {});
    this.servedHash.delete(model);
    phase("failed", { reason: `${reason}; the last good version keeps serving` });
    // Poll mode loads the restored copy at its next poll. Until that load is over, its "loaded"
    // line could be read as the outcome of the user's next save (seen on a loaded machine: the
    // fix reported ready while the restored version was what served), so the next edit waits.
    if (this.o.mode === "poll") await this.watchLog(model, restoreOffset, RESTORE_WAIT_MS);
  }

  /**
   * The edit failed to load with nothing to fall back on: the model, and the ensembles running
   * it, leave the served repository until a fix is saved, and Triton forgets their failed loads.
   */
  private async withdrawFailedLoad(
    model: string,
    generation: number,
    hash: string | undefined,
    linted: readonly LintedModel[],
    reason: string,
    phase: ReportPhase,
  ): Promise<void> {
    const versions = versionsToForget(
      (await this.o.client.repositoryIndex().catch(() => [])).filter((m) => m.name === model).map((m) => m.version),
      await versionFolders(this.o.staging.snapshotDir(model, generation)),
    );
    await this.withdraw(model, hash);
    phase("failed", { reason: `${reason}; not loaded until a fix is saved`, withdrawn: true });
    // Ensembles running it cannot load either; they leave the served repository first, so the
    // placeholder that makes Triton forget this load is never loaded into them.
    const users = await this.withdrawUsers(
      linted.map((m) => m.name).filter((n) => n !== model),
      model,
    );
    await this.forget(model, versions);
    await Promise.all(users.map((u) => this.forget(u.name, u.versions)));
  }

  /**
   * Withdraw the served ensembles of `names` that are not READY, because `step` failed to load
   * with nothing to serve; each says which step keeps it out, and loads once that step loads.
   */
  private async withdrawUsers(
    names: readonly string[],
    step: string,
  ): Promise<Array<{ name: string; versions: string[] }>> {
    const staged = names.filter((n) => this.o.staging.has(n));
    if (!staged.length) return [];
    const index = await this.o.client.repositoryIndex().catch(() => []);
    const out: Array<{ name: string; versions: string[] }> = [];
    for (const name of staged) {
      if (index.some((m) => m.name === name && m.state === "READY")) continue;
      const g = this.o.staging.current(name)!;
      const dir = this.o.staging.snapshotDir(name, g);
      const versions = versionsToForget(
        index.filter((m) => m.name === name).map((m) => m.version),
        await versionFolders(dir),
      );
      await this.withdraw(name, await hashModelDir(path.join(this.o.modelsDir, name)));
      this.emit({
        type: "edit",
        id: this.nextId++,
        model: name,
        phase: "failed",
        at: this.now(),
        sinceSavedMs: 0,
        reason: `it runs ${step}, which failed to load; it loads once ${step} loads`,
        withdrawn: true,
      });
      out.push({ name, versions });
    }
    return out;
  }

  private async load(model: string, logOffset: number): Promise<{ ok: true } | { ok: false; reason: string }> {
    if (this.o.mode === "explicit") {
      try {
        await this.o.client.loadModel(model);
        return { ok: true };
      } catch (err) {
        if (err instanceof TritonHttpError) return { ok: false, reason: oneLine(this.userPaths(err.tritonMessage)) };
        throw err;
      }
    }
    return this.watchLog(model, logOffset);
  }

  /** In poll mode Triton reports the outcome only in its log; read it from where we staged. */
  private watchLog(
    model: string,
    from: number,
    timeoutMs?: number,
  ): Promise<{ ok: true } | { ok: false; reason: string }> {
    const timeout = timeoutMs ?? this.o.loadTimeoutMs ?? 120_000;
    const deadline = this.now() + timeout + this.o.pollSecs * 1000;
    return new Promise((resolve) => {
      let done = false;
      const finish = (r: { ok: true } | { ok: false; reason: string }) => {
        if (done) return;
        done = true;
        stopFollowing();
        this.clock.clearInterval(timer);
        resolve(r);
      };
      const stopFollowing = followFile(
        this.o.logFile,
        from,
        (raw) => {
          const outcome = loadOutcome(stripTritonPrefix(raw), model);
          if (outcome?.ok) finish(outcome);
          // The per-version line, which carries the reason, comes before the summary, which does not.
          else if (outcome)
            finish({
              ok: false,
              reason: outcome.reason
                ? oneLine(this.userPaths(outcome.reason))
                : "Triton failed to load it and logged no reason (`triton-dev logs` shows its log)",
            });
        },
        // The save -> READY latency includes this delay; a stat every 20 ms while one load is
        // pending costs nothing.
        20,
        this.clock,
      );
      const timer = this.clock.setInterval(() => {
        if (this.now() >= deadline || this.closed)
          finish({ ok: false, reason: `Triton did not finish loading it within ${Math.round(timeout / 1000)} s` });
      }, 50);
    });
  }

  /** Triton names files in the staging copy; point the user at their own files instead. */
  private userPaths(text: string): string {
    return this.o.userPaths ? this.o.userPaths(text) : this.o.staging.userPaths(text, this.o.modelsDir);
  }

  private async readyVersion(model: string): Promise<string | undefined> {
    try {
      const idx = await this.o.client.repositoryIndex();
      return idx.find((m) => m.name === model && m.state === "READY")?.version;
    } catch {
      return undefined;
    }
  }

  private async waitUntilGone(model: string): Promise<void> {
    const deadline = this.now() + this.o.pollSecs * 1000 + 30_000;
    while (this.now() < deadline && !this.closed) {
      const ready = await this.o.client.isModelReady(model);
      if (!ready) return;
      await this.clock.sleep(100);
    }
  }
}

/**
 * An error of an ensemble that runs the model being saved, as the warning the save carries: the
 * step loads, the ensemble stays out until its own fix is saved.
 */
function ofEnsembleRunning(d: Diagnostic): Diagnostic {
  if (d.severity !== "error") return d;
  return {
    ...d,
    severity: "warning",
    message: `ensemble '${d.model}', which runs this model, cannot load until this is fixed: ${d.message}`,
  };
}

/** How long, past a poll, a failed edit waits for Triton to load the restored last good copy. */
const RESTORE_WAIT_MS = 30_000;

/** The numbered version folders of a staged snapshot. */
async function versionFolders(dir: string): Promise<string[]> {
  const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory() && /^\d+$/.test(e.name)).map((e) => e.name);
}

function fileSize(f: string): number {
  try {
    return fs.statSync(f).size;
  } catch {
    return 0;
  }
}
