#!/usr/bin/env node
// Benchmark (a): `triton-dev perf` against NVIDIA's perf_analyzer, on the same server, model,
// inputs and concurrencies, in one run. Prints throughput and p50 ratios (ours / perf_analyzer);
// the goal is a throughput ratio within 0.95-1.05 and p50 within 10%.
//
//   npm run build && node bench/vs-perf-analyzer.mjs [--window MS] [--rounds N] [--grpc]
//       [--warmup-ms MS] [--cases bert_tokenizer:1,4/image_classifier:16] [--out FILE.json]
//
// Fairness: each case starts with the same untimed warm-up load (ours, at the case's concurrency);
// paired rounds alternate which tool goes first; both tools measure windows of the same length
// (perf_analyzer sleeps 1.2 x --measurement-interval per window, so ours gets -p 1.2 x MS); the
// per-round ratios and the median of each ratio are reported; a round counts only when both tools
// reached a stable measurement (perf_analyzer prints none otherwise). Beside the figures, every run
// records what explains them: the server's batch sizes and request counts over the run (model
// statistics before and after), the client's CPU while it measured (/proc/PID/stat), and how busy
// the whole machine was (/proc/stat). Raw results go to --out (default
// bench/results/vs-perf-analyzer-HOST-DATE.json).
//
// perf_analyzer: taken from $PERF_ANALYZER, PATH, or installed into /tmp/triton-dev-bench/pa-venv.
// PyPI's `perf-analyzer` project serves only a placeholder here, so the binary comes from the
// tritonclient wheel of the server's own release (2.51.0, manylinux), which ships bin/perf_analyzer;
// it needs libb64 (Debian: libb64-0d) and libcudart.so.12 (PyPI: nvidia-cuda-runtime-cu12).
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, ROOT, fmt, has, run, startServer, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const windowMs = Number(flag("--window", 3000)) || 3000;
const ROUNDS = Number(flag("--rounds", 3)) || 3;
const warmupMs = Number(flag("--warmup-ms", 1000));
const protocols = args.includes("--grpc") ? ["http", "grpc"] : ["http"];
const outFile = path.resolve(
  flag(
    "--out",
    path.join(
      ROOT,
      "bench/results",
      `vs-perf-analyzer-${os.hostname()}-${new Date().toISOString().slice(0, 16).replace(/[:T]/g, "")}.json`,
    ),
  ),
);
const VENV = "/tmp/triton-dev-bench/pa-venv";
// perf_analyzer's time windows last 1.2 x --measurement-interval (InferenceProfiler::Measure).
const PA_WINDOW_FACTOR = 1.2;

function libDirs() {
  const dirs = [];
  for (const py of fs.existsSync(path.join(VENV, "lib")) ? fs.readdirSync(path.join(VENV, "lib")) : []) {
    const d = path.join(VENV, "lib", py, "site-packages/nvidia/cuda_runtime/lib");
    if (fs.existsSync(d)) dirs.push(d);
  }
  return dirs;
}

function ensurePerfAnalyzer() {
  // A given binary brings its own libraries (LD_LIBRARY_PATH); the --version check below tells.
  if (process.env.PERF_ANALYZER) return process.env.PERF_ANALYZER;
  const bin = path.join(VENV, "bin/perf_analyzer");
  if (!fs.existsSync(bin)) {
    console.error(
      `bench: installing perf_analyzer into ${VENV} (tritonclient 2.51.0 wheel, nvidia-cuda-runtime-cu12) ...`,
    );
    execFileSync("python3", ["-m", "venv", VENV], { stdio: "inherit" });
    execFileSync(
      path.join(VENV, "bin/pip"),
      ["install", "-q", "--only-binary=:all:", "tritonclient==2.51.0", "nvidia-cuda-runtime-cu12"],
      { stdio: "inherit" },
    );
  }
  const libb64 = execFileSync("sh", ["-c", "ldconfig -p | grep -c libb64.so.0d || true"]).toString().trim() !== "0";
  if (!libb64) {
    if (process.getuid?.() === 0 && has("apt-get")) {
      console.error("bench: installing libb64-0d (perf_analyzer links it) ...");
      execFileSync(
        "sh",
        [
          "-c",
          "apt-get install -y -qq libb64-0d >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libb64-0d)",
        ],
        { stdio: "inherit" },
      );
    } else {
      console.error(
        "bench: perf_analyzer needs libb64.so.0d: install Debian's libb64-0d (as root: apt-get install libb64-0d)",
      );
      process.exit(2);
    }
  }
  return bin;
}

