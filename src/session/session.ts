import { randomBytes } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { EventBus } from "../events/bus.js";
import { log as rootLog } from "../log/logger.js";
import { findPortHolder, isPortFree } from "../net/ports.js";
import { detectNvidiaGpus } from "../gpu/detect.js";
import { refusalSummary } from "../repo/diagnostics.js";
import { lintRepository, type LintOptions } from "../repo/lint.js";
import { autoCompleteNeeds } from "../repo/auto-complete.js";
import { listModelDirs, requireModelRepository } from "../repo/layout.js";
import { ReloadController } from "../reload/controller.js";
import { StagingRepository } from "../reload/stage.js";
import { RepositoryWatcher } from "../reload/watch.js";
import type { DockerPlan, DockerRuntime } from "../runtimes/docker/docker-runtime.js";
import type { KindPlan, KindRuntime } from "../runtimes/kind/kind-runtime.js";
import { DEFAULT_CLUSTER } from "../runtimes/kind/settings.js";
import { isShmError, shmHint } from "../runtimes/docker/hints.js";
import {
  DEFAULT_IMAGE,
  DEFAULT_SHM_BYTES,
  containerName,
  formatGpus,
  type GpuRequest,
} from "../runtimes/docker/settings.js";
import { ensureEnvironment, precompilePython } from "../runtimes/local/environment.js";
import { LocalRuntime } from "../runtimes/local/local-runtime.js";
import type { Ports, ReloadMode, RuntimeKind, ServerHandle } from "../runtimes/runtime.js";
import { stripTritonPrefix, tailLines, tailLinesSync } from "../state/log-file.js";
import { isOurProcess, terminateOurs } from "../state/process.js";
import { currentRun, removeRunState, writeRunState, type RunState } from "../state/run-state.js";
import { TritonHttpClient, type RepositoryIndexEntry } from "../triton/http-client.js";
import { ReadinessAbortedError, ReadinessTimeoutError, waitFor } from "../triton/readiness.js";
import type { SessionEvent } from "./events.js";

const log = rootLog.child("session");

export interface UpOptions {
  runtime: "auto" | RuntimeKind;
  modelsDir: string;
  reload: ReloadMode;
  pollSecs: number;
  ports: Ports;
  host: string;
  detached: boolean;
  readyTimeoutMs: number;
  /** The docker runtime's settings (defaults: the NGC image, GPUs when the daemon has them, 1 GiB /dev/shm). */
  docker?: Partial<DockerUpOptions>;
  /** The kind runtime's settings (defaults: cluster triton-dev, deleted at the end unless kept, the NGC image). */
  kind?: Partial<KindUpOptions>;
}

export interface KindUpOptions {
  cluster: string;
  /** The cluster outlives the run (`--keep-cluster`). */
  keepCluster: boolean;
  image: string;
  gpus: GpuRequest | "auto";
  shmBytes: number;
}

export interface DockerUpOptions {
  image: string;
  /** `auto`: every GPU when the daemon has the NVIDIA runtime, else none. */
  gpus: GpuRequest | "auto";
  shmBytes: number;
  /** Prometheus and Grafana beside Triton (compose/'s files). */
  monitoring: boolean;
}

export const REPOSITORY_KEY_HEADER = "triton-dev-key";
const PORT_FLAGS: Record<keyof Ports, string> = { http: "--http-port", grpc: "--grpc-port", metrics: "--metrics-port" };

export class ServerStartError extends UserError {
  override name = "ServerStartError";
}

/** A running `up`: the server handle, its record and a stop that is safe to call twice. */
export interface Session {
  readonly state: RunState;
  readonly handle: ServerHandle;
  readonly client: TritonHttpClient;
  readonly models: RepositoryIndexEntry[];
  /** Models not staged because lint found errors in them. */
  readonly refused: string[];
  /** Models left out on purpose (GPU-only on a machine without a GPU). */
  readonly skipped: string[];
  stop(reason?: string): Promise<void>;
  /** Start hot reload in this process (foreground `up`). */
  watch(): Promise<ReloadController>;
}

