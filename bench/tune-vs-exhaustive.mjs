#!/usr/bin/env node
// Benchmark: `triton-dev tune` (hill climbing from the user's config) against an exhaustive sweep
// of the same space, under the same latency budget and the same measurement rule (window length,
// windows at most, perf's stability rule). The exhaustive sweep runs `triton-dev perf --compare
// config=FILE` once per candidate of the space tune searched (the config files written with the
// same editor tune uses), and is timed by what each candidate costs it: the CLI's start, staging,
// loading, measuring and unloading the variant, not the baseline that every --compare measures
// again. The user's own config is the baseline; the samples' configs hold the article's hand-tuned
// values (preferred sizes 8-64, 5000 us queue delay, the article's instance count), so the bench
// also prints where those stand.
//
// Claims checked: tune's best is within 5% of the exhaustive best throughput inside the budget,
// in at most 25% of the exhaustive sweep's time. Both sides print where their time went, so a run
// on another machine can be read phase by phase. As the two sweeps run minutes apart, tune's
// winner and the exhaustive best are then measured again side by side (--confirm-rounds, not
// timed), and the first claim is judged on those figures when there are any.
//
//   npm run build && node bench/tune-vs-exhaustive.mjs [--model image_classifier|resnet50_fp16]
//     [--latency-budget p99=MS] [--concurrency N] [--space FILE] [--window MS] [--trials N]
//     [--space-preset small|medium] [--budget 10m] [--max-candidates N] [--exhaustive perf|tune]
//     [--confirm-rounds 2] [--out FILE.json]
//
// SIGINT (e.g. `timeout -s INT`) ends the run early: the candidate being measured is interrupted,
// the server stopped, and what was measured is printed and written to --out, marked partial.
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execFile } from "node:child_process";
import { CLI, ROOT, fmt, startServer, table } from "./lib.mjs";

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
const outFile = flag("--out", undefined);
const confirmRounds = Number(flag("--confirm-rounds", "2"));
let spaceFile = flag("--space", undefined);

// Small spaces by default, so that the exhaustive sweep fits a 2-core machine's patience (and the
// GPU machine's 10-minute calls); `--space-preset medium` for a larger one, --space for any. Each
// holds the sample's own config, so the hand-tuned values are one of the exhaustive sweep's
// candidates. How many candidates tune measures at least is fixed by its starting point (itself
// and one step along each dimension), so its share of the sweep's time falls as the space grows.
const SPACES = {
  image_classifier: {
    // 14 candidates.
    small: {
      batching: [false, true],
      preferredBatchSize: [[], [8, 16, 32, 64]],
      maxQueueDelayMicroseconds: [0, 1000, 5000],
      instances: [1, 2],
      maxBatchSize: [256],
    },
    // 32 candidates.
    medium: {
      batching: [false, true],
      preferredBatchSize: [[], [8], [8, 16, 32, 64]],
      maxQueueDelayMicroseconds: [0, 1000, 2000, 5000, 10000],
      instances: [1, 2],
      maxBatchSize: [256],
    },
  },
  resnet50_fp16: {
    // Every candidate loads two or three ResNet-50 instances onto the GPU: 8 candidates, batching
    // always on (the article's 3-4x is measured by run-on-gpu.sh's --compare batching already).
    small: {
      batching: [true],
      preferredBatchSize: [[], [8, 16, 32, 64]],
      maxQueueDelayMicroseconds: [1000, 5000],
      instances: [2, 3],
      maxBatchSize: [256],
    },
  },
};
const preset = flag("--space-preset", "small");

// The pieces of the sources the bench uses: from dist/, or from one bundled module where there is
// no dist/ (the GPU machine: $TRITON_DEV_BENCH_LIB, bench/gpu/tune-bench-lib.mjs).
const lib = process.env.TRITON_DEV_BENCH_LIB
  ? await import(path.resolve(process.env.TRITON_DEV_BENCH_LIB))
  : Object.assign(
      {},
      ...(await Promise.all(
        ["repo/config-edit.js", "tune/space.js", "tune/search.js", "triton/log-lines.js", "state/log-file.js"].map(
          (m) => import(path.join(ROOT, "dist", m)),
        ),
      )),
    );
const { applyConfigEdits, allCandidates, candidateKey, editsBetween, isValid, loadStarted, unloadedVersion } = lib;
const { stripTritonPrefix } = lib;

