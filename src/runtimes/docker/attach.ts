import path from "node:path";
import type Docker from "dockerode";
import type { Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import type { RunState } from "../../state/run-state.js";
import type { AttachedRun, RunDescription, RuntimeKind, StopReport, Supervision, UnloadsToWaitFor } from "../driver.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { requireDaemon } from "../clients/container/client.js";
import { stopTritonContainer } from "./container-stop.js";
import { removeRun } from "./docker-runtime.js";
import { dockerRunAlive } from "./liveness.js";
import { followLogs } from "./logs.js";
import { monitoringEvent } from "./events.js";
import { parseDockerRecord, type DockerRecord } from "./record.js";
import { containerName, isOurs } from "./settings.js";

const log = rootLog.child("docker");

/** The docker runtime's `status --json` fields. */
export interface DockerStatusFields extends Record<string, unknown> {
  container: { name: string; id: string; image: string; gpus: string; shmBytes: number };
}

/** What a recorded container run is reached with: the driver's name, its engine and its clock. */
export interface DockerAttachDeps {
  /** The runtime the driver is (docker, or another engine under its own name). */
  kind: RuntimeKind;
  /** A connection to the engine at the environment's DOCKER_HOST (the driver's engine endpoint applied). */
  connect: (env: NodeJS.ProcessEnv) => Docker;
  /** The time the liveness poll, the daemon's deadline and the stop's waits run on. */
  clock: Clock;
}

/** A recorded run's container, found again from another process (`status`, `down`, the watcher). */
export function attachDockerRun(state: RunState, runFile: string, deps: DockerAttachDeps): AttachedRun {
  const rec = parseDockerRecord(state.runtimeRecord, runFile);
  const env = { DOCKER_HOST: rec.daemon };
  return {
    state,
    alive: () => dockerRunAlive({ runId: state.runId, docker: rec }, undefined, deps.clock),
    describe: () => describeContainerRun(rec),
    // `up` again for the same project's detached container hands it over to the new `up`:
    // the container is reattached (same settings) or recreated (changed ones).
    handsOverTo: (other, modelsDir) => other === deps.kind && rec.containerName === containerName(modelsDir),
    stop: async (graceMs, onProgress, waitFor) =>
      stopContainerRun(deps.connect(env), { rec, state, env, clock: deps.clock }, graceMs, onProgress, waitFor),
    supervise: async () => superviseContainerRun(deps.connect(env), rec, state),
  };
}

function describeContainerRun(rec: DockerRecord): RunDescription<DockerStatusFields> {
  return {
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
  };
}

/** A recorded container run: its record, the daemon it names (as DOCKER_HOST) and the clock its stop waits on. */
interface RecordedContainer {
  rec: DockerRecord;
  state: RunState;
  env: NodeJS.ProcessEnv;
  clock: Clock;
}

/** `down`: Triton's stop in the container (its unloads followed), then the run's containers removed. */
async function stopContainerRun(
  docker: Docker,
  { rec, state, env, clock }: RecordedContainer,
  graceMs: number,
  onProgress?: (message: string) => void,
  waitFor?: UnloadsToWaitFor,
): Promise<StopReport> {
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
    ? clock.setTimeout(() => onProgress(`Triton has stopped; waiting for Docker to remove ${rec.containerName}`), 1000)
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
}

/**
 * A container writes its log to the daemon; while the run is detached the watcher copies it into
 * the log file, from where the foreground `up` stopped, for `logs` and reload.
 */
async function superviseContainerRun(docker: Docker, rec: DockerRecord, state: RunState): Promise<Supervision> {
  const container = docker.getContainer(rec.containerId);
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
}
