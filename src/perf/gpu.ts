import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fetchBounded, METRICS_RESPONSE_LIMIT } from "../net/bounded-fetch.js";

/** One GPU at one instant. */
export interface GpuReading {
  id: string;
  name?: string;
  /** 0..1 */
  utilization: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
}

/** What the GPUs did while a load level ran. */
export interface GpuStats {
  source: "nvidia-smi" | "triton-metrics";
  samples: number;
  gpus: Array<{
    id: string;
    name?: string;
    utilizationAvg: number;
    utilizationMax: number;
    memoryUsedMaxBytes: number;
    memoryTotalBytes: number;
  }>;
}

export interface GpuProbe {
  readonly source: GpuStats["source"];
  read(): Promise<GpuReading[]>;
}

const MIB = 1024 * 1024;

export const NVIDIA_SMI_ARGS = [
  "--query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total",
  "--format=csv,noheader,nounits",
];

/** `nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits` */
export function parseNvidiaSmiCsv(text: string): GpuReading[] {
  const out: GpuReading[] = [];
  for (const line of text.split("\n")) {
    const cols = line.split(",").map((c) => c.trim());
    if (cols.length < 6) continue;
    const [index, uuid, name, util, used, total] = cols as [string, string, string, string, string, string];
    const num = (s: string) => (/^\d+(\.\d+)?$/.test(s) ? Number(s) : NaN);
    if (!/^\d+$/.test(index)) continue;
    out.push({
      id: uuid || index,
      name,
      // "[N/A]" (MIG, some vGPUs) reads as 0 rather than failing the run.
      utilization: Number.isFinite(num(util)) ? num(util) / 100 : 0,
      memoryUsedBytes: Number.isFinite(num(used)) ? num(used) * MIB : 0,
      memoryTotalBytes: Number.isFinite(num(total)) ? num(total) * MIB : 0,
    });
  }
  return out;
}

/** Triton's DCGM gauges: nv_gpu_utilization (0..1), nv_gpu_memory_{used,total}_bytes, labelled by gpu_uuid. */
export function parseTritonGpuMetrics(text: string): GpuReading[] {
  const byGpu = new Map<string, GpuReading>();
  const re = /^(nv_gpu_utilization|nv_gpu_memory_used_bytes|nv_gpu_memory_total_bytes)\{([^}]*)\}\s+(\S+)/;
  for (const line of text.split("\n")) {
    const m = re.exec(line);
    if (!m) continue;
    const id = /gpu_uuid="([^"]*)"/.exec(m[2]!)?.[1] ?? "0";
    const r = byGpu.get(id) ?? { id, utilization: 0, memoryUsedBytes: 0, memoryTotalBytes: 0 };
    const v = Number(m[3]);
    if (m[1] === "nv_gpu_utilization") r.utilization = v;
    else if (m[1] === "nv_gpu_memory_used_bytes") r.memoryUsedBytes = v;
    else r.memoryTotalBytes = v;
    byGpu.set(id, r);
  }
  return [...byGpu.values()];
}

export function findOnPath(bin: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, bin);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

function run(bin: string, args: string[], timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { timeout: timeoutMs }, (err, stdout) => (err ? reject(err) : resolve(String(stdout))));
  });
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || host.startsWith("127.");
}

export interface GpuProbeOptions {
  env: NodeJS.ProcessEnv;
  /** The server's host: nvidia-smi only describes this machine's GPUs. */
  host: string;
  metricsUrl?: string;
}

/**
 * nvidia-smi when the server runs on this machine and the tool is there; otherwise Triton's own
 * GPU gauges from its metrics endpoint; undefined when neither shows a GPU.
 */
export async function detectGpuProbe(o: GpuProbeOptions): Promise<GpuProbe | undefined> {
  const smi = isLoopback(o.host) ? findOnPath("nvidia-smi", o.env) : undefined;
  if (smi) {
    const probe: GpuProbe = {
      source: "nvidia-smi",
      read: async () => parseNvidiaSmiCsv(await run(smi, NVIDIA_SMI_ARGS)),
    };
    try {
      if ((await probe.read()).length > 0) return probe;
    } catch {
      // no driver or no device: fall through to Triton's metrics
    }
  }
  if (o.metricsUrl) {
    const url = o.metricsUrl;
    const probe: GpuProbe = {
      source: "triton-metrics",
      read: async () =>
        parseTritonGpuMetrics(
          (
            await fetchBounded(
              url,
              { method: "GET" },
              {
                exchange: { server: `metrics at ${url}`, request: "GET", expected: "Prometheus text" },
                timeoutMs: 3000,
                maxBytes: METRICS_RESPONSE_LIMIT,
              },
            )
          ).body.toString("utf8"),
        ),
    };
    try {
      if ((await probe.read()).length > 0) return probe;
    } catch {
      // metrics endpoint not reachable: no GPU figures
    }
  }
  return undefined;
}

/** Samples a probe every `intervalMs` between start() and stop(). */
export class GpuSampler {
  private readings: GpuReading[][] = [];
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(
    private readonly probe: GpuProbe,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    this.readings = [];
    const tick = async () => {
      if (this.busy) return;
      this.busy = true;
      try {
        this.readings.push(await this.probe.read());
      } catch {
        // a missed sample is not worth failing a run for
      } finally {
        this.busy = false;
      }
    };
    void tick();
    this.timer = setInterval(() => void tick(), this.intervalMs);
  }

  stop(): GpuStats | undefined {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    return summariseGpu(this.probe.source, this.readings);
  }
}

export function summariseGpu(source: GpuStats["source"], readings: readonly GpuReading[][]): GpuStats | undefined {
  const samples = readings.filter((r) => r.length > 0);
  if (samples.length === 0) return undefined;
  const ids = [...new Set(samples.flat().map((r) => r.id))];
  return {
    source,
    samples: samples.length,
    gpus: ids.map((id) => {
      const rs = samples.flat().filter((r) => r.id === id);
      return {
        id,
        ...(rs[0]?.name ? { name: rs[0].name } : {}),
        utilizationAvg: rs.reduce((a, r) => a + r.utilization, 0) / rs.length,
        utilizationMax: Math.max(...rs.map((r) => r.utilization)),
        memoryUsedMaxBytes: Math.max(...rs.map((r) => r.memoryUsedBytes)),
        memoryTotalBytes: Math.max(...rs.map((r) => r.memoryTotalBytes)),
      };
    }),
  };
}
