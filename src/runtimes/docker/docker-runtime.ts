import path from "node:path";
import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { detectNvidiaGpus } from "../../gpu/detect.js";
import { log as rootLog } from "../../log/logger.js";
import { endpointsFor, urlHost } from "../../net/url.js";
import { REPOSITORY_KEY_HEADER } from "../../triton/http-client.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { keyArg, readRunKey } from "../../triton/key-shim.js";
import { restrictedApiArgs } from "../../triton/server-args.js";
import type { Endpoints, Ports, ServerHandle, StartOptions, StopOutcome } from "../driver.js";
import {
  daemonAddress,
  daemonFacts,
  type DaemonFacts,
  daemonMessage,
  gpuUnavailableError,
  isNoGpuDriverError,
  requireDaemon,
  statusOf,
} from "../clients/container/client.js";
import { ensureImage, imageId, type PullUpdate } from "../clients/container/image.js";
import { stopTritonContainer, type ContainerStopOptions } from "./container-stop.js";
import { followLogs, type LogFollower } from "./logs.js";
import { imageBackends } from "../clients/container/image-backends.js";
import {
  ensureNetwork,
  monitoringImages,
  networkName,
  removeContainers,
  startMonitoring,
  type MonitoringEndpoints,
  type MonitoringImages,
} from "./monitoring.js";
import { cdiDevices, cdiDirsFor, decideGpuPath, findCdiSpecs, type GpuPath } from "./gpu-path.js";
import {
  containerName,
  formatGpus,
  isOurs,
  LABEL,
  settingsHash,
  tritonContainerSpec,
  type ContainerGpuPath,
  type ContainerSettings,
  type GpuRequest,
} from "./settings.js";

const log = rootLog.child("docker");

/** What `up --runtime docker` asks for beyond what every runtime gets. */
export interface DockerRequest {
  image: string;
  gpus: GpuRequest;
  shmBytes: number;
  monitoring: boolean;
}

export interface DockerPlanInput extends DockerRequest {
  modelsDir: string;
  runsDir: string;
  ports: Ports;
  host: string;
  reload: StartOptions["reload"];
  pollSecs: number;
}

/** What planning found: the container to reuse, or the one of ours to replace, and the settings to create with. */
export interface DockerPlan {
  name: string;
  daemon: string;
  settings: ContainerSettings;
  hash: string;
  /** How the GPUs reach the container, and why (absent: --gpus none). */
  gpuPath?: GpuPath;
  monitoringImages?: MonitoringImages;
  /** The backends found in the image, where its name does not tell them (image-backends.ts). */
  imageBackends?: string[];
  reuse?: { id: string; runId: string; runDir: string; repository: string };
  replace?: { id: string; runId: string; reason: string };
}

export interface DockerDeps {
  /** NVIDIA GPUs the host's driver lists (0: no driver), for the early GPU check. */
  detectGpus?: () => Promise<number | undefined>;
  /** Reads CDI spec folders (gpu-path.ts findCdiSpecs). */
  findCdiSpecs?: typeof findCdiSpecs;
  /** The time the daemon's deadlines, the exit poll and the stop's waits run on (../../clock.ts). */
  clock?: Clock;
}

export interface DockerStarted {
  handle: ServerHandle;
  containerId: string;
  monitoring?: MonitoringEndpoints;
  /** Set when the daemon refused memlock=-1 and the container runs with the daemon's limit. */
  memlockRefused?: string;
}

export interface DockerStartHooks {
  /** Each line Triton writes, as it is copied into the log file. */
  onLogLine?: (line: string) => void;
}

/** Triton in a container from the NGC image (or a compatible one): every backend of the image, GPUs when asked for. */
export class DockerRuntime {
  constructor(
    readonly docker: Docker,
    private readonly env: NodeJS.ProcessEnv,
    private readonly deps: DockerDeps = {},
  ) {}

  private get clock(): Clock {
    return this.deps.clock ?? REAL_CLOCK;
  }

  /** `--gpus auto`: every GPU when the NVIDIA runtime or a CDI spec passes them to containers, else the CPU. */
  async autoGpus(): Promise<GpuRequest> {
    await requireDaemon(this.docker, this.env, undefined, this.clock);
    const p = await this.gpuPath();
    return p.kind === "nvidia-runtime" || p.kind === "cdi" ? { kind: "all" } : { kind: "none" };
  }

