import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { resolvePaths } from "../config/paths.js";
import { BugError, UsageError, UserError } from "../errors.js";
import { urlHost } from "../net/url.js";
import type { RunState } from "../state/run-state.js";
import type { ParameterValue, RawTensor } from "../triton/binary.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import { clientForRun, type ModelMetadata, type TritonHttpClient } from "../triton/http-client.js";
import { isUnknownModelError, isUnreachableError, type ControlClient } from "./control.js";
import { detectGpuProbe, type GpuProbe } from "./gpu.js";
import { historyRoot, previousComparable, saveRun } from "./history.js";
import { readInputData } from "./input-data.js";
import { buildPayloads, leftOutInputs, resolveInputs, type InputDataSource } from "./inputs.js";
import type { Distribution } from "./load.js";
import { findPerfAnalyzer, runPerfAnalyzerLevel } from "./perf-analyzer.js";
import {
  AllFailingError,
  InterruptedError,
  ServerGoneError,
  measureLevel,
  defaultWarmup,
  type LevelKind,
  type LevelResult,
  type ProfileContext,
} from "./profile.js";
import { compareSweeps, diffSweeps, type ComparisonRow, type LevelDiff, type SweepResult } from "./report.js";
import { breakdown, diffSnapshots, snapshotOf } from "./server-stats.js";
import {
  checkSequenceIds,
  describeSequences,
  SEQUENCE_DEFAULTS,
  SequenceIds,
  type SequenceSettings,
} from "./sequences.js";
import { checkSharedMemoryTarget, removeLeftovers, SystemShmSession, type SharedMemoryMode } from "./shared-memory.js";
import type { ShmTensorRef } from "../triton/system-shm.js";
import { InferFailedError, type InferTransport } from "./transport.js";
import type { Protocol } from "./protocol.js";
import { protocolDescriptor, type ProtocolDescriptor, type StreamPlan } from "./protocol-descriptor.js";
import { GrpcStreamTransport } from "./stream-load.js";
import { windowProgressLine } from "./stream-report.js";
import { HttpGenerateStreamTransport } from "./generate-stream.js";
import { userPathsOf } from "../state/staged-paths.js";
import {
  planVariants,
  removeVariant,
  stageVariant,
  VariantError,
  lintOfRun,
  type CompareSpec,
  type StagingTarget,
  type Variant,
} from "./variants.js";

export interface PerfOptions {
  model: string;
  /** `-x`: one version of the model; absent, the version Triton picks (the highest it serves). */
  version?: string;
  /** HOST:PORT of the endpoint for `protocol`; the `up` server when absent. */
  url?: string;
  protocol: Protocol;
  kind: LevelKind;
  levels: number[];
  distribution: Distribution;
  windowMs: number;
  stabilityPct: number;
  maxTrials: number;
  /**
   * The longest each level warms up before its measured windows (`profile.ts` WarmupRule); absent:
   * three measurement windows; 0: no warm-up.
   */
  maxWarmupMs?: number;
  batchSize: number;
  shapes: Record<string, number[]>;
  inputData: InputDataSource;
  stringLength: number;
  priority?: number;
  /** `--request-parameter`: parameters sent with every request, the probe's included. */
  requestParameters?: Record<string, ParameterValue>;
  /** Triton's per-request `timeout` parameter, in microseconds. */
  timeoutUs?: number;
  compare?: CompareSpec;
  compareText?: string;
  engine: "builtin" | "perf_analyzer";
  perfAnalyzer?: string;
  metricsUrl?: string;
  /** Open loop: connections (and requests in flight) at most. */
  maxInFlight: number;
  keepHistory: boolean;
  /** system: inputs written once into registered POSIX shm regions, requests only name them. */
  sharedMemory?: SharedMemoryMode;
  /** A stateful model's sequences, as given on the command line (the rest defaulted). */
  sequence?: Partial<SequenceSettings>;
}

/**
 * The run `triton-dev up` recorded, which perf measures when no -u is given. The caller finds it
 * (session/measured-run.ts `recordedRun`), so perf, below the session, imports nothing of it.
 */
export interface MeasuredRun {
  /** The recorded run, undefined when none is; `alive` false when its server is gone. */
  find(): Promise<{ state: RunState; alive: boolean } | undefined>;
  /** What the run knows of a model Triton's index lacks (refused, skipped, withdrawn): its state and why. */
  model(name: string): Promise<{ state: string; reason?: string } | undefined>;
}

