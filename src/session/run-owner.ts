import fs from "node:fs";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import type { Paths } from "../config/paths.js";
import type { EventBus } from "../events/bus.js";
import { detectNvidiaGpus } from "../gpu/detect.js";
import { log as rootLog } from "../log/logger.js";
import type { ReloadController } from "../reload/controller.js";
import { StagingRepository } from "../reload/stage.js";
import { lintModel } from "../repo/lint.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";
import { stripTritonPrefix, tailLines } from "../state/log-file.js";
import type { RunState } from "../state/run-state.js";
import { clientForRun, type TritonHttpClient } from "../triton/http-client.js";
import { currentRun } from "./current-run.js";
import type { SessionEvent } from "./events.js";
import { RunLifecycle, type ControllerParts } from "./lifecycle.js";
import { eventWriter, takeReloadRequest } from "./run-events.js";
import { adaptersFor, lintOptionsFor, startSession, type Session, type UpOptions } from "./session.js";

const log = rootLog.child("run-owner");

/**
 * Everything that can end a run or act on it, from wherever it comes. The one file that answers
 * "what happens when a run ends" is this one: `dispatch` below.
 */
export type RunTrigger =
  /** SIGINT, SIGTERM or SIGHUP to this process. */
  | { type: "signal"; signal: NodeJS.Signals }
  /** The server exited by itself (crashed, or `down` from another shell) while this process owned it. */
  | { type: "server-exited"; code: number | null; signal: NodeJS.Signals | null }
  /** A detached run's liveness poll found the server gone. */
  | { type: "liveness-lost" }
  /** The runtime said the run ended (kind: its Deployment is gone). */
  | { type: "ended" }
  /** `q` (or Ctrl-C in raw mode) in the dashboard. */
  | { type: "dashboard-quit" }
  /** Reload a model now: the dashboard's `r`, or an attached dashboard's request (SIGUSR2) when `model` is absent. */
  | { type: "reload-request"; model?: string };

/** Where signals come from and how one is raised again (a test passes an EventEmitter and a recorder). */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

/** What a run owner is built from; each is defaulted, and a test replaces any of them. */
export interface RunOwnerParts extends ControllerParts {
  runtimes?: Runtimes;
  signals?: SignalSource;
  /** Ends this process with `signal` (an interruption before anything outlives it). */
  reraise?: (signal: NodeJS.Signals) => void;
  /** How often a runtime that cannot say when its run ends is asked whether the server lives. */
  alivePollMs?: number;
}

const STOP_SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/**
 * The one owner of a run, in every process that holds one: the foreground `up` (and its
 * dashboard) and a detached run's watcher construct it, feed it triggers through `dispatch` and
 * render the events it says on the bus. Its phases are RunLifecycle's.
 */
export class RunOwner {
  readonly lifecycle: RunLifecycle;
  readonly clock: Clock;
  readonly runtimes: Runtimes;
  /** Set when the server ended the run badly (a crash): the command exits 1. */
  failed = false;
  #state: RunState | undefined;
  #controller: ReloadController | undefined;
  #listening = false;
  #listened: readonly NodeJS.Signals[] = [];
  readonly #signals: SignalSource;
  readonly #reraise: (signal: NodeJS.Signals) => void;
  readonly #onSignal = (signal: NodeJS.Signals) => this.dispatch({ type: "signal", signal });
  readonly #onReloadSignal = () => this.dispatch({ type: "reload-request" });
  #cleanups: Array<() => void> = [];

  constructor(
    private readonly bus: EventBus<SessionEvent>,
    private readonly parts: RunOwnerParts = {},
    phase: "starting" | "ready" = "starting",
  ) {
    this.clock = parts.clock ?? REAL_CLOCK;
    this.runtimes = parts.runtimes ?? RUNTIMES;
    this.#signals = parts.signals ?? process;
    this.#reraise = parts.reraise ?? ((signal) => process.kill(process.pid, signal));
    this.lifecycle = new RunLifecycle(bus, phase, parts);
  }

