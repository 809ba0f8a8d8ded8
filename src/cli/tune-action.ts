import fsp from "node:fs/promises";
import path from "node:path";
import { formatChart, formatConfirmation, formatDiff, formatRanking, formatSummary, toCsv } from "../tune/report.js";
import { runTune, type TuneOptions, type TuneReport } from "../tune/run.js";
import { recordedRun } from "../session/measured-run.js";
import type { CliContext, Output } from "./output.js";
import type { Protocol } from "../perf/protocol.js";

export interface TuneFlags {
  latencyBudget?: { percentile: "p95" | "p99"; ms: number };
  minThroughput?: number;
  concurrency: number | "auto";
  budget: number;
  maxCandidates: number;
  space?: string;
  apply: boolean;
  exhaustive: boolean;
  protocol: Protocol;
  shape: Array<[string, number[]]>;
  inputData: string;
  requestParameter: Array<[string, string | number | boolean]>;
  measurementInterval: number;
  stabilityPercentage: number;
  maxTrials: number;
  csv?: string;
  json: boolean;
  chart: boolean;
  history: boolean;
}

export function printTuneReport(output: Output, r: TuneReport, o: { chart: boolean }): void {
  output.out(formatSummary(r));
  if (r.trials.length) output.out("\n" + formatRanking(r));
  if (o.chart) {
    const c = formatChart(r);
    if (c) output.out("\n" + c);
  }
  const confirmation = formatConfirmation(r);
  if (confirmation) output.out("\n" + confirmation);
  output.out("");
  if (r.winner === undefined)
    output.out(
      r.trials.some((t) => t.status === "over-budget")
        ? "no candidate met the budget; the table shows how far each was"
        : "no candidate could be measured",
    );
  else output.out(formatDiff(r));
  if (r.applied)
    output.out(`\napplied to ${r.applied.file} (the original is kept in ${r.applied.backup}); hot reload serves it`);
  else if (r.notApplied)
    output.err(`\nnot applied: ${r.notApplied.message}${r.notApplied.hint ? `\n${r.notApplied.hint}` : ""}`);
  else if (r.winner !== undefined && r.diff.length)
    output.out("\n(`--apply` writes these fields into the file; nothing else in it changes)");
  if (r.savedTo) output.out(`saved: ${r.savedTo}`);
}

/** `triton-dev tune`, loaded when the command runs. */
export async function tuneAction(model: string, flags: TuneFlags, ctx: CliContext): Promise<void> {
  const { output, env } = ctx;
  const o: TuneOptions = {
    model,
    protocol: flags.protocol,
    objective: {
      ...(flags.latencyBudget ? { latency: flags.latencyBudget } : {}),
      ...(flags.minThroughput !== undefined ? { minThroughput: flags.minThroughput } : {}),
    },
    concurrency: flags.concurrency,
    budgetMs: flags.budget,
    maxCandidates: flags.maxCandidates,
    ...(flags.space ? { spaceFile: path.resolve(flags.space) } : {}),
    apply: flags.apply,
    exhaustive: flags.exhaustive,
    windowMs: flags.measurementInterval,
    stabilityPct: flags.stabilityPercentage,
    maxTrials: flags.maxTrials,
    keepHistory: flags.history,
    shapes: Object.fromEntries(flags.shape),
    inputData:
      flags.inputData === "random" || flags.inputData === "zero"
        ? flags.inputData
        : { file: path.resolve(flags.inputData) },
    ...(flags.requestParameter.length ? { requestParameters: Object.fromEntries(flags.requestParameter) } : {}),
  };
  const ac = new AbortController();
  const onSignal = () => {
    if (ac.signal.aborted) return;
    output.err("interrupted: ending the search with the best found so far");
    ac.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let report: TuneReport;
  try {
    report = await runTune(o, { env, run: recordedRun(env), signal: ac.signal, progress: (line) => output.err(line) });
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  if (flags.csv) {
    await fsp.writeFile(path.resolve(flags.csv), toCsv(report));
    if (!flags.json) output.err(`wrote ${path.resolve(flags.csv)}`);
  }
  if (flags.json) {
    output.out(JSON.stringify(report, null, 2));
    if (report.notApplied) output.err(`not applied: ${report.notApplied.message}`);
  } else printTuneReport(output, report, { chart: flags.chart });
  if (report.ended === "interrupted") ctx.exitCode = 130;
  else if (report.winner === undefined || report.notApplied) ctx.exitCode = 1;
}
