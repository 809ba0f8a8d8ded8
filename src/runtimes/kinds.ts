/**
 * The runtimes this build has: one line each in RUNTIMES below, with the facts about it that need
 * no runtime code loaded (its folder's `facts.ts`: lint reads them to judge a repository for a
 * runtime, the CLI to describe flags) and its driver's loader, which registry.ts calls when a run
 * needs it. Statically it imports only the facts files, which import nothing, so any room may use it.
 */
import { clusterFacts } from "./cluster/facts.js";
import { backendsOfImage, dockerFacts } from "./docker/facts.js";
import { kindFacts } from "./kind/facts.js";
import { localFacts } from "./local/facts.js";
import { adaptedServing, type FlagSpec, type RuntimeFacts, type RuntimeFlags } from "./facts.js";
import { BACKEND_HOMES, DEFAULT_IMAGE, backendHome } from "./docker/facts.js";
import type { RuntimeKind } from "../runtime-kind.js";

export type { RuntimeFacts, RuntimeFlags } from "./facts.js";
export { RUNTIME_FLAG_NAMES, adaptedServing } from "./facts.js";
export type { AdaptedBackend } from "./facts.js";
export { DEFAULT_IMAGE, BACKEND_HOMES, backendHome, backendsOfImage, imageOfFlavour } from "./docker/facts.js";
export type { BackendHome, ImageFlavour } from "./docker/facts.js";
export { LOCAL_ADAPTER_BACKENDS } from "./local/facts.js";
export { DEFAULT_CLUSTER } from "./kind/facts.js";

/** A runtime of this build: its facts, and its driver, imported only when called. */
export interface RuntimeEntry {
  facts: RuntimeFacts;
  /** The module of `<name>/driver.ts`, whose `driver` is a RuntimeDriver (registry.ts loadDriver). */
  load: () => Promise<{ driver: object }>;
}

/**
 * Adding a runtime: its folder (`facts.ts`, `driver.ts` exporting `driver`) and its line here.
 * Nothing under runtimes/*\/ imports this file, so the drivers it loads never lead back to it.
 */
export const RUNTIMES = {
  local: { facts: localFacts, load: () => import("./local/driver.js") },
  docker: { facts: dockerFacts, load: () => import("./docker/driver.js") },
  kind: { facts: kindFacts, load: () => import("./kind/driver.js") },
  cluster: { facts: clusterFacts, load: () => import("./cluster/driver.js") },
} as const satisfies Record<RuntimeKind, RuntimeEntry>;

export type { RuntimeKind } from "../runtime-kind.js";
export const RUNTIME_KINDS = Object.keys(RUNTIMES) as RuntimeKind[];
export const RUNTIME_FACTS = Object.fromEntries(RUNTIME_KINDS.map((k) => [k, RUNTIMES[k].facts])) as Record<
  RuntimeKind,
  RuntimeFacts
>;

/** Which runtimes take a flag, for messages like "--cluster only applies to the kind runtime". */
export function runtimesTaking(flag: keyof RuntimeFlags): RuntimeKind[] {
  return RUNTIME_KINDS.filter((k) => RUNTIME_FACTS[k].flags.includes(flag));
}

/**
 * `up`'s runtime flags as the command line shows them, each with the runtimes that take it: "docker,
 * kind and cluster runtimes: the Triton image ...". From the runtimes' facts, so a runtime's flag
 * needs no line in the CLI.
 */
export function runtimeFlagOptions(): Array<FlagSpec & { key: keyof RuntimeFlags }> {
  const out: Array<FlagSpec & { key: keyof RuntimeFlags }> = [];
  for (const kind of RUNTIME_KINDS)
    for (const [key, spec] of Object.entries(RUNTIME_FACTS[kind].flagSpecs ?? {}) as Array<
      [keyof RuntimeFlags, FlagSpec]
    >) {
      if (out.some((o) => o.key === key)) continue;
      const takers = runtimesTaking(key);
      const who =
        takers.length === 1
          ? `${takers[0]} runtime`
          : `${takers.slice(0, -1).join(", ")} and ${takers.at(-1)} runtimes`;
      out.push({ key, usage: spec.usage, help: `${who}: ${spec.help}` });
    }
  return out;
}

/**
 * The backends a runtime's server has: its facts', or where the image decides, those of the image
 * it runs (`--image`; an NGC flavour's are known, another's are those `found` in it where the
 * runtime looked). Undefined: an image we know nothing of, whose backends only its Triton can tell.
 */
export function serverBackends(
  runtime: RuntimeKind,
  image?: string,
  found?: readonly string[],
): readonly string[] | undefined {
  const f = RUNTIME_FACTS[runtime];
  if (!f.imageDecides || image === undefined) return f.backends;
  return backendsOfImage(image) ?? found;
}

/**
 * What lint needs of the runtime that will serve a repository, as data (repo/rules/reporter.ts
 * `LintServer`, matched by shape: the runtimes import nothing of lint, nor lint of them), and the
 * backends that run only on a GPU with where they run, which lint names with or without a runtime.
 */
export function lintFacts(runtime?: RuntimeKind, image?: string, found?: readonly string[]) {
  const gpuOnly = Object.fromEntries(
    Object.entries(BACKEND_HOMES)
      .filter(([, home]) => home.gpu)
      .map(([backend]) => [backend, backendHome(backend).where]),
  );
  if (!runtime) return { gpuOnly };
  const f = RUNTIME_FACTS[runtime];
  const adapted = f.adaptedBackends;
  const server = {
    runtime,
    // Where the image decides the backends (no fixed Triton release), a message names the image.
    ...(f.tritonVersion ? {} : { servedBy: `the ${runtime} runtime's image ${image ?? DEFAULT_IMAGE}` }),
    backends: serverBackends(runtime, image, found),
    missingBackend: (backend: string) => f.missingBackend(backend, image),
    ...(f.tritonVersion ? { tritonVersion: f.tritonVersion } : {}),
    ...(f.backendLibraries ? { backendLibraries: f.backendLibraries } : {}),
    ...(adapted
      ? {
          adaptedBackends: Object.fromEntries(
            Object.entries(adapted).map(([b, a]) => [
              b,
              { module: a.module, requirement: a.requirement, servedAs: adaptedServing(a, runtime) },
            ]),
          ),
        }
      : {}),
    stagingElsewhere: f.stagingSeenAs !== undefined,
    buildsEnvironments: f.buildsEnvironments === true,
  };
  return { gpuOnly, server };
}
