/**
 * The search of `triton-dev tune`: coordinate hill climbing in the spirit of Model Analyzer's quick
 * mode. Start at the user's config, step one dimension at a time to a neighbouring value, keep a
 * step that raises the objective and go on in that direction, and stop when no single step helps
 * (or the candidate or time budget, or Ctrl-C, ends it first). Measurement is a callback, so the
 * search itself is pure and its every branch testable.
 */
import { MIN_STEP, spread } from "../perf/noise.js";
import { candidateKey, sameList, type Candidate, type SearchSpace } from "./space.js";

export { MIN_STEP, spread };

export interface LatencyBudget {
  percentile: "p95" | "p99";
  ms: number;
}

export interface Objective {
  latency?: LatencyBudget;
  minThroughput?: number;
}

/** What measuring one candidate found. */
export interface Measured {
  throughput: number;
  p50Us: number;
  p95Us: number;
  p99Us: number;
  errors: number;
  /**
   * The relative spread ((max - min) / mean) of the throughput of the windows the figure was
   * merged from: the noise the machine put into this measurement.
   */
  noise?: number;
}

export type TrialStatus = "ok" | "over-budget" | "failed";

export interface Trial {
  index: number;
  key: string;
  candidate: Candidate;
  status: TrialStatus;
  /** Why a candidate was rejected: the budget it broke, or why it did not load or serve. */
  why?: string;
  measured?: Measured;
  elapsedMs: number;
}

/**
 * What a measurement may know of the search: the trial a step is judged against (the climb's
 * current point), so a candidate that clearly cannot beat it need not be measured to the end.
 */
export interface EvaluateContext {
  reference?: Trial;
}

export type Evaluate = (
  c: Candidate,
  index: number,
  ctx: EvaluateContext,
) => Promise<Omit<Trial, "index" | "key" | "candidate">>;

export interface SearchLimits {
  maxCandidates: number;
  deadline: number;
  signal?: AbortSignal;
  now?: () => number;
}

export interface SearchResult {
  trials: Trial[];
  best?: Trial;
  ended: "converged" | "candidates" | "time" | "interrupted" | "exhausted";
}

/** Why a measured candidate misses the objective, or undefined when it meets it. */
export function budgetViolation(m: Measured, o: Objective): string | undefined {
  const reasons: string[] = [];
  if (o.latency) {
    const us = o.latency.percentile === "p95" ? m.p95Us : m.p99Us;
    if (us > o.latency.ms * 1000)
      reasons.push(`${o.latency.percentile} ${(us / 1000).toFixed(1)} ms > budget ${o.latency.ms} ms`);
  }
  if (o.minThroughput !== undefined && m.throughput < o.minThroughput)
    reasons.push(`throughput ${m.throughput.toFixed(1)}/s < minimum ${o.minThroughput}/s`);
  if (m.errors > 0) reasons.push(`${m.errors} request(s) failed`);
  return reasons.length ? reasons.join("; ") : undefined;
}

/**
 * Higher is better. Every candidate inside the budget beats every one outside it; outside, lower
 * latency is better, so the climb walks toward the budget; a failed one is worst.
 */
export function score(t: Trial, o: Objective): number {
  if (t.status === "failed" || !t.measured) return -Infinity;
  if (t.status === "ok") return t.measured.throughput;
  const us = o.latency?.percentile === "p95" ? t.measured.p95Us : t.measured.p99Us;
  return -1 - us / 1e6;
}

/** The better of two trials by the objective (ties: fewer instances, then the earlier). */
export function better(a: Trial | undefined, b: Trial, o: Objective): boolean {
  if (!a) return b.status !== "failed";
  const sa = score(a, o);
  const sb = score(b, o);
  if (sb !== sa) return sb > sa;
  return b.candidate.instances < a.candidate.instances;
}

