/**
 * The runtimes' drivers, each imported only when a run of that runtime needs it: `lint`, `status`
 * and a local `up` never load dockerode, and nothing here loads a driver until asked.
 */
import { UserError } from "../errors.js";
import type { AttachedRun, DriverContext, RuntimeDriver } from "./driver.js";
import { givenFlags } from "./facts.js";
import { refuseForeignFlags } from "./flags.js";
import { RUNTIME_FACTS, RUNTIME_KINDS, RUNTIMES as BUILT_IN, type RuntimeFlags, type RuntimeKind } from "./kinds.js";
import type { RunState } from "../state/run-state.js";

/** A runtime's driver, through its line in kinds.ts (a runtime needs no line here). */
export async function loadDriver(kind: RuntimeKind): Promise<RuntimeDriver> {
  if (!Object.hasOwn(BUILT_IN, kind))
    throw new UserError(`the run record names the runtime '${String(kind)}', which this triton-dev does not have`, {
      hint: `Use the triton-dev that started it, or remove its record (${RUNTIME_KINDS.join(", ")} are the runtimes here).`,
    });
  return (await BUILT_IN[kind].load()).driver as RuntimeDriver;
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
 * `--runtime auto`: each runtime whose facts say `auto: "probe"` is asked in turn (its driver's
 * `autoChoice`: Docker when a daemon answers and it can run the image the way a GPU workstation
 * does, or when a container-only flag says a container is wanted); when none is chosen, the
 * runtime that says `auto: "fallback"` (local, nothing to download), with the last probe's
 * reason. The others (kind, cluster) are never picked: a cluster is something to ask for.
 */
export async function chooseRuntime(
  requested: "auto" | RuntimeKind,
  flags: RuntimeFlags,
  env: NodeJS.ProcessEnv,
  timeoutMs = 1_500,
  load: (kind: RuntimeKind) => Promise<RuntimeDriver> = loadDriver,
): Promise<RuntimeChoice> {
  if (requested !== "auto") return { runtime: requested, why: `--runtime ${requested}` };
  const probed = RUNTIME_KINDS.filter((k) => RUNTIME_FACTS[k].auto === "probe");
  // A flag no runtime `auto` may choose takes (--cluster, --context) needs its runtime named.
  const candidates = RUNTIME_KINDS.filter((k) => RUNTIME_FACTS[k].auto !== undefined);
  const unchoosable = givenFlags(flags).filter((f) => !candidates.some((k) => RUNTIME_FACTS[k].flags.includes(f)));
  if (unchoosable.length && probed[0]) refuseForeignFlags(probed[0], flags);
  let why = "no runtime is probed";
  for (const kind of probed) {
    const verdict = await (await load(kind)).autoChoice?.(flags, env, timeoutMs);
    if (!verdict) continue;
    if (verdict.chosen) return { runtime: kind, why: verdict.why };
    why = verdict.why;
  }
  const fallback = RUNTIME_KINDS.find((k) => RUNTIME_FACTS[k].auto === "fallback");
  if (!fallback) throw new Error("no runtime says it is the automatic choice's fallback (runtimes/*/facts.ts)");
  return { runtime: fallback, why };
}
