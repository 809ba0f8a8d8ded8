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

/** A model of the repository as the ready line counts it: its state in Triton, or why it is not served. */
export interface CountedModel {
  name: string;
  /** READY, UNAVAILABLE, LOADING, ... as Triton lists it; REFUSED or SKIPPED for a model not served. */
  state?: string;
  reason?: string;
}

export interface ModelCount {
  ready: string[];
  notReady: Array<{ name: string; state: string; reason?: string }>;
  total: number;
}

/** Each model once (a model with several versions is READY when one of them is), sorted by name. */
export function countModels(models: readonly CountedModel[]): ModelCount {
  const names = [...new Set(models.map((m) => m.name))].sort();
  const ready: string[] = [];
  const notReady: ModelCount["notReady"] = [];
  for (const name of names) {
    const versions = models.filter((m) => m.name === name);
    if (versions.some((m) => m.state === "READY")) {
      ready.push(name);
      continue;
    }
    const withReason = versions.find((m) => m.reason) ?? versions[0]!;
    notReady.push({
      name,
      // Triton lists a model it never tried (an ensemble whose step is missing) without a state.
      state: withReason.state ?? (withReason.reason ? "UNAVAILABLE" : "UNKNOWN"),
      ...(withReason.reason ? { reason: withReason.reason } : {}),
    });
  }
  return { ready, notReady, total: names.length };
}

/** A reason cut for a one-line summary; the full one is in `status` and the lines above it. */
function brief(reason: string, max = 160): string {
  return reason.length <= max ? reason : `${reason.slice(0, max - 1)}…`;
}

/**
 * What is READY and what is not, with the reason, in one line: "2 of 3 models READY (a, b); not
 * READY: c (REFUSED: ...)". `up`, `status` and the dashboard say the same.
 */
export function modelCountLine(c: ModelCount, reasons = true): string {
  const head = `${c.ready.length} of ${c.total} model${c.total === 1 ? "" : "s"} READY${c.ready.length ? ` (${c.ready.join(", ")})` : ""}`;
  if (!c.notReady.length) return head;
  const each = c.notReady.map((m) => `${m.name} (${m.state}${reasons && m.reason ? `: ${brief(m.reason)}` : ""})`);
  return `${head}; not READY: ${each.join(", ")}`;
}