export interface PerfDeps {
  env: NodeJS.ProcessEnv;
  /** The run measured without -u, and what it knows of its models. */
  run: MeasuredRun;
  signal?: AbortSignal;
  progress?: (line: string) => void;
  /** The built-in engine's `ProfileContext.stopEarly` (tune's early rejection); perf never sets it. */
  stopLevelEarly?: ProfileContext["stopEarly"];
  /** The time the waits for a model's load run on (../clock.ts); measurements read performance.now(). */
  clock?: Clock;
}

export interface PerfReport {
  model: string;
  compare?: string;
  sweeps: SweepResult[];
  comparison?: ComparisonRow[];
  previous?: { id: string; savedAt: string; diffs: LevelDiff[] };
  savedTo?: string;
  /** Why the run ended early, when it did (the results measured until then are kept). */
  stopped?: SweepResult["stopped"];
}

interface Target {
  host: string;
  port: number;
  /** What `-i` means: chosen once, in resolveTarget; nothing below asks for the protocol's name. */
  wire: ProtocolDescriptor;
  endpoint: string;
  control: ControlClient;
  metricsUrl?: string;
  state?: RunState;
  /** The managed server's HTTP client, holding the key of the repository API. */
  repoClient?: TritonHttpClient;
  /** The managed server's gRPC endpoint, where a decoupled model is streamed to whatever `-i` says. */
  grpcEndpoint?: string;
}

/** HOST:PORT, [v6]:PORT, or a URL with a scheme. */
export function parseUrlFlag(value: string): { host: string; port: number } {
  const v = value.replace(/^[a-z]+:\/\//i, "").replace(/\/.*$/, "");
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(v);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535)
    throw new UsageError(`-u must be HOST:PORT, got '${value}'`, {
      hint: "For example -u 127.0.0.1:8000 (HTTP) or -u 127.0.0.1:8001 -i grpc.",
    });
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) };
}

async function resolveTarget(o: PerfOptions, recorded: MeasuredRun): Promise<Target> {
  let host: string;
  let port: number;
  let state: RunState | undefined;
  let metricsUrl = o.metricsUrl;
  const wire = protocolDescriptor(o.protocol);
  if (o.url) {
    ({ host, port } = parseUrlFlag(o.url));
    metricsUrl ??= `http://${urlHost(host)}:8002/metrics`;
  } else {
    const run = await recorded.find();
    if (!run) {
      throw new UserError("nothing is running, so there is no server to measure", {
        hint: "Start Triton with `triton-dev up --detach`, or point perf at a server with -u HOST:PORT.",
      });
    }
    if (!run.alive) {
      throw new UserError(`the recorded server (pid ${run.state.pid}) is no longer running`, {
        hint: "`triton-dev down` cleans up its record; start a new one with `triton-dev up`.",
      });
    }
    state = run.state;
    host = state.host;
    port = wire.port(state.ports);
    metricsUrl ??= `http://${urlHost(host)}:${state.ports.metrics}/metrics`;
  }
  // Before anything is sent: a region the server cannot open would only fail later, less clearly.
  if (o.sharedMemory === "system")
    checkSharedMemoryTarget({ host, ...(o.url ? { url: o.url } : {}), ...(state ? { state } : {}) });
  const located = {
    host,
    port,
    endpoint: `${urlHost(host)}:${port}`,
    ...(state ? { state, grpcEndpoint: `${urlHost(host)}:${state.ports.grpc}` } : {}),
  };
  return {
    ...located,
    wire,
    control: wire.control(located),
    ...(metricsUrl ? { metricsUrl } : {}),
    ...(state ? { repoClient: clientForRun(state) } : {}),
  };
}

