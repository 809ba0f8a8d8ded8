import { REAL_CLOCK, type Clock } from "../../clock.js";
import { connectDocker } from "../clients/container/client.js";
import { LABEL } from "./settings.js";

export interface DockerRunRef {
  runId: string;
  docker?: { containerId: string; daemon: string } | undefined;
}

/**
 * Whether the container a run record names still runs and is still that run's (same labels).
 * A daemon that does not answer counts as not running; `down` checks the daemon itself.
 */
export async function dockerRunAlive(
  ref: DockerRunRef,
  timeoutMs = 3_000,
  clock: Clock = REAL_CLOCK,
): Promise<boolean> {
  if (!ref.docker) return false;
  const docker = connectDocker({ DOCKER_HOST: ref.docker.daemon });
  let timer: unknown;
  try {
    const info = await Promise.race([
      docker.getContainer(ref.docker.containerId).inspect(),
      new Promise<never>((_, reject) => {
        timer = clock.setTimeout(() => reject(new Error("timeout")), timeoutMs, { unref: true });
      }),
    ]);
    return !!info.State.Running && info.Config.Labels?.[LABEL.runId] === ref.runId;
  } catch {
    return false;
  } finally {
    clock.clearTimeout(timer);
  }
}
