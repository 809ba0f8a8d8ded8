import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { requireFreePorts } from "../../net/ports.js";
import { tritonLiveAt } from "../../triton/readiness.js";
import type {
  DriverContext,
  Leftovers,
  PlanInput,
  PlannedRun,
  RuntimeDriver,
  RuntimeKind,
  StartedRun,
  StartOptions,
} from "../driver.js";
import { deliverRunFolder } from "../delivery.js";
import { dockerFacts } from "./facts.js";
import { connectDocker, requireDaemon } from "../clients/container/client.js";
import { DockerRuntime, findOurs, removeRun, type DockerPlan } from "./docker-runtime.js";
import { shmHinter, shmStartHint } from "../shm-hints.js";
import { pullEvent } from "../clients/container/pull-event.js";
import { containerEvent, gpuPathEvent, monitoringEvent } from "./events.js";
import type { DockerRecord } from "./record.js";
import { attachDockerRun } from "./attach.js";
import {
  DEFAULT_IMAGE,
  DEFAULT_SHM_BYTES,
  formatGpus,
  LABEL,
  parseGpus,
  parseSize,
  type GpuRequest,
} from "./settings.js";

export type { DockerStatusFields } from "./attach.js";

export interface DockerOptions {
  image: string;
  /** `auto`: every GPU when the daemon has the NVIDIA runtime, else none. */
  gpus: GpuRequest | "auto";
  shmBytes: number;
  /** Prometheus and Grafana beside Triton (compose/'s files). */
  monitoring: boolean;
}

export interface DockerDriverDeps {
  connect?: (env: NodeJS.ProcessEnv) => Docker;
  detectGpus?: () => Promise<number | undefined>;
  /**
   * The runtime this driver is (default docker): another engine speaking the Docker Engine API
   * (podman's service) reuses the driver under its own name, with its own facts.ts and line in
   * kinds.ts.
   */
  kind?: RuntimeKind;
  /** The engine's API endpoint (unix://, tcp://, ssh://) for this environment; default: DOCKER_HOST or Docker's socket. */
  engineHost?: (env: NodeJS.ProcessEnv) => string | undefined;
  /**
   * The time the liveness poll, the daemon's deadlines and the stop's waits run on (../../clock.ts);
   * a call's `DriverContext.clock` (the session's) comes first.
   */
  clock?: Clock;
}

/**
 * How the driver reaches its engine: the endpoint as DOCKER_HOST, so the connection, the daemon
 * the record names (and liveness reads) and the hints all speak of the same one.
 */
