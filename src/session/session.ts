import { randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import { ServerStartError, StartInterruptedError, UserError } from "../errors.js";
import { requirementsOf } from "../envs/model-environments.js";
import { EventBus } from "../events/bus.js";
import { log as rootLog } from "../log/logger.js";
import { refusalSummary, type Diagnostic } from "../repo/diagnostics.js";
import { lintRepository, type LintedModel, type LintOptions, type LintResult } from "../repo/lint.js";
import { sharedConfigCompleter } from "../repo/auto-complete-run.js";
import { autoCompleteNeeds } from "../repo/auto-complete.js";
import { listModelDirs, requireModelRepository } from "../repo/layout.js";
import { explainIndex, stepFailed, tritonLogLines, type ExplainedIndexEntry } from "../reload/load-reasons.js";
import { StagingError, StagingRepository, stagingDiagnostics } from "../reload/stage.js";
import type {
  Delivery,
  PlannedRun,
  Ports,
  ReloadMode,
  RuntimeDriver,
  ServerHandle,
  StartedRun,
} from "../runtimes/driver.js";
import { RUNTIME_FACTS, adaptedServing, lintFacts, type RuntimeFlags, type RuntimeKind } from "../runtimes/kinds.js";
import type { BackendAdapterOptions } from "../reload/adapters/backend-adapter.js";
import type { ModelEnvironments } from "../envs/model-environments.js";
import { refuseForeignFlags } from "../runtimes/flags.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";
import { stripTritonPrefix, tailLines, tailLinesSync } from "../state/log-file.js";
import { terminateOurs } from "../state/process.js";
import { removeRunState, writeRunState, type RunState } from "../state/run-state.js";
import { userPathsOf } from "../state/staged-paths.js";
import { acquireStartLock } from "../state/start-lock.js";
import { clientForRun, TritonHttpClient, TritonHttpError, type RepositoryIndexEntry } from "../triton/http-client.js";
import {
  ReadinessAbortedError,
  ReadinessTimeoutError,
  modelsSettled,
  waitFor,
  type WaitStrategy,
} from "../triton/readiness.js";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { currentRun, watcherOf } from "./current-run.js";
import { stopWaitsFor } from "./down.js";
import { followModelLoads } from "./load-progress.js";
import type { SessionEvent } from "./events.js";
import { RunLifecycle } from "./lifecycle.js";
import type { ReloadController } from "../reload/controller.js";

const log = rootLog.child("session");

export interface UpOptions {
  runtime: "auto" | RuntimeKind;
  /** Flags only some runtimes take (--image, --gpus, --cluster, ...); the chosen runtime's driver parses them. */
  runtimeFlags?: RuntimeFlags;
  modelsDir: string;
  reload: ReloadMode;
  pollSecs: number;
  ports: Ports;
  host: string;
  detached: boolean;
  readyTimeoutMs: number;
  /**
   * The run's life (session/lifecycle.ts), when the caller follows it: a stop asked for during the
   * start (Ctrl-C; its reason says which signal) stops whatever was started, and the start ends with
   * StartInterruptedError instead of leaving a server nobody owns.
   */
  lifecycle?: RunLifecycle;
  /**
   * The time the readiness waits, the load progress and the runtime's own waits (its DriverContext)
   * run on (../clock.ts); a test passes a FakeClock.
   */
  clock?: Clock;
}

function throwIfInterrupted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new StartInterruptedError(String(signal.reason ?? "interrupted"));
}

/** A running `up`: the server handle, its record and a stop that is safe to call twice. */
export interface Session {
  readonly state: RunState;
  readonly handle: ServerHandle;
  readonly client: TritonHttpClient;
  readonly models: ExplainedIndexEntry[];
  /** Models not staged because lint found errors in them. */
  readonly refused: string[];
  /** Models left out on purpose (GPU-only on a machine without a GPU). */
  readonly skipped: string[];
  /** The run's phases, shared with whoever owns the run (the foreground `up`, the dashboard). */
  readonly lifecycle: RunLifecycle;
  stop(reason?: string): Promise<void>;
  /** Start hot reload in this process (foreground `up`). */
  watch(): Promise<ReloadController>;
}

/** A foreground `up` still owns the run (a detached one has no owner left to ask). */
function ownerAlive(s: RunState): boolean {
  const w = watcherOf(s);
  return !!w && !w.detached && w.pid !== process.pid && w.alive;
}

