import { execFile } from "node:child_process";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { detectNvidiaGpus } from "../../gpu/detect.js";
import { findOnPath, NVIDIA_SMI_ARGS, parseNvidiaSmiCsv } from "../../perf/gpu.js";
import type { TritonHttpClient } from "../../triton/http-client.js";
import { runReadiness } from "../../triton/run-readiness.js";
import {
  applyConfig,
  applyHealth,
  applyIndex,
  applyReadiness,
  servedRows,
  summariseConfig,
  type DashboardState,
} from "../state.js";
import type { Store } from "../store.js";

export interface ServerPollerOptions {
  store: Store<DashboardState>;
  client: TritonHttpClient;
  env: NodeJS.ProcessEnv;
  intervalMs?: number;
  /** Staged paths in Triton's reasons as the user's (state/staged-paths.ts userPathsOf). */
  userPaths?: (text: string) => string;
  /** The models the run serves (its staging repository, reload/stage.ts servedModels). */
  served?: () => Promise<string[]>;
  /** The time the poll runs on (../../clock.ts). */
  clock?: Clock;
}

/** The config key a model's summary was read for: a reload can change the config in place. */
const configKey = (version: string | undefined, reloadAt: number | undefined) => `${version ?? "-"}@${reloadAt ?? 0}`;

/**
 * Keeps the server and models panels current: health and the repository index on a timer, each
 * model's config once per load, and once at start the server version and the GPUs' names.
 */
export class ServerPoller {
  private timer: unknown;
  private busy = false;
  private stopped = false;
  private readonly configsRead = new Map<string, string>();

  private readonly clock: Clock;

  constructor(private readonly o: ServerPollerOptions) {
    this.clock = o.clock ?? REAL_CLOCK;
  }

  start(): void {
    void this.once();
    void this.tick();
    this.timer = this.clock.setInterval(() => void this.tick(), this.o.intervalMs ?? 2000, { unref: true });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.clock.clearInterval(this.timer);
    this.timer = undefined;
  }

  private async once(): Promise<void> {
    const { store, client, env } = this.o;
    const meta = await client.serverMetadata().catch(() => undefined);
    if (meta && !this.stopped) store.update((s) => ({ ...s, server: { ...s.server, tritonVersion: meta.version } }));
    const names = await gpuNames(env);
    const count = names.length ? names.length : await detectNvidiaGpus();
    if (this.stopped) return;
    store.update((s) => ({
      ...s,
      server: { ...s.server, gpuNames: names, ...(count !== undefined ? { gpuCount: count } : {}) },
    }));
  }

  /** One poll; skipped while the previous one is still waiting on a busy server. */
  async tick(): Promise<void> {
    if (this.busy || this.stopped) return;
    this.busy = true;
    try {
      const { store, client } = this.o;
      // A ready server is live: one request instead of two on the usual path.
      const ready = await client.isReady();
      const live = ready || (await client.isLive());
      if (this.stopped) return;
      // `ready` is the run's (applyReadiness below), not Triton's alone.
      store.update((s) => applyHealth(s, { live, ready: live ? (s.server.ready ?? false) : false }));
      if (!live) return;
      const raw = await client.repositoryIndex().catch(() => undefined);
      if (!raw || this.stopped) return;
      const map = this.o.userPaths;
      const index = map ? raw.map((e) => (e.reason ? { ...e, reason: map(e.reason) } : e)) : raw;
      store.update((s) => applyIndex(s, index));
      const served = (await this.o.served?.().catch(() => undefined)) ?? servedRows(store.getState());
      if (this.stopped) return;
      store.update((s) => applyReadiness(s, runReadiness({ live, tritonReady: ready, served, index }), served));
      for (const m of store.getState().models) {
        if (m.state !== "READY") continue;
        const key = configKey(m.version, m.lastReload?.at);
        if (this.configsRead.get(m.name) === key) continue;
        const config = await client.modelConfig(m.name).catch(() => undefined);
        if (!config || this.stopped) continue;
        this.configsRead.set(m.name, key);
        store.update((s) => applyConfig(s, m.name, m.version, summariseConfig(config)));
      }
    } finally {
      this.busy = false;
    }
  }
}

/** GPU names from nvidia-smi when it is installed; none otherwise (the metrics still show use). */
async function gpuNames(env: NodeJS.ProcessEnv): Promise<string[]> {
  const smi = findOnPath("nvidia-smi", env);
  if (!smi) return [];
  const out = await new Promise<string>((resolve) =>
    execFile(smi, NVIDIA_SMI_ARGS, { timeout: 5000 }, (err, stdout) => resolve(err ? "" : String(stdout))),
  );
  return parseNvidiaSmiCsv(out).map((g) => g.name ?? g.id);
}