export function editsFile(state: RunState): string {
  return path.join(state.runDir, "edits.json");
}

export function createController(
  state: RunState,
  staging: StagingRepository,
  bus: EventBus<SessionEvent>,
  lint: LintOptions,
): ReloadController {
  return new ReloadController({
    modelsDir: state.modelsDir,
    watcher: new RepositoryWatcher(state.modelsDir),
    staging,
    client: clientFor(state),
    mode: state.reload,
    pollSecs: state.pollSecs,
    logFile: state.logFile,
    bus,
    lint,
    editsFile: editsFile(state),
    autoCompleteConfig: state.autoCompleteConfig !== false,
  });
}

export function clientFor(state: RunState): TritonHttpClient {
  return new TritonHttpClient(`http://${urlHost(state.host)}:${state.ports.http}`, {
    repositoryKey: state.repositoryKey,
  });
}

export function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/**
 * Resolve `auto` to a runtime this build can run. `auto` stays local: picking docker whenever a
 * daemon answers would mean a multi-gigabyte NGC pull that nobody asked for.
 */
export function resolveRuntime(requested: UpOptions["runtime"]): RuntimeKind {
  if (requested === "auto" || requested === "local") return "local";
  if (requested === "docker" || requested === "kind") return requested;
  throw new UserError(`the ${String(requested)} runtime is not available in this version of triton-dev`, {
    hint: "Use `--runtime local` (the embedded Triton, needs only Python 3.8-3.12), `--runtime docker` or `--runtime kind`.",
    exitCode: 2,
  });
}

export interface RuntimeChoice {
  runtime: RuntimeKind;
  why: string;
}

/**
 * `--runtime auto`: Docker when a daemon answers and it can run the NGC image the way a GPU
 * workstation does (the NVIDIA runtime is registered, or the image is already here); otherwise
 * the embedded local runtime. A daemon without either would mean a multi-gigabyte pull to end
 * up on the CPU, which the local runtime does with nothing to download. kind is never picked:
 * a cluster is something to ask for.
 */
export async function chooseRuntime(
  requested: UpOptions["runtime"],
  image: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 1_500,
): Promise<RuntimeChoice> {
  if (requested !== "auto") return { runtime: resolveRuntime(requested), why: `--runtime ${requested}` };
  try {
    const { connectDocker, daemonFacts } = await import("../runtimes/docker/client.js");
    const docker = connectDocker(env);
    const facts = await Promise.race([
      daemonFacts(docker),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), timeoutMs).unref()),
    ]);
    const present = await docker
      .getImage(image)
      .inspect()
      .then(
        () => true,
        () => false,
      );
    if (facts.nvidia) return { runtime: "docker", why: `Docker ${facts.version} answers with the NVIDIA runtime` };
    if (present) return { runtime: "docker", why: `Docker ${facts.version} answers and ${image} is present` };
    return {
      runtime: "local",
      why: `Docker answers but has no NVIDIA runtime and no ${image}; the local runtime needs no download`,
    };
  } catch {
    return { runtime: "local", why: "no Docker daemon answers" };
  }
}

/** A foreground `up` still owns the run (a detached one has no owner left to ask). */
function ownerAlive(s: RunState): boolean {
  return s.ownerPid !== undefined && s.ownerPid !== process.pid && isOurProcess(s.ownerPid, process.execPath);
}

async function checkPorts(ports: Ports, host: string): Promise<void> {
  const seen = new Map<number, keyof Ports>();
  for (const [name, port] of Object.entries(ports) as [keyof Ports, number][]) {
    const other = seen.get(port);
    if (other)
      throw new UserError(`${PORT_FLAGS[name]} and ${PORT_FLAGS[other]} are both ${port}`, {
        hint: "Give each endpoint its own port.",
        exitCode: 2,
      });
    seen.set(port, name);
    if (await isPortFree(port, host)) continue;
    const holder = findPortHolder(port);
    throw new UserError(
      `port ${port} (${name}) on ${host} is already in use${holder ? ` by pid ${holder.pid} (${holder.command.slice(0, 120)})` : ""}`,
      { hint: `Stop that process, or choose another port with ${PORT_FLAGS[name]} N.` },
    );
  }
}

