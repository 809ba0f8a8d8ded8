import { UsageError } from "../errors.js";

/**
 * How a stateful model (sequence batching) is driven: every request belongs to a sequence, names
 * its correlation id, and says whether it starts or ends it; Triton keeps a sequence's state (and,
 * with the direct strategy, a batch slot) from its start to its end. perf_analyzer's flags and
 * defaults: --sequence-length, --sequence-length-variation, --sequence-id-range, --num-of-sequences.
 */
export interface SequenceSettings {
  /** Requests per sequence, before the variation. */
  length: number;
  /** Each sequence's length is drawn within +/- this percentage of `length`. */
  variationPct: number;
  /** Correlation ids from here... */
  idStart: number;
  /** ...up to here, excluded; unbounded when absent. */
  idEnd?: number;
  /** Open loop: sequences open at once (closed loop: one per request in flight). */
  rateSequences: number;
  /**
   * `sequence_batching { iterative_sequence: true }`: each request is a whole sequence, which the
   * model iterates by rescheduling it (one response per iteration, for a decoupled model). So every
   * request starts a sequence with a fresh id and none carries END: Triton ends an iterative
   * sequence when the model releases its request, and refuses the rescheduled request of one a
   * client ended ("must specify the START flag"), leaving it unanswered.
   */
  iterative?: boolean;
}

export const SEQUENCE_DEFAULTS: SequenceSettings = { length: 20, variationPct: 20, idStart: 1, rateSequences: 4 };

/** The sequence fields of one request. */
export interface SequenceStep {
  id: number;
  start: boolean;
  end: boolean;
  /** The request's place in its sequence, from 0: the payload (data step) it sends. */
  index: number;
}

/** The request parameters Triton reads a request's sequence from (HTTP JSON and gRPC alike). */
export function sequenceParameters(s: SequenceStep): {
  sequence_id: number;
  sequence_start: boolean;
  sequence_end: boolean;
} {
  return { sequence_id: s.id, sequence_start: s.start, sequence_end: s.end };
}

/** `START[:END]`, END excluded, as perf_analyzer's --sequence-id-range. */
export function parseSequenceIdRange(text: string): { idStart: number; idEnd?: number } {
  const m = /^(\d+)(?::(\d+))?$/.exec(text.trim());
  const start = m ? Number(m[1]) : NaN;
  const end = m?.[2] !== undefined ? Number(m[2]) : undefined;
  if (
    !m ||
    start < 1 ||
    !Number.isSafeInteger(start) ||
    (end !== undefined && (!Number.isSafeInteger(end) || end <= start))
  )
    throw new UsageError(`--sequence-id-range must be START or START:END with 1 <= START < END, got '${text}'`, {
      hint: "Correlation id 0 means 'no sequence' to Triton; for example --sequence-id-range 1000:2000.",
    });
  return end === undefined ? { idStart: start } : { idStart: start, idEnd: end };
}

/** Refuse, before anything is measured, more sequences open at once than the id range holds. */
export function checkSequenceIds(open: number, capacity: number): void {
  if (open > capacity)
    throw new UsageError(
      `${open} sequences open at once need ${open} correlation ids, but --sequence-id-range holds ${capacity}`,
      { hint: "Widen --sequence-id-range, or lower the concurrency (--num-of-sequences with --request-rate-range)." },
    );
}

/**
 * Correlation ids for a whole run, shared by its levels, so a level never reuses an id the one
 * before it may still hold on the server. Within a bounded range they wrap around.
 */
export class SequenceIds {
  private next: number;

  constructor(private readonly settings: Pick<SequenceSettings, "idStart" | "idEnd">) {
    this.next = settings.idStart;
  }

  /** Ids the range holds (Infinity when unbounded). */
  get capacity(): number {
    return this.settings.idEnd === undefined ? Infinity : this.settings.idEnd - this.settings.idStart;
  }

  take(): number {
    const id = this.next++;
    if (this.settings.idEnd !== undefined && this.next >= this.settings.idEnd) this.next = this.settings.idStart;
    return id;
  }
}

interface Sequence {
  id: number;
  length: number;
  sent: number;
  busy: boolean;
}

/**
 * The sequences one load level keeps open. A request is taken from a sequence with none in flight
 * (so Triton receives each sequence's requests in order, whatever connection carries them), the
 * one idle longest first; a sequence that ended, or whose request failed, is replaced by a new one
 * with a fresh id.
 */
