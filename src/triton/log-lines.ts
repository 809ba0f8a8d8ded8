/**
 * What Triton's log says about loading and unloading models, line by line. Poll mode learns a
 * load's outcome only here, some failures (a model folder Triton cannot read a config from) are
 * reported nowhere else, and `down` follows the unloads here while Triton exits. Lines are taken
 * without their glog prefix (state/log-file.ts stripTritonPrefix).
 */

export type LoadOutcome = { ok: true } | { ok: false; reason: string };

const quoted = (model: string) => `'${model}'`;

/** Triton's escaped multi-line messages (a traceback) as one line. */
function unescape(text: string): string {
  return text
    .replace(/\\n/g, "\n")
    .replace(/\\"/g, '"')
    .replace(/\s*\n\s*/g, " ")
    .trim();
}

/**
 * The outcome a log line reports for loading `model`, if any: "successfully loaded 'm'", or one
 * of Triton's three ways of saying a load failed, each message the reason as Triton wrote it:
 * `failed to load 'm' version 1: ...` (the backend refused it), `failed to load model 'm': ...`
 * (no version to load) and `Poll failed for model directory 'm': ...` (no usable config).
 */
export function loadOutcome(line: string, model: string): LoadOutcome | undefined {
  const q = quoted(model);
  if (line.includes(`successfully loaded ${q}`)) return { ok: true };
  for (const lead of [
    `failed to load ${q} version `,
    `failed to load model ${q}: `,
    `Poll failed for model directory ${q}: `,
  ]) {
    const at = line.indexOf(lead);
    if (at >= 0) return { ok: false, reason: unescape(line.slice(at)) };
  }
  // The summary line after the per-version one carries no reason; the per-version one came first.
  if (line.trim() === `failed to load ${q}`) return { ok: false, reason: "" };
  return undefined;
}

/** The reason of the last failed load of `model` in `lines`, if Triton logged one. */
export function lastLoadFailure(lines: readonly string[], model: string): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const o = loadOutcome(lines[i]!, model);
    if (!o) continue;
    if (o.ok) return undefined;
    if (o.reason) return o.reason;
  }
  return undefined;
}

/** "loading: m:1": Triton queued a version of a model for loading (model_lifecycle.cc); the model. */
export function loadStarted(line: string): string | undefined {
  return /^loading: (.+):\d+$/.exec(line)?.[1];
}

/** "successfully loaded 'm'" or "failed to load 'm'...": a model's load is done, either way; the model. */
export function loadEnded(line: string): string | undefined {
  return /^(?:successfully loaded|failed to load) '([^']+)'/.exec(line)?.[1];
}

/** "successfully unloaded 'm' version 1": a model version is gone, its stubs ended. */
export function unloadedVersion(line: string): { model: string; version: string } | undefined {
  const m = /successfully unloaded '(.+)' version (\d+)/.exec(line);
  return m ? { model: m[1]!, version: m[2]! } : undefined;
}

/**
 * "Timeout 9: Found 3 live models and 0 in-flight non-inference requests": what Triton's exit
 * waits for, once a second. The count includes loads that failed in the background while an
 * earlier version served (Triton 2.51 never forgets those), so it may never reach 0.
 */
export function exitWaitLine(line: string): { secondsLeft: number; liveModels: number } | undefined {
  const m = /^Timeout (\d+): Found (\d+) live models/.exec(line);
  return m ? { secondsLeft: Number(m[1]), liveModels: Number(m[2]) } : undefined;
}

/**
 * "Timeout 10: Found 2 model versions that have in-flight inferences": Triton's exit (server.cc)
 * first waits, once a second, for the inferences already taken to finish; the count.
 */
export function inflightWaitLine(line: string): number | undefined {
  const m = /^Timeout \d+: Found (\d+) model versions that have in-flight inferences/.exec(line);
  return m ? Number(m[1]) : undefined;
}

/**
 * "Timeout 10: Found 1 HTTP service connections": before anything else, Triton's exit waits, once a
 * second, for every open HTTP connection to close (a request in flight, or a client's idle
 * keep-alive connection); the count.
 */
export function httpConnectionsLine(line: string): number | undefined {
  const m = /^Timeout \d+: Found (\d+) HTTP service connections/.exec(line);
  return m ? Number(m[1]) : undefined;
}

/** "Model 'm' (version 1) has 3 in-flight inferences", logged after each count above. */
export function inflightModelLine(line: string): { model: string; count: number } | undefined {
  const m = /^Model '(.+)' \(version \d+\) has (\d+) in-flight inferences/.exec(line);
  return m ? { model: m[1]!, count: Number(m[2]) } : undefined;
}

/**
 * "All models are stopped, unloading models": Triton found no inference (or sequence) in flight,
 * takes no more, and has begun to unload every model. It logs this only once that count is 0.
 */
export function unloadsBegan(line: string): boolean {
  return line.startsWith("All models are stopped, unloading models");
}