/**
 * `up`: check, set up, stage, start, wait until every model settled, record the run.
 * Every resource it creates is released again if a later step fails.
 */
export async function startSession(
  paths: Paths,
  o: UpOptions,
  bus: EventBus<SessionEvent>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Session> {
  const choice = await chooseRuntime(o.runtime, o.docker?.image ?? DEFAULT_IMAGE, env);
  const runtime = choice.runtime;
  if (o.runtime === "auto") bus.emit({ type: "runtime", runtime, why: choice.why });
  const modelsDir = path.resolve(o.modelsDir);
  const existing = await currentRun(paths);
  if (existing?.alive) {
    const s = existing.state;
    // `up` again for the same project's detached container hands it over to this `up`: the
    // container is reattached (same settings) or recreated (changed ones) below.
    const takeOver =
      runtime === "docker" &&
      s.runtime === "docker" &&
      s.docker?.containerName === containerName(modelsDir) &&
      !ownerAlive(s);
    if (!takeOver) {
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
  if (existing && !existing.alive) {
    log.info("removing the record of a run that is gone", { pid: existing.state.pid });
    await removeRunState(paths);
  }

  await requireModelRepository(modelsDir);

  let docker: { runtime: DockerRuntime; plan: DockerPlan; gpus: GpuRequest; opts: DockerUpOptions } | undefined;
  let kind: { runtime: KindRuntime; plan: KindPlan; opts: KindUpOptions } | undefined;
  let environment: Awaited<ReturnType<typeof ensureEnvironment>> | undefined;
  if (runtime === "kind") {
    const opts: KindUpOptions = {
      cluster: DEFAULT_CLUSTER,
      keepCluster: false,
      image: DEFAULT_IMAGE,
      gpus: "auto",
      shmBytes: DEFAULT_SHM_BYTES,
      ...o.kind,
    };
    const [{ connectDocker }, { KindRuntime }] = await Promise.all([
      import("../runtimes/docker/client.js"),
      import("../runtimes/kind/kind-runtime.js"),
    ]);
    const rt = new KindRuntime(connectDocker(env), env);
    rt.onProgress = (p) => bus.emit({ type: "kind", step: p.step, message: p.message });
    const plan = await rt.plan(
      {
        ...opts,
        stateDir: paths.stateDir,
        ports: o.ports,
        host: o.host,
        reload: o.reload,
        readyTimeoutMs: o.readyTimeoutMs,
      },
      (p) => bus.emit({ type: "pull", ...p }),
    );
    // kubectl port-forward listens on these, on this machine.
    await checkPorts(o.ports, o.host);
    kind = { runtime: rt, plan, opts };
  } else if (runtime === "docker") {
    const opts: DockerUpOptions = {
      image: DEFAULT_IMAGE,
      gpus: "auto",
      shmBytes: DEFAULT_SHM_BYTES,
      monitoring: false,
      ...o.docker,
    };
    // Loaded here only: the Docker client costs a third of a second to load, which every other command is spared.
    const [{ connectDocker }, { DockerRuntime }] = await Promise.all([
      import("../runtimes/docker/client.js"),
      import("../runtimes/docker/docker-runtime.js"),
    ]);
    const rt = new DockerRuntime(connectDocker(env), env);
    const gpus = opts.gpus === "auto" ? await rt.autoGpus() : opts.gpus;
    const plan = await rt.plan(
      {
        ...opts,
        gpus,
        modelsDir,
        runsDir: paths.runsDir,
        ports: o.ports,
        host: o.host,
        reload: o.reload,
        pollSecs: o.pollSecs,
        repositoryKeyHeader: REPOSITORY_KEY_HEADER,
      },
      (p) => bus.emit({ type: "pull", ...p }),
    );
    if (!plan.reuse) {
      await rt.removeReplaced(plan);
      await checkPorts(o.ports, o.host);
    }
    docker = { runtime: rt, plan, gpus, opts };
  } else {
    environment = await ensureEnvironment({
      paths,
      env,
      onProgress: (progress) => bus.emit({ type: "setup", progress }),
    });
    await checkPorts(o.ports, o.host);
  }

  const reuse = docker?.plan.reuse;
  const runId =
    reuse?.runId ??
    `${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${randomBytes(3).toString("hex")}`;
  const runDir = reuse?.runDir ?? path.join(paths.runsDir, runId);
  const repository = path.join(runDir, "repository");
  const logFile = path.join(runDir, "tritonserver.log");
  await fsp.mkdir(runDir, { recursive: true });
  // Only models that pass lint are staged: Triton would refuse the others anyway, with the
  // reason buried in its log. They load as soon as a fixed version is saved.
  // At `up` a KIND_GPU model on a machine without a GPU is an error (lint only warns): Triton
  // would refuse it, so it is reported here with the fix instead.
  const gpus = docker
    ? docker.gpus.kind === "none"
      ? 0
      : undefined
    : kind
      ? kind.plan.gpus === 0
        ? 0
        : undefined
      : await detectNvidiaGpus();
  const lintOptions = {
    runtime,
    gpuAvailable: gpus === undefined ? true : gpus > 0,
    gpuMissingSeverity: "error" as const,
  };
  const lint = await lintRepository(modelsDir, lintOptions);
  const refused = new Set<string>();
  const skipped = new Set<string>();
  const notServed: NonNullable<RunState["notServed"]> = [];
  for (const m of lint.models) {
    const errors = m.diagnostics.filter((d) => d.severity === "error");
    // A GPU-only model on a machine without a GPU is skipped, not a failure: the sample
    // repository (and a user's) stays usable on a laptop, and the notice says why.
    if (errors.length && errors.every((d) => d.code === "gpu-unavailable")) {
      skipped.add(m.name);
      const reason = docker
        ? "it needs a GPU (KIND_GPU) and this container has none (--gpus none)"
        : kind
          ? "it needs a GPU (KIND_GPU) and the kind pod gets none (--gpus none, or Docker has no NVIDIA runtime)"
          : "it needs a GPU (KIND_GPU) and this machine has none";
      bus.emit({ type: "skipped", model: m.name, reason, diagnostics: errors });
      notServed.push({ model: m.name, why: "skipped", reason });
      continue;
    }
    if (errors.length) {
      refused.add(m.name);
      notServed.push({ model: m.name, why: "refused", reason: refusalSummary(errors, modelsDir) });
    }
    if (m.diagnostics.length)
      bus.emit({ type: "lint", model: m.name, diagnostics: m.diagnostics, staged: errors.length === 0 });
  }
  // The container reads the store read-only, so Python can write no __pycache__ there and
  // nothing needs precompiling (the image's Python may differ from ours anyway).
  const staging = new StagingRepository(
    runDir,
    environment ? { prepare: (dir) => precompilePython(environment, dir) } : {},
  );
  let staged: string[];
  if (reuse) {
    // The running container has this folder bind-mounted: it is updated in place, never
    // recreated. Changed and deleted models are the reload controller's to reconcile; models
    // added meanwhile are published here.
    await staging.load();
    for (const m of await listModelDirs(modelsDir)) {
      if (!refused.has(m) && !skipped.has(m) && !staging.has(m)) await staging.publish(modelsDir, m);
    }
    staged = staging.names();
  } else {
    staged = await staging.init(modelsDir, (m) => !refused.has(m) && !skipped.has(m));
  }
  bus.emit({ type: "staged", models: staged, repository });
  // Local runtime: Triton's config auto-complete adds a fixed second to every python model load
  // (see repo/auto-complete.ts); it is turned off when no model of the repository needs it.
  const autoCompleteOff = environment
    ? (await autoCompleteNeeds(lint.models.filter((m) => !skipped.has(m.name)))).length === 0
    : false;

  const repositoryKey = { header: REPOSITORY_KEY_HEADER, value: reuse?.key ?? randomBytes(24).toString("hex") };
  const started = Date.now();
  const startOptions = {
    runId,
    runDir,
    repository,
    ports: o.ports,
    host: o.host,
    reload: o.reload,
    pollSecs: o.pollSecs,
    repositoryKey,
    logFile,
    ...(autoCompleteOff ? { autoCompleteConfig: false } : {}),
  };
  let handle: ServerHandle;
  if (docker) {
    let shmHinted = false;
    docker.runtime.onLogLine = (line) => {
      if (!shmHinted && isShmError(line)) {
        shmHinted = true;
        bus.emit({ type: "hint", message: shmHint(docker.opts.shmBytes) });
      }
    };
    handle = await docker.runtime.start(startOptions);
    const c = docker.runtime.started!;
    bus.emit({
      type: "container",
      action: reuse ? "reattached" : "created",
      name: docker.plan.name,
      id: c.containerId,
      image: docker.plan.settings.image,
      ...(docker.plan.replace ? { replaced: docker.plan.replace.reason } : {}),
    });
    if (docker.runtime.memlockRefused) {
      bus.emit({
        type: "hint",
        message: `the Docker daemon may not lift the locked-memory limit here (memlock=-1 refused: ${docker.runtime.memlockRefused.slice(0, 160)}); Triton runs with the daemon's limit, which only matters for pinned memory with GPUs. Rootful Docker allows it.`,
      });
    }
    if (c.monitoring)
      bus.emit({ type: "monitoring", prometheus: c.monitoring.prometheus, grafana: c.monitoring.grafana });
  } else if (kind) {
    let shmHinted = false;
    kind.runtime.onLogLine = (line) => {
      if (!shmHinted && isShmError(line)) {
        shmHinted = true;
        bus.emit({ type: "hint", message: shmHint(kind.opts.shmBytes) });
      }
    };
    handle = await kind.runtime.start(startOptions);
  } else {
    handle = await new LocalRuntime({ environment: environment!, env }).start(startOptions);
  }
  bus.emit({ type: "starting", runtime, pid: handle.pid, logFile });

  const dockerStarted = docker?.runtime.started;
  const state: RunState = {
    version: 1,
    runId,
    runtime,
    pid: handle.pid ?? -1,
    executable: docker ? "tritonserver" : kind ? "kubectl" : environment!.serverBin,
    ownerPid: o.detached ? undefined : process.pid,
    detached: o.detached,
    startedAt: new Date(started).toISOString(),
    ...(notServed.length ? { notServed } : {}),
    modelsDir,
    runDir,
    repository,
    logFile,
    host: o.host,
    ports: o.ports,
    reload: o.reload,
    pollSecs: o.pollSecs,
    repositoryKey,
    ...(autoCompleteOff ? { autoCompleteConfig: false } : {}),
    ...(docker && dockerStarted
      ? {
          docker: {
            containerId: dockerStarted.containerId,
            containerName: docker.plan.name,
            image: docker.plan.settings.image,
            daemon: docker.plan.daemon,
            gpus: formatGpus(docker.gpus),
            shmBytes: docker.opts.shmBytes,
            ...(dockerStarted.monitoring
              ? {
                  monitoring: {
                    prometheus: dockerStarted.monitoring.prometheus,
                    grafana: dockerStarted.monitoring.grafana,
                  },
                }
              : {}),
          },
        }
      : {}),
    ...(kind?.runtime.started ? { kind: kind.runtime.started.record } : {}),
  };
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void handle.exited.then((e) => (exitInfo = e));
  const client = clientFor(state);

  let stopped: Promise<void> | undefined;
  let controller: ReloadController | undefined;
  const stop = (reason = "stopped") => {
    stopped ??= (async () => {
      bus.emit({ type: "stopping", reason });
      await controller?.close();
      await handle.stop();
      await removeRunState(paths);
      bus.emit({ type: "stopped" });
    })();
    return stopped;
  };

  try {
    if (handle.pid === undefined && !docker && !kind)
      throw new ServerStartError(`could not launch ${environment!.serverBin}`, {
        hint: "Run `triton-dev setup --force` to reinstall the environment.",
      });
    await writeRunState(paths, state);
    const what = `Triton at ${o.host}:${o.ports.http}`;
    await waitFor(
      { description: what, check: () => client.isLive() },
      {
        timeoutMs: o.readyTimeoutMs,
        intervalMs: 250,
        abortIf: async () => {
          if (exitInfo) {
            const lines = (await tailLines(logFile, 8)).map(stripTritonPrefix);
            bus.emit({ type: "server-exited", code: exitInfo.code, signal: exitInfo.signal, lastLines: lines });
            throw new ReadinessAbortedError(
              `tritonserver exited during start (${exitInfo.signal ?? `code ${exitInfo.code}`}); last log lines:\n  ${lines.join("\n  ")}`,
            );
          }
        },
        detail: () => {
          const last = tailLinesSync(logFile, 1)[0];
          return last ? `last log line: ${stripTritonPrefix(last)}` : "it wrote no log yet";
        },
      },
    );
    // Triton names files of the staging copy in its reasons (a model.py traceback); point at the user's.
    const models = (await settledIndex(client, o.readyTimeoutMs - (Date.now() - started))).map((m) =>
      m.reason ? { ...m, reason: staging.userPaths(m.reason, modelsDir) } : m,
    );
    bus.emit({ type: "ready", endpoints: handle.endpoints, models, elapsedMs: Date.now() - started });
    const watch = async () => {
      controller = createController(state, staging, bus, lintOptions);
      await controller.adopt(models);
      await controller.start();
      for (const name of refused) {
        const m = lint.models.find((x) => x.name === name);
        if (m)
          controller.reportInitialRefusal(
            name,
            m.diagnostics.filter((d) => d.severity === "error"),
          );
      }
      bus.emit({ type: "watching", modelsDir, mode: state.reload });
      return controller;
    };
    return { state, handle, client, models, refused: [...refused], skipped: [...skipped], stop, watch };
  } catch (err) {
    await stop("start failed");
    if (err instanceof ReadinessAbortedError) {
      throw new ServerStartError(err.message, {
        hint: startHint(logFile, docker?.opts.shmBytes ?? kind?.opts.shmBytes),
        cause: err,
      });
    }
    if (err instanceof ReadinessTimeoutError) {
      throw new ServerStartError(err.message, {
        hint: `Raise the limit with --timeout SECONDS if your models load slowly; the full log is ${logFile}.`,
        cause: err,
      });
    }
    throw err;
  }
}

function startHint(logFile: string, shmBytes: number | undefined): string {
  if (shmBytes !== undefined && tailLinesSync(logFile, 40).some(isShmError))
    return `${shmHint(shmBytes)} The full log is ${logFile}.`;
  return `The full log is ${logFile}.`;
}

/** Wait until no model is LOADING/UNLOADING, then return the index. */
async function settledIndex(client: TritonHttpClient, timeoutMs: number): Promise<RepositoryIndexEntry[]> {
  const deadline = Date.now() + Math.max(timeoutMs, 5_000);
  for (;;) {
    const index = await client.repositoryIndex();
    const busy = index.filter((m) => m.state === "LOADING" || m.state === "UNLOADING");
    if (busy.length === 0 || Date.now() > deadline) return index;
    await new Promise((r) => setTimeout(r, 250));
  }
}
