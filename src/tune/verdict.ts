import { UserError } from "../errors.js";
import { type CandidateBench, firstLine } from "./measure.js";
import { noiseBand, rank, withinNoiseOfStart, type Objective, type SearchResult } from "./search.js";
import type { TuneConfirmation, TunedTrial, TuneDeps, TuneTiming } from "./types.js";

/** The search's outcome as the report gives it: the trials ranked and the winner, once checked. */
export interface TuneVerdict {
  trials: TunedTrial[];
  /** Best first. */
  ranking: TunedTrial[];
  winner?: TunedTrial;
  confirmation?: TuneConfirmation;
  notConfirmed?: string;
  keptWithinNoise?: string;
}

/**
 * The verdict on a search: its best trial inside the budget, measured again side by side with the
 * runner-up (the search compared each candidate with the one before it, each measured at its own
 * time; a busy minute during either can decide that), and the user's config kept when the winner
 * is within the noise of it.
 */
export async function decideVerdict(
  result: SearchResult,
  bench: CandidateBench,
  ctx: { objective: Objective; startKey: string; deps: TuneDeps; timing: TuneTiming; now: () => number },
): Promise<TuneVerdict> {
  const trials: TunedTrial[] = result.trials.map((t) => ({ ...t, ...bench.details.get(t.index) }));
  let ranking = rank(trials, ctx.objective);
  const best = result.best && result.best.status === "ok" ? result.best : undefined;
  let winner: TunedTrial | undefined = best && trials.find((t) => t.index === best.index);

  let confirmation: TuneConfirmation | undefined;
  let notConfirmed: string | undefined;
  const runnerUp = ranking.find((t) => t !== winner && t.status === "ok" && t.measured);
  if (winner && runnerUp && ctx.deps.signal?.aborted !== true) {
    const t0 = ctx.now();
    try {
      confirmation = await bench.confirmSideBySide(winner, runnerUp);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      notConfirmed = firstLine(err.message);
    } finally {
      ctx.timing.confirmMs = ctx.now() - t0;
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
  const startTrial = trials.find((t) => t.key === ctx.startKey && t.status === "ok" && t.measured);
  const checkedAgainstStart =
    confirmation && [confirmation.winner, confirmation.runnerUp].includes(startTrial?.index ?? -1);
  if (winner && startTrial && !checkedAgainstStart && withinNoiseOfStart(winner, startTrial, ctx.objective)) {
    const band = noiseBand(startTrial, winner);
    keptWithinNoise =
      `${winner.key} measured ${winner.measured!.throughput.toFixed(1)} infer/s against your config's ${startTrial.measured!.throughput.toFixed(1)}, ` +
      `within the noise of ±${(band * 100).toFixed(1)}%: no winner is declared, your config is kept`;
    ctx.deps.progress?.(keptWithinNoise);
    winner = startTrial;
    ranking = [startTrial, ...ranking.filter((t) => t !== startTrial)];
  }
  return {
    trials,
    ranking,
    ...(winner ? { winner } : {}),
    ...(confirmation ? { confirmation } : {}),
    ...(notConfirmed ? { notConfirmed } : {}),
    ...(keptWithinNoise ? { keptWithinNoise } : {}),
  };
}