interface Engine {
  kind: RuntimeKind;
  env: (env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
  connect: (env: NodeJS.ProcessEnv) => Docker;
  /** The clock a call's waits run on: its context's (the session's), else the driver's own. */
  clock: (ctx: { clock?: Clock }) => Clock;
}

/** Triton in a container of the NGC image (or a compatible one), through the Docker Engine API. */
export function createDockerDriver(deps: DockerDriverDeps = {}): RuntimeDriver<DockerOptions> {
  const engineEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => {
    const host = deps.engineHost?.(env);
    return host ? { ...env, DOCKER_HOST: host } : env;
  };
  const engine: Engine = {
    kind: deps.kind ?? "docker",
    env: engineEnv,
    connect: (env) => (deps.connect ?? connectDocker)(engineEnv(env)),
    clock: (ctx) => ctx.clock ?? deps.clock ?? REAL_CLOCK,
  };
  return {
    kind: engine.kind,
    autoChoice: async (flags, env, timeoutMs) => (await import("./auto.js")).dockerAutoChoice(flags, env, timeoutMs),
    options(flags) {
      return {
        image: flags.image ?? DEFAULT_IMAGE,
        gpus: flags.gpus ? parseGpus(flags.gpus) : "auto",
        shmBytes: flags.shmSize ? parseSize(flags.shmSize) : DEFAULT_SHM_BYTES,
        monitoring: flags.monitoring ?? false,
      };
    },
    plan: (input, options, ctx) => planContainerRun(engine, input, options, ctx, deps.detectGpus),
    attach: (state, ctx) =>
      attachDockerRun(state, ctx.paths.runFile, {
        kind: engine.kind,
        connect: engine.connect,
        clock: engine.clock(ctx),
      }),
    doctor: async (ctx) => (await import("./doctor.js")).dockerChecks(engineEnv(ctx.env)),
    cleanup: async (graceMs, ctx) =>
      removeLeftoverContainers(
        engine.connect(ctx.env),
        engineEnv(ctx.env),
        ctx.paths.runsDir,
        graceMs,
        engine.clock(ctx),
      ),
  };
}

/** The image, the GPUs, the container to reuse or replace, and free ports: all before anything is created. */
async function planContainerRun(
  engine: Engine,
  input: PlanInput,
  options: DockerOptions,
  ctx: DriverContext,
  detectGpus: DockerDriverDeps["detectGpus"],
): Promise<PlannedRun> {
  const rt = new DockerRuntime(engine.connect(ctx.env), engine.env(ctx.env), {
    ...(detectGpus ? { detectGpus } : {}),
    clock: engine.clock(ctx),
  });
  const gpus = options.gpus === "auto" ? await rt.autoGpus() : options.gpus;
  const plan = await rt.plan(
    {
      image: options.image,
      gpus,
      shmBytes: options.shmBytes,
      monitoring: options.monitoring,
      modelsDir: input.modelsDir,
      runsDir: ctx.paths.runsDir,
      ports: input.ports,
      host: input.host,
      reload: input.reload,
      pollSecs: input.pollSecs,
    },
    (p) => ctx.emit(pullEvent("docker", p)),
  );
  if (plan.gpuPath) ctx.emit(gpuPathEvent(engine.kind, plan.gpuPath));
  if (!plan.reuse) {
    await rt.removeReplaced(plan);
    await requireFreePorts(input.ports, input.host);
  }
  return {
    ...(plan.reuse ? { reuse: { runId: plan.reuse.runId, runDir: plan.reuse.runDir } } : {}),
    gpus: gpus.kind === "none" ? 0 : undefined,
    gpuSkipReason: "it needs a GPU (KIND_GPU) and this container has none (--gpus none)",
    ...(plan.imageBackends ? { imageBackends: plan.imageBackends } : {}),
    // The image's own Triton starts with auto-complete on; its settings are part of the container's.
    canDisableAutoComplete: false,
    // The container mounts the run folder.
    deliver: (folder) => deliverRunFolder(folder, ctx, dockerFacts.stagingSeenAs),
    start: (o) => startContainer(rt, plan, gpus, options, o, ctx),
    startHint: (logFile) => shmStartHint(logFile, options.shmBytes),
  };
}

/** Creates (or reattaches) the container, says so, and writes the runtime's part of the record. */
async function startContainer(
  rt: DockerRuntime,
  plan: DockerPlan,
  gpus: GpuRequest,
  options: DockerOptions,
  o: StartOptions,
  ctx: DriverContext,
): Promise<StartedRun> {
  const started = await rt.start(plan, o, {
    onLogLine: shmHinter(options.shmBytes, (message) => ctx.emit({ type: "hint", message })),
  });
  ctx.emit(
    containerEvent({
      action: plan.reuse ? "reattached" : "created",
      name: plan.name,
      id: started.containerId,
      image: plan.settings.image,
      ...(plan.replace ? { replaced: plan.replace.reason } : {}),
    }),
  );
  if (started.monitoring) {
    ctx.emit(monitoringEvent(started.monitoring));
  }
  const record: DockerRecord = {
    containerId: started.containerId,
    containerName: plan.name,
    image: plan.settings.image,
    daemon: plan.daemon,
    gpus: formatGpus(gpus),
    shmBytes: options.shmBytes,
    ...(started.monitoring
      ? { monitoring: { prometheus: started.monitoring.prometheus, grafana: started.monitoring.grafana } }
      : {}),
  };
  return {
    handle: started.handle,
    executable: "tritonserver",
    readiness: tritonLiveAt,
    record,
    ...(started.memlockRefused
      ? {
          notices: [
            `the Docker daemon may not lift the locked-memory limit here (memlock=-1 refused: ${started.memlockRefused.slice(0, 160)}); Triton runs with the daemon's limit, which only matters for pinned memory with GPUs. Rootful Docker allows it.`,
          ],
        }
      : {}),
  };
}

/** `down`: containers of ours that crashed runs of this state folder left, removed; quiet without a daemon. */
async function removeLeftoverContainers(
  docker: Docker,
  env: NodeJS.ProcessEnv,
  runsDir: string,
  graceMs: number,
  clock: Clock,
): Promise<Leftovers> {
  const none: Leftovers = { json: { orphanContainers: [] }, lines: [] };
  try {
    await requireDaemon(docker, env, 1_500, clock);
  } catch {
    return none;
  }
  const ours = await findOurs(docker, { runsDir }).catch(() => []);
  const removed: string[] = [];
  for (const runId of new Set(ours.map((c) => c.Labels[LABEL.runId] ?? ""))) {
    const names = ours
      .filter((c) => c.Labels[LABEL.runId] === runId)
      .map((c) => (c.Names[0] ?? c.Id).replace(/^\//, ""));
    await removeRun(docker, runId, runsDir, [], Math.round(graceMs / 1000));
    removed.push(...names);
  }
  return {
    json: { orphanContainers: removed },
    lines: removed.length ? [`removed ${removed.length} leftover container(s) of ours: ${removed.join(", ")}`] : [],
  };
}

export const dockerDriver = createDockerDriver();

/** The entry registry.ts loads for this runtime (`./docker/driver.js`'s `driver`). */
export { dockerDriver as driver };
