import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import type { AutoVerdict } from "../driver.js";
import { givenFlags, RUNTIME_FLAG_NAMES, type RuntimeFlags } from "../facts.js";
import { connectDocker, daemonAddress, daemonFacts } from "../clients/container/client.js";
import { cdiDirsFor, CDI_GPU_KIND, decideGpuPath, findCdiSpecs } from "./gpu-path.js";
import { dockerFacts } from "./facts.js";
import { DEFAULT_IMAGE } from "./settings.js";

export interface AutoProbe {
  answers: boolean;
  version?: string;
  nvidia?: boolean;
  /** The CDI spec file through which this daemon passes GPUs as CDI devices (no NVIDIA runtime, Docker 25+). */
  cdiSpec?: string;
  imagePresent?: boolean;
  image: string;
}

/** What `--runtime auto` needs to know of the Docker daemon, within a short deadline. */
export async function probeForAuto(
  image: string | undefined,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  clock: Clock = REAL_CLOCK,
): Promise<AutoProbe> {
  const ref = image ?? DEFAULT_IMAGE;
  let timer: unknown;
  try {
    const docker = connectDocker(env);
    const facts = await Promise.race([
      daemonFacts(docker),
      new Promise<never>((_, reject) => {
        timer = clock.setTimeout(() => reject(new Error("timeout")), timeoutMs, { unref: true });
      }),
    ]);
    const imagePresent = await docker
      .getImage(ref)
      .inspect()
      .then(
        () => true,
        () => false,
      );
    const dirs = cdiDirsFor(facts, daemonAddress(env), env);
    const path = decideGpuPath({ daemon: facts, cdi: { ...(await findCdiSpecs(dirs)), dirs }, hostGpus: undefined });
    return {
      answers: true,
      version: facts.version,
      nvidia: facts.nvidia,
      ...(path.kind === "cdi" ? { cdiSpec: path.spec.file } : {}),
      imagePresent,
      image: ref,
    };
  } catch {
    return { answers: false, image: ref };
  } finally {
    clock.clearTimeout(timer);
  }
}

/**
 * The docker runtime's answer to `--runtime auto`: chosen when a daemon answers and it can run the
 * image the way a GPU workstation does (the NVIDIA runtime is registered, a CDI spec passes the
 * GPUs on Docker 25+, or the image is already here), or when a container-only flag (--image,
 * --gpus, --shm-size, --monitoring) says a container is wanted. A daemon without any of these
 * would mean a multi-gigabyte pull to end up on the CPU, which the local runtime does with nothing
 * to download.
 */
export async function dockerAutoChoice(
  flags: RuntimeFlags,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  probe: typeof probeForAuto = probeForAuto,
): Promise<AutoVerdict> {
  const wantsContainer = givenFlags(flags).filter((f) => dockerFacts.flags.includes(f));
  const found = await probe(flags.image, env, timeoutMs);
  if (wantsContainer.length) {
    const names = wantsContainer.map((f) => RUNTIME_FLAG_NAMES[f]).join(", ");
    if (found.answers) return { chosen: true, why: `${names} given and Docker ${found.version} answers` };
    throw new UserError(
      `${names} need${wantsContainer.length === 1 ? "s" : ""} a container runtime, and no Docker daemon answers`,
      {
        hint: "Start Docker (or set DOCKER_HOST), or drop the flag to serve on the local runtime.",
      },
    );
  }
  if (!found.answers) return { chosen: false, why: "no Docker daemon answers" };
  if (found.nvidia) return { chosen: true, why: `Docker ${found.version} answers with the NVIDIA runtime` };
  if (found.cdiSpec)
    return {
      chosen: true,
      why: `Docker ${found.version} answers and passes GPUs as CDI devices (${CDI_GPU_KIND}, ${found.cdiSpec})`,
    };
  if (found.imagePresent) return { chosen: true, why: `Docker ${found.version} answers and ${found.image} is present` };
  return {
    chosen: false,
    why: `Docker answers but has no NVIDIA runtime, no CDI spec for its GPUs and no ${found.image}; the local runtime needs no download`,
  };
}
