import type { StatisticsJson } from "../triton/grpc-client.js";

export interface Duration {
  count: number;
  ns: number;
}

/** Cumulative counters of one model (all versions added), as the statistics extension reports them. */
export interface ModelCounters {
  inferenceCount: number;
  executionCount: number;
  success: Duration;
  fail: Duration;
  queue: Duration;
  computeInput: Duration;
  computeInfer: Duration;
  computeOutput: Duration;
}

export type StatsSnapshot = Map<string, ModelCounters>;

const ZERO: Duration = { count: 0, ns: 0 };

function dur(d: { count?: number | string; ns?: number | string } | undefined): Duration {
  return { count: Number(d?.count ?? 0), ns: Number(d?.ns ?? 0) };
}

function addDur(a: Duration, b: Duration): Duration {
  return { count: a.count + b.count, ns: a.ns + b.ns };
}

function subDur(a: Duration, b: Duration): Duration {
  return { count: Math.max(0, a.count - b.count), ns: Math.max(0, a.ns - b.ns) };
}

export function snapshotOf(json: StatisticsJson): StatsSnapshot {
  const out: StatsSnapshot = new Map();
  for (const m of json.model_stats ?? []) {
    const s = m.inference_stats ?? {};
    const c: ModelCounters = {
      inferenceCount: Number(m.inference_count ?? 0),
      executionCount: Number(m.execution_count ?? 0),
      success: dur(s.success),
      fail: dur(s.fail),
      queue: dur(s.queue),
      computeInput: dur(s.compute_input),
      computeInfer: dur(s.compute_infer),
      computeOutput: dur(s.compute_output),
    };
    const prev = out.get(m.name);
    out.set(
      m.name,
      prev
        ? {
            inferenceCount: prev.inferenceCount + c.inferenceCount,
            executionCount: prev.executionCount + c.executionCount,
            success: addDur(prev.success, c.success),
            fail: addDur(prev.fail, c.fail),
            queue: addDur(prev.queue, c.queue),
            computeInput: addDur(prev.computeInput, c.computeInput),
            computeInfer: addDur(prev.computeInfer, c.computeInfer),
            computeOutput: addDur(prev.computeOutput, c.computeOutput),
          }
        : c,
    );
  }
  return out;
}

/** What happened between two snapshots. */
export function diffSnapshots(after: StatsSnapshot, before: StatsSnapshot): StatsSnapshot {
  const out: StatsSnapshot = new Map();
  for (const [name, a] of after) {
    const b = before.get(name);
    out.set(name, {
      inferenceCount: Math.max(0, a.inferenceCount - (b?.inferenceCount ?? 0)),
      executionCount: Math.max(0, a.executionCount - (b?.executionCount ?? 0)),
      success: subDur(a.success, b?.success ?? ZERO),
      fail: subDur(a.fail, b?.fail ?? ZERO),
      queue: subDur(a.queue, b?.queue ?? ZERO),
      computeInput: subDur(a.computeInput, b?.computeInput ?? ZERO),
      computeInfer: subDur(a.computeInfer, b?.computeInfer ?? ZERO),
      computeOutput: subDur(a.computeOutput, b?.computeOutput ?? ZERO),
    });
  }
  return out;
}

export interface StageBreakdown {
  model: string;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  avgBatchSize: number;
}

/** The server's view of the measured requests, per request, in microseconds. */
export interface ServerBreakdown {
  /** Successful requests the server counted. */
  requests: number;
  failures: number;
  inferenceCount: number;
  executionCount: number;
  /** Inferences per model execution: how well requests were batched together. */
  avgBatchSize: number;
  /** Whole time in the server per request (receipt to response). */
  avgRequestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  /** The server's time not accounted for by queue and compute. */
  overheadUs: number;
  /** For an ensemble: each step's share, in step order. */
  composing?: StageBreakdown[];
}

const avgUs = (d: Duration, per: number) => (per > 0 ? d.ns / per / 1000 : 0);

function stage(model: string, c: ModelCounters): StageBreakdown {
  return {
    model,
    queueUs: avgUs(c.queue, c.queue.count),
    computeInputUs: avgUs(c.computeInput, c.computeInput.count),
    computeInferUs: avgUs(c.computeInfer, c.computeInfer.count),
    computeOutputUs: avgUs(c.computeOutput, c.computeOutput.count),
    avgBatchSize: c.executionCount > 0 ? c.inferenceCount / c.executionCount : 0,
  };
}

/**
 * Per-request averages for `model` from a snapshot delta. An ensemble has no queue or compute of
 * its own: as perf_analyzer does, its parts are the sums over the models its steps call.
 */
export function breakdown(
  delta: StatsSnapshot,
  model: string,
  composing: readonly string[] = [],
): ServerBreakdown | undefined {
  const m = delta.get(model);
  if (!m) return undefined;
  const requests = m.success.count;
  const avgRequestUs = avgUs(m.success, requests);
  let parts: StageBreakdown;
  let steps: StageBreakdown[] | undefined;
  if (composing.length) {
    steps = composing.map((name) => {
      const c = delta.get(name);
      return c
        ? stage(name, c)
        : { model: name, queueUs: 0, computeInputUs: 0, computeInferUs: 0, computeOutputUs: 0, avgBatchSize: 0 };
    });
    parts = steps.reduce(
      (a, s) => ({
        ...a,
        queueUs: a.queueUs + s.queueUs,
        computeInputUs: a.computeInputUs + s.computeInputUs,
        computeInferUs: a.computeInferUs + s.computeInferUs,
        computeOutputUs: a.computeOutputUs + s.computeOutputUs,
      }),
      { model, queueUs: 0, computeInputUs: 0, computeInferUs: 0, computeOutputUs: 0, avgBatchSize: 0 },
    );
  } else {
    parts = stage(model, m);
  }
  const inner = parts.queueUs + parts.computeInputUs + parts.computeInferUs + parts.computeOutputUs;
  return {
    requests,
    failures: m.fail.count,
    inferenceCount: m.inferenceCount,
    executionCount: m.executionCount,
    avgBatchSize: m.executionCount > 0 ? m.inferenceCount / m.executionCount : 0,
    avgRequestUs,
    queueUs: parts.queueUs,
    computeInputUs: parts.computeInputUs,
    computeInferUs: parts.computeInferUs,
    computeOutputUs: parts.computeOutputUs,
    overheadUs: Math.max(0, avgRequestUs - inner),
    ...(steps ? { composing: steps } : {}),
  };
}