type Dim = "batching" | "maxBatchSize" | "preferredBatchSize" | "maxQueueDelayMicroseconds" | "instances";
const DIMS: Dim[] = ["instances", "batching", "maxQueueDelayMicroseconds", "preferredBatchSize", "maxBatchSize"];

function indexIn(space: SearchSpace, dim: Dim, c: Candidate): number {
  if (dim === "preferredBatchSize") return space.preferredBatchSize.findIndex((p) => sameList(p, c.preferredBatchSize));
  return (space[dim] as Array<number | boolean>).indexOf(c[dim]);
}

/** The neighbour one step along `dim`, or undefined at the edge (or where the dimension does not apply). */
export function step(space: SearchSpace, c: Candidate, dim: Dim, dir: 1 | -1): Candidate | undefined {
  // Without dynamic batching the client's batch alone reaches the model: max_batch_size changes nothing.
  if (!c.batching && dim !== "batching" && dim !== "instances") return undefined;
  const i = indexIn(space, dim, c);
  if (i < 0) return undefined;
  const values = space[dim] as unknown[];
  const j = i + dir;
  if (j < 0 || j >= values.length) return undefined;
  const next = { ...c, [dim]: values[j] } as Candidate;
  if (dim === "batching" && next.batching) {
    // Turning batching on starts from the first values that fit, unless the candidate had some.
    if (indexIn(space, "preferredBatchSize", next) < 0) next.preferredBatchSize = space.preferredBatchSize[0] ?? [];
    if (indexIn(space, "maxQueueDelayMicroseconds", next) < 0)
      next.maxQueueDelayMicroseconds = space.maxQueueDelayMicroseconds[0] ?? 0;
  }
  if (!next.batching) {
    next.preferredBatchSize = [];
    next.maxQueueDelayMicroseconds = 0;
  }
  return next;
}

/** Triton refuses a preferred batch size above max_batch_size: such a point is not worth a load. */
export function isValid(c: Candidate): boolean {
  return !c.batching || c.preferredBatchSize.every((p) => p <= c.maxBatchSize);
}

/**
 * Climb from `start`. `evaluate` measures one candidate (staging, load, measurement, unload) and
 * says how it went; each distinct candidate is measured once.
 */
export async function hillClimb(
  space: SearchSpace,
  start: Candidate,
  objective: Objective,
  limits: SearchLimits,
  evaluate: Evaluate,
): Promise<SearchResult> {
  const now = limits.now ?? Date.now;
  const trials: Trial[] = [];
  const seen = new Map<string, Trial>();
  let best: Trial | undefined;
  let ended: SearchResult["ended"] | undefined;

  const stopReason = (): SearchResult["ended"] | undefined => {
    if (limits.signal?.aborted) return "interrupted";
    if (trials.length >= limits.maxCandidates) return "candidates";
    if (now() >= limits.deadline) return "time";
    return undefined;
  };

  const measure = async (c: Candidate, reference?: Trial): Promise<Trial | undefined> => {
    const key = candidateKey(c);
    const known = seen.get(key);
    if (known) return known;
    const stop = stopReason();
    if (stop) {
      ended = stop;
      return undefined;
    }
    const r = await evaluate(c, trials.length, reference ? { reference } : {});
    // A measurement cut short by Ctrl-C says nothing about the candidate.
    if (limits.signal?.aborted && r.status !== "ok") {
      ended = "interrupted";
      return undefined;
    }
    const t: Trial = { index: trials.length, key, candidate: c, ...r };
    trials.push(t);
    seen.set(key, t);
    if (better(best, t, objective)) best = t;
    return t;
  };

  let here = await measure(start);
  if (!here) return { trials, ...(best ? { best } : {}), ended: ended ?? "interrupted" };
  // Directions that lost clearly from the point they were tried at (clearlyLost) are not tried
  // again after a step along another dimension: one setting moved seldom turns a loss of a fifth
  // or more into a gain, and each try is a load and a measurement. A step along a dimension
  // forgets that dimension's losses.
  const lost = new Set<string>();
  for (;;) {
    let moved = false;
    for (const dim of DIMS) {
      for (const dir of [1, -1] as const) {
        // Keep going while the direction helps: each accepted step is the new point.
        for (;;) {
          if (lost.has(`${dim}${dir}`)) break;
          const next = step(space, here.candidate, dim, dir);
          if (!next || !isValid(next) || seen.has(candidateKey(next))) break;
          const t = await measure(next, here);
          if (!t) return { trials, ...(best ? { best } : {}), ended: ended ?? "interrupted" };
          if (!improves(here, t, objective)) {
            if (clearlyLost(here, t)) lost.add(`${dim}${dir}`);
            break;
          }
          here = t;
          moved = true;
          lost.delete(`${dim}1`);
          lost.delete(`${dim}-1`);
        }
      }
    }
    if (!moved) break;
  }
  return { trials, ...(best ? { best } : {}), ended: "converged" };
}