/**
 * The lint options `up` and the detached watcher judge models with, for the server a run has.
 * `autoComplete` is the server's setting once it is known (the run's record); before Triton
 * starts, `up` lints with auto-complete assumed on and turns it off only where no model needs it.
 */
export function lintOptionsFor(
  runtime: RuntimeKind,
  gpus: number | undefined,
  autoComplete?: boolean,
  /** The image the run's Triton runs (`--image`), where the image decides its backends. */
  image?: string,
  /** The backends the runtime found in that image, where its name does not tell them. */
  imageBackends?: readonly string[],
): LintOptions {
  return {
    ...lintFacts(runtime, image, imageBackends),
    gpuAvailable: gpus === undefined ? true : gpus > 0,
    // One severity with `lint`: a config asking for a GPU is no mistake, it is for another
    // machine. `up` skips the model with the reason; the watcher does not stage its edits.
    gpuMissingSeverity: "warning",
    ...(autoComplete !== undefined ? { autoComplete } : {}),
    // Triton runs the models' code as it loads them, auto_complete_config included: checking it first adds nothing.
    completer: sharedConfigCompleter(),
  };
}

/**
 * The backends `runtime` serves through the python backend (its facts' adaptedBackends), for
 * staging; `autoComplete` is asked at each snapshot (the run's Triton completes configs, so the
 * adapter completes them as the backend would). Undefined where the runtime adapts none.
 */
export function adaptersFor(
  runtime: RuntimeKind,
  environments: ModelEnvironments | undefined,
  autoComplete: () => boolean,
): BackendAdapterOptions | undefined {
  const adapted = RUNTIME_FACTS[runtime].adaptedBackends;
  if (!adapted || !environments) return undefined;
  const backends = Object.fromEntries(
    Object.entries(adapted).map(([b, a]) => [
      b,
      { library: a.library, requirement: a.requirement, servedAs: adaptedServing(a, runtime) },
    ]),
  );
  return { backends, environments, autoComplete };
}

/**
 * Step 1. A run already recorded: refused while it runs, unless its runtime hands it over to this
 * `up` (the same project's detached container); a record whose server is gone is removed.
 */
async function settleExistingRun(
  paths: Paths,
  runtime: RuntimeKind,
  modelsDir: string,
  env: NodeJS.ProcessEnv,
  runtimes: Runtimes,
): Promise<void> {
  const existing = await currentRun(paths, env, runtimes);
  if (!existing) return;
  const s = existing.state;
  if (!existing.alive) {
    log.info("removing the record of a run that is gone", { pid: s.pid });
    await removeRunState(paths);
    return;
  }
  if (!existing.run.handsOverTo(runtime, modelsDir) || ownerAlive(s)) {
    throw new UserError(
      `triton-dev is already running (pid ${s.pid}, ${s.runtime} runtime, http ${s.host}:${s.ports.http}, models ${s.modelsDir})`,
      {
        hint: "See it with `triton-dev status`, follow it with `triton-dev logs -f`, or stop it with `triton-dev down` before starting another.",
      },
    );
  }
  terminateOurs(s.supervisorPid, process.execPath);
  await removeRunState(paths);
}

interface RunFolder {
  runId: string;
  runDir: string;
  repository: string;
  logFile: string;
}

/** Step 3a. The run's folder: a new one, or the reused server's (it has that folder mounted). */
async function runFolder(paths: Paths, plan: PlannedRun): Promise<RunFolder> {
  const runId =
    plan.reuse?.runId ??
    `${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${randomBytes(3).toString("hex")}`;
  const runDir = plan.reuse?.runDir ?? path.join(paths.runsDir, runId);
  // The staged copies of the user's models, Triton's log and the run's record: for the user alone,
  // whatever the state folder's own mode (an existing one, or TRITON_DEV_STATE_DIR elsewhere).
  // Every runtime reads it as this user or as root (the docker and kind containers).
  await fsp.mkdir(runDir, { recursive: true, mode: 0o700 });
  await fsp.chmod(runDir, 0o700);
  return { runId, runDir, repository: path.join(runDir, "repository"), logFile: path.join(runDir, "tritonserver.log") };
}

