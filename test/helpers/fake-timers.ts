import type { WatchTimers } from "../../src/reload/watch.js";

/**
 * A clock whose time moves only when the test says (`advance`), for code that takes a
 * WatchTimers. Timers due by the new time run in the order they are due, each with the clock set
 * to its due time, as real ones would.
 */
export class FakeTimers implements WatchTimers {
  private time = 1_700_000_000_000;
  private nextId = 1;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  /** How many timers were ever set: each one is an event the code under test took in. */
  calls = 0;

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.calls++;
    this.due.set(id, { at: this.time + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(timer: unknown): void {
    this.due.delete(timer as number);
  }

  /** Timers set and neither run nor cleared. */
  get pending(): number {
    return this.due.size;
  }

  /** Moves the clock `ms` on, running every timer due by then. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.due) if (entry[1].at <= end && (!first || entry[1].at < first[1].at)) first = entry;
      if (!first) break;
      this.due.delete(first[0]);
      this.time = first[1].at;
      first[1].fn();
    }
    this.time = end;
  }
}