  /** How GPUs would reach a container on this daemon and machine, and why (gpu-path.ts decides). */
  async gpuPath(facts?: DaemonFacts): Promise<GpuPath> {
    const daemon = facts ?? (await daemonFacts(this.docker));
    const dirs = cdiDirsFor(daemon, daemonAddress(this.env), this.env);
    const cdi = await (this.deps.findCdiSpecs ?? findCdiSpecs)(dirs);
    const hostGpus = await (this.deps.detectGpus ?? detectNvidiaGpus)();
    return decideGpuPath({ daemon, cdi: { ...cdi, dirs }, hostGpus });
  }

  /**
   * Everything that can fail before a container exists: the daemon, GPUs, images (pulled with
   * progress), and what to do with a container of ours already running under this name.
   */
  async plan(input: DockerPlanInput, onPull?: (s: PullUpdate) => void): Promise<DockerPlan> {
    await requireDaemon(this.docker, this.env, undefined, this.clock);
    const name = containerName(input.modelsDir);
    const wantsGpu = input.gpus.kind !== "none";
    const present = await imageId(this.docker, input.image);
    const facts = await daemonFacts(this.docker);
    // Decided for --gpus none too: under a default NVIDIA runtime the container must say "no GPUs".
    const gpuPath = await this.gpuPath(facts);
    if (wantsGpu && gpuPath.kind === "none" && !present) {
      // Checked before a pull of many gigabytes. With the image here, the daemon is asked instead
      // (a hook of the toolkit's may still take --gpus), and its refusal is explained the same way.
      throw gpuUnavailableError(undefined, gpuPath.why, gpuPath.hint);
    }
    const containerGpus = containerGpuPath(input.gpus, gpuPath, facts);
    let images: MonitoringImages | undefined;
    if (input.monitoring) {
      // The monitoring images first: a missing one fails in seconds, before Triton's large pull.
      images = monitoringImages(this.env);
      await ensureImage(this.docker, images.prometheus, { onProgress: onPull, purpose: "Prometheus (--monitoring)" });
      await ensureImage(this.docker, images.grafana, { onProgress: onPull, purpose: "Grafana (--monitoring)" });
    }
    const { id: imgId } = present
      ? { id: present }
      : await ensureImage(this.docker, input.image, { onProgress: onPull });
    const settings: ContainerSettings = {
      image: input.image,
      imageId: imgId,
      gpus: input.gpus,
      ...(containerGpus ? { gpuPath: containerGpus } : {}),
      shmBytes: input.shmBytes,
      ports: input.ports,
      host: input.host,
      reload: input.reload,
      pollSecs: input.pollSecs,
      modelsDir: input.modelsDir,
      runsDir: input.runsDir,
      ...(input.monitoring ? { network: networkName(name) } : {}),
    };
    const hash = settingsHash(settings);
    const found = await imageBackends(this.docker, input.image, imgId, undefined, this.clock);
    const plan: DockerPlan = {
      name,
      daemon: daemonAddress(this.env),
      settings,
      hash,
      ...(wantsGpu ? { gpuPath } : {}),
      ...(images ? { monitoringImages: images } : {}),
      ...(found ? { imageBackends: found } : {}),
    };

    const existing = await this.docker
      .getContainer(name)
      .inspect()
      .catch((err) => (statusOf(err) === 404 ? undefined : Promise.reject(err)));
    if (!existing) return plan;
    const l = existing.Config.Labels ?? {};
    if (!isOurs(l)) {
      throw new UserError(
        `a container named ${name} already exists and was not created by triton-dev; it is left alone`,
        {
          hint: `Remove or rename it yourself (\`docker rm -f ${name}\` or \`docker rename ${name} OTHER\`) if it is not needed, then run \`triton-dev up\` again.`,
        },
      );
    }
    const runId = l[LABEL.runId] ?? "";
    const repository = l[LABEL.repository] ?? "";
    // It takes its key from its run folder's key file and restricts every API we restrict (a
    // container of an older triton-dev, with the key on its command line or fewer APIs behind
    // it, is replaced).
    const cmd = existing.Config.Cmd ?? [];
    const takesKeyFile = restrictedApiArgs(keyArg(REPOSITORY_KEY_HEADER)).every((a) => cmd.includes(a));
    const key = repository && takesKeyFile ? await readRunKey(path.dirname(repository)) : undefined;
    const sameSettings = l[LABEL.settings] === hash;
    if (existing.State.Running && sameSettings && key && repository && l[LABEL.runsDir] === input.runsDir) {
      plan.reuse = { id: existing.Id, runId, runDir: path.dirname(repository), repository };
    } else {
      plan.replace = {
        id: existing.Id,
        runId,
        reason: !existing.State.Running ? "it was not running" : "its settings differ",
      };
    }
    return plan;
  }