/**
 * Follows Triton's exit through its log: which of the model versions loaded when the stop began
 * are still unloading, whether inferences are still in flight, and whether Triton now waits on
 * nothing of ours (everything unloaded, its stubs ended), which after a failed reload it does until
 * its exit timeout expires.
 *
 * With `mustUnload` (the models whose unload runs the user's code, repo/unload-code.ts), the stop
 * needs only those: once Triton has no inference in flight and they have unloaded, the rest of the
 * server may be ended without waiting for its other unloads (`canEnd`).
 */
export class ExitTracker {
  private readonly pending = new Map<string, Set<string>>();
  private readonly mustUnload: ReadonlyMap<string, string> | undefined;
  /** Triton's own count at its last once-a-second check, if logged. */
  liveModels: number | undefined;
  /** Triton found nothing in flight and began unloading. */
  drained = false;
  /** The models with inferences in flight at Triton's last check, and how many. */
  private inflight = new Map<string, number>();
  /** The HTTP connections Triton's exit waited for at its last check. */
  private httpConnections = 0;

  constructor(
    loaded: ReadonlyArray<{ name: string; version?: string }>,
    mustUnload?: ReadonlyArray<{ model: string; why: string }>,
  ) {
    for (const m of loaded) {
      const versions = this.pending.get(m.name) ?? new Set<string>();
      versions.add(m.version ?? "1");
      this.pending.set(m.name, versions);
    }
    if (mustUnload) this.mustUnload = new Map(mustUnload.map((w) => [w.model, w.why]));
  }

  /** Take one log line (without its prefix); true when it changed what is pending. */
  feed(line: string): boolean {
    const wait = exitWaitLine(line);
    if (wait) this.liveModels = wait.liveModels;
    if (unloadsBegan(line)) {
      this.drained = true;
      this.inflight.clear();
      return true;
    }
    const connections = httpConnectionsLine(line);
    if (connections !== undefined) {
      this.httpConnections = connections;
      return true;
    }
    const count = inflightWaitLine(line);
    if (count !== undefined) {
      // The per-model lines follow this one; the HTTP connections are closed by now.
      this.inflight = new Map();
      this.httpConnections = 0;
      return true;
    }
    const busy = inflightModelLine(line);
    if (busy) {
      this.inflight.set(busy.model, (this.inflight.get(busy.model) ?? 0) + busy.count);
      return true;
    }
    const u = unloadedVersion(line);
    const versions = u && this.pending.get(u.model);
    if (!u || !versions?.delete(u.version)) return false;
    if (versions.size === 0) this.pending.delete(u.model);
    return true;
  }

  /** The models still unloading, by name. */
  unloading(): string[] {
    return [...this.pending.keys()].sort();
  }

  /** Every model version loaded when the stop began has unloaded. */
  done(): boolean {
    return this.pending.size === 0;
  }

  /** The models whose unload runs the user's code and has not ended yet, with why (none without `mustUnload`). */
  awaited(): Array<{ model: string; why: string }> {
    return [...(this.mustUnload ?? [])].filter(([m]) => this.pending.has(m)).map(([model, why]) => ({ model, why }));
  }

  /**
   * Nothing of the user's is left to run: no inference in flight and every unload that runs their
   * code is over. Never true without `mustUnload` (the stop then waits for every unload).
   */
  canEnd(): boolean {
    return this.mustUnload !== undefined && this.drained && this.awaited().length === 0;
  }

  /** What the stop waits for, as the user reads it. */
  progressLine(): string {
    if (!this.drained && this.httpConnections > 0 && this.inflight.size === 0)
      return `waiting for ${this.httpConnections} HTTP connection(s) to Triton to close (a request in flight, or a client that keeps its connection open)`;
    if (!this.drained && this.inflight.size) {
      const busy = [...this.inflight].sort(([a], [b]) => a.localeCompare(b)).map(([m, n]) => `${m} (${n})`);
      return `waiting for the requests in flight to finish: ${busy.join(", ")}`;
    }
    if (this.mustUnload) {
      const awaited = this.awaited();
      if (awaited.length)
        return `waiting for Triton to unload ${awaited.map((w) => `${w.model} (${w.why})`).join(", ")}`;
      if (!this.drained) return "waiting for Triton to finish the requests in flight";
    }
    const left = this.unloading();
    return left.length
      ? `waiting for Triton to unload ${left.join(", ")}`
      : "everything is unloaded; waiting for Triton to exit";
  }
}

/** The repository index entries a stop waits to see unloaded: loaded, or on their way in or out. */
export function versionsToUnload<T extends { state?: string }>(index: readonly T[]): T[] {
  return index.filter((m) => m.state === "READY" || m.state === "LOADING" || m.state === "UNLOADING");
}

/**
 * Says what a stop waits for: nothing in its first `afterMs` (a quick stop stays quiet), then the
 * tracker's line each time it changes. A model whose unload runs the user's code is named at once:
 * that wait is known from the start. Call it as often as the stop looks.
 */
export function exitProgress(
  tracker: ExitTracker,
  onProgress: ((message: string) => void) | undefined,
  afterMs = 1000,
): () => void {
  if (tracker.awaited().length) afterMs = 0;
  const started = Date.now();
  let told = "";
  return () => {
    if (!onProgress || Date.now() - started < afterMs) return;
    const line = tracker.progressLine();
    if (line !== told) onProgress((told = line));
  };
}
