/**
 * `triton-dev tune`: search the model's batching and instance settings on the server `up` runs.
 * Each candidate is a `__perf_` sibling variant staged beside the model (perf/variants.ts), loaded
 * through the repository API, measured by perf's own run (stability rule, server breakdown, GPU)
 * at one concurrency, and unloaded again. The user's files are read, and written only by --apply.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { resolvePaths } from "../config/paths.js";
import { UsageError, UserError } from "../errors.js";
import { log } from "../log/logger.js";
import { HttpControl } from "../perf/control.js";
import type { LevelResult } from "../perf/profile.js";
import { InputDataError } from "../perf/input-data.js";
import { MissingShapesError, type InputDataSource } from "../perf/inputs.js";
import { runPerf, type MeasuredRun, type PerfOptions } from "../perf/run.js";
import type { Protocol } from "../perf/protocol.js";
import {
  removeVariant,
  stageVariant,
  variantName,
  VariantError,
  type StagingTarget,
  lintOfRun,
  type Variant,
} from "../perf/variants.js";
import {
  applyConfigEdits,
  applyConfigEditsToFile,
  ConfigEditError,
  describeConfigEdits,
  renameConfig,
  type ConfigEdits,
} from "../repo/config-edit.js";
import { writeFileAtomic } from "../state/atomic-write.js";
import type { RunState } from "../state/run-state.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import { clientForRun } from "../triton/http-client.js";
import {
  budgetViolation,
  clearlyDominated,
  confirmVerdict,
  exhaustive,
  hillClimb,
  noiseBand,
  withinNoiseOfStart,
  paretoFront,
  rank,
  type Evaluate,
  type Measured,
  type Objective,
  type SearchResult,
  type Confirmation,
  type ConfirmRound,
  type Trial,
  windowsNoise,
  describeConfirmation,
} from "./search.js";
import {
  allCandidates,
  applySpaceFile,
  candidateKey,
  defaultSpace,
  editsBetween,
  readSpaceFile,
  spaceSize,
  startingPoint,
  thisMachine,
  withStart,
  type Machine,
  type SearchSpace,
} from "./space.js";

const tlog = log.child("tune");

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

/** ROUNDS rounds of the winner and the runner-up one after the other, the order alternating. */
export const CONFIRM_ROUNDS = 3;

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

/** Triton's reasons carry the python traceback after "At:"; the table wants the reason. */
function firstLine(message: string): string {
  return message
    .split("\n")[0]!
    .replace(/\s+At:\s*$/, "")
    .trim();
}

function measuredOf(l: LevelResult): Measured {
  return {
    throughput: l.throughput,
    p50Us: l.latency.p50Us,
    p95Us: l.latency.p95Us,
    p99Us: l.latency.p99Us,
    errors: l.errorCount,
    noise: l.noise?.throughput.spread ?? windowsNoise(l.windows),
  };
}