interface StagedRepository {
  lint: LintResult;
  lintOptions: LintOptions;
  staging: StagingRepository;
  refused: Set<string>;
  skipped: Set<string>;
  notServed: NonNullable<RunState["notServed"]>;
  /** What serves each skipped model, once per distinct hint: where its backend runs, or a GPU. */
  skipHints: string[];
  autoCompleteOff: boolean;
  /** Why python models import their model.py twice in this run (config auto-complete is on), if they do. */
  autoCompleteNote?: string;
}

/**
 * Step 3b. Lint, then stage what passes. Only models that pass lint are staged: Triton would refuse
 * the others anyway, with the reason buried in its log; they load as soon as a fixed version is
 * saved. A KIND_GPU model on a server without a GPU is a warning, as in `lint`: it is skipped with
 * the reason, so a repository stays usable on a laptop.
 */
async function lintAndStage(
  runtime: RuntimeKind,
  plan: PlannedRun,
  modelsDir: string,
  folder: RunFolder,
  bus: EventBus<SessionEvent>,
  /** Called once the models are staged: from then on a stop releases what the start created. */
  onStaged: () => void,
  image?: string,
): Promise<StagedRepository> {
  const lintOptions = lintOptionsFor(runtime, plan.gpus, undefined, image, plan.imageBackends);
  const lint = await lintRepository(modelsDir, lintOptions);
  const refused = new Set<string>();
  const skipped = new Set<string>();
  const notServed: StagedRepository["notServed"] = [];
  const skipHints = new Set<string>();
  for (const m of lint.models) {
    const errors = m.diagnostics.filter((d) => d.severity === "error");
    // A backend this runtime lacks (its warning names where the model runs): skipped with that,
    // never staged for Triton to fail with "unable to find backend library".
    const elsewhere = m.diagnostics.filter((d) => d.code === "backend-unavailable");
    if (elsewhere.length && !errors.length) {
      skipped.add(m.name);
      const reason = elsewhere[0]!.message;
      bus.emit({
        type: "skipped",
        model: m.name,
        reason: `${reason}. ${elsewhere[0]!.hint ?? ""}`.trim(),
        diagnostics: [],
      });
      notServed.push({ model: m.name, why: "skipped", reason });
      skipHints.add(elsewhere[0]!.hint ?? GPU_HINT);
      continue;
    }
    const gpu = m.diagnostics.filter((d) => d.code === "gpu-unavailable");
    if (gpu.length && !errors.length) {
      skipped.add(m.name);
      bus.emit({ type: "skipped", model: m.name, reason: plan.gpuSkipReason, diagnostics: gpu });
      notServed.push({ model: m.name, why: "skipped", reason: plan.gpuSkipReason });
      skipHints.add(GPU_HINT);
      continue;
    }
    if (errors.length) {
      refused.add(m.name);
      notServed.push({ model: m.name, why: "refused", reason: refusalSummary(errors, modelsDir) });
    }
    if (m.diagnostics.length)
      bus.emit({ type: "lint", model: m.name, diagnostics: m.diagnostics, staged: errors.length === 0 });
  }
  holdOutEnsembles(lint.models, refused, skipped, notServed, bus);
  // Lint assumed auto-complete on; the run turns it off below only where no model needs it, and
  // a model the adapter serves is one that does (repo/auto-complete.ts).
  let autoComplete = true;
  const adapters = adaptersFor(runtime, plan.environments, () => autoComplete);
  const staging = new StagingRepository(folder.runDir, {
    ...(plan.prepareStaged ? { prepare: plan.prepareStaged } : {}),
    ...(plan.environments ? { environments: plan.environments } : {}),
    ...(adapters ? { adapters } : {}),
  });
  const wanted = (m: string) => !refused.has(m) && !skipped.has(m);
  // A model whose files cannot be copied (a dangling link, a FIFO, a full disk) is refused like
  // one lint refuses; the others are served.
  const unstageable = (e: StagingError) => {
    refused.add(e.model);
    notServed.push({ model: e.model, why: "refused", reason: e.message });
    // An environment that could not be built points at its requirements.txt line.
    bus.emit({ type: "lint", model: e.model, diagnostics: stagingDiagnostics(e, modelsDir), staged: false });
  };
  if (!plan.environments) {
    const served = lint.models.map((m) => m.name).filter((m) => !refused.has(m) && !skipped.has(m));
    for (const d of unbuiltEnvironmentWarnings(runtime, modelsDir, served))
      bus.emit({ type: "lint", model: d.model!, diagnostics: [d], staged: true });
  }
  let staged: string[];
  if (plan.reuse) {
    // The running server has this folder mounted: it is updated in place, never recreated.
    // Changed and deleted models are the reload controller's to reconcile; models added
    // meanwhile are published here.
    await staging.load();
    for (const m of await listModelDirs(modelsDir)) {
      if (!wanted(m) || staging.has(m)) continue;
      await staging.publish(modelsDir, m).catch((err: unknown) => {
        if (!(err instanceof StagingError)) throw err;
        unstageable(err);
      });
    }
    staged = staging.names();
  } else {
    staged = await staging.init(modelsDir, wanted, unstageable);
  }
  onStaged();
  bus.emit({ type: "staged", models: staged, repository: folder.repository });
  // Triton's config auto-complete adds a fixed second to every python model load (see
  // repo/auto-complete.ts); where the runtime allows it, it is off when no model needs it.
  const needs = await autoCompleteNeeds(
    lint.models.filter((m) => !skipped.has(m.name)),
    staging.adaptedBackends(),
  );
  const autoCompleteOff = plan.canDisableAutoComplete && needs.length === 0;
  autoComplete = !autoCompleteOff;
  for (const m of staged) {
    const adapted = staging.adapted(m);
    if (adapted) bus.emit({ type: "adapted", model: m, servedAs: adapted.servedAs });
  }
  // With auto-complete on, the python backend imports each model.py twice before it
  // serves: once in a stub that only calls auto_complete_config, once in the instance's stub. A
  // slow module-level import is paid twice (measured: an 8 s import made a 19 s `up`, so one of
  // 60 s makes about 125 s); initialize() runs only in the instance's stub.
  const servesPython = lint.models.some((m) => wanted(m.name) && m.config?.backend === "python");
  const autoCompleteNote =
    autoCompleteOff || !servesPython
      ? undefined
      : `Triton's config auto-complete is on (${plan.canDisableAutoComplete ? needs.map((n) => n.reason).join("; ") : `triton-dev leaves it on in the ${runtime} runtime`}), so the python backend imports each model.py twice before serving it (once only to complete its config)`;
  return {
    lint,
    lintOptions,
    staging,
    refused,
    skipped,
    notServed,
    skipHints: [...skipHints],
    autoCompleteOff,
    ...(autoCompleteNote ? { autoCompleteNote } : {}),
  };
}