async function checkModel(
  t: Target,
  model: string,
  recorded: MeasuredRun,
  version: string | undefined,
  clock: Clock,
): Promise<void> {
  if (!(await t.control.isLive())) {
    throw new UserError(`Triton at ${t.endpoint} (${t.wire.name}) is not answering`, {
      hint: t.state
        ? "See `triton-dev status` and `triton-dev logs`."
        : "Check the address and protocol: -u HOST:PORT names the HTTP port with -i http, the gRPC port with -i grpc.",
    });
  }
  if (await t.control.isModelReady(model, version)) return;
  if (t.repoClient) {
    let index = await t.repoClient.repositoryIndex();
    const find = () => index.find((e) => e.name === model && (!version || e.version === version));
    let entry = find();
    if (version && !entry && index.some((e) => e.name === model)) {
      const served = index
        .filter((e) => e.name === model && e.version)
        .map((e) => `${e.version} (${e.state ?? "UNKNOWN"})`);
      throw new UserError(`version ${version} of ${model} is not served`, {
        hint: `Its versions: ${served.join(", ") || "none"}. Which versions Triton serves is the config's version_policy (default: the latest).`,
      });
    }
    // A model that is (re)loading right now gets a moment to settle: it may be about to serve.
    for (
      const deadline = clock.now() + 30_000;
      (entry?.state === "LOADING" || entry?.state === "UNLOADING") && clock.now() < deadline;
    ) {
      await clock.sleep(250);
      index = await t.repoClient.repositoryIndex();
      entry = find();
    }
    if (entry?.state === "READY" && (await t.control.isModelReady(model, version))) return;
    if (!entry) {
      // Models `up` left out (refused, skipped, or withdrawn after a failed first load) are not
      // in Triton's index, but the run knows why.
      const known = t.state ? await recorded.model(model).catch(() => undefined) : undefined;
      if (known) {
        throw new UserError(
          `model '${model}' is not ready (${known.state}${known.reason ? `: ${known.reason}` : ""})`,
          {
            hint: "Fix it (see `triton-dev status` and `triton-dev logs`); it loads when you save the fix.",
          },
        );
      }
      throw new UserError(`model '${model}' is not in the repository Triton serves`, {
        hint: `Its models: ${index.map((e) => e.name).join(", ") || "(none)"}.`,
      });
    }
    throw new UserError(
      `model '${model}' is not ready (${entry.state ?? "UNKNOWN"}${entry.reason ? `: ${entry.reason}` : ""})`,
      {
        hint: "Fix it (see `triton-dev logs`) and wait until `triton-dev status` shows it READY.",
      },
    );
  }
  try {
    await t.control.modelMetadata(model);
  } catch (err) {
    if (isUnknownModelError(err))
      throw new UserError(`model '${model}' is not served by Triton at ${t.endpoint}`, {
        hint: "Check the model name (it is the folder name in the repository).",
      });
  }
  throw new UserError(`model '${model}' is not ready on Triton at ${t.endpoint}`, {
    hint: "Wait until it has loaded, or look at the server's log for why it failed.",
  });
}

interface ModelSetup {
  metadata: ModelMetadata;
  config: ModelConfigSummary;
  composing: string[];
  payloads: RawTensor[][];
  /** A decoupled model: how its requests stream. */
  stream?: StreamPlan;
  /** A stateful model (sequence batching): how its sequences are made. */
  sequence?: SequenceSettings;
}

/**
 * A stateful model's sequences: the flags given, else perf_analyzer's defaults, except that with
 * --input-data and no --sequence-length, each sequence sends those steps in order
 * (perf_analyzer's rule too).
 */
function sequenceSettings(o: PerfOptions, dataSteps: number): SequenceSettings {
  const given = o.sequence ?? {};
  const fromData = given.length === undefined && dataSteps > 0;
  return {
    ...SEQUENCE_DEFAULTS,
    ...given,
    ...(fromData ? { length: dataSteps, variationPct: given.variationPct ?? 0 } : {}),
  };
}

async function prepareModel(
  t: Target,
  o: PerfOptions,
  served: string,
  progress?: (line: string) => void,
): Promise<ModelSetup> {
  const [metadata, config] = await Promise.all([
    t.control.modelMetadata(served, o.version),
    t.control.modelConfig(served, o.version),
  ]);
  const composing = [...new Set((config.ensemble_scheduling?.step ?? []).map((s) => s.model_name))];
  const data = typeof o.inputData === "object" ? await readInputData(o.inputData.file) : o.inputData;
  const inputs = resolveInputs(metadata, config, {
    batchSize: o.batchSize,
    shapes: o.shapes,
    ...(typeof data === "object" ? { steps: data.steps } : {}),
    optional: new Set((config.input ?? []).filter((i) => i.optional).map((i) => i.name)),
  });
  const leftOut = leftOutInputs(metadata, inputs);
  if (leftOut.length)
    progress?.(`${served}: optional input(s) not sent: ${leftOut.join(", ")} (a --shape or --input-data sends one)`);
  const payloads = await buildPayloads(inputs, config.max_batch_size > 0, {
    batchSize: o.batchSize,
    shapes: o.shapes,
    data,
    stringLength: o.stringLength,
  });
  if (o.sequence && !config.sequence_batching)
    progress?.(`${served} is not a stateful model (no sequence_batching): the sequence flags are not used`);
  let sequence: SequenceSettings | undefined;
  if (config.sequence_batching) {
    if (o.batchSize > 1)
      throw new UsageError(
        `${served} is a stateful model, whose sequence batcher takes one request per sequence step`,
        {
          hint: "Leave out -b (batch size 1): the batches Triton forms of several sequences are what its batch column shows.",
        },
      );
    if (config.sequence_batching.iterative_sequence) {
      if (o.sequence?.length !== undefined || o.sequence?.variationPct !== undefined)
        progress?.(
          `${served} is an iterative-sequence model: each request is a whole sequence, so --sequence-length and --sequence-length-variation are not used`,
        );
      if (o.engine === "perf_analyzer")
        throw new UsageError(
          `${served} is an iterative-sequence model (sequence_batching { iterative_sequence: true }), which perf_analyzer cannot drive: it sends END on a sequence's last request, and Triton then refuses the request the model reschedules`,
          {
            hint: "Measure it with the built-in generator (leave out --engine perf_analyzer): each request starts its own sequence.",
          },
        );
    }
    sequence = config.sequence_batching.iterative_sequence
      ? { ...SEQUENCE_DEFAULTS, ...o.sequence, length: 1, variationPct: 0, iterative: true }
      : sequenceSettings(o, typeof data === "object" ? data.steps.length : 0);
    // Before anything is measured: a level needing more ids than the range holds would fail midway.
    const open = o.kind === "concurrency" ? Math.max(...o.levels) : sequence.rateSequences;
    checkSequenceIds(open, new SequenceIds(sequence).capacity);
  }
  // A decoupled model streams; the protocol's descriptor says over which route.
  const parameters = requestParameters(o, true);
  return {
    metadata,
    config,
    composing,
    payloads,
    ...(config.decoupled
      ? {
          stream: t.wire.streamRoute(t, {
            name: served,
            metadata,
            config,
            payloads,
            ...(parameters ? { parameters } : {}),
          }),
        }
      : {}),
    ...(sequence ? { sequence } : {}),
  };
}

