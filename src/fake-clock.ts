import { sleepOn, type Clock } from "./clock.js";

interface FakeTimer {
  id: number;
  due: number;
  fn: () => void;
  /** Set for an interval: it is due again this long after it fired. */
  every?: number;
}

/**
 * A Clock whose time moves only when a test says (tilt's NewFakeClockAt/Advance): kept beside the
 * interface it stands in for, so every change to Clock meets it. `advance(ms)` fires the timers
 * that fall due in order, letting the code each one wakes run before the next fires.
 */
export class FakeClock implements Clock {
  #now: number;
  #next = 1;
  readonly #timers = new Map<number, FakeTimer>();
  readonly #scheduled: Array<() => void> = [];
  readonly #sleepers: Array<() => void> = [];
  /** How many timers were ever set: each one is an event the code under test took in (the watcher's settle windows). */
  calls = 0;

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    return this.#add({ id: this.#next++, due: this.#now + Math.max(0, ms), fn });
  }

  setInterval(fn: () => void, ms: number): unknown {
    const every = Math.max(1, ms);
    return this.#add({ id: this.#next++, due: this.#now + every, fn, every });
  }

  clearTimeout(timer: unknown): void {
    if (typeof timer === "number") this.#timers.delete(timer);
  }

  clearInterval(timer: unknown): void {
    this.clearTimeout(timer);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    for (const r of this.#sleepers.splice(0)) r();
    return sleepOn(this, ms, signal);
  }

  /** Resolves the next time some code sleeps on this clock (a poll pausing between checks). */
  sleeping(): Promise<void> {
    return new Promise((resolve) => this.#sleepers.push(resolve));
  }

  /** How many timers (sleeps included) are waiting. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Resolves once some code waits on this clock (at once if some already does): a test's cue to advance. */
  waiting(): Promise<void> {
    if (this.#timers.size > 0) return Promise.resolve();
    return new Promise((resolve) => this.#scheduled.push(resolve));
  }

  /** Move time on by `ms`, firing each timer that falls due (in order) and letting what it wakes run. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    do await settle();
    while (this.#fireNextDue(end));
    this.#now = end;
    await settle();
  }

  /**
   * Move time on by `ms`, firing each timer that falls due in order, at once and without letting
   * promise continuations run between them: for code whose timers only run synchronous work (the
   * watcher's settle windows), where a test then waits on what that work reports.
   */
  advanceSync(ms: number): void {
    const end = this.#now + ms;
    while (this.#fireNextDue(end));
    this.#now = end;
  }

  /** Fires the first timer due by `end`, at its due time; false when none is. */
  #fireNextDue(end: number): boolean {
    const due = [...this.#timers.values()].filter((t) => t.due <= end).sort((a, b) => a.due - b.due || a.id - b.id)[0];
    if (!due) return false;
    this.#now = due.due;
    if (due.every) due.due += due.every;
    else this.#timers.delete(due.id);
    due.fn();
    return true;
  }

  #add(t: FakeTimer): number {
    this.calls++;
    this.#timers.set(t.id, t);
    for (const r of this.#scheduled.splice(0)) r();
    return t.id;
  }
}

/** Lets promise continuations and I/O callbacks that are already due run (one turn of the event loop). */
function settle(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}