const pa = ensurePerfAnalyzer();
const paEnv = {
  ...process.env,
  LD_LIBRARY_PATH: [...libDirs(), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
};
const check = await run(pa, ["--version"], paEnv);
if (/error while loading shared libraries/.test(check.stderr)) {
  console.error(`bench: perf_analyzer cannot start: ${check.stderr.trim()}`);
  process.exit(2);
}

const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-pa-"));
const textData = path.join(work, "text.json");
await fsp.writeFile(
  textData,
  JSON.stringify({ data: [{ TEXT_INPUT: ["this movie was wonderful, i loved it, a great and beautiful film"] }] }),
);
// Both tools send exactly the same inputs: a fixed sentence for the tokenizer, zeros for images.
const DATA = { bert_tokenizer: textData, image_classifier: "zero" };
const cases = flag("--cases", "bert_tokenizer:1,4/image_classifier:16")
  .split("/")
  .map((c) => {
    const [model, levels] = c.split(":");
    return { model, data: DATA[model] ?? "random", levels: levels.split(",").map(Number) };
  });

// --- what the machine, the server and the client did during a run --------------------------

const TICK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system, all threads) of a live process, or undefined once it is gone. */
function procCpu(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / TICK;
  } catch {
    return undefined;
  }
}

/** Busy and total jiffies of the whole machine. */
function machineCpu() {
  const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/**
 * Run a load generator, sampling its CPU time and the machine's every 200 ms. The "steady" span
 * starts 1.5 s in (process start, model metadata, first connections) and ends at the last sample
 * before exit: it holds the measurement windows, and the client CPU over it, divided by the
 * throughput the tool reports, is its CPU per request.
 */
function sampledRun(file, argv, env) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const samples = [];
    const child = execFile(
      file,
      argv,
      { env, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        clearInterval(timer);
        const steady = samples.filter((s) => s.t >= 1500 && s.cpu !== undefined);
        const a = steady[0];
        const b = steady[steady.length - 1];
        const span = a && b && b.t > a.t ? (b.t - a.t) / 1000 : 0;
        resolve({
          code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
          wallS: (Date.now() - t0) / 1000,
          clientCpuS: samples.filter((s) => s.cpu !== undefined).at(-1)?.cpu ?? 0,
          clientCores: span ? (b.cpu - a.cpu) / span : undefined,
          machineBusy: span ? (b.m.busy - a.m.busy) / (b.m.total - a.m.total) : undefined,
        });
      },
    );
    const sample = () => samples.push({ t: Date.now() - t0, cpu: procCpu(child.pid), m: machineCpu() });
    const timer = setInterval(sample, 200);
    sample();
  });
}

/** "8x120 7x30": executions per batch size, most frequent first. */
function batchList(batches = {}) {
  return (
    Object.entries(batches)
      .sort((x, y) => y[1] - x[1])
      .map(([size, n]) => `${size}x${n}`)
      .join(" ") || "-"
  );
}