/** The parameters of every request; `scheduling`: with priority and timeout (the probe goes without). */
function requestParameters(o: PerfOptions, scheduling: boolean): Record<string, ParameterValue> | undefined {
  const p: Record<string, ParameterValue> = { ...o.requestParameters };
  if (!scheduling) return Object.keys(p).length ? p : undefined;
  if (o.priority !== undefined) p.priority = o.priority;
  if (o.timeoutUs !== undefined) p.timeout = o.timeoutUs;
  return Object.keys(p).length ? p : undefined;
}

function transportFactory(
  t: Target,
  served: string,
  payloads: RawTensor[][],
  o: PerfOptions,
  withParameters = true,
  extras: { sharedMemory?: ShmTensorRef[][]; stream?: StreamPlan } = {},
): (maxConnections: number) => InferTransport {
  const parameters = requestParameters(o, withParameters);
  return (maxConnections) => {
    const opts = {
      model: served,
      ...(o.version ? { version: o.version } : {}),
      payloads,
      maxConnections,
      ...(parameters ? { parameters } : {}),
      ...(extras.sharedMemory ? { sharedMemory: extras.sharedMemory } : {}),
      // Errors a model raises name the staged copy of its model.py: shown as the user's file.
      ...(t.state ? { userPaths: userPathsOf(t.state) } : {}),
    };
    const stream = extras.stream;
    if (stream?.via === "ModelStreamInfer") return new GrpcStreamTransport(stream.endpoint, opts);
    if (stream?.via === "generate_stream") return new HttpGenerateStreamTransport(t.host, t.port, stream.bodies, opts);
    return t.wire.transport(t, opts);
  };
}

/**
 * What to do about a first request that failed, from what the model said. A model that looked up
 * a key none of its inputs is named (a KeyError in python) reads a request parameter: inputs are
 * not what it lacks.
 */
export function probeHint(message: string, inputs: readonly string[], stateful = false): string {
  // A stateful model that refuses the sequence's flags says so with the flags' names.
  if (stateful && /\b(START|END|flags?|sequence)\b/.test(message) && !inputs.some((i) => message.includes(i)))
    return "The model refused the request's sequence flags, not its inputs: perf starts each sequence with a request carrying START alone, continues it, and ends it with END (--sequence-length N requests per sequence, START and END together only when N is 1); check what the model expects of them.";
  const key = /KeyError: ['"]([^'"]+)['"]/.exec(message)?.[1];
  if (key !== undefined && !inputs.includes(key))
    return `The model looked up '${key}', which is none of its inputs (${inputs.join(", ") || "none"}): if it reads request parameters (request.parameters()), send it with --request-parameter ${key}:VALUE:TYPE (TYPE string, int or bool).`;
  return "Give inputs the model accepts with --input-data FILE.json (perf_analyzer's format) or --shape NAME:d1,d2.";
}

/**
 * The first request, which checks the data before anything is measured. A stateful model takes
 * no request outside a sequence: the probe is a sequence's first step (START alone, as a model
 * that checks `flags == START` wants it), then its END, unless sequences are one request long
 * (START and END together). An iterative one's request is its whole sequence, never ended by us.
 */
