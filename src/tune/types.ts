/** What `triton-dev tune` is asked, what it reports, and the records of its candidates. */
import type { MeasuredRun } from "../perf/run.js";
import type { LevelResult } from "../perf/profile.js";
import type { InputDataSource } from "../perf/inputs.js";
import type { Protocol } from "../perf/protocol.js";
import type { ConfigEdits } from "../repo/config-edit.js";
import type { Confirmation, ConfirmRound, Objective, SearchResult, Trial } from "./search.js";
import type { Machine, SearchSpace } from "./space.js";

export interface TuneOptions {
  model: string;
  protocol: Protocol;
  /** perf's --shape: the dimensions of inputs with -1 in their shape. */
  shapes?: Record<string, number[]>;
  /** perf's --input-data. */
  inputData?: InputDataSource;
  /** perf's --request-parameter. */
  requestParameters?: Record<string, string | number | boolean>;
  objective: Objective;
  concurrency: number | "auto";
  /** Wall-clock budget of the search, in milliseconds. */
  budgetMs: number;
  maxCandidates: number;
  spaceFile?: string;
  apply: boolean;
  windowMs: number;
  stabilityPct: number;
  maxTrials: number;
  /** Measure every candidate of the space instead of climbing (the bench's baseline). */
  exhaustive?: boolean;
  keepHistory: boolean;
}

export interface TuneDeps {
  env: NodeJS.ProcessEnv;
  /** The run tuned on, whose repository candidates are staged into (session/measured-run.ts `recordedRun`). */
  run: MeasuredRun;
  signal?: AbortSignal;
  progress?: (line: string) => void;
  /** Called after each candidate, for a live view (the dashboard's panel). */
  onTrial?: (t: TunedTrial, total: { done: number; max: number }) => void;
  machine?: Machine;
  now?: () => number;
}

/** Where one candidate's time went, in milliseconds. */
export interface TrialPhases {
  /** Copying the model into a variant, linting it, renaming it into the served repository. */
  stageMs: number;
  /** From the variant in place until Triton served it READY (a poll, then its load). */
  loadMs: number;
  /** Waiting, once this one was READY, for the previous candidate's variant to be gone. */
  previousMs: number;
  /** perf's run: its set-up, the first request, the windows, the requests in flight drained. */
  measureMs: number;
  /** Measurement windows (at most --max-trials). */
  windows: number;
  /** Set when the figures were taken from a measurement made already (the concurrency sweep's). */
  reused?: string;
}

/** A trial with what perf measured (the full level: breakdown, GPU) and where it was served. */
export interface TunedTrial extends Trial {
  servedModel?: string;
  level?: LevelResult;
  phases?: TrialPhases;
  /** Measured only until it was clear it cannot win (search.ts `clearlyDominated`). */
  stoppedEarly?: string;
}

/** The search's time outside its candidates, in milliseconds. */
export interface TuneTiming {
  /** Finding the run, reading the configs, building the space. */
  setupMs: number;
  /** `--concurrency auto`'s sweep. */
  concurrencyMs: number;
  /** The last variant's unload, waited for at the end. */
  cleanupMs: number;
  /** The winner and the runner-up measured side by side (`TuneReport.confirmation`). */
  confirmMs: number;
}

/** The search's winner checked against its runner-up side by side, before the report. */
export interface TuneConfirmation extends Confirmation {
  /** Trial indices of the search's winner and its runner-up. */
  winner: number;
  runnerUp: number;
  rounds: ConfirmRound[];
}

export interface TuneReport {
  model: string;
  configFile: string;
  concurrency: number;
  /** The short sweep that chose the concurrency (`--concurrency auto`). */
  concurrencySweep?: Array<{ concurrency: number; throughput: number; p99Us: number }>;
  objective: Objective;
  space: SearchSpace;
  spaceSize: number;
  mode: "hill-climb" | "exhaustive";
  trials: TunedTrial[];
  /** Trial indices, best first. */
  ranking: number[];
  pareto: number[];
  /** The best trial inside the budget; absent when none met it. */
  winner?: number;
  /** The search's winner and its runner-up measured side by side; absent with fewer than two inside the budget. */
  confirmation?: TuneConfirmation;
  /** Why they were not, when two were inside the budget (interrupted, one would not load again). */
  notConfirmed?: string;
  /** Set when the best found was within the noise of the user's config, which is then kept: why. */
  keptWithinNoise?: string;
  /** The user's config.pbtxt fields the winner changes. */
  diff: Array<{ field: string; before: string | undefined; after: string | undefined }>;
  edits?: ConfigEdits;
  ended: SearchResult["ended"];
  elapsedMs: number;
  timing: TuneTiming;
  /** `--apply`: the file written and the copy of its old bytes beside it. */
  applied?: { file: string; backup: string };
  /** `--apply` found the file unable to take the winner (changed meanwhile, unreadable): why. */
  notApplied?: { message: string; hint?: string };
  savedTo?: string;
}