/**
 * A runtime that builds no environments (docker, kind: the image's Python is not ours to install
 * into) serves a model with a requirements.txt without its packages: said for each such model,
 * never silently.
 */
export function unbuiltEnvironmentWarnings(runtime: RuntimeKind, modelsDir: string, models: string[]): Diagnostic[] {
  return models
    .map((model) => ({ model, file: requirementsOf(path.join(modelsDir, model)) }))
    .filter(({ file }) => fs.existsSync(file))
    .map(({ model, file }) => ({
      severity: "warning" as const,
      code: "requirements-not-installed",
      file,
      line: 1,
      column: 1,
      message: `${model}: its requirements.txt is not installed on the ${runtime} runtime, which runs the image's own Python; the model sees only the image's packages`,
      hint: "Build an image with the packages (FROM the Triton image, `RUN pip install -r requirements.txt`) and pass it with --image, or serve with `--runtime local`, which builds an environment for each requirements.txt.",
      model,
    }));
}

/** Step 5. Live, then every model settled; a server that exits meanwhile ends the wait with its last log lines. */
async function waitUntilReady(
  client: TritonHttpClient,
  o: UpOptions,
  logFile: string,
  exitInfo: () => { code: number | null; signal: NodeJS.Signals | null } | undefined,
  bus: EventBus<SessionEvent>,
  stillLoading: () => string | undefined,
  signal: AbortSignal,
  readiness: WaitStrategy,
  exited: AbortSignal,
): Promise<RepositoryIndexEntry[]> {
  const clock = o.clock ?? REAL_CLOCK;
  const readyBy = clock.now() + o.readyTimeoutMs;
  // What the runtime says started means for this run (its readiness strategy).
  await waitFor(readiness, {
    timeoutMs: o.readyTimeoutMs,
    intervalMs: 250,
    clock,
    signal: AbortSignal.any([signal, exited]),
    abortIf: async () => {
      throwIfInterrupted(signal);
      const e = exitInfo();
      if (e) {
        const lines = (await tailLines(logFile, 8)).map(stripTritonPrefix);
        bus.emit({ type: "server-exited", code: e.code, signal: e.signal, lastLines: lines });
        throw new ReadinessAbortedError(
          `tritonserver exited during start (${e.signal ?? `code ${e.code}`}); last log lines:\n  ${lines.join("\n  ")}`,
        );
      }
    },
    detail: () => {
      const loading = stillLoading();
      const last = tailLinesSync(logFile, 1)[0];
      return [
        loading ? `still loading: ${loading}` : undefined,
        last ? `last log line: ${stripTritonPrefix(last)}` : "it wrote no log yet",
      ]
        .filter(Boolean)
        .join("; ");
    },
  });
  await client.repositoryIndex().catch((err: unknown) => {
    if (!(err instanceof TritonHttpError && err.status === 403)) throw err;
    // Fail closed (triton/key-shim.ts): without the library the API takes no key at all.
    throw new UserError(
      `Triton at ${o.host}:${o.ports.http} did not take triton-dev's repository key, so its model-repository API is closed (hot reload cannot work)`,
      {
        hint:
          "The preloaded library that hands tritonserver the key did not run (something in the environment or the " +
          "image may drop LD_PRELOAD). Run with TRITON_DEV_LOG=debug and report it with the output.",
        cause: err,
      },
    );
  });
  // Every model settled (none LOADING/UNLOADING) within what is left of the timeout, at least 5 s;
  // past it the index is taken as it stands.
  return modelsSettled(client, {
    timeoutMs: Math.max(readyBy - clock.now(), 5_000),
    clock,
    signal,
    abortIf: () => throwIfInterrupted(signal),
  });
}