async function probe(
  make: (n: number) => InferTransport,
  served: string,
  inputs: readonly string[],
  sequence?: { ids: SequenceIds; settings: SequenceSettings },
): Promise<void> {
  const tr = make(1);
  try {
    if (!sequence) await tr.probe(0);
    else {
      const id = sequence.ids.take();
      const one = sequence.settings.length === 1 && !sequence.settings.iterative;
      await tr.probe(0, { id, start: true, end: one, index: 0 });
      if (!one && !sequence.settings.iterative) await tr.probe(1, { id, start: false, end: true, index: 1 });
    }
  } catch (err) {
    if (err instanceof InferFailedError) {
      throw new UserError(`the first request to ${served} failed: ${err.message}`, {
        hint: err.connection
          ? "Is the server still running? See `triton-dev status`."
          : probeHint(err.message, inputs, sequence !== undefined),
      });
    }
    throw err;
  } finally {
    tr.close();
  }
}

async function sweepBuiltin(
  t: Target,
  o: PerfOptions,
  served: string,
  setup: ModelSetup,
  gpuProbe: GpuProbe | undefined,
  deps: PerfDeps,
  sweep: SweepResult,
  shm?: ShmTensorRef[][],
): Promise<void> {
  const ids = setup.sequence ? new SequenceIds(setup.sequence) : undefined;
  // The probe checks the data, so it goes without priority and timeout: a request the queue
  // policy rejects is a result to count, not a reason to refuse the run.
  try {
    await probe(
      transportFactory(t, served, setup.payloads, o, false, {
        ...(shm ? { sharedMemory: shm } : {}),
        ...(setup.stream ? { stream: setup.stream } : {}),
      }),
      served,
      setup.metadata.inputs.map((i) => i.name),
      setup.sequence && ids ? { ids, settings: setup.sequence } : undefined,
    );
  } catch (err) {
    // generate_stream was chosen from the model's metadata; the server has the last word, and
    // gRPC's stream carries any tensor.
    if (!(err instanceof UserError && setup.stream?.via === "generate_stream" && t.grpcEndpoint)) throw err;
    deps.progress?.(
      `${served}: generate_stream refused the first request (${err.message}); streaming over gRPC instead`,
    );
    setup.stream = { via: "ModelStreamInfer", endpoint: t.grpcEndpoint };
    Object.assign(sweep, streamFields(t, setup.stream));
    await probe(
      transportFactory(t, served, setup.payloads, o, false, {
        ...(shm ? { sharedMemory: shm } : {}),
        ...(setup.stream ? { stream: setup.stream } : {}),
      }),
      served,
      setup.metadata.inputs.map((i) => i.name),
      setup.sequence && ids ? { ids, settings: setup.sequence } : undefined,
    );
  }
  const make = transportFactory(t, served, setup.payloads, o, true, {
    ...(shm ? { sharedMemory: shm } : {}),
    ...(setup.stream ? { stream: setup.stream } : {}),
  });
  const ctx: ProfileContext = {
    model: served,
    ...(o.version ? { version: o.version } : {}),
    composing: setup.composing,
    batchSize: o.batchSize,
    control: t.control,
    makeTransport: make,
    windowMs: o.windowMs,
    rule: { windows: 3, thresholdPct: o.stabilityPct },
    maxTrials: o.maxTrials,
    distribution: o.distribution,
    maxInFlight: o.maxInFlight,
    ...(gpuProbe ? { gpuProbe } : {}),
    ...(deps.signal ? { signal: deps.signal } : {}),
    ...(deps.stopLevelEarly ? { stopEarly: deps.stopLevelEarly } : {}),
    ...(setup.sequence && ids ? { sequences: { settings: setup.sequence, ids } } : {}),
    onWindow: (e) => deps.progress?.(windowProgressLine(served, e, setup.stream !== undefined)),
    warmup: defaultWarmup(o.windowMs, o.maxWarmupMs),
    onWarmup: ({ kind, value, warmup: w }) =>
      deps.progress?.(
        `${served}: ${kind} ${value}, warm-up ${w.settled ? "settled" : "did not settle"} after ${w.windows.length} window(s), ${(w.durationMs / 1000).toFixed(1)} s, ${w.requests} request(s) not counted`,
      ),
  };
  for (const value of o.levels) {
    if (deps.signal?.aborted) {
      sweep.stopped = { reason: "interrupted", message: "interrupted (Ctrl-C)" };
      return;
    }
    deps.progress?.(`${served}: ${o.kind} ${value}`);
    try {
      sweep.levels.push(await measureLevel(ctx, o.kind, value));
    } catch (err) {
      const partial = (err as { partial?: LevelResult }).partial;
      if (partial) sweep.levels.push(partial);
      if (err instanceof InterruptedError)
        sweep.stopped = { reason: "interrupted", message: `interrupted (Ctrl-C) during ${o.kind} ${value}` };
      else if (err instanceof ServerGoneError) sweep.stopped = { reason: "server-gone", message: err.message };
      else if (err instanceof AllFailingError) sweep.stopped = { reason: "failing", message: err.message };
      else throw err;
      return;
    }
  }
}

