import type { EventBus } from "../events/bus.js";
import type { LintOptions } from "../repo/lint.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import { ReloadController } from "../reload/controller.js";
import type { StagingRepository } from "../reload/stage.js";
import { RepositoryWatcher, type ModelWatcher } from "../reload/watch.js";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { editsFile, type RunState } from "../state/run-state.js";
import { userPathsOf } from "../state/staged-paths.js";
import { clientForRun, type RepositoryIndexEntry, type TritonHttpClient } from "../triton/http-client.js";
import type { SessionEvent } from "./events.js";

/**
 * Where a run is in its life, for every process that owns one: the foreground `up` (and its
 * dashboard), and a detached run's watcher.
 *
 * - starting: the runtime is being planned and started; `serverMayRun` once something may outlive
 *   this process (the models are staged), before that an interruption simply ends the process.
 * - ready: the server answers and its models have settled; nothing acts on edits yet.
 * - watching: the reload controller follows the models folder.
 * - stopping: the stop is under way (the watcher closed first, then the runtime's part).
 * - stopped: over; the server is stopped, or handed to another process that owns it now.
 */
export type RunPhase = "starting" | "ready" | "watching" | "stopping" | "stopped";

/**
 * What asking a run to stop did: the start was aborted before anything exists that outlives the
 * process (which may end at once), the start was aborted, the stop began, or it was already under way.
 */
export type StopRequest = "nothing-started" | "start-aborted" | "stopping" | "already-stopping";

/** What the lifecycle stops once ready: the runtime's part of the run (the server, or a watcher's port-forward). */
export type ReleaseRun = (reason: string) => Promise<void>;

export interface WatchInput {
  state: RunState;
  staging: StagingRepository;
  lintOptions: LintOptions;
  /** Triton's repository index as the run found it (the controller adopts those versions). */
  index: RepositoryIndexEntry[];
  /** Models not staged because lint refused them, with their errors: the timeline shows them refused. */
  refusals: Array<{ model: string; diagnostics: Diagnostic[] }>;
  /** Said on the bus once the watcher runs and before `watching` (a detached watcher's skipped models). */
  before?: (controller: ReloadController) => Promise<void> | void;
}

/**
 * What a run's reload controller is built from: the models folder's watcher and the client of the
 * run's server (factories, as both depend on the run), and the clock its waits run on. Defaulted;
 * a test replaces any of them.
 */
export interface ControllerParts {
  watcher?: (modelsDir: string, clock: Clock) => ModelWatcher;
  tritonClient?: (state: RunState) => TritonHttpClient;
  clock?: Clock;
}

export const defaultWatcher = (modelsDir: string, clock: Clock): ModelWatcher =>
  new RepositoryWatcher(modelsDir, { timers: clock });

/** The reload controller a run's watcher runs, the same in the foreground and in a detached run. */
export function createController(
  state: RunState,
  staging: StagingRepository,
  bus: EventBus<SessionEvent>,
  lint: LintOptions,
  parts: ControllerParts = {},
): ReloadController {
  const clock = parts.clock ?? REAL_CLOCK;
  return new ReloadController({
    modelsDir: state.modelsDir,
    watcher: (parts.watcher ?? defaultWatcher)(state.modelsDir, clock),
    staging,
    client: (parts.tritonClient ?? clientForRun)(state),
    clock,
    mode: state.reload,
    pollSecs: state.pollSecs,
    logFile: state.logFile,
    bus,
    lint,
    editsFile: editsFile(state),
    autoCompleteConfig: state.autoCompleteConfig !== false,
    userPaths: userPathsOf(state),
  });
}

/**
 * One run's life, with explicit phases. The start is interrupted through `signal`; once ready, a
 * stop closes the reload controller and then releases the runtime's part, once, however many
 * times and from wherever it is asked (a signal, the dashboard's `q`, the server exiting).
 */
export class RunLifecycle {
  #phase: RunPhase;
  #serverMayRun = false;
  readonly #interrupt = new AbortController();
  #release: ReleaseRun | undefined;
  #controller: ReloadController | undefined;
  #stopping: Promise<void> | undefined;
  #stopped!: () => void;
  readonly #beforeStop: Array<() => Promise<void>> = [];
  /** Resolves once the run is stopped (or handed over). */
  readonly stopped: Promise<void>;