/**
 * `up`, one at a time per state folder (a second one that starts meanwhile is refused with the
 * first one's pid): see startLocked for the steps. `runtimes` is where drivers come from (a test
 * passes a fake one).
 */
export async function startSession(
  paths: Paths,
  o: UpOptions,
  bus: EventBus<SessionEvent>,
  env: NodeJS.ProcessEnv = process.env,
  runtimes: Runtimes = RUNTIMES,
): Promise<Session> {
  const lifecycle = o.lifecycle ?? new RunLifecycle(bus);
  const lock = await acquireStartLock(paths, path.resolve(o.modelsDir));
  try {
    return await startLocked(paths, o, bus, env, runtimes, lifecycle);
  } catch (err) {
    lifecycle.failed();
    throw err;
  } finally {
    await lock.release();
  }
}

/** Step 0. The runtime `up` runs on, its driver, and the driver's reading of its flags. */
async function chooseDriver(o: UpOptions, bus: EventBus<SessionEvent>, env: NodeJS.ProcessEnv, runtimes: Runtimes) {
  const flags = o.runtimeFlags ?? {};
  const choice = await runtimes.choose(o.runtime, flags, env);
  const driver: RuntimeDriver = await runtimes.load(choice.runtime);
  // Another runtime's flags are refused by the runtimes' facts, naming those that take them.
  refuseForeignFlags(choice.runtime, flags);
  const options = driver.options(flags);
  if (o.runtime === "auto") bus.emit({ type: "runtime", runtime: choice.runtime, why: choice.why });
  return { runtime: choice.runtime, driver, options };
}

/**
 * `up`, as named steps: the runtime, the existing run, plan (the runtime's checks, nothing
 * created yet), lint and stage, deliver (the repository and key where Triton reads them), start,
 * record, wait for ready. Every resource a step creates is released again if a later step fails,
 * or when the run's lifecycle is asked to stop meanwhile (Ctrl-C).
 */