async function modelStats(port, model) {
  const r = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/stats`);
  const j = await r.json();
  const sum = { success: 0, inference: 0, execution: 0, computeInferNs: 0, queueNs: 0, requestNs: 0 };
  // Executions per batch size: the distribution tells a batcher's pattern (8/8 against 7/9 or
  // 4/12) where the average alone does not.
  for (const m of j.model_stats ?? []) {
    for (const b of m.batch_stats ?? []) {
      const k = `batch${b.batch_size}`;
      sum[k] = (sum[k] ?? 0) + Number(b.compute_infer?.count ?? 0);
    }
    sum.success += Number(m.inference_stats.success.count);
    sum.requestNs += Number(m.inference_stats.success.ns);
    sum.queueNs += Number(m.inference_stats.queue.ns);
    sum.computeInferNs += Number(m.inference_stats.compute_infer.ns);
    sum.inference += Number(m.inference_count);
    sum.execution += Number(m.execution_count);
  }
  return sum;
}

/** Run one tool with the server's counters read before and after it. */
async function observed(model, port, go) {
  const before = await modelStats(port, model);
  const r = await go();
  const after = await modelStats(port, model);
  const d = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
  const batches = Object.fromEntries(
    Object.entries(d)
      .filter(([k, v]) => k.startsWith("batch") && v > 0)
      .map(([k, v]) => [k.slice(5), v]),
  );
  return {
    ...r,
    server: {
      requests: d.success,
      avgBatch: d.execution ? d.inference / d.execution : 0,
      executions: d.execution,
      batches,
      // Triton adds a batch's compute time to each of its requests: per request, this is the
      // length of one model call.
      computeInferUs: d.success ? d.computeInferNs / d.success / 1000 : 0,
      queueUsPerRequest: d.success ? d.queueNs / d.success / 1000 : 0,
      requestUs: d.success ? d.requestNs / d.success / 1000 : 0,
    },
  };
}

async function runPa(model, url, protocol, level, data) {
  const csv = path.join(work, `pa-${model}-${protocol}-${level}.csv`);
  await fsp.rm(csv, { force: true });
  const r = await sampledRun(
    pa,
    [
      "-m",
      model,
      "-u",
      url,
      "-i",
      protocol,
      "--concurrency-range",
      String(level),
      "--measurement-interval",
      String(windowMs),
      "--input-data",
      data,
      "-f",
      csv,
    ],
    paEnv,
  );
  if (!fs.existsSync(csv)) return { error: (r.stdout + r.stderr).trim().split("\n").slice(-2).join(" ") };
  const [head, row] = fs.readFileSync(csv, "utf8").trim().split("\n");
  const cells = Object.fromEntries(head.split(",").map((h, i) => [h, Number(row.split(",")[i])]));
  const trials = (r.stdout.match(/Pass \[\d+\]/g) ?? []).length || undefined;
  // Where its average latency goes, by its own accounting (µs).
  const split = {
    clientSend: cells["Client Send"],
    networkServer: cells["Network+Server Send/Recv"],
    serverQueue: cells["Server Queue"],
    serverCompute: cells["Server Compute Input"] + cells["Server Compute Infer"] + cells["Server Compute Output"],
    clientRecv: cells["Client Recv"],
  };
  return {
    throughput: cells["Inferences/Second"],
    p50: cells["p50 latency"],
    p99: cells["p99 latency"],
    stable: true,
    trials,
    split,
    ...r,
    stdout: undefined,
    stderr: undefined,
  };
}

async function runOurs(model, protocol, level, data, env, windowOurs = Math.round(windowMs * PA_WINDOW_FACTOR)) {
  const r = await sampledRun(
    process.execPath,
    [
      CLI,
      "perf",
      model,
      "-i",
      protocol,
      "--concurrency-range",
      String(level),
      "-p",
      String(windowOurs),
      "--input-data",
      data,
      "--json",
      "--no-history",
    ],
    env,
  );
  if (r.code !== 0) return { error: r.stderr.trim().split("\n").slice(-2).join(" ") };
  const l = JSON.parse(r.stdout).sweeps[0].levels[0];
  const sv = l.server;
  const split = {
    clientSend: l.clientSendUs,
    networkServer: l.networkServerUs,
    serverQueue: sv?.queueUs,
    serverCompute: sv ? sv.computeInputUs + sv.computeInferUs + sv.computeOutputUs : undefined,
    clientRecv: l.clientRecvUs,
  };
  return {
    throughput: l.throughput,
    p50: l.latency.p50Us,
    p99: l.latency.p99Us,
    stable: l.stable,
    trials: l.trials,
    split,
    ...r,
    stdout: undefined,
    stderr: undefined,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
// A closed loop's average latency is concurrency / throughput (Little's law), whichever tool: less
// the server's own time per request, it is what the client and the loopback add to each request.
const outside = (r, level) => (level * 1e6) / r.throughput - r.server.requestUs;
const perReq = (r) => (r.clientCores !== undefined && r.throughput ? (r.clientCores * 1e6) / r.throughput : undefined);

const results = {
  machine: { host: os.hostname(), cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version },
  windowMs,
  oursWindowMs: Math.round(windowMs * PA_WINDOW_FACTOR),
  warmupMs,
  rounds: ROUNDS,
  startedAt: new Date().toISOString(),
  rows: [],
};
const server = await startServer({ only: cases.map((c) => c.model) });
// `timeout -s INT` (bench/gpu/vs-pa-on-gpu.sh) or Ctrl-C: keep what was measured, stop the server.
let interrupted = false;
process.once("SIGINT", () => {
  interrupted = true;
  console.error("bench: interrupted; saving the rows measured so far and stopping the server");
  save()
    .catch(() => undefined)
    .then(() => server.stop())
    .finally(() => process.exit(130));
});
const save = async () => {
  await fsp.mkdir(path.dirname(outFile), { recursive: true });
  await fsp.writeFile(outFile, JSON.stringify(results, null, 2));
};
const rows = [
  [
    "protocol",
    "model",
    "conc",
    "pa infer/s",
    "ours infer/s",
    "thr ratio",
    "pa p50 us",
    "ours p50 us",
    "p50 ratio",
    "per round (thr, p50)",
    "batch pa/ours",
    "client cpu us/req pa/ours",
    "outside server us pa/ours",
    "goal",
  ],
];
let failures = 0;
try {
  for (const protocol of protocols) {
    const url = `127.0.0.1:${protocol === "grpc" ? server.ports.grpc : server.ports.http}`;
    for (const c of cases) {
      for (const level of c.levels) {
        // The same untimed load before either tool measures: the model's first calls (imports,
        // allocations, the batcher's first queues) land here, not in round 1 of one tool.
        if (warmupMs > 0) await runOurs(c.model, protocol, level, c.data, server.env, warmupMs);
        // Paired rounds, alternating who goes first; the median of the rounds is reported, so
        // one disturbed round (other work on the machine) does not decide the figure.
        const pairs = [];
        const skipped = [];
        for (let round = 0, tries = 0; pairs.length < ROUNDS && tries < ROUNDS + 3; tries++, round++) {
          const goPa = () => observed(c.model, server.ports.http, () => runPa(c.model, url, protocol, level, c.data));
          const goOurs = () =>
            observed(c.model, server.ports.http, () => runOurs(c.model, protocol, level, c.data, server.env));
          let a;
          let o;
          if (round % 2 === 0) {
            a = await goPa();
            o = await goOurs();
          } else {
            o = await goOurs();
            a = await goPa();
          }
          // perf_analyzer reports nothing for a level that did not stabilise within its trials;
          // ours reports it marked unstable. Either way the round does not count.
          if (!o.error && !o.stable) o.error = `not stable within ${o.trials} windows`;
          if (a.error || o.error) {
            console.error(
              `bench: round skipped (${a.error ? `perf_analyzer: ${a.error.slice(0, 120)}` : `ours: ${o.error.slice(0, 120)}`})`,
            );
            skipped.push({ round, pa: a, ours: o });
            continue;
          }
          const p = {
            first: round % 2 === 0 ? "pa" : "ours",
            pa: a,
            ours: o,
            tr: o.throughput / a.throughput,
            pr: o.p50 / a.p50,
          };
          pairs.push(p);
          console.error(
            `bench: ${protocol} ${c.model} c=${level} round ${pairs.length} (${p.first} first): pa ${fmt(a.throughput)} ours ${fmt(o.throughput)} infer/s, ratio ${fmt(p.tr, 3)}, p50 ratio ${fmt(p.pr, 3)}; ` +
              `batch ${fmt(a.server.avgBatch, 2)}/${fmt(o.server.avgBatch, 2)}, client ${fmt(perReq(a), 0)}/${fmt(perReq(o), 0)} us/req, ` +
              `client cores ${fmt(a.clientCores, 2)}/${fmt(o.clientCores, 2)}, machine busy ${fmt(100 * a.machineBusy, 0)}%/${fmt(100 * o.machineBusy, 0)}%, ` +
              `server us/req ${fmt(a.server.requestUs, 0)}/${fmt(o.server.requestUs, 0)}, outside the server ${fmt(outside(a, level), 0)}/${fmt(outside(o, level), 0)} us/req` +
              (a.server.avgBatch > 1.05 || o.server.avgBatch > 1.05
                ? `; executions by batch size pa ${batchList(a.server.batches)} ours ${batchList(o.server.batches)}`
                : ""),
          );
        }
        if (pairs.length === 0) {
          rows.push([protocol, c.model, level, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "no complete round"]);
          results.rows.push({ protocol, model: c.model, level, pairs, skipped });
          await save();
          failures++;
          continue;
        }
        const tr = median(pairs.map((p) => p.tr));
        const pr = median(pairs.map((p) => p.pr));
        const ok = tr >= 0.95 && tr <= 1.05 && Math.abs(pr - 1) <= 0.1;
        if (!ok) failures++;
        const m = (f) => median(pairs.map(f));
        rows.push([
          protocol,
          c.model,
          level,
          fmt(m((p) => p.pa.throughput)),
          fmt(m((p) => p.ours.throughput)),
          fmt(tr, 3),
          fmt(
            m((p) => p.pa.p50),
            0,
          ),
          fmt(
            m((p) => p.ours.p50),
            0,
          ),
          fmt(pr, 3),
          pairs.map((p) => `${fmt(p.tr, 2)},${fmt(p.pr, 2)}`).join(" "),
          `${fmt(
            m((p) => p.pa.server.avgBatch),
            2,
          )}/${fmt(
            m((p) => p.ours.server.avgBatch),
            2,
          )}`,
          `${fmt(
            m((p) => perReq(p.pa) ?? NaN),
            0,
          )}/${fmt(
            m((p) => perReq(p.ours) ?? NaN),
            0,
          )}`,
          `${fmt(
            m((p) => outside(p.pa, level)),
            0,
          )}/${fmt(
            m((p) => outside(p.ours, level)),
            0,
          )}`,
          ok ? "met" : "missed",
        ]);
        results.rows.push({
          protocol,
          model: c.model,
          level,
          throughputRatio: tr,
          p50Ratio: pr,
          met: ok,
          pairs,
          skipped,
        });
        await save();
      }
    }
  }
} catch (err) {
  // The round in flight fails once the SIGINT handler has stopped the server: it exits the process.
  if (!interrupted) throw err;
  await new Promise(() => undefined);
} finally {
  await server.stop();
  await fsp.rm(work, { recursive: true, force: true });
}
results.finishedAt = new Date().toISOString();
await save();
console.log(
  `triton-dev perf vs perf_analyzer on ${os.cpus().length} CPUs (${windowMs} ms interval: ${Math.round(windowMs * PA_WINDOW_FACTOR)} ms windows for both; ratio = ours / perf_analyzer, median of ${ROUNDS} paired rounds)`,
);
console.log(table(rows));
console.log(
  `${rows.length - 1 - failures} of ${rows.length - 1} within the goal (throughput 0.95-1.05, p50 within 10%); raw results: ${path.relative(process.cwd(), outFile)}`,
);