  /** Our container that no longer fits, and what ran beside it, removed before a new one is created. */
  async removeReplaced(plan: DockerPlan): Promise<void> {
    if (!plan.replace) return;
    await removeRun(this.docker, plan.replace.runId, plan.settings.runsDir, [plan.replace.id]);
  }

  /** Creates the container `plan()` settled on, or reattaches to the one it found. */
  start(plan: DockerPlan, o: StartOptions, hooks: DockerStartHooks = {}): Promise<DockerStarted> {
    return plan.reuse ? this.attach(plan, o, hooks) : this.create(plan, o, hooks);
  }

  async create(plan: DockerPlan, o: StartOptions, hooks: DockerStartHooks = {}): Promise<DockerStarted> {
    let memlockRefused: string | undefined;
    const created: string[] = [];
    try {
      if (plan.settings.network)
        await ensureNetwork(this.docker, plan.settings.network, { runId: o.runId, runsDir: plan.settings.runsDir });
      const spec = tritonContainerSpec({
        name: plan.name,
        settings: plan.settings,
        runId: o.runId,
        repository: o.repository,
        store: path.join(o.runDir, "store"),
        repositoryKey: o.repositoryKey,
      });
      log.debug("creating container", { name: plan.name, cmd: spec.Cmd });
      let container = await this.docker.createContainer(spec).catch((err) => Promise.reject(startError(err, plan)));
      created.push(container.id);
      try {
        await container.start();
      } catch (err) {
        if (!isMemlockRefused(err)) throw startError(err, plan);
        // Rootless Docker, or a daemon without CAP_SYS_RESOURCE, cannot lift the locked-memory
        // limit. Triton runs without it (pinned host memory for GPU copies is then limited).
        await removeContainers(this.docker, [container.id]);
        created.pop();
        memlockRefused = daemonMessage(err);
        container = await this.docker
          .createContainer(withoutMemlock(spec))
          .catch((e) => Promise.reject(startError(e, plan)));
        created.push(container.id);
        await container.start().catch((e) => Promise.reject(startError(e, plan)));
      }
      let monitoring: MonitoringEndpoints | undefined;
      if (plan.monitoringImages && plan.settings.network) {
        monitoring = await startMonitoring(this.docker, {
          baseName: plan.name,
          network: plan.settings.network,
          runId: o.runId,
          runsDir: plan.settings.runsDir,
          host: plan.settings.host,
          images: plan.monitoringImages,
        });
        created.push(...monitoring.containers);
      }
      const handle = await this.handle(container, o, plan, monitoring?.containers ?? [], false, hooks);
      return {
        handle,
        containerId: container.id,
        ...(monitoring ? { monitoring } : {}),
        ...(memlockRefused ? { memlockRefused } : {}),
      };
    } catch (err) {
      await removeContainers(this.docker, created).catch(() => {});
      if (plan.settings.network)
        await this.docker
          .getNetwork(plan.settings.network)
          .remove()
          .catch(() => {});
      throw err;
    }
  }

  /** Reattach to the running container of an earlier `up` with the same settings. */
  async attach(plan: DockerPlan, o: StartOptions, hooks: DockerStartHooks = {}): Promise<DockerStarted> {
    const reuse = plan.reuse!;
    const container = this.docker.getContainer(reuse.id);
    let monitoring: MonitoringEndpoints | undefined;
    const siblings = await findOurs(this.docker, { runId: reuse.runId, runsDir: plan.settings.runsDir });
    if (plan.monitoringImages && plan.settings.network) {
      const running = siblings.filter(
        (c) => c.State === "running" && ["prometheus", "grafana"].includes(c.Labels[LABEL.role] ?? ""),
      );
      if (running.length === 2) {
        const url = (role: string, port: number) => {
          const c = running.find((x) => x.Labels[LABEL.role] === role)!;
          const p = c.Ports.find((x) => x.PrivatePort === port && x.PublicPort);
          const h = urlHost(plan.settings.host);
          return `http://${h}:${p?.PublicPort ?? port}`;
        };
        monitoring = {
          prometheus: url("prometheus", 9090),
          grafana: url("grafana", 3000),
          containers: running.map((c) => c.Id),
        };
      } else {
        await removeContainers(
          this.docker,
          siblings.filter((c) => c.Id !== reuse.id && c.Labels[LABEL.role] !== "triton").map((c) => c.Id),
        );
        monitoring = await startMonitoring(this.docker, {
          baseName: plan.name,
          network: plan.settings.network,
          runId: reuse.runId,
          runsDir: plan.settings.runsDir,
          host: plan.settings.host,
          images: plan.monitoringImages,
        });
      }
    }
    const handle = await this.handle(container, o, plan, monitoring?.containers ?? [], true, hooks);
    return { handle, containerId: reuse.id, ...(monitoring ? { monitoring } : {}) };
  }

