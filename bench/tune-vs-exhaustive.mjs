#!/usr/bin/env node
// Benchmark: `triton-dev tune` (hill climbing from the user's config) against an exhaustive sweep
// of the same space, under the same latency budget. The exhaustive sweep runs `triton-dev perf
// --compare config=FILE` once per candidate of the space tune searched (the config files written
// with the same editor tune uses), and is timed by what each candidate costs it: staging, loading
// and measuring the variant, not the baseline that every --compare measures again. The user's own
// config (the sample image_classifier's is the article's hand-tuned one: preferred sizes 8-64,
// 5000 us delay, one instance) is the baseline.
//
// Claims checked: tune's best is within 5% of the exhaustive best throughput inside the budget,
// in at most 25% of the exhaustive sweep's time.
//
//   npm run build && node bench/tune-vs-exhaustive.mjs [--model image_classifier]
//     [--latency-budget p99=MS] [--concurrency N] [--space FILE] [--window MS] [--trials N]
//     [--budget 10m] [--max-candidates N] [--exhaustive perf|tune]
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, ROOT, fmt, run, startServer, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : def;
};
const model = flag("--model", "image_classifier");
const budget = flag("--latency-budget", undefined);
const concurrency = flag("--concurrency", "16");
const windowMs = flag("--window", "1000");
const trials = flag("--trials", "5");
const timeBudget = flag("--budget", "10m");
const maxCandidates = flag("--max-candidates", "30");
const via = flag("--exhaustive", "perf");
let spaceFile = flag("--space", undefined);

const { applyConfigEdits } = await import(path.join(ROOT, "dist/repo/config-edit.js"));
const { editsBetween } = await import(path.join(ROOT, "dist/tune/run.js"));
const { allCandidates, candidateKey } = await import(path.join(ROOT, "dist/tune/space.js"));

