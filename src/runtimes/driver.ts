/**
 * The seam between `up` (src/session/) and the places Triton runs. One driver per runtime folder
 * (local/driver.ts, docker/driver.ts, kind/driver.ts), loaded on demand through registry.ts, owns
 * everything runtime-specific: its options, what can fail before anything exists (plan), the
 * started run, its part of the run record, re-attaching to a recorded run (status, down, the
 * detached run's watcher, liveness) and cleaning up what crashed runs left.
 *
 * Lifecycle states are types, as in testcontainers: `plan()` returns a PlannedRun whose `start()`
 * returns a StartedRun; nothing is read back from the driver afterwards.
 */
import type { Clock } from "../clock.js";
import type { Paths } from "../config/paths.js";
import type { ModelEnvironments } from "../envs/model-environments.js";
import type { RunState } from "../state/run-state.js";
import type { DriverEvent } from "../events/driver-event.js";
import type { WaitStrategy } from "../triton/readiness.js";
import type { DoctorCheck } from "./doctor-check.js";
import type { RuntimeFlags } from "./facts.js";
import type { RuntimeKind } from "../runtime-kind.js";

export type { RuntimeFlags } from "./facts.js";
export type { RuntimeKind } from "../runtime-kind.js";
export type { DriverEvent } from "../events/driver-event.js";
export type ReloadMode = "poll" | "explicit";

export interface Endpoints {
  http: string;
  grpc: string;
  metrics: string;
}

export interface Ports {
  http: number;
  grpc: number;
  metrics: number;
}

/** What a driver reports while it plans, starts or stops; `up` prints these or shows them in the dashboard. */
export type RuntimeEvent =
  | DriverEvent
  /** A step of a longer start or stop (kind: the cluster, image load, objects, pod, port-forward). */
  | { type: "progress"; runtime: RuntimeKind; step: string; message: string }
  /** Advice for a problem Triton reported in its log (e.g. /dev/shm too small). */
  | { type: "hint"; message: string };

export interface DriverContext {
  paths: Paths;
  env: NodeJS.ProcessEnv;
  emit: (e: RuntimeEvent) => void;
  /**
   * The time the runtime's waits run on (polls, deadlines, stop grace times): the session's clock,
   * handed to the runtime objects the driver builds; absent, the driver's own (REAL_CLOCK).
   */
  clock?: Clock;
}

/** What every runtime is asked for, whatever else it takes. */
export interface PlanInput {
  modelsDir: string;
  ports: Ports;
  host: string;
  reload: ReloadMode;
  pollSecs: number;
  /** How long the server may take to start (`--timeout`). */
  readyTimeoutMs: number;
}

export interface StartOptions {
  runId: string;
  runDir: string;
  /** The repository Triton serves (our staging copy, never the user's folder). */
  repository: string;
  ports: Ports;
  host: string;
  reload: ReloadMode;
  pollSecs: number;
  /** The key and, in `dir`, its file and the library that hands it to tritonserver (triton/key-shim.ts). */
  repositoryKey: { header: string; value: string; dir: string };
  logFile: string;
  /** false: start Triton with --disable-auto-complete-config (absent: Triton's default, on). */
  autoCompleteConfig?: boolean;
}

/** The run's folder on this machine, as the session built it: the staging repository and, beside it, the key. */
export interface RunFolderPaths {
  runDir: string;
  /** The staging repository (`<runDir>/repository`), with its snapshot store beside it. */
  repository: string;
}

/** What the delivery step settled: how the repository and its key reach the run's Triton. */
export interface Delivery {
  /** The key and, in `dir`, its file and the library that hands it to tritonserver (triton/key-shim.ts). */
  repositoryKey: StartOptions["repositoryKey"];
  /**
   * Where Triton sees the staging repository and its snapshots when not at their paths here (a
   * container's mounts, a pod's volume): Triton's messages name these paths, which the record
   * keeps so that every reader maps them back to the user's files.
   */
  tritonSees?: { repository: string; store: string };
}

/** A model whose unload a stop waits for, and why (its python model defines `finalize`). */
export interface UnloadWait {
  model: string;
  why: string;
}

/**
 * Of the model versions loaded when a stop begins, those whose unload runs the user's code
 * (repo/unload-code.ts). A stop given this ends the server once Triton has no inference in flight
 * and these have unloaded, instead of waiting for every unload; without it, it waits for them all.
 */