  private async handle(
    container: Docker.Container,
    o: StartOptions,
    plan: DockerPlan,
    siblings: string[],
    resume: boolean,
    hooks: DockerStartHooks,
  ): Promise<ServerHandle> {
    const info = await container.inspect();
    const follower: LogFollower = await followLogs(container, {
      logFile: o.logFile,
      runDir: o.runDir,
      resume,
      ...(hooks.onLogLine ? { onLine: hooks.onLogLine } : {}),
    });
    return dockerHandle(this.docker, container, {
      pid: info.State.Pid || undefined,
      endpoints: endpointsFor(o.host, o.ports),
      follower,
      siblings,
      network: plan.settings.network,
      loaded: () => loadedBeforeStop(o),
      clock: this.clock,
    });
  }
}

/** What the container's settings carry of the decided path (absent where it changes nothing). */
export function containerGpuPath(
  gpus: GpuRequest,
  path: GpuPath,
  facts: Pick<DaemonFacts, "defaultRuntime">,
): ContainerGpuPath | undefined {
  switch (path.kind) {
    case "nvidia-runtime":
      return { kind: "nvidia-runtime", runtime: path.runtime, isDefault: facts.defaultRuntime === path.runtime };
    case "cdi":
      return gpus.kind === "none" ? undefined : { kind: "cdi", devices: cdiDevices(gpus, path.spec) };
    case "daemon":
    case "none":
      return gpus.kind === "none" ? undefined : { kind: "daemon" };
  }
}

/** runc's refusal to raise RLIMIT_MEMLOCK (rlimit type 8) for the container. */
export function isMemlockRefused(err: unknown): boolean {
  return /error setting rlimit type 8|setrlimit.*(memlock|RLIMIT_MEMLOCK)/i.test(daemonMessage(err));
}

export function withoutMemlock(spec: Docker.ContainerCreateOptions): Docker.ContainerCreateOptions {
  return {
    ...spec,
    HostConfig: { ...spec.HostConfig, Ulimits: (spec.HostConfig?.Ulimits ?? []).filter((u) => u.Name !== "memlock") },
  };
}

/** Turns the daemon's refusal to create or start the container into what the user can act on. */
export function startError(err: unknown, plan: Pick<DockerPlan, "settings" | "name" | "gpuPath">): UserError {
  if (err instanceof UserError) return err;
  const msg = daemonMessage(err);
  if (isNoGpuDriverError(err)) {
    const p = plan.gpuPath;
    return p?.kind === "none"
      ? gpuUnavailableError(err, `the Docker daemon has no NVIDIA runtime ("${msg}"); ${p.why}`, p.hint)
      : gpuUnavailableError(err, `the Docker daemon has no NVIDIA runtime ("${msg}")`);
  }
  const port = /(?:0\.0\.0\.0|127\.0\.0\.1|\[?::1?\]?):(\d+)/.exec(msg)?.[1] ?? /port (\d+)/.exec(msg)?.[1];
  if (/port is already allocated|address already in use|bind: /i.test(msg)) {
    const flag = port
      ? Number(port) === plan.settings.ports.grpc
        ? "--grpc-port"
        : Number(port) === plan.settings.ports.metrics
          ? "--metrics-port"
          : "--http-port"
      : "--http-port/--grpc-port/--metrics-port";
    return new UserError(
      `Docker could not publish port ${port ?? "?"} on ${plan.settings.host}: it is already in use`,
      { hint: `Stop what holds it, or choose another port with ${flag} N.`, cause: err },
    );
  }
  if (/no such image/i.test(msg))
    return new UserError(`the image ${plan.settings.image} disappeared before the container was created`, {
      hint: "Run `triton-dev up` again to pull it.",
      cause: err,
    });
  if (/is already in use by container/i.test(msg)) {
    return new UserError(`the container name ${plan.name} was taken while starting`, {
      hint: "Another `triton-dev up` for this project may be starting; wait for it or run `triton-dev down`.",
      cause: err,
    });
  }
  return new UserError(`Docker could not start the Triton container: ${msg}`, {
    hint: `Check \`docker info\`; image ${plan.settings.image}, --gpus ${formatGpus(plan.settings.gpus)}.`,
    cause: err,
  });
}

