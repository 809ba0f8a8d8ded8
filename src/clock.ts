/**
 * The time every wait that is not a measurement runs on: polls (is the server alive, is it live),
 * the "still loading" reports, readiness timeouts, stop grace times, retry delays. Code that waits
 * takes a `Clock` as a defaulted parameter (REAL_CLOCK); a test passes a FakeClock (fake-clock.ts)
 * and moves its time with `advance(ms)` instead of waiting it out. Measurements (perf's windows,
 * elapsed times reported to the user) read `performance.now()`/`Date.now()` themselves.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  /** Returns a handle that only this clock's clearTimeout takes. */
  setTimeout(fn: () => void, ms: number, o?: TimerOptions): unknown;
  clearTimeout(timer: unknown): void;
  /** Returns a handle that only this clock's clearInterval takes. */
  setInterval(fn: () => void, ms: number, o?: TimerOptions): unknown;
  clearInterval(timer: unknown): void;
  /** Resolves after `ms`, or at once when `signal` is (or becomes) aborted: no wait outlives its caller's interest. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export interface TimerOptions {
  /** The timer alone does not keep the process running (a progress line, a poll beside other work). */
  unref?: boolean;
}

/** Sleep on `clock` until `ms` pass or `signal` aborts, whichever is first (shared by both clocks). */
export function sleepOn(clock: Pick<Clock, "setTimeout" | "clearTimeout">, ms: number, signal?: AbortSignal) {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

export const REAL_CLOCK: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms, o) => {
    const t = setTimeout(fn, ms);
    if (o?.unref) t.unref();
    return t;
  },
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (fn, ms, o) => {
    const t = setInterval(fn, ms);
    if (o?.unref) t.unref();
    return t;
  },
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
  sleep: (ms, signal) => sleepOn(REAL_CLOCK, ms, signal),
};