/** Every window of a candidate below this share of the reference's throughput: it cannot win. */
export const DOMINATED_SHARE = 0.8;

/**
 * The noise of a level's windows: the spread of the throughput of those its figure was merged
 * from (the last three), leaving out the first, which is warm-up, when there are others.
 */
export function windowsNoise(windows: readonly { throughput: number }[]): number {
  const settled = windows.length > 1 ? windows.slice(1) : windows;
  return spread(settled.slice(-3).map((w) => w.throughput));
}

/** Two measured trials closer than this (relative) are a tie: the noise either was measured in. */
export function noiseBand(a: Trial, b: Trial): number {
  return Math.max(MIN_STEP, a.measured?.noise ?? 0, b.measured?.noise ?? 0);
}

/**
 * How far below a reference a candidate must be before it counts as lost without further
 * measurement: a fifth (DOMINATED_SHARE), or three times the noise of either measurement where
 * that is more. On a busy machine windows spread, and a candidate is then given more room.
 */
export function dominatedMargin(reference: Trial, candidateNoise = 0): number {
  return Math.max(1 - DOMINATED_SHARE, 3 * (reference.measured?.noise ?? 0), 3 * candidateNoise);
}

/**
 * Why a candidate whose measurement is under way can be rejected before the stability rule holds,
 * or undefined. Only against a reference inside the budget (the climb's current point). The first
 * window after a load is warm-up; once two more are in, they agree with each other within the
 * stability threshold (neither still rising nor one window hit by a busy moment), and the best of
 * them is below the reference by more than `dominatedMargin` (a fifth, or three times the noise
 * of the reference's own windows or of these), the candidate cannot win on this machine.
 */
export function clearlyDominated(
  windows: readonly { throughput: number }[],
  reference: Trial | undefined,
  thresholdPct: number,
): string | undefined {
  if (!reference || reference.status !== "ok" || !reference.measured || windows.length < 3) return undefined;
  const ref = reference.measured.throughput;
  const settled = windows.slice(1);
  const lastTwo = settled.slice(-2).map((w) => w.throughput);
  if (spread(lastTwo) > thresholdPct / 100) return undefined;
  const best = Math.max(...settled.map((w) => w.throughput));
  const margin = dominatedMargin(reference, spread(lastTwo));
  if (best >= (1 - margin) * ref) return undefined;
  return `stopped after ${windows.length} windows: at most ${best.toFixed(1)} infer/s, more than ${Math.round(margin * 100)}% under ${reference.key} (${ref.toFixed(1)})`;
}

/** A measured step below a point inside the budget by more than `dominatedMargin` of either's noise. */
export function clearlyLost(from: Trial, to: Trial): boolean {
  if (from.status !== "ok" || !from.measured || to.status === "failed" || !to.measured) return false;
  return to.measured.throughput < (1 - dominatedMargin(from, to.measured.noise ?? 0)) * from.measured.throughput;
}

