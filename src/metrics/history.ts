import { increase, ratioOfRates, rate, type Point } from "./rates.js";
import type { ModelCounters, TritonMetricsSnapshot } from "./triton.js";

/** What the dashboard shows for one model, derived from the scrapes kept. */
export interface ModelMetrics {
  model: string;
  /** Successful requests per second: the article's sum(rate(nv_inference_request_success[range])). */
  requestsPerSec?: number;
  /** Inferences per second (requests times batch size). */
  inferencesPerSec?: number;
  failuresPerSec?: number;
  /** rate(nv_inference_queue_duration_us) / rate(nv_inference_request_success): the mean wait. */
  queueAvgUs?: number;
  computeInferAvgUs?: number;
  requestAvgUs?: number;
  /** From Triton's queue summary, when summaries are enabled and the window saw a request. */
  queueP99Us?: number;
  /** Mean batch the server formed: inferences per execution. */
  avgBatch?: number;
  pending: number;
  /** One point per scrape interval, oldest first: requests per second. */
  throughputSeries: number[];
  /** One point per scrape interval: p99 queue latency when summaries exist, else the mean, µs. */
  queueSeries: number[];
}

export interface GpuMetrics {
  uuid: string;
  utilization: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  powerWatts?: number;
  utilizationSeries: number[];
}

export interface MetricsView {
  /** ms since epoch of the newest scrape; undefined before the first. */
  at?: number;
  rangeMs: number;
  scrapes: number;
  summaries: boolean;
  models: ModelMetrics[];
  gpus: GpuMetrics[];
  cpu?: TritonMetricsSnapshot["cpu"];
}

export interface MetricsHistoryOptions {
  /** How long scrapes are kept (the sparklines' span). */
  keepMs?: number;
  /** The range of the headline rates, as in `rate(x[range])`. */
  rangeMs?: number;
}

const P99 = "0.99";

/** The scrapes of the last few minutes and the figures computed from them. */
export class MetricsHistory {
  private readonly snapshots: TritonMetricsSnapshot[] = [];
  readonly keepMs: number;
  readonly rangeMs: number;

  constructor(o: MetricsHistoryOptions = {}) {
    this.keepMs = o.keepMs ?? 5 * 60_000;
    this.rangeMs = o.rangeMs ?? 10_000;
  }

  push(s: TritonMetricsSnapshot): void {
    const prev = this.snapshots[this.snapshots.length - 1];
    if (prev && s.at <= prev.at) return;
    this.snapshots.push(s);
    while (this.snapshots.length > 2 && s.at - this.snapshots[0]!.at > this.keepMs) this.snapshots.shift();
  }

  get size(): number {
    return this.snapshots.length;
  }

  private series(model: string, field: keyof ModelCounters): Point[] {
    const out: Point[] = [];
    for (const s of this.snapshots) {
      const m = s.models[model];
      const v = m?.[field];
      if (typeof v === "number") out.push({ t: s.at, v });
    }
    return out;
  }

  /** One value per consecutive pair of scrapes in which the model appears. */
  private perInterval(
    model: string,
    f: (a: ModelCounters, b: ModelCounters, dtSec: number) => number | undefined,
  ): number[] {
    const out: number[] = [];
    for (let i = 1; i < this.snapshots.length; i++) {
      const a = this.snapshots[i - 1]!;
      const b = this.snapshots[i]!;
      const ma = a.models[model];
      const mb = b.models[model];
      if (!ma || !mb) continue;
      const v = f(ma, mb, (b.at - a.at) / 1000);
      out.push(v === undefined || !Number.isFinite(v) ? 0 : v);
    }
    return out;
  }

  view(): MetricsView {
    const last = this.snapshots[this.snapshots.length - 1];
    if (!last) return { rangeMs: this.rangeMs, scrapes: 0, summaries: false, models: [], gpus: [] };
    const r = this.rangeMs;
    const grow = (a: number, b: number) =>
      increase([
        { t: 0, v: a },
        { t: 1, v: b },
      ]);
    const models = Object.keys(last.models)
      .sort()
      .map((name): ModelMetrics => {
        const m = last.models[name]!;
        const success = this.series(name, "success");
        const inferences = this.series(name, "inferences");
        const executions = this.series(name, "executions");
        const p99 = m.queueSummary?.q[P99];
        const execGrowth = ratioOfRates(inferences, executions, r);
        const out: ModelMetrics = {
          model: name,
          pending: m.pending,
          throughputSeries: this.perInterval(name, (a, b, dt) => grow(a.success, b.success) / dt),
          queueSeries: this.perInterval(name, (a, b) => {
            if (b.queueSummary) {
              const q = b.queueSummary.q[P99];
              return q === undefined || Number.isNaN(q) ? 0 : q;
            }
            const n = grow(a.success, b.success);
            return n > 0 ? grow(a.queueUs, b.queueUs) / n : 0;
          }),
        };
        const set = <K extends keyof ModelMetrics>(k: K, v: ModelMetrics[K] | undefined) => {
          if (v !== undefined && (typeof v !== "number" || Number.isFinite(v))) out[k] = v;
        };
        set("requestsPerSec", rate(success, r));
        set("inferencesPerSec", rate(inferences, r));
        set("failuresPerSec", rate(this.series(name, "failure"), r));
        set("queueAvgUs", ratioOfRates(this.series(name, "queueUs"), success, r));
        set("computeInferAvgUs", ratioOfRates(this.series(name, "computeInferUs"), success, r));
        set("requestAvgUs", ratioOfRates(this.series(name, "requestUs"), success, r));
        set("avgBatch", execGrowth);
        if (p99 !== undefined && !Number.isNaN(p99)) out.queueP99Us = p99;
        return out;
      });
    const gpus = last.gpus.map((g) => ({
      ...g,
      utilizationSeries: this.snapshots.map((s) => s.gpus.find((x) => x.uuid === g.uuid)?.utilization ?? 0),
    }));
    return {
      at: last.at,
      rangeMs: r,
      scrapes: this.snapshots.length,
      summaries: last.summaries,
      models,
      gpus,
      ...(last.cpu ? { cpu: last.cpu } : {}),
    };
  }
}
