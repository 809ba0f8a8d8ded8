import { TritonDevError } from "../errors.js";

/**
 * A readiness condition: something we can check repeatedly until it holds. Its description
 * goes into the timeout message ("Triton at 127.0.0.1:8000 ready", "log line 'Started HTTPService'").
 */
export interface WaitStrategy {
  readonly description: string;
  check(): Promise<boolean>;
}

export class ReadinessTimeoutError extends TritonDevError {
  override name = "ReadinessTimeoutError";
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly detail?: string,
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
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitFor(strategy: WaitStrategy, options: WaitOptions): Promise<void> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? defaultSleep;
  const interval = options.intervalMs ?? 200;
  const deadline = now() + options.timeoutMs;
  for (;;) {
    await options.abortIf?.();
    if (await strategy.check()) return;
    if (now() >= deadline) throw new ReadinessTimeoutError(strategy.description, options.timeoutMs, options.detail?.());
    await sleep(interval);
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
