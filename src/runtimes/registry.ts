/**
 * The runtimes' drivers, each imported only when a run of that runtime needs it: `lint`, `status`
 * and a local `up` never load dockerode, and nothing here loads a driver until asked.
 */
import { UserError } from "../errors.js";
import type { AttachedRun, DriverContext, RuntimeDriver } from "./driver.js";
import { givenFlags, refuseForeignFlags } from "./flags.js";
import { RUNTIME_FACTS, RUNTIME_FLAG_NAMES, RUNTIME_KINDS, type RuntimeFlags, type RuntimeKind } from "./kinds.js";
import type { RunState } from "../state/run-state.js";

const LOADERS: Record<RuntimeKind, () => Promise<RuntimeDriver>> = {
  local: async () => (await import("./local/driver.js")).localDriver as RuntimeDriver,
  docker: async () => (await import("./docker/driver.js")).dockerDriver as RuntimeDriver,
  kind: async () => (await import("./kind/driver.js")).kindDriver as RuntimeDriver,
  cluster: async () => (await import("./cluster/driver.js")).clusterDriver as RuntimeDriver,
};

export function loadDriver(kind: RuntimeKind): Promise<RuntimeDriver> {
  return LOADERS[kind]();
}

/** A recorded run through its runtime's driver. */
export async function attachRun(
  state: RunState,
  ctx: Omit<DriverContext, "emit">,
  runtimes: Runtimes = RUNTIMES,
): Promise<AttachedRun> {
  return (await runtimes.load(state.runtime)).attach(state, ctx);
}

/**
 * The runtimes as the session sees them: which there are, how `auto` chooses, and each one's
 * driver. The session, `status` and `down` take this as a defaulted parameter, so a test hands
 * them a fake driver without replacing any module.
 */
export interface Runtimes {
  readonly kinds: readonly RuntimeKind[];
  load(kind: RuntimeKind): Promise<RuntimeDriver>;
  choose(requested: "auto" | RuntimeKind, flags: RuntimeFlags, env: NodeJS.ProcessEnv): Promise<RuntimeChoice>;
}

/** The runtimes this build has. */
export const RUNTIMES: Runtimes = {
  kinds: RUNTIME_KINDS,
  load: loadDriver,
  choose: (requested, flags, env) => chooseRuntime(requested, flags, env),
};

export interface RuntimeChoice {
  runtime: RuntimeKind;
  why: string;
}

/**
 * `--runtime auto`: Docker when a daemon answers and it can run the image the way a GPU
 * workstation does (the NVIDIA runtime is registered, or the image is already here), or when a
 * container-only flag (--image, --gpus, --shm-size, --monitoring) says a container is wanted;
 * otherwise the embedded local runtime. A daemon without either would mean a multi-gigabyte pull
 * to end up on the CPU, which the local runtime does with nothing to download. kind is never
 * picked: a cluster is something to ask for.
 */
export async function chooseRuntime(
  requested: "auto" | RuntimeKind,
  flags: RuntimeFlags,
  env: NodeJS.ProcessEnv,
  timeoutMs = 1_500,
): Promise<RuntimeChoice> {
  if (requested !== "auto") return { runtime: requested, why: `--runtime ${requested}` };
  const wantsContainer = givenFlags(flags).filter((f) => RUNTIME_FACTS.docker.flags.includes(f));
  const kindOnly = givenFlags(flags).filter((f) => !RUNTIME_FACTS.docker.flags.includes(f));
  if (kindOnly.length) refuseForeignFlags("docker", flags);
  const { probeForAuto } = await import("./docker/auto.js");
  const probe = await probeForAuto(flags.image, env, timeoutMs);
  if (wantsContainer.length) {
    const names = wantsContainer.map((f) => RUNTIME_FLAG_NAMES[f]).join(", ");
    if (probe.answers) return { runtime: "docker", why: `${names} given and Docker ${probe.version} answers` };
    throw new UserError(
      `${names} need${wantsContainer.length === 1 ? "s" : ""} a container runtime, and no Docker daemon answers`,
      {
        hint: "Start Docker (or set DOCKER_HOST), or drop the flag to serve on the local runtime.",
      },
    );
  }
  if (!probe.answers) return { runtime: "local", why: "no Docker daemon answers" };
  if (probe.nvidia) return { runtime: "docker", why: `Docker ${probe.version} answers with the NVIDIA runtime` };
  if (probe.imagePresent)
    return { runtime: "docker", why: `Docker ${probe.version} answers and ${probe.image} is present` };
  return {
    runtime: "local",
    why: `Docker answers but has no NVIDIA runtime and no ${probe.image}; the local runtime needs no download`,
  };
}
