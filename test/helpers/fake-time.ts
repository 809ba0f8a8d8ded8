import type { FakeClock } from "../../src/fake-clock.js";

/*
 * For code whose polls run on a FakeClock but whose reads are real I/O (followFile reads a file):
 * advancing the clock starts a read, and the read's result comes back over real turns of the event
 * loop, however far the clock has moved. Both waits are bounded in count; neither moves real time
 * on more than the I/O itself takes.
 */

const ROUNDS = 5_000;

/** One real pause of a millisecond: a read the clock's timer started gets its thread pool turn. */
const pause = () => new Promise((r) => setTimeout(r, 1));

/** Until `done` holds, with the clock standing still: the times a test asserts stay exact. */
export async function ioDone(clock: FakeClock, done: () => boolean, what = "the awaited read"): Promise<void> {
  for (let k = 0; k < ROUNDS && !done(); k++) {
    await clock.advance(0);
    await pause();
  }
  if (!done()) throw new Error(`${what} never happened`);
}

/** Moves the clock on `stepMs` at a time (a poll's interval) until `done` holds. */
export async function advanceUntil(
  clock: FakeClock,
  done: () => boolean,
  stepMs: number,
  what = "the awaited read",
): Promise<void> {
  for (let k = 0; k < ROUNDS && !done(); k++) {
    await clock.advance(stepMs);
    await pause();
  }
  if (!done()) throw new Error(`${what} never happened`);
}