export class SequencePool {
  private readonly idle: Sequence[] = [];
  private readonly waiters: Array<(s: Sequence | undefined) => void> = [];
  /** The pool's sequences by correlation id: no two share one, even in a range that wraps. */
  private readonly all = new Map<number, Sequence>();
  private closed = false;

  constructor(
    size: number,
    private readonly settings: SequenceSettings,
    private readonly ids: SequenceIds,
    private readonly random: () => number = Math.random,
  ) {
    checkSequenceIds(size, ids.capacity);
    for (let i = 0; i < size; i++) this.idle.push(this.fresh());
  }

  private fresh(): Sequence {
    const { length, variationPct } = this.settings;
    const spread = (length * variationPct) / 100;
    const drawn = Math.round(length + spread * (2 * this.random() - 1));
    // A wrapped range comes back to ids still open here: those are passed over (there is always
    // a free one, as the pool holds no more sequences than the range has ids).
    let id = this.ids.take();
    while (this.all.has(id)) id = this.ids.take();
    const s: Sequence = { id, length: this.settings.iterative ? 1 : Math.max(1, drawn), sent: 0, busy: false };
    this.all.set(id, s);
    return s;
  }

  /** Whether a request now would have to wait for a sequence to be free. */
  get exhausted(): boolean {
    return this.idle.length === 0;
  }

  /** The next request's sequence fields; waits while every sequence has a request in flight. */
  async acquire(): Promise<SequenceStep | undefined> {
    if (this.closed) return undefined;
    const s = this.idle.shift() ?? (await new Promise<Sequence | undefined>((r) => this.waiters.push(r)));
    if (!s) return undefined;
    if (this.closed) {
      // Handed over by a release just before the close: its last request ends it.
      if (s.sent === 0) {
        this.all.delete(s.id);
        return undefined;
      }
      s.busy = true;
      return { id: s.id, start: false, end: true, index: s.sent };
    }
    s.busy = true;
    const step = {
      id: s.id,
      start: s.sent === 0,
      end: !this.settings.iterative && s.sent === s.length - 1,
      index: s.sent,
    };
    s.sent++;
    return step;
  }

  /**
   * The request of `step` is answered (`ok`) or failed; its sequence may take the next one. After
   * `close()`, the request that ends its sequence, to be sent now, if it is still open.
   */
  release(step: SequenceStep, ok: boolean): SequenceStep | undefined {
    const s = this.all.get(step.id);
    if (!s?.busy) return undefined;
    s.busy = false;
    if (this.closed) {
      this.all.delete(s.id);
      return ok && !step.end && !this.settings.iterative
        ? { id: s.id, start: false, end: true, index: s.sent }
        : undefined;
    }
    let next = s;
    if (step.end || !ok || this.settings.iterative) {
      // A failed request leaves the server's view of its sequence unknown: it is not continued.
      this.all.delete(s.id);
      next = this.fresh();
    }
    const w = this.waiters.shift();
    if (w) {
      // Busy from here, so a close() before the waiter runs does not end it under its request.
      next.busy = true;
      w(next);
    } else this.idle.push(next);
    return undefined;
  }

  /**
   * Stop handing out requests; the requests that end every sequence left open with nothing in
   * flight, to be sent at once (those with a request in flight are ended by `release`). So no
   * sequence holds its slot into the next level, and none waits on slots held by idle ones:
   * with the direct strategy, a sequence past the slots waits for another one's end.
   */
  close(): SequenceStep[] {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w(undefined);
    const idle = [...this.all.values()].filter((s) => !s.busy);
    for (const s of idle) this.all.delete(s.id);
    if (this.settings.iterative) return [];
    return idle.filter((s) => s.sent > 0).map((s) => ({ id: s.id, start: false, end: true, index: s.sent }));
  }
}

/** "20 +/- 20% requests, one per request in flight" (closed loop) or "..., 4 open at once" (open loop). */
export function describeSequences(
  s: Pick<SequenceSettings, "length" | "variationPct" | "iterative"> & { rateSequences?: number },
  kind: "concurrency" | "rate",
): string {
  if (s.iterative) return "one request each (an iterative sequence: START on each request, the model iterates it)";
  const length = s.variationPct > 0 ? `${s.length} +/- ${s.variationPct}%` : `${s.length}`;
  const open =
    kind === "rate"
      ? `${s.rateSequences ?? SEQUENCE_DEFAULTS.rateSequences} open at once`
      : "one per request in flight";
  return `${length} request(s), ${open}`;
}
