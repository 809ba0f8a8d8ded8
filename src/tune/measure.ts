import { UserError } from "../errors.js";
import { InputDataError } from "../perf/input-data.js";
import { MissingShapesError } from "../perf/inputs.js";
import type { LevelResult } from "../perf/profile.js";
import { runPerf } from "../perf/run.js";
import {
  removeVariant,
  stageVariant,
  variantName,
  VariantError,
  type StagingTarget,
  lintOfRun,
  type Variant,
} from "../perf/variants.js";
import { applyConfigEdits, renameConfig } from "../repo/config-edit.js";
import { clientForRun } from "../triton/http-client.js";
import type { TunePlan } from "./plan.js";
import {
  budgetViolation,
  clearlyDominated,
  confirmVerdict,
  type ConfirmRound,
  type Evaluate,
  type Measured,
  type Trial,
  windowsNoise,
  describeConfirmation,
} from "./search.js";
import { candidateKey, editsBetween, type Candidate } from "./space.js";
import type { TrialPhases, TuneConfirmation, TunedTrial, TuneDeps, TuneOptions } from "./types.js";

/** ROUNDS rounds of the winner and the runner-up one after the other, the order alternating. */
export const CONFIRM_ROUNDS = 3;

/** Triton's reasons carry the python traceback after "At:"; the table wants the reason. */
export function firstLine(message: string): string {
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

/** What the search's records of a trial add to its result: where it was served and what perf measured. */
export type TrialDetails = Pick<TunedTrial, "servedModel" | "level" | "phases" | "stoppedEarly">;

/**
 * The candidates on the running server: each staged as a `__perf_` variant of the model, measured
 * by perf's run at the tune's concurrency, and removed again. The last candidate's variant leaves
 * while the next one is staged and loaded, and is waited for before anything is measured.
 */
export class CandidateBench {
  /** By trial index, for the report: filled in as each candidate gets that far. */
  readonly details = new Map<number, TrialDetails>();
  private readonly staging: StagingTarget;
  private leaving: Promise<void> | undefined;

  constructor(
    private readonly plan: TunePlan,
    private readonly o: TuneOptions,
    private readonly deps: TuneDeps,
    private readonly concurrency: number,
    /** The user's config measured at `concurrency` already (the sweep's): its figures, reused. */
    private readonly startLevel: LevelResult | undefined,
    private readonly now: () => number,
  ) {
    const { state } = plan;
    this.staging = {
      repository: state.repository,
      reload: state.reload,
      client: clientForRun(state),
      lint: lintOfRun(state),
    };
  }

  private interrupted(): boolean {
    return this.deps.signal?.aborted === true;
  }

  /** The last candidate's variant gone (its unload overlapped what came after it). */
  async waitLeaving(): Promise<void> {
    const p = this.leaving;
    this.leaving = undefined;
    await p;
  }

  /** The candidate as a variant served under `served`: the served config with the edits from the user's. */
  private variantOf(c: Candidate, label: string, served: string): Variant {
    const { servedText, servedFile, start, space } = this.plan;
    return {
      label,
      servedModel: served,
      configText: renameConfig(applyConfigEdits(servedText, editsBetween(start, c, space.kind), servedFile), served),
    };
  }

  /** One candidate of the search: staged, loaded, measured (stopped early once clearly dominated), removed. */
  readonly evaluate: Evaluate = async (c, index, ctx) => {
    const { now, o, plan } = this;
    const t0 = now();
    const isStart = candidateKey(c) === plan.startKey;
    const served = isStart ? o.model : variantName(o.model, `tune${index}`);
    const variant: Variant = isStart
      ? { label: "your config", servedModel: o.model }
      : this.variantOf(c, candidateKey(c), served);
    const phases: TrialPhases = { stageMs: 0, loadMs: 0, previousMs: 0, measureMs: 0, windows: 0 };
    this.details.set(index, { servedModel: served, phases });
    const failed = (why: string) => ({ status: "failed" as const, why, elapsedMs: now() - t0 });
    try {
      let published: number | undefined;
      try {
        await stageVariant(this.staging, o.model, variant, 180_000, this.deps.signal, () => (published = now()));
      } catch (err) {
        if (!(err instanceof VariantError)) throw err;
        return failed(firstLine(err.message));
      } finally {
        phases.stageMs = (published ?? now()) - t0;
        phases.loadMs = published === undefined ? 0 : now() - published;
      }
      const t1 = now();
      await this.waitLeaving();
      phases.previousMs = now() - t1;
      if (this.interrupted()) return failed("interrupted");
      let level: LevelResult | undefined;
      const t2 = now();
      if (isStart && this.startLevel) {
        level = this.startLevel;
        phases.reused = "the concurrency sweep";
      } else {
        const reference = o.exhaustive ? undefined : ctx.reference;
        const r = await runPerf(
          { ...plan.perfBase, model: served, levels: [this.concurrency] },
          {
            ...plan.perfDeps,
            ...(reference ? { stopLevelEarly: (w) => clearlyDominated(w, reference, o.stabilityPct) } : {}),
          },
        );
        level = r.sweeps[0]?.levels[0];
        phases.measureMs = now() - t2;
        if (level) this.details.set(index, { servedModel: served, level, phases });
        // A measurement cut short (Ctrl-C) is no figure for the candidate.
        if (r.stopped) return failed(r.stopped.reason === "interrupted" ? "interrupted" : firstLine(r.stopped.message));
      }
      phases.windows = level?.trials ?? 0;
      if (!level || level.requests === 0) return failed("no request completed");
      this.details.set(index, {
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
      if (variant.configText !== undefined) this.leaving = removeVariant(this.staging, variant).catch(() => undefined);
    }
  };

  /**
   * Measure the search's winner and runner-up in CONFIRM_ROUNDS alternating rounds (A B, B A,
   * A B), each a short measurement of two windows of which the second counts (the first takes
   * the connections up to speed). Both are served at once: a staged candidate is staged again
   * under a name of its own. Undefined when interrupted.
   */
  async confirmSideBySide(a: Trial, b: Trial): Promise<TuneConfirmation | undefined> {
    const { o, plan, deps } = this;
    deps.progress?.(
      `${o.model}: checking ${a.key} against the runner-up ${b.key} side by side (${CONFIRM_ROUNDS} rounds)`,
    );
    const staged: Variant[] = [];
    const serve = async (t: Trial): Promise<string> => {
      if (candidateKey(t.candidate) === plan.startKey) return o.model;
      const served = variantName(o.model, `confirm${t.index}`);
      const v = this.variantOf(t.candidate, t.key, served);
      staged.push(v);
      try {
        await stageVariant(this.staging, o.model, v, 180_000, deps.signal);
      } catch (err) {
        if (err instanceof VariantError) throw new UserError(`${t.key} did not load again: ${firstLine(err.message)}`);
        throw err;
      }
      return served;
    };
    try {
      await this.waitLeaving();
      const servedA = await serve(a);
      const servedB = await serve(b);
      const once = async (served: string): Promise<number | undefined> => {
        if (this.interrupted()) return undefined;
        const r = await runPerf(
          { ...plan.perfBase, model: served, levels: [this.concurrency], maxTrials: 2 },
          plan.perfDeps,
        );
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
      const c = confirmVerdict(rounds, a, b, candidateKey(b.candidate) === plan.startKey ? "runnerUp" : "winner");
      deps.progress?.(`  ${describeConfirmation(c, a.key, b.key, rounds.length)}`);
      return { ...c, winner: a.index, runnerUp: b.index, rounds };
    } finally {
      for (const v of staged) await removeVariant(this.staging, v).catch(() => undefined);
    }
  }
}
