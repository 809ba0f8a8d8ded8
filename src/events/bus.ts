/**
 * A small typed event bus. Controllers publish; views (the plain-line printer, later the TUI
 * store) subscribe. Nothing here starts work.
 */
export type Listener<E> = (event: E) => void;

export class EventBus<E extends { type: string }> {
  private readonly listeners = new Set<Listener<E>>();

  on(listener: Listener<E>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: E): void {
    for (const l of [...this.listeners]) l(event);
  }
}