  /** Every trigger, one place: what each does depends on the run's phase. */
  dispatch(trigger: RunTrigger): void {
    switch (trigger.type) {
      case "signal": {
        const asked = this.lifecycle.requestStop(`received ${trigger.signal}`);
        if (asked === "already-stopping") return;
        if (asked === "nothing-started") {
          // Until the models are staged nothing outlives this process: it ends at once, as it always did.
          this.unlisten();
          this.#reraise(trigger.signal);
          return;
        }
        // Removed only after this signal is handled: signal-exit (execa's and Ink's exit hook)
        // re-raises a signal it finds no other listener for, which would kill this process
        // before it stops the server. A second Ctrl-C later still ends it at once.
        setImmediate(() => this.unlisten());
        return;
      }
      case "dashboard-quit":
        if (this.lifecycle.requestStop("quit from the dashboard") !== "already-stopping") this.unlisten();
        return;
      case "server-exited":
        void this.#serverExited(trigger.code, trigger.signal);
        return;
      case "liveness-lost":
        this.lifecycle.requestStop("the server is gone");
        return;
      case "ended":
        this.lifecycle.requestStop("the run ended");
        return;
      case "reload-request": {
        const model = trigger.model ?? (this.#state ? takeReloadRequest(this.#state) : undefined);
        if (model) this.#controller?.reload(model);
        return;
      }
      default: {
        const never: never = trigger;
        throw new Error(`a run trigger nobody handles: ${JSON.stringify(never)}`);
      }
    }
  }

  /** Stopped from another shell (`down`) or crashed: the run is over, and so is everything that served it. */
  async #serverExited(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (this.lifecycle.phase === "stopping" || this.lifecycle.phase === "stopped") return;
    this.unlisten();
    // The watcher would otherwise keep this process acting on edits for a server that is gone
    // (and the python stubs of a killed server are stopped with it).
    const lines = this.#state ? (await tailLines(this.#state.logFile, 8)).map(stripTritonPrefix) : [];
    this.bus.emit({ type: "server-exited", code, signal, lastLines: lines });
    if (signal !== "SIGTERM" && code !== 0) this.failed = true;
    await this.lifecycle.stop("the server exited");
  }