/**
 * A step is taken only when it helps by more than the noise either measurement was taken in
 * (`noiseBand`, 2% at least), or reaches the budget.
 */
export function improves(from: Trial, to: Trial, o: Objective): boolean {
  const a = score(from, o);
  const b = score(to, o);
  if (b === -Infinity) return false;
  if (from.status !== "ok" && to.status === "ok") return true;
  if (from.status === "ok" && to.status === "ok") return b > a * (1 + noiseBand(from, to));
  return b > a;
}

/**
 * Whether the best found is no better than the user's config beyond the noise either was
 * measured in: then no setting changes (tune keeps the config as it is, and says why).
 */
export function withinNoiseOfStart(best: Trial, start: Trial | undefined, o: Objective): boolean {
  if (!start || start.key === best.key || start.status !== "ok" || !start.measured) return false;
  return !improves(start, best, o);
}

/** One round of the side-by-side check: both candidates measured one after the other. */
export interface ConfirmRound {
  /** Throughput of the search's winner, and of the runner-up, in this round. */
  winner: number;
  runnerUp: number;
}

export type ConfirmVerdict = "confirmed" | "overturned" | "within noise";

export interface Confirmation {
  verdict: ConfirmVerdict;
  /** Which of the two the report names the winner. */
  pick: "winner" | "runnerUp";
  /** The median of the rounds' runner-up / winner throughput ratios. */
  ratio: number;
  /** The noise of the search's measurements of the two (2% at least), which a round's lead must exceed. */
  band: number;
  /** Rounds each led by more than the band; the rest were within it (absent in reports saved before it was counted). */
  led?: { winner: number; runnerUp: number };
}

/** Each round's runner-up / winner throughput, of the rounds where both answered. */
function roundRatios(rounds: readonly ConfirmRound[]): number[] {
  return rounds.filter((r) => r.winner > 0 && r.runnerUp > 0).map((r) => r.runnerUp / r.winner);
}

/** The rounds each of the two led by more than `band`. */
export function roundsLed(rounds: readonly ConfirmRound[], band: number): { winner: number; runnerUp: number } {
  const ratios = roundRatios(rounds);
  return { winner: ratios.filter((x) => x < 1 - band).length, runnerUp: ratios.filter((x) => x > 1 + band).length };
}

/**
 * The side-by-side check of the search's winner against its runner-up: measured in alternating
 * rounds, so whatever else the machine does weighs on both alike. A round counts for the one
 * ahead by more than the noise (the larger of the search's own measurements of the two, or half
 * the spread of the rounds' ratios where that is smaller; 2% at least); a round inside it counts
 * for neither. The one that led a majority of the rounds that way wins.
 * Anything else is within noise, and then `onTie` is kept: the user's config where it is one of
 * the two (no setting changes on a difference the machine could have made), else the search's
 * winner.
 */
export function confirmVerdict(
  rounds: readonly ConfirmRound[],
  winner: Pick<Trial, "measured">,
  runnerUp: Pick<Trial, "measured">,
  onTie: "winner" | "runnerUp" = "winner",
): Confirmation {
  const ratios = roundRatios(rounds);
  // The search's noise (two figures, each as uncertain as its windows' spread), unless the rounds'
  // ratios, each already of the two, agree more closely than that (half their spread either way
  // of their middle): rounds that agree with each other ran on a quieter machine than a search
  // window hit by a busy moment.
  const searchBand = Math.max(winner.measured?.noise ?? 0, runnerUp.measured?.noise ?? 0);
  const band = Math.max(MIN_STEP, ratios.length >= 3 ? Math.min(searchBand, spread(ratios) / 2) : searchBand);
  const led = roundsLed(rounds, band);
  if (ratios.length === 0) return { verdict: "within noise", pick: onTie, ratio: 0, band, led };
  const sorted = [...ratios].sort((a, b) => a - b);
  const ratio = sorted[Math.floor(sorted.length / 2)]!;
  const majority = Math.floor(rounds.length / 2) + 1;
  if (led.runnerUp >= majority) return { verdict: "overturned", pick: "runnerUp", ratio, band, led };
  if (led.winner >= majority) return { verdict: "confirmed", pick: "winner", ratio, band, led };
  return { verdict: "within noise", pick: onTie, ratio, band, led };
}