async function sweepPerfAnalyzer(
  t: Target,
  o: PerfOptions,
  served: string,
  setup: ModelSetup,
  deps: PerfDeps,
  sweep: SweepResult,
): Promise<void> {
  if (o.sharedMemory === "system" && t.state)
    throw new UsageError(
      "--engine perf_analyzer cannot use --shared-memory system on the server `triton-dev up` started",
      {
        hint:
          "Its shared memory API takes only the run's key, which perf_analyzer could get only on its command line, " +
          "where every local user can read it. Leave out --engine perf_analyzer (the built-in engine sends the key) or --shared-memory.",
      },
    );
  const bin = findPerfAnalyzer(deps.env, o.perfAnalyzer);
  // perf_analyzer streams over gRPC only.
  const grpcStream = !setup.stream
    ? undefined
    : setup.stream.via === "ModelStreamInfer"
      ? setup.stream.endpoint
      : t.grpcEndpoint;
  if (setup.stream && !grpcStream)
    throw new UsageError(`perf_analyzer streams ${served}, a decoupled model, over gRPC only`, {
      hint: "Add -i grpc and give the server's gRPC port with -u HOST:PORT.",
    });
  if (grpcStream) Object.assign(sweep, streamFields(t, { via: "ModelStreamInfer", endpoint: grpcStream }));
  for (const value of o.levels) {
    if (deps.signal?.aborted) {
      sweep.stopped = { reason: "interrupted", message: "interrupted (Ctrl-C)" };
      return;
    }
    deps.progress?.(`${served}: ${o.kind} ${value} (perf_analyzer)`);
    const stats = async () =>
      snapshotOf(await t.control.modelStatistics(setup.composing.length ? undefined : served, o.version));
    const before = await stats().catch(() => undefined);
    const level = await runPerfAnalyzerLevel({
      bin,
      model: served,
      url: grpcStream ?? t.endpoint,
      protocol: grpcStream ? "grpc" : t.wire.name,
      ...(grpcStream ? { streaming: true } : {}),
      kind: o.kind,
      value,
      distribution: o.distribution,
      windowMs: o.windowMs,
      stabilityPct: o.stabilityPct,
      maxTrials: o.maxTrials,
      batchSize: o.batchSize,
      shapes: o.shapes,
      inputData: o.inputData,
      stringLength: o.stringLength,
      ...(o.sharedMemory ? { sharedMemory: o.sharedMemory } : {}),
      ...(setup.sequence ? { sequence: setup.sequence } : {}),
      ...(o.requestParameters ? { requestParameters: o.requestParameters } : {}),
      ...(o.version ? { version: o.version } : {}),
      env: deps.env,
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
    const after = await stats().catch((err: unknown) => {
      if (isUnreachableError(err)) return undefined;
      throw err;
    });
    // perf_analyzer's CSV has no batch sizes: take them from the server's counters over its run.
    const b = before && after ? breakdown(diffSnapshots(after, before), served, setup.composing) : undefined;
    if (b && level.server)
      level.server = {
        ...level.server,
        avgBatchSize: b.avgBatchSize,
        inferenceCount: b.inferenceCount,
        executionCount: b.executionCount,
        failures: b.failures,
        avgRequestUs: b.avgRequestUs,
      };
    sweep.levels.push(level);
    if (deps.signal?.aborted) {
      sweep.stopped = { reason: "interrupted", message: `interrupted (Ctrl-C) during ${o.kind} ${value}` };
      return;
    }
  }
}

/** What a sweep records of how a decoupled model's requests streamed. */
function streamFields(
  t: Target,
  plan: StreamPlan | undefined,
): Pick<SweepResult, "protocol" | "endpoint" | "streaming"> {
  if (!plan) return { protocol: t.wire.name, endpoint: t.endpoint };
  return {
    protocol: plan.via === "ModelStreamInfer" ? "grpc" : "http",
    endpoint: plan.endpoint,
    streaming: plan.via,
  };
}

/** What a run's requests carried, as history tells runs apart: the data, the sizes, the parameters. */
export function describeInputs(o: Pick<PerfOptions, "inputData" | "shapes" | "requestParameters">): string {
  const data = typeof o.inputData === "object" ? `--input-data ${o.inputData.file}` : `${o.inputData} data`;
  const shapes = Object.entries(o.shapes)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([n, d]) => `--shape ${n}:${d.join(",")}`);
  const params = Object.entries(o.requestParameters ?? {})
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([n, v]) => `--request-parameter ${n}:${String(v)}`);
  return [data, ...shapes, ...params].join(" ");
}

