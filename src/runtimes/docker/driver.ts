import path from "node:path";
import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { requireFreePorts } from "../../net/ports.js";
import type { RunState } from "../../state/run-state.js";
import type { AttachedRun, Leftovers, PlannedRun, RunDescription, RuntimeDriver, RuntimeKind } from "../driver.js";
import { tritonLiveAt } from "../../triton/readiness.js";
import { deliverRunFolder } from "../delivery.js";
import { dockerFacts } from "./facts.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { connectDocker, requireDaemon } from "../clients/container/client.js";
import { stopTritonContainer } from "./container-stop.js";
import { DockerRuntime, findOurs, removeRun } from "./docker-runtime.js";
import { shmHinter, shmStartHint } from "../shm-hints.js";
import { dockerRunAlive } from "./liveness.js";
import { followLogs } from "./logs.js";
import { pullEvent } from "../clients/container/pull-event.js";
import { containerEvent, gpuPathEvent, monitoringEvent } from "./events.js";
import { parseDockerRecord, type DockerRecord } from "./record.js";
import {
  DEFAULT_IMAGE,
  DEFAULT_SHM_BYTES,
  containerName,
  formatGpus,
  isOurs,
  LABEL,
  parseGpus,
  parseSize,
  type GpuRequest,
} from "./settings.js";

const log = rootLog.child("docker");

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
  /** The time the liveness poll, the daemon's deadlines and the stop's waits run on (../../clock.ts). */
  clock?: Clock;
}

/** The docker runtime's `status --json` fields. */
export interface DockerStatusFields extends Record<string, unknown> {
  container: { name: string; id: string; image: string; gpus: string; shmBytes: number };
}