// Ctrl-C / `timeout -s INT`: interrupt the child that measures, then wrap up with what is there.
let stopping = false;
let child;
process.on("SIGINT", () => {
  if (stopping) return;
  stopping = true;
  console.error("bench: interrupted; ending with what was measured");
  child?.kill("SIGINT");
});
function runChild(file, argv, env, timeoutMs) {
  return new Promise((resolve) => {
    child = execFile(file, argv, { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      child = undefined;
      if (err && typeof err.code !== "number")
        console.error(
          `bench: ${path.basename(argv[1] ?? file)} ${argv[2] ?? ""} ended: ${err.signal ?? err.code ?? err.message}`,
        );
      resolve({
        code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      });
    });
  });
}

const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
const machine = { cores: os.availableParallelism(), loadavgBefore: loadavg(), startedAt: new Date().toISOString() };
console.error(`bench: ${machine.cores} cores, load average ${machine.loadavgBefore}`);

const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-tune-bench-"));
if (!spaceFile) {
  spaceFile = path.join(work, "space.json");
  const presets = SPACES[model] ?? SPACES.image_classifier;
  if (!presets[preset]) {
    console.error(
      `bench: no --space-preset ${preset} for ${model} (${Object.keys(presets).join(", ")}); pass --space FILE`,
    );
    process.exit(2);
  }
  await fsp.writeFile(spaceFile, JSON.stringify(presets[preset]));
}
const spaceJson = JSON.parse(await fsp.readFile(spaceFile, "utf8"));
const measure = ["-p", windowMs, "-r", trials, "--concurrency", concurrency];
// resnet50_fp16's three instances build their CUDA graphs as they load: more than up's default wait.
const server = await startServer({ only: [model], upArgs: ["--timeout", "600"] });
let tune;
let tuneMs;
let doubleLoads = [];
const sweep = [];
const pct = budget?.startsWith("p95") ? "p95Us" : "p99Us";
const limitUs = budget ? Number(budget.split("=")[1]) * 1000 : Infinity;

/** The server the bench started is still running; when it is not, its log's last lines say why. */
/** `perf --compare config=FILE` of the model: the user's config and FILE's, measured alike. */
function perfAgainstUser(file, env) {
  const argv = ["perf", model, "--compare", `config=${file}`, "--concurrency-range", concurrency];
  argv.push("-p", windowMs, "-r", trials, "--json", "--no-history");
  return runChild(process.execPath, [CLI, ...argv], env, 1_800_000);
}

async function serverAlive(env) {
  const state = JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR, "run.json"), "utf8"));
  try {
    process.kill(state.pid, 0);
    return true;
  } catch {
    const lines = (await fsp.readFile(state.logFile, "utf8").catch(() => "")).trimEnd().split("\n");
    console.error(`bench: Triton (pid ${state.pid}) is gone; its log ends:\n${lines.slice(-15).join("\n")}`);
    return false;
  }
}
let serverDied = false;

/**
 * The two sweeps ran one after the other, and on a shared machine the load drifts between them, so
 * each candidate's figure carries the conditions of its minute. The claim is about configurations:
 * tune's winner and the exhaustive best are measured again here in alternating order, each round a
 * `perf --compare config=FILE` against the user's config (the hand-tuned values), with the same
 * rule. Not timed for either side.
 */
const confirmed = { rounds: 0, throughput: {} };
async function confirm(env, userText, start) {
  const exBest = sweep.filter((s) => s.ok).sort((a, b) => b.throughput - a.throughput)[0];
  const winner = tune.trials.find((t) => t.index === tune.winner);
  if (confirmRounds <= 0 || !exBest || !winner) return;
  const byKey = new Map(allCandidates(tune.space).map((c) => [candidateKey(c), c]));
  const handKey = candidateKey(start);
  const subjects = [...new Set([winner.key, exBest.key])].filter((k) => k !== handKey);
  const figures = new Map([[handKey, []], ...subjects.map((k) => [k, []])]);
  for (let round = 0; round < confirmRounds && subjects.length > 0 && !stopping; round++) {
    for (const key of round % 2 ? [...subjects].reverse() : subjects) {
      const file = path.join(work, `confirm-${subjects.indexOf(key)}.pbtxt`);
      await fsp.writeFile(file, applyConfigEdits(userText, editsBetween(start, byKey.get(key), tune.space.kind), file));
      const r = await perfAgainstUser(file, env);
      if (stopping) return;
      try {
        const rep = JSON.parse(r.stdout);
        figures.get(handKey).push(rep.sweeps[0].levels[0].throughput);
        figures.get(key).push(rep.sweeps[1].levels[0].throughput);
      } catch {
        console.error(`bench: the re-measurement of ${key} failed: ${r.stderr.split("\n")[0]}`);
        return;
      }
      console.error(
        `bench: re-measured ${key}: ${fmt(figures.get(key).at(-1))} infer/s (your config ${fmt(figures.get(handKey).at(-1))})`,
      );
    }
    confirmed.rounds = round + 1;
  }
  const median = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    return v.length ? (v[(v.length - 1) >> 1] + v[v.length >> 1]) / 2 : NaN;
  };
  for (const [k, xs] of figures) confirmed.throughput[k] = median(xs);
}

