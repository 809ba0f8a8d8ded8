import type { TuneDeps, TuneOptions, TuneReport } from "../../tune/run.js";
import type { DashboardState, TuneState } from "../state.js";
import type { Store } from "../store.js";
import { describeRunFailure } from "./run-failure.js";

/** `runTune` with the run it tunes on bound by the caller (the dashboard imports nothing of the session). */
export type RunTune = (o: TuneOptions, deps: Omit<TuneDeps, "run">) => Promise<TuneReport>;

/** What `t` runs: a bounded search with short windows, so the answer comes within minutes. */
export const QUICK_TUNE: Omit<TuneOptions, "model"> = {
  protocol: "http",
  objective: {},
  concurrency: "auto",
  budgetMs: 180_000,
  maxCandidates: 16,
  apply: false,
  windowMs: 1000,
  stabilityPct: 10,
  maxTrials: 5,
  keepHistory: true,
};

export interface TuneRunnerOptions {
  store: Store<DashboardState>;
  env: NodeJS.ProcessEnv;
  /** `runTune` from src/tune/run.ts: the same search and report as `triton-dev tune`. */
  runTune: RunTune;
  options?: Omit<TuneOptions, "model">;
  now?: () => number;
}

const MAX_PROGRESS = 40;

/** Runs one tune at a time and writes its progress and result to the store. */
export class TuneRunner {
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly o: TuneRunnerOptions) {
    this.now = o.now ?? Date.now;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  start(model: string): void {
    if (this.running) return;
    const opts = this.o.options ?? QUICK_TUNE;
    const plan = `at most ${opts.maxCandidates} candidates in ${Math.round(opts.budgetMs / 1000)} s, ${opts.windowMs / 1000} s windows; \`triton-dev tune ${model}\` for a budget and --apply`;
    const ac = new AbortController();
    this.abort = ac;
    const set = (f: (p: TuneState) => TuneState) => this.o.store.update((s) => ({ ...s, tune: f(s.tune) }));
    set(() => ({ status: "running", model, plan, progress: [], startedAt: this.now() }));
    this.running = this.o
      .runTune(
        { ...opts, model },
        {
          env: this.o.env,
          signal: ac.signal,
          progress: (line) => set((p) => ({ ...p, progress: [...p.progress, line.trim()].slice(-MAX_PROGRESS) })),
        },
      )
      .then((report) => set((p) => ({ ...p, status: "done", report, finishedAt: this.now() })))
      .catch((err: unknown) => {
        set((p) => ({ ...p, status: "failed", error: describeRunFailure(err, "tune"), finishedAt: this.now() }));
      })
      .finally(() => {
        this.running = undefined;
        this.abort = undefined;
      });
  }

  cancel(): void {
    this.abort?.abort();
  }

  async close(): Promise<void> {
    this.cancel();
    await this.running;
  }
}