async function startLocked(
  paths: Paths,
  o: UpOptions,
  bus: EventBus<SessionEvent>,
  env: NodeJS.ProcessEnv,
  runtimes: Runtimes,
  lifecycle: RunLifecycle,
): Promise<Session> {
  const { runtime, driver, options } = await chooseDriver(o, bus, env, runtimes);
  const modelsDir = path.resolve(o.modelsDir);
  await settleExistingRun(paths, runtime, modelsDir, env, runtimes);
  await requireModelRepository(modelsDir);
  const { ports, host, reload, pollSecs, readyTimeoutMs } = o;
  const plan = await driver.plan({ modelsDir, ports, host, reload, pollSecs, readyTimeoutMs }, options, {
    paths,
    env,
    emit: (e: SessionEvent) => bus.emit(e),
    ...(o.clock ? { clock: o.clock } : {}),
  });
  const folder = await runFolder(paths, plan);
  const staged = await lintAndStage(
    runtime,
    plan,
    modelsDir,
    folder,
    bus,
    () => lifecycle.markServerMayRun(),
    o.runtimeFlags?.image,
  );
  const forget = () => (plan.reuse ? Promise.resolve() : fsp.rm(folder.runDir, { recursive: true, force: true }));
  if (staged.staging.names().length === 0) {
    await forget();
    throw nothingToServe(modelsDir, staged.notServed, staged.skipHints);
  }
  const delivered = await plan.deliver({ runDir: folder.runDir, repository: folder.repository });
  if (lifecycle.signal.aborted) {
    await forget();
    throwIfInterrupted(lifecycle.signal);
  }
  const { started, startedAt, logOffset } = await startServer(runtime, plan, o, folder, staged, delivered, bus);
  const handle = started.handle;
  const state = runRecord({ runtime, o, modelsDir, folder, plan, staged, started, delivered, startedAt });
  const stopServer = stopperOf(paths, state, handle, bus, env);
  // Which models are still loading, every few seconds while `up` waits (a slow import or
  // initialize otherwise looks like a hang), and in the timeout message.
  const loads = followModelLoads(
    folder.logFile,
    (message) => bus.emit({ type: "progress", runtime, step: "models", message }),
    {
      fromOffset: logOffset,
      ...(o.clock ? { clock: o.clock } : {}),
      ...(staged.autoCompleteNote ? { note: staged.autoCompleteNote } : {}),
    },
  );
  try {
    // A Ctrl-C while the runtime was starting (a container or cluster takes seconds) lands here.
    throwIfInterrupted(lifecycle.signal);
    await writeRunState(paths, state);
    const readiness = started.readiness({ host: o.host, ports: o.ports, client: clientForRun(state) });
    const models = await readyModels(state, handle, staged, o, bus, loads.describe, lifecycle.signal, readiness);
    loads.stop();
    // A pod's run has its local process (kubectl port-forward) only once its readiness saw the pod run.
    if (handle.pid !== undefined && handle.pid !== state.pid) {
      state.pid = handle.pid;
      await writeRunState(paths, state);
    }
    bus.emit({
      type: "ready",
      endpoints: handle.endpoints,
      models,
      elapsedMs: Date.now() - startedAt,
      ...(staged.notServed.length ? { notServed: staged.notServed } : {}),
    });
    lifecycle.ready(stopServer);
    return runningSession(state, handle, staged, models, lifecycle);
  } catch (err) {
    loads.stop();
    await stopServer(err instanceof StartInterruptedError ? "interrupted during start" : "start failed");
    throw startFailure(err, plan, folder.logFile);
  }
}

/** Step 6. The server started on the delivered repository; where its log stood before (a reused log goes on). */
async function startServer(
  runtime: RuntimeKind,
  plan: PlannedRun,
  o: UpOptions,
  folder: RunFolder,
  staged: StagedRepository,
  delivered: Delivery,
  bus: EventBus<SessionEvent>,
): Promise<{ started: StartedRun; startedAt: number; logOffset: number }> {
  const startedAt = Date.now();
  const logOffset = await fsp.stat(folder.logFile).then(
    (st) => st.size,
    () => 0,
  );
  const started = await plan.start({
    runId: folder.runId,
    runDir: folder.runDir,
    repository: folder.repository,
    ports: o.ports,
    host: o.host,
    reload: o.reload,
    pollSecs: o.pollSecs,
    repositoryKey: delivered.repositoryKey,
    logFile: folder.logFile,
    ...(staged.autoCompleteOff ? { autoCompleteConfig: false } : {}),
  });
  for (const message of started.notices ?? []) bus.emit({ type: "hint", message });
  bus.emit({ type: "starting", runtime, pid: started.handle.pid, logFile: folder.logFile });
  return { started, startedAt, logOffset };
}

