import { REAL_CLOCK, type Clock } from "../clock.js";
import { ServerConnectionError, ServerResponseError } from "../errors.js";
import { fetchBounded, METRICS_RESPONSE_LIMIT } from "../net/bounded-fetch.js";
import { MetricsHistory, type MetricsView } from "./history.js";
import { parseExposition } from "./prometheus.js";
import { tritonSnapshot, type TritonMetricsSnapshot } from "./triton.js";

export interface ScrapeState {
  view: MetricsView;
  /** Why the last scrape failed; cleared by the next good one. */
  error?: string;
}

export interface MetricsScraperOptions {
  /** Triton's metrics endpoint, e.g. http://127.0.0.1:8002/metrics */
  url: string;
  /** Triton refreshes its metrics every 2 s by default (`--metrics-interval-ms`). */
  intervalMs?: number;
  timeoutMs?: number;
  history?: MetricsHistory;
  fetch?: typeof fetch;
  now?: () => number;
  /** The time the scrapes are timed by (../clock.ts), and by default what `now` reads. */
  clock?: Clock;
  onUpdate: (state: ScrapeState) => void;
}

/** Scrapes Triton's `/metrics` on a timer and hands each derived view to `onUpdate`. */
export class MetricsScraper {
  readonly history: MetricsHistory;
  private timer: unknown;
  private inFlight: Promise<void> | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private readonly clock: Clock;
  private stopped = false;

  constructor(private readonly o: MetricsScraperOptions) {
    this.history = o.history ?? new MetricsHistory();
    this.fetchImpl = o.fetch ?? fetch;
    this.clock = o.clock ?? REAL_CLOCK;
    this.now = o.now ?? (() => this.clock.now());
  }

  start(): void {
    if (this.timer) return;
    this.stopped = false;
    void this.scrapeOnce();
    // A dashboard waiting for the next scrape must not keep a finished process alive.
    this.timer = this.clock.setInterval(() => void this.scrapeOnce(), this.o.intervalMs ?? 2000, { unref: true });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  /** One scrape; a slow endpoint is never asked twice at once. */
  scrapeOnce(): Promise<void> {
    this.inFlight ??= this.scrape().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async scrape(): Promise<void> {
    let snapshot: TritonMetricsSnapshot;
    try {
      const res = await fetchBounded(
        this.o.url,
        { method: "GET" },
        {
          exchange: { server: `metrics at ${this.o.url}`, request: "GET", expected: "Prometheus text" },
          timeoutMs: this.o.timeoutMs ?? 1500,
          maxBytes: METRICS_RESPONSE_LIMIT,
          fetch: this.fetchImpl,
        },
      );
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const text = res.body.toString("utf8");
      snapshot = tritonSnapshot(parseExposition(text), this.now());
    } catch (err) {
      if (this.stopped) return;
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      this.o.onUpdate({
        view: this.history.view(),
        error:
          err instanceof ServerResponseError
            ? err.message
            : err instanceof ServerConnectionError
              ? `metrics at ${this.o.url} did not answer (${err.fault})`
              : `metrics at ${this.o.url} did not answer (${cause ?? (err as Error).message})`,
      });
      return;
    }
    if (this.stopped) return;
    this.history.push(snapshot);
    this.o.onUpdate({ view: this.history.view() });
  }
}
