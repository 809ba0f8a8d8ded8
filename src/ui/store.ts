/**
 * The dashboard's single source of truth. Controllers write to it; components read it through
 * `useStore` and never write. Notifications are coalesced so a burst of events (a perf sweep's
 * progress, a log flood) costs one render, not one per event.
 */
export class Store<S> {
  private state: S;
  private readonly listeners = new Set<() => void>();
  private pending: NodeJS.Timeout | undefined;

  constructor(
    initial: S,
    private readonly coalesceMs = 50,
  ) {
    this.state = initial;
  }

  getState = (): S => this.state;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /**
   * Replace the state with `f(state)`; nothing is notified when `f` returns the same object.
   * `immediate` skips the coalescing, for keys, whose answer must not wait.
   */
  update(f: (s: S) => S, immediate = false): void {
    const next = f(this.state);
    if (next === this.state) return;
    this.state = next;
    if (immediate || this.coalesceMs <= 0) return this.notify();
    this.pending ??= setTimeout(() => this.notify(), this.coalesceMs);
  }

  /** Deliver a pending notification now (tests, and the last frame before unmount). */
  flush(): void {
    if (this.pending) this.notify();
  }

  private notify(): void {
    if (this.pending) clearTimeout(this.pending);
    this.pending = undefined;
    for (const l of [...this.listeners]) l();
  }
}