/** The ready run as `up` holds it: its stop and its watch go through the lifecycle. */
function runningSession(
  state: RunState,
  handle: ServerHandle,
  staged: StagedRepository,
  models: ExplainedIndexEntry[],
  lifecycle: RunLifecycle,
): Session {
  return {
    state,
    handle,
    client: clientForRun(state),
    models,
    refused: [...staged.refused],
    skipped: [...staged.skipped],
    lifecycle,
    stop: (reason) => lifecycle.stop(reason),
    watch: () =>
      lifecycle.watch({
        state,
        staging: staged.staging,
        lintOptions: staged.lintOptions,
        index: models,
        refusals: [...staged.refused].flatMap((model) => {
          const m = staged.lint.models.find((x) => x.name === model);
          return m ? [{ model, diagnostics: m.diagnostics.filter((d) => d.severity === "error") }] : [];
        }),
      }),
  };
}

/** What `status`, `down`, the watcher and a later `up` read about the run: written once it started. */
function runRecord(r: {
  runtime: RuntimeKind;
  o: UpOptions;
  modelsDir: string;
  folder: RunFolder;
  plan: PlannedRun;
  staged: StagedRepository;
  started: StartedRun;
  delivered: Delivery;
  startedAt: number;
}): RunState {
  const { o, folder, plan, staged, started } = r;
  return {
    version: 1,
    runId: folder.runId,
    runtime: r.runtime,
    pid: started.handle.pid ?? -1,
    executable: started.executable,
    ownerPid: o.detached ? undefined : process.pid,
    detached: o.detached,
    startedAt: new Date(r.startedAt).toISOString(),
    ...(staged.notServed.length ? { notServed: staged.notServed } : {}),
    modelsDir: r.modelsDir,
    runDir: folder.runDir,
    repository: folder.repository,
    logFile: folder.logFile,
    host: o.host,
    ports: o.ports,
    reload: o.reload,
    pollSecs: o.pollSecs,
    repositoryKey: r.delivered.repositoryKey,
    ...(r.delivered.tritonSees ? { tritonSees: r.delivered.tritonSees } : {}),
    ...(plan.environments ? { buildsEnvironments: true as const } : {}),
    ...(plan.gpus !== undefined ? { gpus: plan.gpus } : {}),
    ...(o.runtimeFlags?.image ? { image: o.runtimeFlags.image } : {}),
    ...(plan.imageBackends ? { imageBackends: [...plan.imageBackends] } : {}),
    ...(staged.autoCompleteOff ? { autoCompleteConfig: false } : {}),
    ...(started.record !== undefined ? { runtimeRecord: started.record } : {}),
  };
}

/**
 * The server's stop as `up` does it: announced, the server stopped (past a second, what the stop
 * waits for is said: the models still unloading; only the unloads that run the models' code,
 * `finalize`, are waited for), the record removed.
 */
function stopperOf(
  paths: Paths,
  state: RunState,
  handle: ServerHandle,
  bus: EventBus<SessionEvent>,
  env: NodeJS.ProcessEnv,
): (reason: string) => Promise<void> {
  return async (reason) => {
    bus.emit({ type: "stopping", reason });
    const outcome = await handle.stop(
      undefined,
      (message) => bus.emit({ type: "progress", runtime: state.runtime, step: "stop", message }),
      stopWaitsFor(state.repository, env),
    );
    await removeRunState(paths);
    bus.emit({ type: "stopped", ...(outcome ? { stop: outcome } : {}) });
  };
}

/**
 * Step 5. Ready, then every model that did not load with Triton's reason (some are only in its
 * log), naming the user's files, not the staging copy's.
 */
async function readyModels(
  state: RunState,
  handle: ServerHandle,
  staged: StagedRepository,
  o: UpOptions,
  bus: EventBus<SessionEvent>,
  stillLoading: () => string | undefined,
  signal: AbortSignal,
  readiness: WaitStrategy,
): Promise<ExplainedIndexEntry[]> {
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  // The exit ends the pause between readiness checks: a crash is said at once.
  const exited = new AbortController();
  void handle.exited.then((e) => {
    exitInfo = e;
    exited.abort();
  });
  const index = await waitUntilReady(
    clientForRun(state),
    o,
    state.logFile,
    () => exitInfo,
    bus,
    stillLoading,
    signal,
    readiness,
    exited.signal,
  );
  const names = staged.staging.names();
  return explainIndex(index, {
    staged: names,
    logLines: await tritonLogLines(state.logFile),
    userPaths: userPathsOf(state),
    fallback: stepFailed(
      staged.staging,
      names.filter((n) => !index.some((m) => m.name === n && m.state === "READY")),
    ),
  });
}