/** Measure every candidate (the exhaustive sweep the bench compares against). */
export async function exhaustive(
  candidates: readonly Candidate[],
  objective: Objective,
  limits: SearchLimits,
  evaluate: Evaluate,
): Promise<SearchResult> {
  const now = limits.now ?? Date.now;
  const trials: Trial[] = [];
  let best: Trial | undefined;
  for (const c of candidates) {
    if (limits.signal?.aborted) return { trials, ...(best ? { best } : {}), ended: "interrupted" };
    if (now() >= limits.deadline) return { trials, ...(best ? { best } : {}), ended: "time" };
    if (trials.length >= limits.maxCandidates) return { trials, ...(best ? { best } : {}), ended: "candidates" };
    if (!isValid(c)) continue;
    const t: Trial = {
      index: trials.length,
      key: candidateKey(c),
      candidate: c,
      ...(await evaluate(c, trials.length, {})),
    };
    trials.push(t);
    if (better(best, t, objective)) best = t;
  }
  return { trials, ...(best ? { best } : {}), ended: "exhausted" };
}

/** Trials on the throughput/latency Pareto front: no other measured trial is faster and no slower. */
export function paretoFront(trials: readonly Trial[], percentile: "p95" | "p99" = "p99"): Set<number> {
  const ms = trials.filter((t) => t.measured && t.status !== "failed");
  const lat = (t: Trial) => (percentile === "p95" ? t.measured!.p95Us : t.measured!.p99Us);
  const front = new Set<number>();
  for (const t of ms) {
    const dominated = ms.some(
      (u) =>
        u !== t &&
        u.measured!.throughput >= t.measured!.throughput &&
        lat(u) <= lat(t) &&
        (u.measured!.throughput > t.measured!.throughput || lat(u) < lat(t)),
    );
    if (!dominated) front.add(t.index);
  }
  return front;
}

/** Measured trials best first (inside the budget first), failed ones last. */
export function rank(trials: readonly Trial[], o: Objective): Trial[] {
  return [...trials].sort((a, b) => {
    const d = score(b, o) - score(a, o);
    if (d !== 0 && !Number.isNaN(d)) return d;
    if (score(a, o) === score(b, o)) return a.index - b.index;
    return score(a, o) === -Infinity ? 1 : -1;
  });
}

/** One line on what the side-by-side check found, and which of the two is kept. */
export function describeConfirmation(c: Confirmation, winnerKey: string, runnerUpKey: string, rounds?: number): string {
  const led = c.led ?? { winner: 0, runnerUp: 0 };
  const n = rounds ?? led.winner + led.runnerUp;
  const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;
  const noise = `±${(c.band * 100).toFixed(1)}%`;
  const what = `${runnerUpKey} at ${pct(c.ratio - 1)} of ${winnerKey}, the median`;
  if (c.verdict === "confirmed")
    return `confirmed: ${winnerKey} led ${led.winner}/${n} rounds beyond the noise ${noise}; ${what}`;
  if (c.verdict === "overturned")
    return `overturned: ${runnerUpKey} led ${led.runnerUp}/${n} rounds beyond the noise ${noise}; ${runnerUpKey} wins; ${what}`;
  const kept = c.pick === "winner" ? winnerKey : runnerUpKey;
  return (
    `within noise: neither led a majority of ${n} rounds beyond ${noise} (${winnerKey} ${led.winner}, ${runnerUpKey} ${led.runnerUp}); ` +
    `no winner is declared, ${kept} is kept; ${what}`
  );
}