async function liveRun(recorded: MeasuredRun): Promise<RunState> {
  const run = await recorded.find();
  if (!run)
    throw new UserError("nothing is running, so there is no server to tune on", {
      hint: "Start Triton with `triton-dev up --detach`; tune stages its candidates into the repository it serves.",
    });
  if (!run.alive)
    throw new UserError(`the recorded server (pid ${run.state.pid}) is no longer running`, {
      hint: "`triton-dev down` cleans up its record; start a new one with `triton-dev up`.",
    });
  return run.state;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await fsp.readFile(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read ${file}, ${what}: ${(err as Error).message}`, {
      cause: err,
      hint: "Is the model part of the repository `triton-dev up` serves?",
    });
  }
}

/** The model's config as Triton serves it; refuses what tune cannot search. */
async function servedConfig(state: RunState, model: string): Promise<ModelConfigSummary> {
  const control = new HttpControl(clientForRun(state));
  let config: ModelConfigSummary;
  try {
    config = await control.modelConfig(model);
  } catch (err) {
    throw new UserError(`model '${model}' is not served by the running Triton`, {
      cause: err,
      hint: "`triton-dev status` lists its models and why any is not ready.",
    });
  } finally {
    control.close();
  }
  if (config.platform === "ensemble") {
    const steps = [...new Set((config.ensemble_scheduling?.step ?? []).map((s) => s.model_name))];
    throw new UsageError(
      `${model} is an ensemble: it has no batching or instances of its own to tune (Triton schedules its steps)`,
      {
        hint: `Tune the models its steps call, one at a time: ${steps.map((s) => `\`triton-dev tune ${s}\``).join(", ")}.`,
      },
    );
  }
  return config;
}

/** Choose the concurrency: the smallest level of a short sweep within 5% of the best throughput inside the budget. */
export function chooseConcurrency(
  levels: Array<{ concurrency: number; throughput: number; p99Us: number; p95Us?: number }>,
  o: Objective,
): number {
  const lat = (l: { p99Us: number; p95Us?: number }) =>
    o.latency?.percentile === "p95" ? (l.p95Us ?? l.p99Us) : l.p99Us;
  const inside = levels.filter((l) => !o.latency || lat(l) <= o.latency.ms * 1000);
  if (inside.length === 0) return levels[0]?.concurrency ?? 1;
  const best = Math.max(...inside.map((l) => l.throughput));
  return inside.find((l) => l.throughput >= 0.95 * best)!.concurrency;
}

/** The levels `--concurrency auto` may try, in order; the sweep stops at the knee. */
export const SWEEP_LEVELS = [1, 2, 4, 8, 16, 32, 64];

/**
 * Whether the sweep has seen enough after its last level: that level broke the latency budget (a
 * closed loop's latency only grows with its concurrency), or it added less than 5% to the best
 * throughput before it, which is what chooseConcurrency would choose from anyway.
 */
export function sweepDone(
  levels: ReadonlyArray<{ throughput: number; p99Us: number; p95Us?: number }>,
  o: Objective,
): boolean {
  const last = levels[levels.length - 1];
  if (!last) return false;
  const lat = o.latency?.percentile === "p95" ? (last.p95Us ?? last.p99Us) : last.p99Us;
  if (o.latency && lat > o.latency.ms * 1000) return true;
  const before = levels.slice(0, -1);
  return before.length > 0 && last.throughput < 1.05 * Math.max(...before.map((l) => l.throughput));
}

export async function runTune(o: TuneOptions, deps: TuneDeps): Promise<TuneReport> {
  const started = (deps.now ?? Date.now)();
  const now = deps.now ?? Date.now;
  const state = await liveRun(deps.run);
  const config = await servedConfig(state, o.model);
  const configFile = path.join(state.modelsDir, o.model, "config.pbtxt");
  const servedFile = path.join(state.repository, o.model, "config.pbtxt");
  const userText = await readText(configFile, `${o.model}'s config`);
  const servedText = await readText(servedFile, `the served copy of ${o.model}'s config`);

  let space = defaultSpace(config, deps.machine ?? thisMachine(state.gpus ?? 0));
  if (o.spaceFile) space = applySpaceFile(space, await readSpaceFile(o.spaceFile), o.spaceFile, config);
  const start = startingPoint(config, space.kind);
  space = withStart(space, start);

  const perfBase: Omit<PerfOptions, "model" | "levels"> = {
    protocol: o.protocol,
    kind: "concurrency",
    distribution: "constant",
    windowMs: o.windowMs,
    stabilityPct: o.stabilityPct,
    maxTrials: o.maxTrials,
    batchSize: 1,
    shapes: o.shapes ?? {},
    inputData: o.inputData ?? "random",
    ...(o.requestParameters ? { requestParameters: o.requestParameters } : {}),
    stringLength: 128,
    engine: "builtin",
    maxInFlight: 256,
    keepHistory: false,
  };
  const perfDeps = {
    env: deps.env,
    run: deps.run,
    ...(deps.signal ? { signal: deps.signal } : {}),
    progress: (line: string) => tlog.debug(line),
  };
  const timing: TuneTiming = { setupMs: now() - started, concurrencyMs: 0, cleanupMs: 0, confirmMs: 0 };

  let concurrency: number;
  let concurrencySweep: TuneReport["concurrencySweep"];
  // The user's config measured at the chosen level during the sweep: its trial, not measured again.
  let startLevel: LevelResult | undefined;
  if (o.concurrency === "auto") {
    const t0 = now();
    deps.progress?.(`${o.model}: a short concurrency sweep on your config to find the load that matters`);
    const levels: LevelResult[] = [];
    for (const value of SWEEP_LEVELS) {
      const r = await runPerf({ ...perfBase, model: o.model, levels: [value] }, perfDeps);
      const level = r.sweeps[0]?.levels[0];
      if (level && !r.stopped) levels.push(level);
      if (r.stopped || !level) break;
      deps.progress?.(
        `  concurrency ${value}: ${level.throughput.toFixed(1)} infer/s, p99 ${(level.latency.p99Us / 1000).toFixed(1)} ms`,
      );
      if (sweepDone(levels.map(sweepPoint), o.objective)) break;
    }
    concurrencySweep = levels.map((l) => ({ concurrency: l.value, throughput: l.throughput, p99Us: l.latency.p99Us }));
    concurrency = chooseConcurrency(levels.map(sweepPoint), o.objective);
    startLevel = levels.find((l) => l.value === concurrency);
    timing.concurrencyMs = now() - t0;
    deps.progress?.(`${o.model}: measuring every candidate at concurrency ${concurrency}`);
  } else concurrency = o.concurrency;

  const staging: StagingTarget = {
    repository: state.repository,
    reload: state.reload,
    client: clientForRun(state),
    lint: lintOfRun(state),
  };
  const startKey = candidateKey(start);
  const details = new Map<number, Pick<TunedTrial, "servedModel" | "level" | "phases" | "stoppedEarly">>();
  const interrupted = () => deps.signal?.aborted === true;
  // The last candidate's variant on its way out: its unload overlaps the next one's staging and
  // load, and is waited for before anything is measured.
  let leaving: Promise<void> | undefined;
  const waitLeaving = async () => {
    const p = leaving;
    leaving = undefined;
    await p;
  };

  const evaluate: Evaluate = async (c, index, ctx) => {
    const t0 = now();
    const isStart = candidateKey(c) === startKey;
    const served = isStart ? o.model : variantName(o.model, `tune${index}`);
    const variant: Variant = isStart
      ? { label: "your config", servedModel: o.model }
      : {
          label: candidateKey(c),
          servedModel: served,
          configText: renameConfig(
            applyConfigEdits(servedText, editsBetween(start, c, space.kind), servedFile),
            served,
          ),
        };
    const phases: TrialPhases = { stageMs: 0, loadMs: 0, previousMs: 0, measureMs: 0, windows: 0 };
    details.set(index, { servedModel: served, phases });
    const failed = (why: string) => ({ status: "failed" as const, why, elapsedMs: now() - t0 });
    try {
      let published: number | undefined;
      try {
        await stageVariant(staging, o.model, variant, 180_000, deps.signal, () => (published = now()));
      } catch (err) {
        if (!(err instanceof VariantError)) throw err;
        return failed(firstLine(err.message));
      } finally {
        phases.stageMs = (published ?? now()) - t0;
        phases.loadMs = published === undefined ? 0 : now() - published;
      }
      const t1 = now();
      await waitLeaving();
      phases.previousMs = now() - t1;
      if (interrupted()) return failed("interrupted");
      let level: LevelResult | undefined;
      const t2 = now();
      if (isStart && startLevel) {
        level = startLevel;
        phases.reused = "the concurrency sweep";
      } else {
        const reference = o.exhaustive ? undefined : ctx.reference;
        const r = await runPerf(
          { ...perfBase, model: served, levels: [concurrency] },
          {
            ...perfDeps,
            ...(reference ? { stopLevelEarly: (w) => clearlyDominated(w, reference, o.stabilityPct) } : {}),
          },
        );
        level = r.sweeps[0]?.levels[0];
        phases.measureMs = now() - t2;
        if (level) details.set(index, { servedModel: served, level, phases });
        // A measurement cut short (Ctrl-C) is no figure for the candidate.
        if (r.stopped) return failed(r.stopped.reason === "interrupted" ? "interrupted" : firstLine(r.stopped.message));
      }
      phases.windows = level?.trials ?? 0;
      if (!level || level.requests === 0) return failed("no request completed");
      details.set(index, {
        servedModel: served,
        level,
        phases,
        ...(level.stoppedEarly ? { stoppedEarly: level.stoppedEarly } : {}),
      });
      const measured = measuredOf(level);
      const why = budgetViolation(measured, o.objective);
      return { status: why ? "over-budget" : "ok", ...(why ? { why } : {}), measured, elapsedMs: now() - t0 };
    } catch (err) {
      // Inputs the flags do not size, or a data file that does not fit, fail every candidate
      // alike: said once, with what to pass, rather than as "no candidate could be measured".
      if (err instanceof MissingShapesError || err instanceof InputDataError) throw err;
      // A candidate the server cannot measure is recorded with why; the search goes on.
      if (!(err instanceof UserError)) throw err;
      return failed(err.message);
    } finally {
      if (variant.configText !== undefined) leaving = removeVariant(staging, variant).catch(() => undefined);
    }
  };

  const limits = {
    maxCandidates: o.maxCandidates,
    deadline: started + o.budgetMs,
    ...(deps.signal ? { signal: deps.signal } : {}),
    now,
  };
  let done = 0;
  const evaluateAndReport: Evaluate = async (c, index, ctx) => {
    deps.progress?.(
      `[${index + 1}/${o.maxCandidates}] ${candidateKey(c)}${candidateKey(c) === startKey ? " (your config)" : ""}`,
    );
    const r = await evaluate(c, index, ctx);
    done++;
    const trial: TunedTrial = { index, key: candidateKey(c), candidate: c, ...r, ...details.get(index) };
    deps.progress?.(`  ${describeTrial(trial)}`);
    deps.onTrial?.(trial, { done, max: o.maxCandidates });
    return r;
  };
  /**
   * Measure the search's winner and runner-up in CONFIRM_ROUNDS alternating rounds (A B, B A,
   * A B), each a short measurement of two windows of which the second counts (the first takes
   * the connections up to speed). Both are served at once: a staged candidate is staged again
   * under a name of its own. Undefined when interrupted.
   */
  const confirmSideBySide = async (a: Trial, b: Trial): Promise<TuneConfirmation | undefined> => {
    deps.progress?.(
      `${o.model}: checking ${a.key} against the runner-up ${b.key} side by side (${CONFIRM_ROUNDS} rounds)`,
    );
    const staged: Variant[] = [];
    const serve = async (t: Trial): Promise<string> => {
      if (candidateKey(t.candidate) === startKey) return o.model;
      const served = variantName(o.model, `confirm${t.index}`);
      const v: Variant = {
        label: t.key,
        servedModel: served,
        configText: renameConfig(
          applyConfigEdits(servedText, editsBetween(start, t.candidate, space.kind), servedFile),
          served,
        ),
      };
      staged.push(v);
      try {
        await stageVariant(staging, o.model, v, 180_000, deps.signal);
      } catch (err) {
        if (err instanceof VariantError) throw new UserError(`${t.key} did not load again: ${firstLine(err.message)}`);
        throw err;
      }
      return served;
    };
    try {
      await waitLeaving();
      const servedA = await serve(a);
      const servedB = await serve(b);
      const once = async (served: string): Promise<number | undefined> => {
        if (interrupted()) return undefined;
        const r = await runPerf({ ...perfBase, model: served, levels: [concurrency], maxTrials: 2 }, perfDeps);
        const level = r.sweeps[0]?.levels[0];
        if (r.stopped || !level || level.windows.length < 2) return undefined;
        const last = level.windows[level.windows.length - 1]!;
        return last.errors > 0 ? 0 : last.throughput;
      };
      const rounds: ConfirmRound[] = [];
      for (let i = 0; i < CONFIRM_ROUNDS; i++) {
        const first = i % 2 === 0 ? servedA : servedB;
        const second = first === servedA ? servedB : servedA;
        const x = await once(first);
        const y = x === undefined ? undefined : await once(second);
        if (x === undefined || y === undefined) return undefined;
        const round = first === servedA ? { winner: x, runnerUp: y } : { winner: y, runnerUp: x };
        rounds.push(round);
        deps.progress?.(
          `  round ${i + 1}: ${a.key} ${round.winner.toFixed(1)} infer/s, ${b.key} ${round.runnerUp.toFixed(1)} infer/s`,
        );
      }
      // Within the noise, the user's config stays where it is one of the two.
      const c = confirmVerdict(rounds, a, b, candidateKey(b.candidate) === startKey ? "runnerUp" : "winner");
      deps.progress?.(`  ${describeConfirmation(c, a.key, b.key, rounds.length)}`);
      return { ...c, winner: a.index, runnerUp: b.index, rounds };
    } finally {
      for (const v of staged) await removeVariant(staging, v).catch(() => undefined);
    }
  };

  let result: SearchResult;
  try {
    result = o.exhaustive
      ? await exhaustive(allCandidates(space), o.objective, limits, evaluateAndReport)
      : await hillClimb(space, start, o.objective, limits, evaluateAndReport);
  } finally {
    const t0 = now();
    await waitLeaving();
    timing.cleanupMs = now() - t0;
  }

  const trials: TunedTrial[] = result.trials.map((t) => ({ ...t, ...details.get(t.index) }));
  let ranking = rank(trials, o.objective);
  const best = result.best && result.best.status === "ok" ? result.best : undefined;
  let winner: TunedTrial | undefined = best && trials.find((t) => t.index === best.index);
  // The search compared each candidate with the one before it, each measured at its own time; a
  // busy minute during either can decide that. The two best are measured again side by side.
  let confirmation: TuneConfirmation | undefined;
  let notConfirmed: string | undefined;
  const runnerUp = ranking.find((t) => t !== winner && t.status === "ok" && t.measured);
  if (winner && runnerUp && !interrupted()) {
    const t0 = now();
    try {
      confirmation = await confirmSideBySide(winner, runnerUp);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      notConfirmed = firstLine(err.message);
    } finally {
      timing.confirmMs = now() - t0;
    }
    if (!confirmation && !notConfirmed) notConfirmed = "interrupted";
    if (confirmation?.pick === "runnerUp") {
      winner = runnerUp;
      ranking = [runnerUp, ...ranking.filter((t) => t !== runnerUp)];
    }
  }
  // No setting changes on a difference smaller than the noise it was measured in: a winner that
  // is not the user's config must beat it by more than that, unless the side-by-side check
  // already measured the two against each other.
  let keptWithinNoise: string | undefined;
  const startTrial = trials.find((t) => t.key === startKey && t.status === "ok" && t.measured);
  const checkedAgainstStart =
    confirmation && [confirmation.winner, confirmation.runnerUp].includes(startTrial?.index ?? -1);
  if (winner && startTrial && !checkedAgainstStart && withinNoiseOfStart(winner, startTrial, o.objective)) {
    const band = noiseBand(startTrial, winner);
    keptWithinNoise =
      `${winner.key} measured ${winner.measured!.throughput.toFixed(1)} infer/s against your config's ${startTrial.measured!.throughput.toFixed(1)}, ` +
      `within the noise of ±${(band * 100).toFixed(1)}%: no winner is declared, your config is kept`;
    deps.progress?.(keptWithinNoise);
    winner = startTrial;
    ranking = [startTrial, ...ranking.filter((t) => t !== startTrial)];
  }
  const edits = winner ? editsBetween(start, winner.candidate, space.kind) : undefined;
  const report: TuneReport = {
    model: o.model,
    configFile,
    concurrency,
    ...(concurrencySweep ? { concurrencySweep } : {}),
    objective: o.objective,
    space,
    spaceSize: spaceSize(space),
    mode: o.exhaustive ? "exhaustive" : "hill-climb",
    trials,
    ranking: ranking.map((t) => t.index),
    pareto: [...paretoFront(trials, o.objective.latency?.percentile ?? "p99")],
    ...(winner ? { winner: winner.index } : {}),
    ...(confirmation ? { confirmation } : {}),
    ...(notConfirmed ? { notConfirmed } : {}),
    ...(keptWithinNoise ? { keptWithinNoise } : {}),
    diff: edits ? describeConfigEdits(userText, edits) : [],
    ...(edits ? { edits } : {}),
    ended: result.ended,
    elapsedMs: now() - started,
    timing,
  };

  if (o.apply && edits && report.diff.length > 0 && !interrupted()) {
    try {
      // The editor's one convention: the old bytes beside the file as a `.bak`, which the
      // watcher and staging skip, so the backup is never served and the edit reloads as any save.
      const r = await applyConfigEditsToFile(configFile, edits, userText);
      if (r.backup) report.applied = { file: configFile, backup: r.backup };
    } catch (err) {
      // The search's result stays worth having when the file cannot take it.
      if (!(err instanceof ConfigEditError)) throw err;
      report.notApplied = { message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
    }
  }
  if (o.keepHistory && trials.length > 0) {
    const paths = resolvePaths(deps.env);
    const id = `${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${randomBytes(3).toString("hex")}`;
    const file = path.join(paths.stateDir, "tune", o.model.replace(/[^A-Za-z0-9._-]/g, "_"), `${id}.json`);
    await writeFileAtomic(
      file,
      JSON.stringify({ version: 1, id, savedAt: new Date().toISOString(), ...report }, null, 2) + "\n",
      0o644,
    );
    report.savedTo = file;
  }
  return report;
}

function sweepPoint(l: LevelResult) {
  return { concurrency: l.value, throughput: l.throughput, p99Us: l.latency.p99Us, p95Us: l.latency.p95Us };
}

export function describeTrial(t: TunedTrial): string {
  if (!t.measured) return `failed: ${t.why ?? "unknown"}`;
  const m = t.measured;
  return (
    `${m.throughput.toFixed(1)} infer/s, p50 ${(m.p50Us / 1000).toFixed(1)} ms, p99 ${(m.p99Us / 1000).toFixed(1)} ms` +
    (t.status === "ok" ? "" : ` (${t.why ?? t.status})`) +
    (t.stoppedEarly ? ` [${t.stoppedEarly}]` : "")
  );
}