/**
 * An ensemble runs only when every step it names is loaded: one whose step is refused or skipped
 * is not staged either (Triton would only say "contains models that are not available" and keep
 * it out), and it says which step keeps it out. It follows its steps through ensembles of
 * ensembles, and loads once the step's fix is saved (the reload controller stages it then).
 */
function holdOutEnsembles(
  models: readonly LintedModel[],
  refused: Set<string>,
  skipped: Set<string>,
  notServed: StagedRepository["notServed"],
  bus: EventBus<SessionEvent>,
): void {
  const out = (n: string) => refused.has(n) || skipped.has(n);
  for (let changed = true; changed;) {
    changed = false;
    for (const m of models) {
      if (out(m.name)) continue;
      const steps = (m.config?.ensemble_scheduling?.step ?? []).map((st) => st.model_name ?? "");
      const missing = [...new Set(steps.filter((st) => out(st)))];
      if (!missing.length) continue;
      const why = missing.every((st) => skipped.has(st)) ? "skipped" : "refused";
      const each = missing.map((st) => `${st} (${skipped.has(st) ? "skipped" : "refused"})`).join(", ");
      const reason = `it runs ${each}, which ${missing.length > 1 ? "are" : "is"} not served; it loads once ${missing.length > 1 ? "they load" : "that loads"}`;
      (why === "skipped" ? skipped : refused).add(m.name);
      notServed.push({ model: m.name, why, reason });
      if (why === "skipped") bus.emit({ type: "skipped", model: m.name, reason, diagnostics: [] });
      else bus.emit({ type: "lint", model: m.name, diagnostics: [heldOut(m, reason)], staged: false });
      changed = true;
    }
  }
}

/** The finding an ensemble held out by its steps shows, on its config. */
function heldOut(m: LintedModel, reason: string): Diagnostic {
  return {
    severity: "error",
    file: path.join(m.dir, "config.pbtxt"),
    line: 1,
    column: 1,
    model: m.name,
    code: "ensemble-step-not-served",
    message: `ensemble '${m.name}' is not loaded: ${reason}`,
    hint: "Fix the step model (its own findings are above); saving that fix loads it and then this ensemble.",
  };
}

/**
 * Every model was refused or skipped: a server with nothing to serve is not what anyone asked for,
 * so `up` stops before starting it, with each model's reason.
 */
function nothingToServe(
  modelsDir: string,
  notServed: StagedRepository["notServed"],
  skipHints: readonly string[],
): UserError {
  const lines = notServed.map((n) => `  ${n.model}: ${n.why}, ${n.reason}`);
  // Every model skipped: the skips' own hints, since a GPU alone does not serve a backend the
  // default image lacks (vLLM, TensorRT-LLM name their image).
  return new UserError(`nothing to serve: no model of ${modelsDir} can load here\n${lines.join("\n")}`, {
    hint: notServed.some((n) => n.why === "refused")
      ? "Fix what lint found (`triton-dev lint` shows every finding), then run `triton-dev up` again."
      : (skipHints.length ? skipHints : [GPU_HINT]).join(" "),
  });
}

const GPU_HINT =
  "Serve on a machine or runtime with a GPU (for example `--runtime docker --gpus all`), or add a CPU model.";

/** A start that failed as the user reads it: what happened, and the runtime's advice from the log. */
function startFailure(err: unknown, plan: PlannedRun, logFile: string): unknown {
  if (err instanceof ReadinessAbortedError) {
    const advice = plan.startHint(logFile);
    return new ServerStartError(err.message, {
      hint: `${advice ? `${advice} ` : ""}The full log is ${logFile}.`,
      cause: err,
    });
  }
  if (err instanceof ReadinessTimeoutError) {
    return new ServerStartError(err.message, {
      hint: `${err.hint ? `${err.hint} ` : ""}Raise the limit with --timeout SECONDS if your models load slowly; the full log is ${logFile}.`,
      cause: err,
    });
  }
  return err;
}