const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-tune-bench-"));
if (!spaceFile) {
  // A small space by default, so that the exhaustive sweep fits a 2-core machine's patience;
  // pass --space for the full one on a larger host.
  spaceFile = path.join(work, "space.json");
  await fsp.writeFile(
    spaceFile,
    JSON.stringify({
      batching: [false, true],
      preferredBatchSize: [[], [8, 16, 32, 64]],
      maxQueueDelayMicroseconds: [0, 1000, 5000],
      instances: [1, 2],
      maxBatchSize: [256],
    }),
  );
}
const measure = ["-p", windowMs, "-r", trials, "--concurrency", concurrency];
const server = await startServer({ only: [model] });
let tune;
let tuneMs;
const sweep = [];
try {
  const t0 = Date.now();
  const r = await run(
    process.execPath,
    [
      CLI,
      "tune",
      model,
      ...measure,
      "--space",
      spaceFile,
      "--budget",
      timeBudget,
      "--max-candidates",
      maxCandidates,
      "--json",
      "--no-history",
      ...(budget ? ["--latency-budget", budget] : []),
    ],
    server.env,
    3_600_000,
  );
  tuneMs = Date.now() - t0;
  if (r.code !== 0 && r.code !== 1) throw new Error(`tune failed (${r.code}):\n${r.stderr}`);
  tune = JSON.parse(r.stdout);
  console.error(
    `bench: tune measured ${tune.trials.length} of ${tune.spaceSize} candidates in ${fmt(tuneMs / 1000)} s`,
  );

  const start = tune.trials[0].candidate;
  const userFile = path.join(server.env.TRITON_DEV_STATE_DIR, "models", model, "config.pbtxt");
  const userText = await fsp.readFile(userFile, "utf8");
  const pct = budget?.startsWith("p95") ? "p95Us" : "p99Us";
  const limitUs = budget ? Number(budget.split("=")[1]) * 1000 : Infinity;
  if (via === "tune") {
    const e0 = Date.now();
    const r2 = await run(
      process.execPath,
      [
        CLI,
        "tune",
        model,
        ...measure,
        "--space",
        spaceFile,
        "--exhaustive",
        "--budget",
        "24h",
        "--max-candidates",
        "1000",
        "--json",
        "--no-history",
        ...(budget ? ["--latency-budget", budget] : []),
      ],
      server.env,
      3_600_000,
    );
    const ex = JSON.parse(r2.stdout);
    const per = (Date.now() - e0) / Math.max(1, ex.trials.length);
    for (const t of ex.trials)
      sweep.push({
        key: t.key,
        ms: per,
        throughput: t.measured?.throughput,
        lat: t.measured?.[pct],
        ok: t.status === "ok",
      });
  } else {
    for (const [i, c] of allCandidates(tune.space).entries()) {
      const key = candidateKey(c);
      if (c.batching && c.preferredBatchSize.some((p) => p > c.maxBatchSize)) continue;
      const file = path.join(work, `candidate-${i}.pbtxt`);
      await fsp.writeFile(file, applyConfigEdits(userText, editsBetween(start, c, tune.space.kind), file));
      const t1 = Date.now();
      const r3 = await run(
        process.execPath,
        [
          CLI,
          "perf",
          model,
          "--compare",
          `config=${file}`,
          "--concurrency-range",
          concurrency,
          "-p",
          windowMs,
          "-r",
          trials,
          "--json",
          "--no-history",
        ],
        server.env,
        1_800_000,
      );
      const wall = Date.now() - t1;
      let rep;
      try {
        rep = JSON.parse(r3.stdout);
      } catch {
        sweep.push({ key, ms: wall, ok: false, why: r3.stderr.split("\n")[0] });
        continue;
      }
      const base = rep.sweeps[0];
      const v = rep.sweeps[1];
      const baseMs = base ? Date.parse(base.finishedAt) - Date.parse(base.startedAt) : 0;
      const level = v?.levels?.[0];
      const lat = level?.latency?.[pct];
      sweep.push({
        key,
        ms: wall - baseMs,
        throughput: level?.throughput,
        lat,
        ok: level !== undefined && level.errorCount === 0 && lat <= limitUs,
      });
      console.error(`bench: exhaustive ${sweep.length}: ${key}: ${fmt(level?.throughput)} infer/s`);
    }
  }
} finally {
  await server.stop();
  await fsp.rm(work, { recursive: true, force: true });
}

const exhaustiveMs = sweep.reduce((a, s) => a + s.ms, 0);
const exBest = sweep.filter((s) => s.ok).sort((a, b) => b.throughput - a.throughput)[0];
const winner = tune.trials.find((t) => t.index === tune.winner);
const hand = tune.trials[0];
console.log(
  `tune vs an exhaustive sweep (${via === "tune" ? "tune --exhaustive" : "perf --compare config=FILE"}) on ${model}, ` +
    `concurrency ${tune.concurrency}, ${windowMs} ms windows${budget ? `, budget ${budget} ms` : ""}`,
);
console.log(
  table([
    ["", "candidates", "time s", "best infer/s", "best config"],
    ["tune", String(tune.trials.length), fmt(tuneMs / 1000), fmt(winner?.measured?.throughput), winner?.key ?? "-"],
    ["exhaustive", String(sweep.length), fmt(exhaustiveMs / 1000), fmt(exBest?.throughput), exBest?.key ?? "-"],
    ["hand-tuned (your config)", "1", "-", fmt(hand?.measured?.throughput), hand?.key ?? "-"],
  ]),
);
const within = winner && exBest ? winner.measured.throughput / exBest.throughput : NaN;
const timeShare = tuneMs / exhaustiveMs;
console.log(
  `tune's best is ${fmt(within * 100)}% of the exhaustive best (claim: >= 95%), in ${fmt(timeShare * 100)}% of its time (claim: <= 25%)`,
);
process.exitCode = within >= 0.95 && timeShare <= 0.25 ? 0 : 1;