/** Loads of a `__perf_` variant that began before the same name's last load had unloaded. */
async function variantsLoadedTwice(env) {
  const state = JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR, "run.json"), "utf8"));
  const live = new Map();
  const twice = [];
  for (const raw of (await fsp.readFile(state.logFile, "utf8")).split("\n")) {
    const line = stripTritonPrefix(raw.trimEnd());
    const started = loadStarted(line);
    if (started?.includes("__perf_")) {
      if (live.get(started)) twice.push(started);
      live.set(started, true);
    }
    const gone = unloadedVersion(line);
    if (gone) live.set(gone.model, false);
  }
  return twice;
}

try {
  const t0 = Date.now();
  const r = await runChild(
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
  if (r.code !== 0 && r.code !== 1 && r.code !== 130) throw new Error(`tune failed (${r.code}):\n${r.stderr}`);
  tune = JSON.parse(r.stdout);
  if (!(await serverAlive(server.env))) serverDied = true;
  console.error(
    `bench: tune measured ${tune.trials.length} of ${tune.spaceSize} candidates in ${fmt(tuneMs / 1000)} s`,
  );
  await writeOut(true);

  const start = tune.trials[0].candidate;
  const userFile = path.join(server.env.TRITON_DEV_STATE_DIR, "models", model, "config.pbtxt");
  const userText = await fsp.readFile(userFile, "utf8");
  if (via === "tune") {
    const e0 = Date.now();
    const r2 = await runChild(
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
    if (r2.code !== 0 && r2.code !== 1 && r2.code !== 130)
      throw new Error(`tune --exhaustive failed (${r2.code}):\n${r2.stderr}`);
    const ex = JSON.parse(r2.stdout);
    const per = (Date.now() - e0) / Math.max(1, ex.trials.length);
    for (const t of ex.trials)
      sweep.push({
        key: t.key,
        ms: per,
        throughput: t.measured?.throughput,
        lat: t.measured?.[pct],
        ok: t.status === "ok",
        windows: t.phases?.windows,
        phases: t.phases && {
          stage: t.phases.stageMs + t.phases.loadMs,
          measure: t.phases.measureMs,
          unload: t.phases.previousMs,
        },
      });
  } else {
    for (const [i, c] of allCandidates(tune.space).entries()) {
      if (stopping || serverDied) break;
      const key = candidateKey(c);
      if (!isValid(c)) continue;
      const file = path.join(work, `candidate-${i}.pbtxt`);
      await fsp.writeFile(file, applyConfigEdits(userText, editsBetween(start, c, tune.space.kind), file));
      const t1 = Date.now();
      const r3 = await perfAgainstUser(file, server.env);
      const t2 = Date.now();
      if (stopping) break;
      let rep;
      try {
        rep = JSON.parse(r3.stdout);
      } catch {
        sweep.push({ key, ms: t2 - t1, ok: false, why: r3.stderr.split("\n")[0] });
        if (!(await serverAlive(server.env))) {
          serverDied = true;
          break;
        }
        continue;
      }
      const base = rep.sweeps[0];
      const v = rep.sweeps[1];
      const at = (iso) => Date.parse(iso);
      const baseMs = base ? at(base.finishedAt) - at(base.startedAt) : 0;
      const level = v?.levels?.[0];
      const lat = level?.latency?.[pct];
      sweep.push({
        key,
        ms: t2 - t1 - baseMs,
        throughput: level?.throughput,
        lat,
        ok: level !== undefined && level.errorCount === 0 && lat <= limitUs,
        windows: level?.trials,
        phases:
          base && v
            ? {
                // The CLI's start and perf's set-up before its baseline; the baseline itself is left out.
                cli: at(base.startedAt) - t1,
                stage: at(v.startedAt) - at(base.finishedAt),
                measure: at(v.finishedAt) - at(v.startedAt),
                unload: t2 - at(v.finishedAt),
              }
            : undefined,
      });
      console.error(`bench: exhaustive ${sweep.length}: ${key}: ${fmt(level?.throughput)} infer/s`);
      await writeOut(true);
    }
  }
  if (via === "tune" && !(await serverAlive(server.env))) serverDied = true;
  doubleLoads = await variantsLoadedTwice(server.env).catch(() => []);
  if (!stopping && !serverDied) await confirm(server.env, userText, start);
} finally {
  await server.stop();
  await fsp.rm(work, { recursive: true, force: true });
}

const exhaustiveMs = sweep.reduce((a, s) => a + s.ms, 0);
const exBest = sweep.filter((s) => s.ok).sort((a, b) => b.throughput - a.throughput)[0];
const winner = tune.trials.find((t) => t.index === tune.winner);
const hand = tune.trials[0];
const handEx = sweep.find((s) => s.key === hand?.key);
const allMeasured = sweep.length === allCandidates(tune.space).filter(isValid).length;
if (serverDied) {
  console.log("Triton died during the run (its log is above): the figures below compare nothing; run it again");
  process.exitCode = 3;
}
console.log(
  `tune vs an exhaustive sweep (${via === "tune" ? "tune --exhaustive" : "perf --compare config=FILE"}) on ${model}, ` +
    `concurrency ${tune.concurrency}, ${windowMs} ms windows, at most ${trials}${budget ? `, budget ${budget} ms` : ""}; ` +
    `${machine.cores} cores, load average ${machine.loadavgBefore} before, ${loadavg()} after`,
);
console.log(
  table([
    ["", "candidates", "time s", "best infer/s", "best config"],
    ["tune", String(tune.trials.length), fmt(tuneMs / 1000), fmt(winner?.measured?.throughput), winner?.key ?? "-"],
    [
      `exhaustive${allMeasured ? "" : " (partial)"}`,
      String(sweep.length),
      fmt(exhaustiveMs / 1000),
      fmt(exBest?.throughput),
      exBest?.key ?? "-",
    ],
    ["hand-tuned (your config), by tune", "1", "-", fmt(hand?.measured?.throughput), hand?.key ?? "-"],
    ["hand-tuned, by the exhaustive sweep", handEx ? "1" : "-", "-", fmt(handEx?.throughput), handEx?.key ?? "-"],
  ]),
);

// Where the time went. Tune: its phases per candidate (tune.trials[].phases) and outside them.
const sum = (xs) => xs.reduce((a, b) => a + (b ?? 0), 0);
const ph = tune.trials.map((t) => t.phases ?? {});
const tunePhases = {
  "process start and exit": tuneMs - tune.elapsedMs,
  "set-up (run, configs, space)": tune.timing?.setupMs,
  "concurrency sweep": tune.timing?.concurrencyMs,
  "staging (copy, lint, rename)": sum(ph.map((p) => p.stageMs)),
  "load (until READY)": sum(ph.map((p) => p.loadMs)),
  "previous variant's unload (not overlapped)": sum(ph.map((p) => p.previousMs)),
  measuring: sum(ph.map((p) => p.measureMs)),
  "last unload": tune.timing?.cleanupMs,
};
tunePhases["search bookkeeping"] = tuneMs - sum(Object.values(tunePhases));
const sp = sweep.map((s) => s.phases ?? {});
const exPhases = {
  "CLI start and perf's set-up": sum(sp.map((p) => p.cli)),
  "staging and load": sum(sp.map((p) => p.stage)),
  measuring: sum(sp.map((p) => p.measure)),
  "unload and exit": sum(sp.map((p) => p.unload)),
};
const tuneWindows = sum(ph.map((p) => p.windows));
const exWindows = sum(sweep.map((s) => s.windows));
console.log("\nwhere the time went (s)");
console.log(
  table([
    ["phase", "tune", "", "phase", "exhaustive"],
    ...Array.from({ length: Math.max(Object.keys(tunePhases).length, Object.keys(exPhases).length) }, (_, i) => {
      const [tk, tv] = Object.entries(tunePhases)[i] ?? ["", undefined];
      const [ek, ev] = Object.entries(exPhases)[i] ?? ["", undefined];
      return [tk, tv === undefined ? "" : fmt(tv / 1000), "", ek, ev === undefined ? "" : fmt(ev / 1000)];
    }),
    ["windows measured", String(tuneWindows), "", "windows measured", String(exWindows)],
  ]),
);
console.log("\ntune's candidates");
console.log(
  table([
    ["#", "config", "infer/s", "windows", "stage s", "load s", "measure s", "note"],
    ...tune.trials.map((t) => [
      String(t.index + 1),
      t.key,
      fmt(t.measured?.throughput),
      String(t.phases?.windows ?? "-"),
      fmt((t.phases?.stageMs ?? 0) / 1000),
      fmt((t.phases?.loadMs ?? 0) / 1000),
      fmt((t.phases?.measureMs ?? 0) / 1000),
      t.phases?.reused ? `from ${t.phases.reused}` : t.stoppedEarly ? "stopped early" : t.status,
    ]),
  ]),
);
if (doubleLoads.length)
  console.log(`\nwarning: Triton loaded ${doubleLoads.join(", ")} a second time while it was served`);
else console.log("\nno variant was loaded a second time while it was served (Triton's log)");

const within = winner && exBest ? winner.measured.throughput / exBest.throughput : NaN;
// The paired figures: the same configuration has the same figure, whichever side found it.
const paired = (key) => confirmed.throughput[key];
const pairedWithin =
  winner && exBest
    ? winner.key === exBest.key
      ? 1
      : confirmed.rounds > 0
        ? paired(winner.key) / paired(exBest.key)
        : NaN
    : NaN;
const timeShare = tuneMs / exhaustiveMs;
const vsHand = winner && hand?.measured ? winner.measured.throughput / hand.measured.throughput : NaN;
console.log(
  `hand-tuned values (the sample's config): ${hand?.key ?? "-"}; tune's winner is ${fmt(vsHand, 2)}x them` +
    (handEx && exBest ? `, the exhaustive best ${fmt(exBest.throughput / handEx.throughput, 2)}x them` : ""),
);
if (confirmed.rounds > 0)
  console.log(
    `re-measured in ${confirmed.rounds} alternating round(s) (median infer/s, each against your config): ` +
      Object.entries(confirmed.throughput)
        .map(
          ([k, v]) =>
            `${k === winner?.key ? "tune's winner " : ""}${k === exBest?.key ? "exhaustive best " : ""}${k === hand?.key ? "your config " : ""}${k}: ${fmt(v)}`,
        )
        .join("; "),
  );
const judged = Number.isNaN(pairedWithin) ? within : pairedWithin;
console.log(
  `tune's best is ${fmt(within * 100)}% of the exhaustive best as each sweep measured it` +
    (Number.isNaN(pairedWithin) ? "" : `, ${fmt(pairedWithin * 100)}% re-measured side by side`) +
    ` (claim: >= 95%), in ${fmt(timeShare * 100)}% of its time (claim: <= 25%)` +
    (allMeasured ? "" : `; the exhaustive sweep is partial (${sweep.length} candidates)`),
);
await writeOut(!allMeasured || stopping || serverDied, {
  serverDied,
  within,
  pairedWithin,
  confirmed,
  timeShare,
  vsHand,
  tunePhases,
  exhaustivePhases: exPhases,
});
process.exitCode ??= judged >= 0.95 && timeShare <= 0.25 && allMeasured ? 0 : 1;

async function writeOut(partial, summary = {}) {
  if (!outFile) return;
  const body = {
    bench: "tune-vs-exhaustive",
    model,
    partial,
    machine: { ...machine, loadavgAfter: loadavg() },
    settings: {
      concurrency,
      windowMs,
      trials,
      budget,
      via,
      preset: flag("--space") ? undefined : preset,
      space: spaceJson,
    },
    tuneMs,
    tune,
    exhaustive: { ms: sweep.reduce((a, s) => a + s.ms, 0), candidates: sweep },
    doubleLoads,
    ...summary,
  };
  await fsp.writeFile(outFile, JSON.stringify(body, null, 2) + "\n");
}