/** Triton in a container of the NGC image (or a compatible one), through the Docker Engine API. */
export function createDockerDriver(deps: DockerDriverDeps = {}): RuntimeDriver<DockerOptions> {
  const kind = deps.kind ?? "docker";
  const clock = deps.clock ?? REAL_CLOCK;
  // The engine's endpoint as DOCKER_HOST, so the connection, the daemon the record names (and
  // liveness reads) and the hints all speak of the same one.
  const engineEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => {
    const host = deps.engineHost?.(env);
    return host ? { ...env, DOCKER_HOST: host } : env;
  };
  const connect = (env: NodeJS.ProcessEnv) => (deps.connect ?? connectDocker)(engineEnv(env));
  return {
    kind,
    autoChoice: async (flags, env, timeoutMs) => (await import("./auto.js")).dockerAutoChoice(flags, env, timeoutMs),
    options(flags) {
      return {
        image: flags.image ?? DEFAULT_IMAGE,
        gpus: flags.gpus ? parseGpus(flags.gpus) : "auto",
        shmBytes: flags.shmSize ? parseSize(flags.shmSize) : DEFAULT_SHM_BYTES,
        monitoring: flags.monitoring ?? false,
      };
    },
    async plan(input, options, ctx): Promise<PlannedRun> {
      const rt = new DockerRuntime(connect(ctx.env), engineEnv(ctx.env), {
        ...(deps.detectGpus ? { detectGpus: deps.detectGpus } : {}),
        clock,
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
      if (plan.gpuPath) ctx.emit(gpuPathEvent(kind, plan.gpuPath));
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
        async start(o) {
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
            record,
            readiness: tritonLiveAt,
            ...(started.memlockRefused
              ? {
                  notices: [
                    `the Docker daemon may not lift the locked-memory limit here (memlock=-1 refused: ${started.memlockRefused.slice(0, 160)}); Triton runs with the daemon's limit, which only matters for pinned memory with GPUs. Rootful Docker allows it.`,
                  ],
                }
              : {}),
          };
        },
        startHint: (logFile) => shmStartHint(logFile, options.shmBytes),
      };
    },
    attach(state: RunState, ctx): AttachedRun {
      const rec = parseDockerRecord(state.runtimeRecord, ctx.paths.runFile);
      const env = { DOCKER_HOST: rec.daemon };
      return {
        state,
        alive: () => dockerRunAlive({ runId: state.runId, docker: rec }, undefined, clock),
        describe: (): RunDescription<DockerStatusFields> => ({
          where: `container ${rec.containerName}`,
          goneWhat: `the container ${rec.containerName}`,
          lines: [["image", `${rec.image} (gpus ${rec.gpus}, /dev/shm ${Math.round(rec.shmBytes / 1024 ** 2)} MiB)`]],
          json: {
            container: {
              name: rec.containerName,
              id: rec.containerId,
              image: rec.image,
              gpus: rec.gpus,
              shmBytes: rec.shmBytes,
            },
          },
          ...(rec.monitoring ? { monitoring: rec.monitoring, startEvents: [monitoringEvent(rec.monitoring)] } : {}),
        }),
        // `up` again for the same project's detached container hands it over to the new `up`:
        // the container is reattached (same settings) or recreated (changed ones).
        handsOverTo: (other, modelsDir) => other === kind && rec.containerName === containerName(modelsDir),
        async stop(graceMs, onProgress, waitFor) {
          const docker = connect(env);
          try {
            await requireDaemon(docker, env, undefined, clock);
          } catch (err) {
            throw new UserError(`cannot stop container ${rec.containerName}: ${(err as Error).message}`, {
              hint: (err as UserError).hint,
              cause: err,
            });
          }
          const info = await docker
            .getContainer(rec.containerId)
            .inspect()
            .catch(() => undefined);
          // A container of that id without our labels is not ours to remove, whatever the record says.
          const extra = info && isOurs(info.Config.Labels) ? [info.Id] : [];
          const outcome =
            info && extra.length && info.State.Running
              ? await stopTritonContainer(docker.getContainer(info.Id), {
                  graceMs,
                  clock,
                  loaded: () => loadedBeforeStop(state),
                  ...(onProgress ? { onProgress } : {}),
                  ...(waitFor ? { waitFor } : {}),
                }).catch((err: unknown) => {
                  log.warn("could not stop the container", { error: String(err) });
                  return undefined;
                })
              : undefined;
          // Removing is the daemon's work, and with the vfs storage driver (a full copy of the image
          // per container) it can take longer than the stop itself.
          const saying = onProgress
            ? clock.setTimeout(
                () => onProgress(`Triton has stopped; waiting for Docker to remove ${rec.containerName}`),
                1000,
              )
            : undefined;
          try {
            await removeRun(docker, state.runId, path.dirname(state.runDir), extra, Math.round(graceMs / 1000));
          } finally {
            clock.clearTimeout(saying);
          }
          return {
            what: `container ${rec.containerName}, removed`,
            staleWhat: `pid ${state.pid}`,
            json: { container: rec.containerName },
            ...(outcome ? { outcome } : {}),
          };
        },
        async supervise() {
          // A container writes its log to the daemon; while the run is detached the watcher copies
          // it into the log file, from where the foreground `up` stopped, for `logs` and reload.
          const container = connect(env).getContainer(rec.containerId);
          const logs = await followLogs(container, {
            logFile: state.logFile,
            runDir: state.runDir,
            resume: true,
          }).catch((err: unknown) => {
            log.warn("could not follow the container's log", { error: String(err) });
            return undefined;
          });
          // The container reads the store read-only, so nothing is precompiled for its Python.
          return { stop: async () => void (await logs?.stop()) };
        },
      };
    },
    doctor: async (ctx) => (await import("./doctor.js")).dockerChecks(engineEnv(ctx.env)),
    async cleanup(graceMs, ctx): Promise<Leftovers> {
      const none: Leftovers = { json: { orphanContainers: [] }, lines: [] };
      const docker = connect(ctx.env);
      try {
        await requireDaemon(docker, engineEnv(ctx.env), 1_500, clock);
      } catch {
        return none;
      }
      const ours = await findOurs(docker, { runsDir: ctx.paths.runsDir }).catch(() => []);
      const removed: string[] = [];
      for (const runId of new Set(ours.map((c) => c.Labels[LABEL.runId] ?? ""))) {
        const names = ours
          .filter((c) => c.Labels[LABEL.runId] === runId)
          .map((c) => (c.Names[0] ?? c.Id).replace(/^\//, ""));
        await removeRun(docker, runId, ctx.paths.runsDir, [], Math.round(graceMs / 1000));
        removed.push(...names);
      }
      return {
        json: { orphanContainers: removed },
        lines: removed.length ? [`removed ${removed.length} leftover container(s) of ours: ${removed.join(", ")}`] : [],
      };
    },
  };
}

export const dockerDriver = createDockerDriver();

/** The entry registry.ts loads for this runtime (`./docker/driver.js`'s `driver`). */
export { dockerDriver as driver };