interface HandleParts {
  pid: number | undefined;
  endpoints: Endpoints;
  follower: LogFollower;
  siblings: string[];
  network?: string;
  /** What Triton has loaded, so the stop can end once all of it has unloaded (container-stop.ts). */
  loaded?: ContainerStopOptions["loaded"];
  clock: Clock;
}

function dockerHandle(docker: Docker, container: Docker.Container, p: HandleParts, pollMs = 1000): ServerHandle {
  let resolveExit!: (e: { code: number | null; signal: NodeJS.Signals | null }) => void;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => (resolveExit = r));
  // Polled rather than a long-lived wait request, which would keep a detached CLI from exiting.
  const { clock } = p;
  const timer = clock.setInterval(() => {
    container.inspect().then(
      (i) => {
        if (!i.State.Running && !i.State.Restarting) {
          clock.clearInterval(timer);
          resolveExit({ code: i.State.ExitCode, signal: null });
        }
      },
      (err) => {
        if (statusOf(err) === 404) {
          clock.clearInterval(timer);
          resolveExit({ code: null, signal: "SIGTERM" });
        }
      },
    );
  }, pollMs);
  let stopping: Promise<StopOutcome | undefined> | undefined;
  return {
    pid: p.pid,
    endpoints: p.endpoints,
    exited,
    release: () => {
      clock.clearInterval(timer);
      p.follower.release();
    },
    stop: (graceMs = 15_000, onProgress, waitFor) => {
      stopping ??= (async () => {
        const outcome = await stopTritonContainer(container, {
          graceMs,
          clock,
          ...(p.loaded ? { loaded: p.loaded } : {}),
          ...(onProgress ? { onProgress } : {}),
          ...(waitFor ? { waitFor } : {}),
        }).catch((err: unknown) => {
          log.warn("could not stop the container", { error: daemonMessage(err) });
          return undefined;
        });
        await p.follower.stop();
        clock.clearInterval(timer);
        await removeContainers(docker, [container.id, ...p.siblings]).catch((err) =>
          log.warn("could not remove containers", { error: daemonMessage(err) }),
        );
        if (p.network)
          await docker
            .getNetwork(p.network)
            .remove()
            .catch(() => {});
        resolveExit({ code: null, signal: "SIGTERM" });
        return outcome;
      })();
      return stopping;
    },
  };
}

export interface OurContainer {
  Id: string;
  Names: string[];
  State: string;
  Labels: Record<string, string>;
  Ports: Array<{ PrivatePort: number; PublicPort?: number; IP?: string }>;
}

/** Containers carrying our labels, of one state folder and optionally one run. */
export async function findOurs(docker: Docker, o: { runsDir: string; runId?: string }): Promise<OurContainer[]> {
  const filters = {
    label: [
      `${LABEL.tool}=triton-dev`,
      `${LABEL.runsDir}=${o.runsDir}`,
      ...(o.runId ? [`${LABEL.runId}=${o.runId}`] : []),
    ],
  };
  const list = (await docker.listContainers({
    all: true,
    filters: JSON.stringify(filters),
  } as Docker.ContainerListOptions)) as unknown as OurContainer[];
  // The daemon filtered already; checked again because nothing without our labels is ever removed.
  return list.filter(
    (c) => isOurs(c.Labels) && c.Labels[LABEL.runsDir] === o.runsDir && (!o.runId || c.Labels[LABEL.runId] === o.runId),
  );
}

/** Stop and remove what a run created (containers by label, and its network). */
export async function removeRun(
  docker: Docker,
  runId: string,
  runsDir: string,
  extraIds: string[] = [],
  graceSec = 15,
): Promise<string[]> {
  const ours = await findOurs(docker, { runsDir, runId });
  const ids = [...new Set([...extraIds, ...ours.map((c) => c.Id)])];
  const triton = ours.filter((c) => c.Labels[LABEL.role] === "triton" && c.State === "running");
  // Triton first, gracefully (it unloads models and ends its stubs); the rest are force-removed.
  await Promise.all(
    triton.map((c) =>
      docker
        .getContainer(c.Id)
        .stop({ t: graceSec })
        .catch(() => {}),
    ),
  );
  await removeContainers(docker, ids);
  const nets = (await docker
    .listNetworks({
      filters: JSON.stringify({
        label: [`${LABEL.tool}=triton-dev`, `${LABEL.runId}=${runId}`, `${LABEL.runsDir}=${runsDir}`],
      }),
    } as Docker.NetworkListOptions)
    .catch(() => [])) as Array<{ Id: string; Labels?: Record<string, string> }>;
  for (const n of nets)
    if (isOurs(n.Labels))
      await docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => {});
  return ids;
}
