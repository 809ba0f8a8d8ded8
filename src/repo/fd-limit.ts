/**
 * Reading a repository without running out of file descriptors. A repository of thousands of
 * models read all at once opens one descriptor per model at the same moment; under a low limit
 * (`ulimit -n 256`, the default of macOS and many desktops) the reads past it fail with EMFILE,
 * and a failed read looks like a missing or unreadable file: a false finding. So the models are
 * read a few at a time (`mapPool`), and a read that still meets the limit (descriptors held by
 * the rest of the process: an editor's watcher, a server's sockets) waits and tries again
 * (`retryFdLimit`) instead of reporting a file that is there.
 */

import { REAL_CLOCK, type Clock } from "../clock.js";

/** Models read at once: enough to keep a disk busy, few enough to stay far under any descriptor limit. */
export const READ_CONCURRENCY = 8;

const FD_LIMIT_CODES: ReadonlySet<string> = new Set(["EMFILE", "ENFILE"]);

/** Whether an error is the process (EMFILE) or the system (ENFILE) out of file descriptors. */
export function isFdLimitError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && FD_LIMIT_CODES.has(code);
}

export interface RetryOptions {
  /** How long to keep trying before the error is the caller's (ms). */
  maxWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** The time the retries wait on (../clock.ts), where `sleep` and `now` are not given. */
  clock?: Clock;
}

/**
 * Runs `op`, and again while it fails for want of a file descriptor: descriptors come back as the
 * reads in flight finish. Bounded in time (30 s by default); past it the limit error is thrown as
 * is, so the caller reports it (it names the limit) rather than a file it could not open.
 */
export async function retryFdLimit<T>(op: () => Promise<T>, o: RetryOptions = {}): Promise<T> {
  const clock = o.clock ?? REAL_CLOCK;
  const sleep = o.sleep ?? ((ms: number) => clock.sleep(ms));
  const now = o.now ?? (() => clock.now());
  const deadline = now() + (o.maxWaitMs ?? 30_000);
  let delay = 2;
  for (;;) {
    try {
      return await op();
    } catch (err) {
      if (!isFdLimitError(err) || now() >= deadline) throw err;
      await sleep(delay);
      delay = Math.min(200, delay * 2);
    }
  }
}

/**
 * `items.map(fn)` with at most `limit` calls in flight, results in the order of `items`. The first
 * failure is thrown once the calls in flight have settled (none is left running behind it).
 */
export async function mapPool<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (err) {
        failed ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed) throw failed.err;
  return results;
}