export type UnloadsToWaitFor = (loaded: ReadonlyArray<{ name: string; version?: string }>) => Promise<UnloadWait[]>;

/** What a stop did: `down --json`'s `stop`, the `stopped` event. */
export interface StopOutcome {
  /** From the stop's start until nothing of the server was left. */
  ms: number;
  /** The models whose unload it waited for (absent: it waited for every unload, knowing nothing of the models). */
  waitedFor?: UnloadWait[];
  /**
   * "exited": Triton exited by itself; "ended": ended once nothing of the user's was left to run (no
   * inference in flight, the unloads in `waitedFor` done); "unloaded": ended once every model had
   * unloaded; "killed": killed past the grace time; "gone": nothing was running.
   */
  ended: "exited" | "ended" | "unloaded" | "killed" | "gone";
}

/** A started server. `stop()` is safe to call twice. */
export interface ServerHandle {
  readonly pid: number | undefined;
  readonly endpoints: Endpoints;
  /** Resolves when the server process exits, with its exit code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * `onProgress`: what the stop waits for, when it takes longer than a second (the models still
   * unloading); `waitFor`: which unloads it needs to wait for (absent: all).
   */
  stop(
    graceMs?: number,
    onProgress?: (message: string) => void,
    waitFor?: UnloadsToWaitFor,
  ): Promise<StopOutcome | undefined>;
  /** Let this CLI exit while the server keeps running (a detached run). */
  release(): void;
}

/** Everything planning found out; nothing exists yet. */
export interface PlannedRun {
  /** A server of an earlier `up` that fits and keeps running (docker reattach): its run folder, which holds its key. */
  readonly reuse?: { runId: string; runDir: string };
  /** GPUs the server will see: 0 none, undefined when unknown (taken as some). */
  readonly gpus: number | undefined;
  /** Why a KIND_GPU model is left out when the server has no GPU. */
  readonly gpuSkipReason: string;
  /**
   * The backends found in the image the server runs, where its name does not tell them (docker:
   * image-backends.ts): a model whose backend is not among them is skipped, saying where it runs.
   */
  readonly imageBackends?: readonly string[];
  /** Triton's config auto-complete may be turned off when no model needs it (it costs every python load a second). */
  readonly canDisableAutoComplete: boolean;
  /** Run on each staged model folder before Triton sees it (local: precompile for the stub's Python). */
  readonly prepareStaged?: (dir: string) => Promise<void>;
  /**
   * Builds the environment a python model's requirements.txt asks for (local). Absent: the
   * runtime's Python is not ours to install into, and `up` says so for each model that has one.
   */
  readonly environments?: ModelEnvironments;
  /**
   * Step "deliver": make the staged repository and the run's key reachable by the Triton `start`
   * runs (a folder it reads directly, a container's mount, a kind node's hostPath, a copy into a
   * remote pod's volume, made by `start` itself or its sidecar). A reused server keeps the key its
   * folder holds. Nothing outside the run folder is created here.
   */
  deliver(folder: RunFolderPaths): Promise<Delivery>;
  /** Starts the server (or reattaches); cleans up what it created if that fails. */
  start(o: StartOptions): Promise<StartedRun>;
  /** Advice for a server that exited during start, from its log. */
  startHint(logFile: string): string | undefined;
}

/** What a readiness strategy may look at: where the server answers, and a client for it. */
export interface ReadinessInput {
  readonly host: string;
  readonly ports: Ports;
  readonly client: { isLive(): Promise<boolean>; isReady(): Promise<boolean> };
}

export interface StartedRun {
  readonly handle: ServerHandle;
  /** What liveness compares a recorded pid with (local: the tritonserver binary). */
  readonly executable: string;
  /** This runtime's part of the run record, validated by its driver's schema when attached again. */
  readonly record: unknown;
  /** Something went differently than asked, but the run is fine (e.g. memlock refused). */
  readonly notices?: string[];
  /**
   * What "started" means for this run (triton/readiness.ts strategies; a pod's in
   * clients/kubectl/pod-readiness.ts). The session waits for it on its clock, within --timeout,
   * before it reads the models; a failed or interrupted wait ends with `handle.stop()`.
   */
  readiness(o: ReadinessInput): WaitStrategy;
}

/**
 * How `status` and `down` describe a run. `Fields` are the runtime's own `status --json` fields,
 * typed by its driver (docker's `container`, kind's `cluster`, the cluster runtime's `kubernetes`).
 */
