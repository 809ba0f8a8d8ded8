import { formatShapeList, MissingShapesError } from "../../perf/inputs.js";
import type { PerfDeps, PerfOptions, PerfReport } from "../../perf/run.js";
import type { DashboardState, PerfState } from "../state.js";
import { openShapesPrompt } from "../keys.js";
import type { Store } from "../store.js";
import { describeRunFailure } from "./run-failure.js";

/** The quick check `p` runs: short, so the answer comes while the edit is fresh. */
export interface QuickCheck {
  levels: number[];
  windowMs: number;
  maxTrials: number;
  stabilityPct: number;
}

export const QUICK_CHECK: QuickCheck = { levels: [1, 2, 3, 4], windowMs: 1000, maxTrials: 5, stabilityPct: 10 };

/** `runPerf` with the run it measures bound by the caller (the dashboard imports nothing of the session). */
export type RunPerf = (o: PerfOptions, deps: Omit<PerfDeps, "run">) => Promise<PerfReport>;

export interface PerfRunnerOptions {
  store: Store<DashboardState>;
  env: NodeJS.ProcessEnv;
  /** `runPerf` from src/perf/run.ts: the same engine and the same report as `triton-dev perf`. */
  runPerf: RunPerf;
  check?: QuickCheck;
  now?: () => number;
}

const MAX_PROGRESS = 40;

export function quickCheckOptions(model: string, c: QuickCheck, shapes: Record<string, number[]> = {}): PerfOptions {
  return {
    model,
    protocol: "http",
    kind: "concurrency",
    levels: c.levels,
    distribution: "constant",
    windowMs: c.windowMs,
    stabilityPct: c.stabilityPct,
    maxTrials: c.maxTrials,
    batchSize: 1,
    shapes,
    inputData: "random",
    stringLength: 128,
    engine: "builtin",
    maxInFlight: 256,
    keepHistory: true,
  };
}

/** Runs one quick check at a time and writes its progress and result to the store. */
export class PerfRunner {
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly o: PerfRunnerOptions) {
    this.now = o.now ?? Date.now;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  start(model: string, shapes: Record<string, number[]> = {}): void {
    if (this.running) return;
    const c = this.o.check ?? QUICK_CHECK;
    // Shapes first: the line is cut to the panel's width, and they are what this user chose.
    const given = Object.keys(shapes).length ? `shapes ${formatShapeList(shapes)}; ` : "";
    const plan = `${given}concurrency ${c.levels.join(",")}, ${c.windowMs / 1000} s windows (stable when 3 agree within ${c.stabilityPct}%), HTTP, built-in load generator`;
    const ac = new AbortController();
    this.abort = ac;
    const set = (f: (p: PerfState) => PerfState) => this.o.store.update((s) => ({ ...s, perf: f(s.perf) }));
    set(() => ({ status: "running", model, plan, progress: [], startedAt: this.now() }));
    this.running = this.o
      .runPerf(quickCheckOptions(model, c, shapes), {
        env: this.o.env,
        signal: ac.signal,
        progress: (line) => set((p) => ({ ...p, progress: [...p.progress, line.trim()].slice(-MAX_PROGRESS) })),
      })
      .then((report) => {
        const stopped = report.stopped;
        set((p) => ({
          ...p,
          status: report.sweeps.some((s) => s.levels.length) ? "done" : "failed",
          report,
          finishedAt: this.now(),
          ...(stopped ? { error: stopped.message } : {}),
          ...(!report.sweeps.some((s) => s.levels.length) && !stopped ? { error: "nothing was measured" } : {}),
        }));
      })
      .catch((err: unknown) => {
        if (err instanceof MissingShapesError) {
          // The flag its hint names is not the dashboard's: ask at the prompt instead.
          const needs = err.inputs.map((i) => `${i.name} [${i.dims.join(",")}]`).join(", ");
          this.o.store.update((s) => {
            const failed: DashboardState = {
              ...s,
              perf: {
                ...s.perf,
                status: "failed",
                error: `${model} has inputs of dynamic shape to size: ${needs}\nType their sizes at the prompt as NAME=2x3 (without the batch dimension); P asks again.`,
                needsShapes: [...err.inputs],
                finishedAt: this.now(),
              },
            };
            return openShapesPrompt(failed, model);
          });
          return;
        }
        set((p) => ({ ...p, status: "failed", error: describeRunFailure(err, "perf"), finishedAt: this.now() }));
      })
      .finally(() => {
        this.running = undefined;
        this.abort = undefined;
      });
  }

  cancel(): void {
    this.abort?.abort();
  }

  /** Stop a run in progress and wait until its load has stopped. */
  async close(): Promise<void> {
    this.cancel();
    await this.running;
  }
}