function newSweep(
  o: PerfOptions,
  t: Target,
  served: string,
  label: string | undefined,
  stream: StreamPlan | undefined,
  sequence: SequenceSettings | undefined,
): SweepResult {
  const now = new Date().toISOString();
  return {
    model: o.model,
    servedModel: served,
    repository: t.state ? t.state.modelsDir : `server ${t.endpoint}`,
    inputs: describeInputs(o),
    ...(o.version ? { version: o.version } : {}),
    ...(label ? { label } : {}),
    engine: o.engine,
    ...streamFields(t, stream),
    kind: o.kind,
    ...(o.kind === "rate" ? { distribution: o.distribution } : {}),
    batchSize: o.batchSize,
    ...(o.sharedMemory === "system" ? { sharedMemory: "system" as const } : {}),
    ...(sequence
      ? {
          sequence: {
            length: sequence.length,
            variationPct: sequence.variationPct,
            ...(o.kind === "rate" ? { rateSequences: sequence.rateSequences } : {}),
            ...(sequence.iterative ? { iterative: true } : {}),
          },
        }
      : {}),
    measurementIntervalMs: o.windowMs,
    startedAt: now,
    finishedAt: now,
    levels: [],
  };
}

async function runOne(
  t: Target,
  o: PerfOptions,
  served: string,
  label: string | undefined,
  gpuProbe: GpuProbe | undefined,
  deps: PerfDeps,
): Promise<SweepResult> {
  const setup = await prepareModel(t, o, served, deps.progress);
  const sweep = newSweep(o, t, served, label, setup.stream, setup.sequence);
  if (setup.sequence)
    deps.progress?.(
      `${served} is stateful: its requests go as sequences of ${describeSequences(setup.sequence, o.kind)}`,
    );
  if (setup.stream)
    deps.progress?.(`${served} is decoupled: streaming its requests over ${setup.stream.via} at ${sweep.endpoint}`);
  if (setup.stream && o.sharedMemory === "system" && o.engine !== "perf_analyzer")
    throw new UsageError(`--shared-memory system is not supported for ${served}, a decoupled (streaming) model`, {
      hint: "Measure it without --shared-memory: its requests go over a stream, whose inputs travel in the messages.",
    });
  if (o.engine === "perf_analyzer") await sweepPerfAnalyzer(t, o, served, setup, deps, sweep);
  else if (o.sharedMemory === "system") {
    // Registered over the protocol measured: with -u only its port is known.
    const { api, close } = t.wire.sharedMemory(t);
    try {
      const left = await removeLeftovers(api);
      if (left.length) deps.progress?.(`removed ${left.length} shared memory region(s) left by perf runs that died`);
      const session = await SystemShmSession.create(api, setup.payloads);
      try {
        deps.progress?.(
          `${served}: inputs in ${session.regions.length} shared memory region(s) (${session.regions[0]!.file.replace(/_\d+$/, "_*")})`,
        );
        await sweepBuiltin(t, o, served, setup, gpuProbe, deps, sweep, session.refs);
      } finally {
        await session.close();
      }
    } finally {
      close();
    }
  } else await sweepBuiltin(t, o, served, setup, gpuProbe, deps, sweep);
  sweep.finishedAt = new Date().toISOString();
  return sweep;
}

/**
 * The sides of a --compare, and where staged ones go. Versions the server serves are measured in
 * place (each checked before the first is measured); the other kinds stage siblings of the model
 * into the repository `up` serves, so they need that server.
 */