  constructor(
    private readonly bus: EventBus<SessionEvent>,
    phase: "starting" | "ready" = "starting",
    private readonly parts: ControllerParts = {},
  ) {
    this.#phase = phase;
    this.stopped = new Promise<void>((resolve) => (this.#stopped = resolve));
  }

  get phase(): RunPhase {
    return this.#phase;
  }

  /** Aborted when a stop is asked for during the start; its reason says who asked. */
  get signal(): AbortSignal {
    return this.#interrupt.signal;
  }

  /** Whether something of the run may outlive this process if it ended now. */
  get serverMayRun(): boolean {
    return this.#serverMayRun;
  }

  /** The start has created what a stop must release (the run folder's staging, a server). */
  markServerMayRun(): void {
    this.#serverMayRun = true;
  }

  /** Run before the stop closes the watcher (the dashboard leaves the screen first). */
  beforeStop(step: () => Promise<void>): void {
    this.#beforeStop.push(step);
  }

  /**
   * The start succeeded: from now on a stop calls `release`. A stop asked for after the start's
   * last look at the signal begins now.
   */
  ready(release: ReleaseRun): void {
    if (this.#phase !== "starting") throw new Error(`a run becomes ready only while starting (it is ${this.#phase})`);
    this.#release = release;
    this.#phase = "ready";
    if (this.#interrupt.signal.aborted) void this.stop(String(this.#interrupt.signal.reason));
  }

  /** Attached to a run already ready (a detached run's watcher): `release` ends this process's part. */
  attached(release: ReleaseRun): void {
    if (this.#phase !== "ready" || this.#release)
      throw new Error(`a lifecycle attaches once, while ready (it is ${this.#phase})`);
    this.#release = release;
  }

  /** Ask the run to stop, whatever its phase: see StopRequest for what happened. */
  requestStop(reason: string): StopRequest {
    if (this.#phase === "stopping" || this.#phase === "stopped" || this.#interrupt.signal.aborted)
      return "already-stopping";
    if (this.#phase === "starting") {
      // The start ends at its next look at the signal; with nothing yet to release, the caller may
      // also end the process at once (a signal does).
      this.#interrupt.abort(reason);
      return this.#serverMayRun ? "start-aborted" : "nothing-started";
    }
    void this.stop(reason);
    return "stopping";
  }

  /**
   * Start hot reload: the reload controller adopts what Triton serves, then follows the models
   * folder. A stop that came first starts no watcher (it would keep the process alive).
   */
  async watch(input: WatchInput): Promise<ReloadController> {
    const controller = createController(input.state, input.staging, this.bus, input.lintOptions, this.parts);
    if (this.#phase !== "ready") {
      await controller.close();
      return controller;
    }
    this.#controller = controller;
    await controller.adopt(input.index);
    await controller.start();
    for (const r of input.refusals) controller.reportInitialRefusal(r.model, r.diagnostics);
    await input.before?.(controller);
    // A stop that began while the watcher started has closed it already.
    if (this.#phase !== "ready") return controller;
    this.#phase = "watching";
    this.bus.emit({ type: "watching", modelsDir: input.state.modelsDir, mode: input.state.reload });
    return controller;
  }

  /** Stop the run (safe to call twice, and from any phase after the start). */
  stop(reason = "stopped"): Promise<void> {
    if (this.#phase === "starting") throw new Error("a starting run is stopped through requestStop");
    this.#stopping ??= (async () => {
      this.#phase = "stopping";
      try {
        for (const step of this.#beforeStop) await step();
        await this.#controller?.close();
        await this.#release?.(reason);
      } finally {
        this.#phase = "stopped";
        this.#stopped();
      }
    })();
    return this.#stopping;
  }

  /** The run goes on without this process (handed to a detached run's watcher): stopped here, not stopped there. */
  handOver(): void {
    if (this.#phase !== "ready") throw new Error(`only a ready run is handed over (it is ${this.#phase})`);
    this.#phase = "stopped";
    this.#stopping = Promise.resolve();
    this.#stopped();
  }

  /** The start failed: whatever it created has been released by the start itself. */
  failed(): void {
    this.#phase = "stopped";
    this.#stopping = Promise.resolve();
    this.#stopped();
  }
}
