import type { Exposition, SummarySample } from "./prometheus.js";

/** Quantiles of a Triton summary, in microseconds, keyed "0.5" .. "0.999". */
export interface Quantiles {
  count: number;
  sumUs: number;
  q: Record<string, number>;
}

/** Triton's cumulative per-model counters at one scrape, summed over versions (`sum by (model)`). */
export interface ModelCounters {
  model: string;
  versions: string[];
  success: number;
  failure: number;
  /** Inferences: requests times their batch size. */
  inferences: number;
  executions: number;
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  /** Gauge: requests waiting or running now. */
  pending: number;
  /** Only with `--metrics-config summary_latencies=true`. */
  queueSummary?: Quantiles;
  requestSummary?: Quantiles;
  computeInferSummary?: Quantiles;
}

export interface GpuGauges {
  uuid: string;
  /** 0..1 */
  utilization: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  powerWatts?: number;
}

export interface TritonMetricsSnapshot {
  /** ms since epoch of the scrape. */
  at: number;
  models: Record<string, ModelCounters>;
  gpus: GpuGauges[];
  cpu?: { utilization: number; memoryUsedBytes: number; memoryTotalBytes: number };
  /** Whether Triton exports latency summaries (they are off by default). */
  summaries: boolean;
}

const COUNTERS: Record<
  string,
  keyof Omit<ModelCounters, "model" | "versions" | "queueSummary" | "requestSummary" | "computeInferSummary">
> = {
  nv_inference_request_success: "success",
  nv_inference_request_failure: "failure",
  nv_inference_count: "inferences",
  nv_inference_exec_count: "executions",
  nv_inference_request_duration_us: "requestUs",
  nv_inference_queue_duration_us: "queueUs",
  nv_inference_compute_input_duration_us: "computeInputUs",
  nv_inference_compute_infer_duration_us: "computeInferUs",
  nv_inference_compute_output_duration_us: "computeOutputUs",
  nv_inference_pending_request_count: "pending",
};

const SUMMARIES: Record<string, "queueSummary" | "requestSummary" | "computeInferSummary"> = {
  nv_inference_queue_summary_us: "queueSummary",
  nv_inference_request_summary_us: "requestSummary",
  nv_inference_compute_infer_summary_us: "computeInferSummary",
};

function emptyModel(model: string): ModelCounters {
  return {
    model,
    versions: [],
    success: 0,
    failure: 0,
    inferences: 0,
    executions: 0,
    requestUs: 0,
    queueUs: 0,
    computeInputUs: 0,
    computeInferUs: 0,
    computeOutputUs: 0,
    pending: 0,
  };
}

const finite = (x: number) => (Number.isFinite(x) ? x : 0);

/**
 * Quantiles of several versions cannot be added; the slowest version's is the honest figure for
 * the model. Count and sum do add up.
 */
function mergeQuantiles(a: Quantiles | undefined, s: SummarySample): Quantiles {
  const q: Record<string, number> = { ...(a?.q ?? {}) };
  for (const [k, v] of Object.entries(s.quantiles)) {
    const prev = q[k];
    q[k] = prev === undefined || Number.isNaN(prev) ? v : Number.isNaN(v) ? prev : Math.max(prev, v);
  }
  return { count: (a?.count ?? 0) + finite(s.count), sumUs: (a?.sumUs ?? 0) + finite(s.sum), q };
}

/** The figures the dashboard needs, out of one parsed scrape of Triton's `/metrics`. */
export function tritonSnapshot(x: Exposition, at: number): TritonMetricsSnapshot {
  const models: Record<string, ModelCounters> = {};
  const model = (name: string) => (models[name] ??= emptyModel(name));
  const gpus = new Map<string, GpuGauges>();
  const gpu = (uuid: string) => {
    let g = gpus.get(uuid);
    if (!g) gpus.set(uuid, (g = { uuid, utilization: 0, memoryUsedBytes: 0, memoryTotalBytes: 0 }));
    return g;
  };
  let cpu: TritonMetricsSnapshot["cpu"];
  for (const s of x.samples) {
    const field = COUNTERS[s.name];
    if (field && s.labels.model !== undefined) {
      const m = model(s.labels.model);
      m[field] += finite(s.value);
      const v = s.labels.version;
      if (v !== undefined && !m.versions.includes(v)) m.versions.push(v);
      continue;
    }
    const uuid = s.labels.gpu_uuid ?? "0";
    switch (s.name) {
      case "nv_gpu_utilization":
        gpu(uuid).utilization = finite(s.value);
        break;
      case "nv_gpu_memory_used_bytes":
        gpu(uuid).memoryUsedBytes = finite(s.value);
        break;
      case "nv_gpu_memory_total_bytes":
        gpu(uuid).memoryTotalBytes = finite(s.value);
        break;
      case "nv_gpu_power_usage":
        gpu(uuid).powerWatts = finite(s.value);
        break;
      case "nv_cpu_utilization":
        (cpu ??= { utilization: 0, memoryUsedBytes: 0, memoryTotalBytes: 0 }).utilization = finite(s.value);
        break;
      case "nv_cpu_memory_used_bytes":
        (cpu ??= { utilization: 0, memoryUsedBytes: 0, memoryTotalBytes: 0 }).memoryUsedBytes = finite(s.value);
        break;
      case "nv_cpu_memory_total_bytes":
        (cpu ??= { utilization: 0, memoryUsedBytes: 0, memoryTotalBytes: 0 }).memoryTotalBytes = finite(s.value);
        break;
    }
  }
  let summaries = false;
  for (const s of x.summaries) {
    const field = SUMMARIES[s.name];
    if (!field || s.labels.model === undefined) continue;
    summaries = true;
    const m = model(s.labels.model);
    m[field] = mergeQuantiles(m[field], s);
  }
  for (const m of Object.values(models)) m.versions.sort((a, b) => Number(a) - Number(b));
  return {
    at,
    models,
    gpus: [...gpus.values()].sort((a, b) => a.uuid.localeCompare(b.uuid)),
    ...(cpu ? { cpu } : {}),
    summaries,
  };
}