async function planComparison(
  t: Target,
  o: PerfOptions,
  compare: CompareSpec,
  recorded: MeasuredRun,
  clock: Clock,
): Promise<{ variants: Variant[]; staging?: StagingTarget }> {
  if (compare.kind === "versions") {
    if (o.version)
      throw new UsageError("give -x or --compare versions=, not both", {
        hint: "--compare versions=1,2 measures each version it names.",
      });
    // A typo would otherwise end the run after the first versions were measured.
    for (const v of compare.versions) await checkModel(t, o.model, recorded, v, clock);
    return { variants: compare.versions.map((v) => ({ label: `version ${v}`, servedModel: o.model, version: v })) };
  }
  if (!t.state || !t.repoClient) {
    throw new UsageError(
      "--compare needs the server started by `triton-dev up`: variants are staged into the repository it serves",
      { hint: "Leave out -u, and start Triton with `triton-dev up`." },
    );
  }
  const config = await t.control.modelConfig(o.model, o.version);
  const configFile = path.join(t.state.repository, o.model, "config.pbtxt");
  let configText: string;
  try {
    configText = await fsp.readFile(configFile, "utf8");
  } catch {
    throw new UserError(`cannot read ${configFile}, the served copy of ${o.model}'s config`, {
      hint: "Is the model part of the repository `triton-dev up` serves?",
    });
  }
  return {
    variants: await planVariants(compare, { name: o.model, configText, config }),
    staging: {
      repository: t.state.repository,
      reload: t.state.reload,
      client: t.repoClient,
      lint: lintOfRun(t.state),
      clock,
    },
  };
}

/** `triton-dev perf`: check the target, run the sweep (or one per variant), keep the result. */
export async function runPerf(o: PerfOptions, deps: PerfDeps): Promise<PerfReport> {
  const t = await resolveTarget(o, deps.run);
  const clock = deps.clock ?? REAL_CLOCK;
  try {
    await checkModel(t, o.model, deps.run, o.version, clock);
    const gpuProbe =
      o.engine === "builtin"
        ? await detectGpuProbe({ env: deps.env, host: t.host, ...(t.metricsUrl ? { metricsUrl: t.metricsUrl } : {}) })
        : undefined;
    const sweeps: SweepResult[] = [];
    let stoppedByVariant: PerfReport["stopped"];
    if (o.compare) {
      const { variants, staging } = await planComparison(t, o, o.compare, deps.run, clock);
      const staged: Variant[] = [];
      try {
        for (const v of variants) {
          if (deps.signal?.aborted) break;
          if (v.configText !== undefined) {
            if (!staging) throw new BugError(`variant ${v.servedModel} planned without a repository to stage it into`);
            deps.progress?.(`staging ${v.servedModel} (${v.label}) beside ${o.model}`);
            staged.push(v);
            try {
              await stageVariant(staging, o.model, v, 180_000, deps.signal);
            } catch (err) {
              // What was measured so far is still worth showing, beside why the rest was not.
              if (!(err instanceof VariantError)) throw err;
              stoppedByVariant = { reason: "variant", message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
              break;
            }
            if (deps.signal?.aborted) break;
          }
          const sweep = await runOne(
            t,
            v.version ? { ...o, version: v.version } : o,
            v.servedModel,
            v.label,
            gpuProbe,
            deps,
          );
          sweeps.push(sweep);
          if (v.configText !== undefined) {
            await removeVariant(staging!, v);
            staged.splice(staged.indexOf(v), 1);
          }
          if (sweep.stopped) break;
        }
      } finally {
        for (const v of staged) await removeVariant(staging!, v).catch(() => undefined);
      }
      if (deps.signal?.aborted && !sweeps.some((s) => s.stopped)) {
        const last = sweeps[sweeps.length - 1];
        if (last) last.stopped = { reason: "interrupted", message: "interrupted (Ctrl-C)" };
      }
    } else {
      sweeps.push(await runOne(t, o, o.model, undefined, gpuProbe, deps));
    }

    const report: PerfReport = { model: o.model, ...(o.compareText ? { compare: o.compareText } : {}), sweeps };
    const stopped =
      sweeps.find((s) => s.stopped)?.stopped ??
      stoppedByVariant ??
      (deps.signal?.aborted ? { reason: "interrupted" as const, message: "interrupted (Ctrl-C)" } : undefined);
    if (stopped) report.stopped = stopped;
    if (sweeps.length > 1) report.comparison = compareSweeps(sweeps);
    // A run whose requests failed measured no model: it is neither kept nor compared.
    if (o.keepHistory && stopped?.reason !== "failing" && sweeps.some((s) => s.levels.length > 0)) {
      const root = historyRoot(resolvePaths(deps.env).stateDir);
      if (!o.compare && sweeps[0]) {
        const prev = await previousComparable(root, sweeps[0]);
        const prevSweep = prev?.sweeps[0];
        if (prev && prevSweep)
          report.previous = { id: prev.id, savedAt: prev.savedAt, diffs: diffSweeps(sweeps[0], prevSweep) };
      }
      const { file } = await saveRun(root, {
        model: o.model,
        sweeps,
        ...(o.compareText ? { compare: o.compareText } : {}),
      });
      report.savedTo = file;
    }
    return report;
  } finally {
    t.control.close();
  }
}
