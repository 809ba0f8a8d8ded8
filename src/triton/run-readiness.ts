import type { RepositoryIndexEntry } from "./http-client.js";

/**
 * What "ready" means for a triton-dev run, in `status`, `status --json`, the dashboard and the
 * exit code of `up --detach` alike. Models lint refused, GPU models skipped, and models whose load
 * failed with nothing earlier to serve are not served: they are listed with their reasons and do
 * not make a run unready. triton-dev has Triton forget those failed loads (see
 * reload/forget.ts), so its own /v2/health/ready, which counts every model it ever tried, agrees.
 */
export const READY_MEANS = "Triton answers and every model it serves is READY (its /v2/health/ready says so too)";

export interface RunReadiness {
  ready: boolean;
  /** What it waits for when not ready, one line per cause ("offset is LOADING"). */
  waitingFor: string[];
}

export interface ReadinessInput {
  /** Triton answered /v2/health/live. */
  live: boolean;
  /** Triton's /v2/health/ready (strict readiness: every model it ever tried is READY or unloaded). */
  tritonReady: boolean;
  /** The models triton-dev serves: staged, and not withdrawn after a failed load. */
  served: readonly string[];
  /** Triton's repository index. */
  index: readonly RepositoryIndexEntry[];
}

export function runReadiness(o: ReadinessInput): RunReadiness {
  if (!o.live) return { ready: false, waitingFor: ["Triton does not answer"] };
  const waitingFor: string[] = [];
  for (const name of o.served) {
    const versions = o.index.filter((e) => e.name === name);
    if (versions.some((e) => e.state === "READY")) continue;
    if (versions.length === 0) {
      waitingFor.push(`${name} is not in Triton's repository index yet`);
      continue;
    }
    const state = versions.find((e) => e.state)?.state ?? "UNKNOWN";
    waitingFor.push(`${name} is ${state}`);
  }
  if (waitingFor.length === 0 && !o.tritonReady) {
    // Every served model is READY, yet Triton counts a load that failed and is still remembered
    // (a version that failed beside one serving, or a model being forgotten right now).
    const failed = o.index.filter((e) => e.state === "UNAVAILABLE" && e.reason && e.reason !== "unloaded");
    waitingFor.push(
      failed.length
        ? `Triton's /v2/health/ready still counts the failed load of ${[...new Set(failed.map((e) => `${e.name}${e.version ? ` v${e.version}` : ""}`))].join(", ")}`
        : "Triton's /v2/health/ready still counts a failed load (triton-dev has it forget those of models it no longer serves)",
    );
  }
  return { ready: waitingFor.length === 0, waitingFor };
}
