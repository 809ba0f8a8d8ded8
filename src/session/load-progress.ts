import { REAL_CLOCK, type Clock } from "../clock.js";
import { followFile, stripTritonPrefix } from "../state/log-file.js";
import { loadEnded, loadStarted } from "../triton/log-lines.js";

/**
 * Which models Triton is still loading while `up` waits, read from its log: with
 * `--load-model=*` (and in poll mode) Triton opens its HTTP port only once every model has
 * loaded, so until then the log is all there is to ask (triton/log-lines.ts reads its lines).
 */
export class ModelLoadTracker {
  /** When each model still loading was first seen loading (ms since epoch). */
  private readonly loading = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Take in one line of Triton's log (with or without its prefix). */
  line(raw: string): void {
    const line = stripTritonPrefix(raw.trimEnd());
    const started = loadStarted(line);
    if (started !== undefined) {
      if (!this.loading.has(started)) this.loading.set(started, this.now());
      return;
    }
    const ended = loadEnded(line);
    if (ended !== undefined) this.loading.delete(ended);
  }

  /** The models still loading, longest first, with how long so far. */
  stillLoading(): Array<{ model: string; ms: number }> {
    const now = this.now();
    return [...this.loading]
      .map(([model, since]) => ({ model, ms: now - since }))
      .sort((a, b) => b.ms - a.ms || a.model.localeCompare(b.model));
  }

  /** "slow (12 s), other (5 s)", or undefined when nothing is loading. */
  describe(max = 5): string | undefined {
    const all = this.stillLoading();
    if (all.length === 0) return undefined;
    const shown = all.slice(0, max).map((m) => `${m.model} (${Math.round(m.ms / 1000)} s)`);
    return all.length > max ? `${shown.join(", ")} and ${all.length - max} more` : shown.join(", ");
  }
}

export interface LoadProgressOptions {
  /** Where the log is read from: its size before the server started (a reused log is appended to). */
  fromOffset: number;
  /** How often a "still loading" line is reported while models load. */
  everyMs?: number;
  /**
   * Said once, with the first line: why loads may take longer than the model's own start (for
   * example, config auto-complete importing each model.py twice).
   */
  note?: string;
  /** The time the reports and the log's reads run on (a test's FakeClock moves it). */
  clock?: Clock;
  /** How often the log is read. */
  readMs?: number;
}

/**
 * Follow Triton's log while it starts and call `report` every `everyMs` with the models still
 * loading ("still loading: slow (12 s)"); quick loads report nothing. `stop` ends it; `describe`
 * names the models still loading, for a timeout message.
 */
export function followModelLoads(
  logFile: string,
  report: (message: string) => void,
  o: LoadProgressOptions,
): { stop(): void; describe(): string | undefined } {
  const clock = o.clock ?? REAL_CLOCK;
  const tracker = new ModelLoadTracker(() => clock.now());
  const stopFollowing = followFile(logFile, o.fromOffset, (l) => tracker.line(l), o.readMs ?? 250, clock);
  let noted = false;
  const timer = clock.setInterval(
    () => {
      const loading = tracker.describe();
      if (!loading) return;
      const note = !noted && o.note ? `; ${o.note}` : "";
      noted ||= note !== "";
      report(`still loading: ${loading}${note}`);
    },
    o.everyMs ?? 5_000,
    { unref: true },
  );
  return {
    stop: () => {
      clock.clearInterval(timer);
      stopFollowing();
    },
    describe: () => tracker.describe(),
  };
}
