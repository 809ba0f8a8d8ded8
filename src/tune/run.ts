/**
 * `triton-dev tune`: search the model's batching and instance settings on the server `up` runs.
 * Each candidate is a `__perf_` sibling variant staged beside the model (perf/variants.ts), loaded
 * through the repository API, measured by perf's own run (stability rule, server breakdown, GPU)
 * at one concurrency, and unloaded again. The user's files are read, and written only by --apply.
 *
 * `runTune` reads as its phases: the plan (plan.ts), the concurrency (concurrency.ts), the search
 * rounds over the candidates (search.ts's climb, each candidate measured by measure.ts), the
 * verdict (verdict.ts: the side-by-side check, the noise of the user's config), the report, and
 * --apply and the history (here).
 */
import path from "node:path";
import { randomBytes } from "node:crypto";
import { resolvePaths } from "../config/paths.js";
import { applyConfigEditsToFile, ConfigEditError, describeConfigEdits } from "../repo/config-edit.js";
import { writeFileAtomic } from "../state/atomic-write.js";
import { settleConcurrency } from "./concurrency.js";
import { CandidateBench } from "./measure.js";
import { planTune, type TunePlan } from "./plan.js";
import { exhaustive, hillClimb, paretoFront, type Evaluate, type SearchResult } from "./search.js";
import { allCandidates, candidateKey, editsBetween, spaceSize } from "./space.js";
import type { TuneDeps, TunedTrial, TuneOptions, TuneReport, TuneTiming } from "./types.js";
import { decideVerdict } from "./verdict.js";

export type {
  TrialPhases,
  TuneConfirmation,
  TuneDeps,
  TunedTrial,
  TuneOptions,
  TuneReport,
  TuneTiming,
} from "./types.js";

export async function runTune(o: TuneOptions, deps: TuneDeps): Promise<TuneReport> {
  const started = (deps.now ?? Date.now)();
  const now = deps.now ?? Date.now;
  const plan = await planTune(o, deps);
  const timing: TuneTiming = { setupMs: now() - started, concurrencyMs: 0, cleanupMs: 0, confirmMs: 0 };

  const t0 = now();
  const { concurrency, sweep, startLevel } = await settleConcurrency(plan, o, deps);
  if (o.concurrency === "auto") timing.concurrencyMs = now() - t0;

  const bench = new CandidateBench(plan, o, deps, concurrency, startLevel, now);
  const result = await searchRounds(plan, o, deps, bench, started, timing);
  const verdict = await decideVerdict(result, bench, {
    objective: o.objective,
    startKey: plan.startKey,
    deps,
    timing,
    now,
  });

  const { space, start } = plan;
  const { trials, winner } = verdict;
  const edits = winner ? editsBetween(start, winner.candidate, space.kind) : undefined;
  const report: TuneReport = {
    model: o.model,
    configFile: plan.configFile,
    concurrency,
    ...(sweep ? { concurrencySweep: sweep } : {}),
    objective: o.objective,
    space,
    spaceSize: spaceSize(space),
    mode: o.exhaustive ? "exhaustive" : "hill-climb",
    trials,
    ranking: verdict.ranking.map((t) => t.index),
    pareto: [...paretoFront(trials, o.objective.latency?.percentile ?? "p99")],
    ...(winner ? { winner: winner.index } : {}),
    ...(verdict.confirmation ? { confirmation: verdict.confirmation } : {}),
    ...(verdict.notConfirmed ? { notConfirmed: verdict.notConfirmed } : {}),
    ...(verdict.keptWithinNoise ? { keptWithinNoise: verdict.keptWithinNoise } : {}),
    diff: edits ? describeConfigEdits(plan.userText, edits) : [],
    ...(edits ? { edits } : {}),
    ended: result.ended,
    elapsedMs: now() - started,
    timing,
  };

  if (o.apply && edits && report.diff.length > 0 && deps.signal?.aborted !== true) await applyWinner(plan, report);
  if (o.keepHistory && trials.length > 0) report.savedTo = await saveHistory(report, deps.env);
  return report;
}

/**
 * The search rounds: hill climbing from the user's config (or every candidate, `--exhaustive`)
 * within the budget, each candidate measured on the server; the last variant's unload waited for.
 */
async function searchRounds(
  plan: TunePlan,
  o: TuneOptions,
  deps: TuneDeps,
  bench: CandidateBench,
  started: number,
  timing: TuneTiming,
): Promise<SearchResult> {
  const now = deps.now ?? Date.now;
  const limits = {
    maxCandidates: o.maxCandidates,
    deadline: started + o.budgetMs,
    ...(deps.signal ? { signal: deps.signal } : {}),
    now,
  };
  let done = 0;
  const evaluateAndReport: Evaluate = async (c, index, ctx) => {
    deps.progress?.(
      `[${index + 1}/${o.maxCandidates}] ${candidateKey(c)}${candidateKey(c) === plan.startKey ? " (your config)" : ""}`,
    );
    const r = await bench.evaluate(c, index, ctx);
    done++;
    const trial: TunedTrial = { index, key: candidateKey(c), candidate: c, ...r, ...bench.details.get(index) };
    deps.progress?.(`  ${describeTrial(trial)}`);
    deps.onTrial?.(trial, { done, max: o.maxCandidates });
    return r;
  };
  try {
    return o.exhaustive
      ? await exhaustive(allCandidates(plan.space), o.objective, limits, evaluateAndReport)
      : await hillClimb(plan.space, plan.start, o.objective, limits, evaluateAndReport);
  } finally {
    const t0 = now();
    await bench.waitLeaving();
    timing.cleanupMs = now() - t0;
  }
}

/** `--apply`: the winner's edits written into the user's config.pbtxt, or why the file could not take them. */
async function applyWinner(plan: TunePlan, report: TuneReport): Promise<void> {
  try {
    // The editor's one convention: the old bytes beside the file as a `.bak`, which the
    // watcher and staging skip, so the backup is never served and the edit reloads as any save.
    const r = await applyConfigEditsToFile(plan.configFile, report.edits!, plan.userText);
    if (r.backup) report.applied = { file: plan.configFile, backup: r.backup };
  } catch (err) {
    // The search's result stays worth having when the file cannot take it.
    if (!(err instanceof ConfigEditError)) throw err;
    report.notApplied = { message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
  }
}

/** The report kept in the state folder's tune history; the file it went to. */
async function saveHistory(report: TuneReport, env: NodeJS.ProcessEnv): Promise<string> {
  const paths = resolvePaths(env);
  const id = `${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${randomBytes(3).toString("hex")}`;
  const file = path.join(paths.stateDir, "tune", report.model.replace(/[^A-Za-z0-9._-]/g, "_"), `${id}.json`);
  await writeFileAtomic(
    file,
    JSON.stringify({ version: 1, id, savedAt: new Date().toISOString(), ...report }, null, 2) + "\n",
    0o644,
  );
  return file;
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
