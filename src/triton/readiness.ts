import { REAL_CLOCK, type Clock } from "../clock.js";
import { TritonDevError } from "../errors.js";

/**
 * A readiness condition: something we can check repeatedly until it holds. Its description
 * goes into the timeout message ("Triton at 127.0.0.1:8000 ready", "log line 'Started HTTPService'").
 */
export interface WaitStrategy {
  /** Read when the wait times out (a getter may say how far it got). */
  readonly description: string;
  /** What to look at when the wait times out, in the strategy's own terms (a pod's events). */
  readonly timeoutHint?: string;
  /** Whether it holds now; throws (a ReadinessAbortedError or the user's error) when it never will. */
  check(): Promise<boolean>;
}

export class ReadinessTimeoutError extends TritonDevError {
  override name = "ReadinessTimeoutError";
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly detail?: string,
    /** The strategy's timeoutHint. */
    readonly hint?: string,
  ) {
    super(`${what} not ready after ${Math.round(timeoutMs / 1000)} s${detail ? `; ${detail}` : ""}`);
  }
}

/** The waited-for thing can never become ready (the process died, say): stop waiting at once. */
export class ReadinessAbortedError extends TritonDevError {
  override name = "ReadinessAbortedError";
}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Called between checks; throw ReadinessAbortedError to stop early (e.g. the server exited). */
  abortIf?: () => void | Promise<void>;
  /** Extra context for the timeout message, computed when the timeout happens (last log lines). */
  detail?: () => string | undefined;
  /** The time the deadline and the pauses between checks run on. */
  clock?: Clock;
  /** A pause between checks ends early when this aborts (a Ctrl-C is seen at once, not after the pause). */
  signal?: AbortSignal;
}

export async function waitFor(strategy: WaitStrategy, options: WaitOptions): Promise<void> {
  const clock = options.clock ?? REAL_CLOCK;
  const interval = options.intervalMs ?? 200;
  const deadline = clock.now() + options.timeoutMs;
  for (;;) {
    await options.abortIf?.();
    if (await strategy.check()) return;
    if (clock.now() >= deadline)
      throw new ReadinessTimeoutError(
        strategy.description,
        options.timeoutMs,
        options.detail?.(),
        strategy.timeoutHint,
      );
    await clock.sleep(interval, options.signal);
  }
}

export function httpOk(url: string, fetchImpl: typeof fetch = fetch, description = url): WaitStrategy {
  return {
    description,
    async check() {
      try {
        const res = await fetchImpl(url, { signal: AbortSignal.timeout(2000) });
        await res.body?.cancel();
        return res.ok;
      } catch {
        return false;
      }
    },
  };
}

/** Holds once a log line matching `pattern` has been seen by `lines()`. */
export function logLine(
  pattern: RegExp,
  lines: () => readonly string[],
  description = `log line ${pattern}`,
): WaitStrategy {
  return { description, check: async () => lines().some((l) => pattern.test(l)) };
}

/** Triton answers /v2/health/live: the server is up (its models may still load). */
export function tritonLive(client: { isLive(): Promise<boolean> }, description: string): WaitStrategy {
  return { description, check: () => client.isLive() };
}

/** Triton answering live at the run's HTTP port: what started means for a process or a container. */
export function tritonLiveAt(o: {
  host: string;
  ports: { http: number };
  client: { isLive(): Promise<boolean> };
}): WaitStrategy {
  return tritonLive(o.client, `Triton at ${o.host}:${o.ports.http}`);
}

/**
 * Every model of the repository settled (none LOADING or UNLOADING): the index once it is, or as it
 * stands at the deadline (a slow model is then reported as it is, not as a failed start).
 */
export async function modelsSettled<M extends { state?: string }>(
  client: { repositoryIndex(): Promise<M[]> },
  o: Pick<WaitOptions, "timeoutMs" | "clock" | "signal" | "abortIf">,
): Promise<M[]> {
  let index: M[] = [];
  const settled: WaitStrategy = {
    description: "every model loaded or failed",
    async check() {
      index = await client.repositoryIndex();
      return !index.some((m) => m.state === "LOADING" || m.state === "UNLOADING");
    },
  };
  try {
    await waitFor(settled, { ...o, intervalMs: 250 });
  } catch (err) {
    if (!(err instanceof ReadinessTimeoutError)) throw err;
  }
  return index;
}
