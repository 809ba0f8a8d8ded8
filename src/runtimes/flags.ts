import { UsageError } from "../errors.js";
import { givenFlags } from "./facts.js";
import { RUNTIME_FACTS, RUNTIME_FLAG_NAMES, runtimesTaking, type RuntimeFlags, type RuntimeKind } from "./kinds.js";

export { givenFlags };

function listRuntimes(kinds: RuntimeKind[]): string {
  return kinds.length === 1
    ? `the ${kinds[0]} runtime`
    : `the ${kinds.slice(0, -1).join(", ")} and ${kinds.at(-1)} runtimes`;
}

/**
 * Refuses the flags `kind` does not take, naming the runtimes that do. Asked by the session before
 * a driver reads its own flags, and by `--runtime auto` (drivers never import this: it reads the
 * table of every runtime, kinds.ts, which loads the drivers).
 */
export function refuseForeignFlags(kind: RuntimeKind, flags: RuntimeFlags): void {
  const foreign = givenFlags(flags).filter((f) => !RUNTIME_FACTS[kind].flags.includes(f));
  if (foreign.length === 0) return;
  // Grouped by the runtimes that take them, so that one message names one set of runtimes.
  const takers = runtimesTaking(foreign[0]!);
  const group = foreign.filter((f) => runtimesTaking(f).join(",") === takers.join(","));
  const names = group.map((f) => RUNTIME_FLAG_NAMES[f]).join(", ");
  const hint =
    kind === "kind" && group.includes("monitoring")
      ? "The kind runtime renders a ServiceMonitor when the cluster runs the Prometheus operator; drop --monitoring."
      : `Add ${takers.map((t) => `\`--runtime ${t}\``).join(" or ")}.`;
  throw new UsageError(`${names} only appl${group.length === 1 ? "ies" : "y"} to ${listRuntimes(takers)}`, { hint });
}