export interface RunDescription<Fields extends Record<string, unknown> = Record<string, unknown>> {
  /** Short: `pid 123`, `container NAME`, `kind cluster NAME`. */
  where: string;
  /** What is gone when the run's server is no longer there. */
  goneWhat: string;
  /** Extra `status` lines, label and text. */
  lines: Array<[string, string]>;
  /** Extra `status --json` fields, beside the session's own. */
  json: Fields;
  /** Prometheus and Grafana started beside the server (`status` shows them). */
  monitoring?: { prometheus: string; grafana: string };
  /**
   * What the driver told `up`'s dashboard while the run started and a dashboard attached later
   * should show too (docker: the monitoring stack's addresses), as the driver words it.
   */
  startEvents?: DriverEvent[];
}

export interface StopReport {
  /** Said after "stopped Triton (": what happened to the runtime's resources. */
  what: string;
  /** What happened to them when the server was already gone. */
  staleWhat: string;
  /** Extra fields of `down --json`'s `stopped` object (`container`, `cluster`). */
  json: Record<string, unknown>;
  /** Extra top-level fields of `down --json` (`clusterDeleted`). */
  summary?: Record<string, unknown>;
  /** What the server's stop did (absent where the runtime cannot say: a cluster deleted outright). */
  outcome?: StopOutcome;
}

/** What a detached run's watcher needs from the runtime while the run lasts. */
export interface Supervision {
  prepareStaged?: (dir: string) => Promise<void>;
  /** See PlannedRun.environments: edits of requirements.txt in a detached run. */
  environments?: ModelEnvironments;
  /** Resolves when the run ends on its own (kind: the Deployment is gone); absent: the watcher polls liveness. */
  ended?: Promise<void>;
  stop(): Promise<void>;
}

/** A recorded run, found again from another process. */
export interface AttachedRun {
  readonly state: RunState;
  alive(): Promise<boolean>;
  describe(): RunDescription;
  /** Whether a new `up` of `kind` for `modelsDir` takes this (detached) run over instead of refusing. */
  handsOverTo(kind: RuntimeKind, modelsDir: string): boolean;
  /**
   * Read what the stop needs while the run's watcher still holds its connection to Triton (kind:
   * the loaded models, through the watcher's port-forward); `down` calls it before it stops the watcher.
   */
  beforeStop?(): Promise<void>;
  /**
   * `down`: stop the server and remove what the run created (safe when it is already gone);
   * `onProgress` and `waitFor` as ServerHandle.stop's.
   */
  stop(graceMs: number, onProgress?: (message: string) => void, waitFor?: UnloadsToWaitFor): Promise<StopReport>;
  /** Resume the runtime's part of a detached run in the watcher process. */
  supervise(): Promise<Supervision>;
}

/** What `down` found left by crashed runs and removed. */
export interface Leftovers {
  /** `down --json` keys, each with what was removed. */
  json: Record<string, Array<string | number>>;
  /** One line each, for what was found. */
  lines: string[];
}

export interface AutoVerdict {
  chosen: boolean;
  why: string;
}

export interface RuntimeDriver<Options = unknown> {
  readonly kind: RuntimeKind;
  /** The runtime's flags of `up`, defaults filled in; a flag it does not take is refused. */
  options(flags: RuntimeFlags): Options;
  /**
   * `--runtime auto`, for a runtime whose facts say `auto: "probe"`: whether it is the one, and
   * why (said to the user either way); throws a UserError when the flags need it and it cannot run.
   */
  autoChoice?(flags: RuntimeFlags, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<AutoVerdict>;
  /** Everything that can fail before anything exists: prerequisites, image, cluster, GPUs, ports, reuse. */
  plan(input: PlanInput, options: Options, ctx: DriverContext): Promise<PlannedRun>;
  /** A recorded run of this runtime; its part of the record is validated here. */
  attach(state: RunState, ctx: Omit<DriverContext, "emit">): AttachedRun;
  /**
   * `triton-dev doctor`: this runtime's prerequisites. The checks of the runtime `auto` falls back
   * to fail `doctor`; the others' are warnings (only a run of that runtime needs them).
   */
  doctor?(ctx: Omit<DriverContext, "emit">): Promise<DoctorCheck[]>;
  /**
   * Remove what crashed runs of this state folder left; `down` asks after stopping the recorded
   * run, so everything of ours still there is left over. Quiet when the runtime is absent.
   */
  cleanup(graceMs: number, ctx: Omit<DriverContext, "emit">): Promise<Leftovers>;
}