  /** Signals end the run from now on (SIGINT, SIGTERM, SIGHUP; a detached watcher has no terminal to hang up). */
  listen(signals: readonly NodeJS.Signals[] = STOP_SIGNALS): void {
    if (this.#listening) return;
    this.#listening = true;
    this.#listened = signals;
    for (const s of signals) this.#signals.on(s, this.#onSignal);
  }

  /** Signals are no longer this run's (it is stopping, or handed to a detached watcher). */
  unlisten(): void {
    if (!this.#listening) return;
    this.#listening = false;
    for (const s of this.#listened) this.#signals.off(s, this.#onSignal);
  }

  /** The foreground start (session/session.ts), interrupted by the triggers above. */
  async start(paths: Paths, o: Omit<UpOptions, "lifecycle" | "clock">, env: NodeJS.ProcessEnv): Promise<Session> {
    try {
      const session = await startSession(
        paths,
        { ...o, lifecycle: this.lifecycle, clock: this.clock },
        this.bus,
        env,
        this.runtimes,
      );
      this.#state = session.state;
      return session;
    } catch (err) {
      this.unlisten();
      throw err;
    }
  }

  /** The run goes on without this process (a detached run's watcher takes it). */
  handOver(session: Session): void {
    this.unlisten();
    session.handle.release();
    this.lifecycle.handOver();
  }

  /** Watch the models folder of the started run; a server that exits ends the run. */
  async watch(session: Session): Promise<ReloadController | undefined> {
    void session.handle.exited.then((e) => this.dispatch({ type: "server-exited", code: e.code, signal: e.signal }));
    const controller = await session.watch();
    // A trigger during watch() stopped the run while the watcher was starting.
    if (this.stopping) {
      await controller.close();
      return undefined;
    }
    this.#controller = controller;
    return controller;
  }

  get stopping(): boolean {
    return this.lifecycle.phase === "stopping" || this.lifecycle.phase === "stopped";
  }

  /**
   * A detached run's watcher: joins the recorded run once ready, runs the same reload controller
   * as a foreground `up`, and ends with the run (liveness lost, the runtime saying it ended) or a
   * signal. Its stop ends this process's part (the watcher, the runtime's supervision), never the server.
   */
  async supervise(paths: Paths, env: NodeJS.ProcessEnv): Promise<void> {
    const run = await currentRun(paths, env, this.runtimes, this.clock);
    if (!run?.alive) {
      log.warn("no running server to supervise");
      return;
    }
    const state = run.state;
    this.#state = state;
    log.info("supervising the run", { runId: state.runId, runtime: state.runtime });
    // What the runtime keeps going while the run is detached (kind: the port-forward and log
    // follower; docker: the container's log copied into the log file).
    const supervision = await run.run.supervise();
    const adapters = adaptersFor(state.runtime, supervision.environments, () => state.autoCompleteConfig !== false);
    const staging = new StagingRepository(state.runDir, {
      ...(supervision.prepareStaged ? { prepare: supervision.prepareStaged } : {}),
      ...(supervision.environments ? { environments: supervision.environments } : {}),
      ...(adapters ? { adapters } : {}),
    });
    await staging.load();
    log.info("the runtime's supervision is up and the staging repository read");
    // Recorded for `triton-dev dashboard`, which replays and follows them.
    this.bus.on(eventWriter(state));
    this.lifecycle.attached(() => supervision.stop());
    const lintOptions = lintOptionsFor(
      state.runtime,
      state.gpus ?? (await detectNvidiaGpus()),
      state.autoCompleteConfig !== false,
      state.image,
      state.imageBackends,
    );
    const index = await this.#client(state)
      .repositoryIndex()
      .catch(() => []);
    this.#controller = await this.lifecycle.watch({
      state,
      staging,
      lintOptions,
      index,
      refusals: [],
      // What `up` left out, into the timeline and the events an attached dashboard replays, as a
      // foreground `up` reports it to its own dashboard.
      before: async (controller) => {
        log.info("watching; reporting the models up did not serve", { models: (state.notServed ?? []).length });
        for (const n of state.notServed ?? []) {
          if (n.why === "skipped") {
            this.bus.emit({ type: "skipped", model: n.model, reason: n.reason, diagnostics: [] });
            continue;
          }
          const lint = await lintModel(state.modelsDir, n.model, lintOptions).catch(() => undefined);
          const errors =
            lint?.models.find((m) => m.name === n.model)?.diagnostics.filter((d) => d.severity === "error") ?? [];
          controller.reportInitialRefusal(n.model, errors);
        }
      },
    });
    fs.writeFileSync(supervisorReadyFile(state), String(process.pid));
    log.info("ready");
    // A runtime that knows when its run ends says so; otherwise liveness is polled.
    const timer = supervision.ended
      ? undefined
      : this.clock.setInterval(() => {
          void run.run.alive().then((alive) => alive || this.dispatch({ type: "liveness-lost" }));
        }, this.parts.alivePollMs ?? 1000);
    void supervision.ended?.then(() => this.dispatch({ type: "ended" }));
    this.listen(["SIGTERM", "SIGINT"]);
    // An attached dashboard's `r`.
    this.#signals.on("SIGUSR2", this.#onReloadSignal);
    this.#cleanups.push(() => this.#signals.off("SIGUSR2", this.#onReloadSignal));
    await this.lifecycle.stopped;
    this.clock.clearInterval(timer);
    this.unlisten();
    for (const c of this.#cleanups.splice(0)) c();
  }

  #client(state: RunState): TritonHttpClient {
    return (this.parts.tritonClient ?? clientForRun)(state);
  }
}

/** The owner of one run; see RunOwner. */
export function createRunOwner(
  bus: EventBus<SessionEvent>,
  parts: RunOwnerParts = {},
  phase: "starting" | "ready" = "starting",
): RunOwner {
  return new RunOwner(bus, parts, phase);
}

/** Written once a detached run's watcher watches: `up --detach` returns then, so no save is missed. */
export function supervisorReadyFile(state: RunState): string {
  return path.join(state.runDir, "supervisor.ready");
}
