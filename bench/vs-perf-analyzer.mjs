#!/usr/bin/env node
// Benchmark (a): `triton-dev perf` against NVIDIA's perf_analyzer, on the same server, model,
// inputs and concurrencies, in one run. Prints throughput and p50 ratios (ours / perf_analyzer);
// the goal is a throughput ratio within 0.95-1.05 and p50 within 10%.
//
//   npm run build && node bench/vs-perf-analyzer.mjs [--window MS] [--rounds N] [--grpc]
//       [--warmup-ms MS] [--stability PCT] [--vs OTHER/dist/cli/main.js] [--out FILE.json]
//       [--cases bert_tokenizer:1,4/image_classifier:16/text_streamer:4/text_streamer_genai:4]
//
// A decoupled model's case (text_streamer) is streamed by both tools over gRPC's ModelStreamInfer
// (ours `-i grpc`, perf_analyzer `-i grpc --streaming`), whatever --grpc says. Its "latency" is, for
// both, from the request written to its final response (the empty one that carries only the final
// flag): perf_analyzer's own figure stops at the last response with data (it skips a null last
// response), so the bench takes perf_analyzer's per-request timestamps (--profile-export-file) and
// computes that p50 itself, over the requests its last three windows counted; its own p50 is shown
// beside it. text_streamer_genai (bench/models/, text_streamer in genai-perf's input and output
// shape) is measured against genai-perf instead, which drives perf_analyzer and reports time to
// first token and inter-token latency by its own definitions (README, "Streaming rows").
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
// Both tools' stability percentage (their default, 10, when not given): on a loaded 2-core machine
// perf_analyzer often finds no three windows within 10% and then reports nothing.
const stabilityPct = flag("--stability", undefined);
// --vs OTHER/dist/cli/main.js: another build of ours (e.g. the commit before a change) measured in
// the same rounds, so before and after share the machine's state; its ratio to perf_analyzer and
// to ours are printed beside.
const vsCli = flag("--vs", undefined) ? path.resolve(flag("--vs")) : undefined;
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
const GENAI_VENV = "/tmp/triton-dev-bench/genai-perf-venv";
// The newest genai-perf on PyPI when the bench was written; it runs on perf_analyzer 2.51's flags.
const GENAI_PERF_VERSION = "0.0.16";
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

/**
 * genai-perf from PyPI into its own venv, on first use. Its `perf-analyzer` dependency is PyPI's
 * placeholder (no binary), so it runs the perf_analyzer above, found on PATH. Undefined, with the
 * reason, where it cannot be installed (no package index: the GPU machine).
 */
function ensureGenaiPerf() {
  if (process.env.GENAI_PERF) return { bin: process.env.GENAI_PERF };
  const bin = path.join(GENAI_VENV, "bin/genai-perf");
  if (!fs.existsSync(bin)) {
    console.error(`bench: installing genai-perf ${GENAI_PERF_VERSION} into ${GENAI_VENV} (about 1 GB) ...`);
    try {
      execFileSync("python3", ["-m", "venv", GENAI_VENV], { stdio: "inherit" });
      execFileSync(path.join(GENAI_VENV, "bin/pip"), ["install", "-q", `genai-perf==${GENAI_PERF_VERSION}`], {
        stdio: "inherit",
      });
    } catch (err) {
      fs.rmSync(GENAI_VENV, { recursive: true, force: true });
      return { reason: `genai-perf could not be installed (${String(err.message ?? err).split("\n")[0]})` };
    }
  }
  return { bin };
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
// The streamer's sentence: 14 WordPiece tokens, so 14 data responses and the final one per request.
const SENTENCE = "this movie was wonderful, i loved it, a great and beautiful film";
const streamData = path.join(work, "stream.json");
await fsp.writeFile(streamData, JSON.stringify({ data: [{ TEXT: [SENTENCE] }] }));
const genaiData = path.join(work, "genai.json");
await fsp.writeFile(genaiData, JSON.stringify({ data: [{ text_input: [SENTENCE] }] }));
// Both tools send exactly the same inputs: a fixed sentence for the tokenizer and the streamers,
// zeros for images.
const DATA = {
  bert_tokenizer: textData,
  image_classifier: "zero",
  text_streamer: streamData,
  text_streamer_genai: genaiData,
  // Stateful (sequence batching): zeros, in sequences of both tools' default 20 +/- 20% requests.
  rnn_direct: "zero",
  rnn_oldest: "zero",
};
// The stateful models live in test/fixtures/sequence (an RNN cell whose state is kept per sequence).
const SEQUENCE_MODELS = new Set(["rnn_direct", "rnn_oldest"]);
// Models measured against genai-perf rather than perf_analyzer.
const GENAI_MODELS = new Set(["text_streamer_genai"]);
const cases = flag("--cases", "bert_tokenizer:1,4/image_classifier:16/text_streamer:4")
  .split("/")
  .map((c) => {
    const [model, levels] = c.split(":");
    return {
      model,
      data: DATA[model] ?? "random",
      levels: levels.split(",").map(Number),
      peer: GENAI_MODELS.has(model) ? "genai-perf" : "perf_analyzer",
    };
  });
const genai = cases.some((c) => c.peer === "genai-perf") ? ensureGenaiPerf() : undefined;
if (genai?.reason) console.error(`bench: ${genai.reason}; the genai-perf rows are skipped`);
// genai-perf's side: the same sentence as its prompt file, the streamer's vocabulary as a local
// BERT tokenizer (it counts output tokens by tokenizing the responses' text; nothing is fetched
// from the Hugging Face hub), perf_analyzer on its PATH.
const genaiPrompt = path.join(work, "genai-prompt.jsonl");
const genaiTokenizer = path.join(work, "genai-tokenizer");
const genaiEnv = { ...paEnv, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1" };
if (genai?.bin) {
  await fsp.writeFile(genaiPrompt, JSON.stringify({ text: SENTENCE }) + "\n");
  await fsp.mkdir(genaiTokenizer, { recursive: true });
  await fsp.copyFile(path.join(ROOT, "models/text_streamer/1/vocab.txt"), path.join(genaiTokenizer, "vocab.txt"));
  await fsp.writeFile(
    path.join(genaiTokenizer, "tokenizer_config.json"),
    JSON.stringify({ tokenizer_class: "BertTokenizer", do_lower_case: true }),
  );
  const bin = path.join(work, "pa-bin");
  await fsp.mkdir(bin, { recursive: true });
  await fsp.symlink(path.resolve(pa), path.join(bin, "perf_analyzer"));
  genaiEnv.PATH = `${bin}:${process.env.PATH}`;
}

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
function sampledRun(file, argv, env, cwd) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const samples = [];
    const child = execFile(
      file,
      argv,
      { env, cwd, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
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

/** perf_analyzer's percentile: the sorted sample at (p/100) x (n - 1), rounded. */
const paPercentile = (sorted, p) => (sorted.length ? sorted[Math.floor((p / 100) * (sorted.length - 1) + 0.5)] : NaN);
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

/**
 * A streamed level from perf_analyzer's profile export (ns timestamps): the requests its last three
 * windows counted (those whose last data response came inside them, as perf_analyzer counts them),
 * with the latency to the final response, the time to the first response and the gaps between data
 * responses, in µs. A request's last timestamp is the empty final response when the model sent the
 * final flag alone (perf_analyzer reads it as a null response; text_streamer always does).
 */
function streamFromExport(file) {
  const e = JSON.parse(fs.readFileSync(file, "utf8")).experiments?.at(-1);
  const b = e?.window_boundaries ?? [];
  if (!e || b.length < 2) return undefined;
  const from = b[Math.max(0, b.length - 4)];
  const to = b[b.length - 1];
  const toFinal = [];
  const toLastData = [];
  const first = [];
  const gaps = [];
  let responses = 0;
  for (const r of e.requests) {
    const ts = r.response_timestamps ?? [];
    // The empty final response: no output in the export (perf_analyzer 2.51 writes `{}` or the
    // previous buffer's bytes for it, so it is told by position, one past the data responses).
    const data = ts.length > 1 ? ts.slice(0, -1) : ts;
    const end = data.at(-1);
    if (end === undefined || end < from || end > to) continue;
    toFinal.push((ts.at(-1) - r.timestamp) / 1000);
    toLastData.push((end - r.timestamp) / 1000);
    first.push((data[0] - r.timestamp) / 1000);
    for (let i = 1; i < data.length; i++) gaps.push((data[i] - data[i - 1]) / 1000);
    responses += data.length;
  }
  const sort = (xs) => xs.sort((x, y) => x - y);
  [toFinal, toLastData, first, gaps].forEach(sort);
  return {
    requests: toFinal.length,
    responsesPerRequest: toFinal.length ? responses / toFinal.length : NaN,
    p50ToFinalUs: paPercentile(toFinal, 50),
    p99ToFinalUs: paPercentile(toFinal, 99),
    avgToFinalUs: mean(toFinal),
    p50ToLastDataUs: paPercentile(toLastData, 50),
    ttftP50Us: paPercentile(first, 50),
    ttftAvgUs: mean(first),
    itlP50Us: paPercentile(gaps, 50),
    itlAvgUs: mean(gaps),
  };
}

async function runPa(model, url, protocol, level, data, streaming = false) {
  const tag = `${model}-${protocol}${streaming ? "-stream" : ""}-${level}`;
  const csv = path.join(work, `pa-${tag}.csv`);
  const exported = path.join(work, `pa-${tag}.profile.json`);
  await fsp.rm(csv, { force: true });
  await fsp.rm(exported, { force: true });
  const r = await sampledRun(
    pa,
    [
      "-m",
      model,
      "-u",
      url,
      "-i",
      protocol,
      ...(streaming ? ["--streaming", "--profile-export-file", exported] : []),
      "--concurrency-range",
      String(level),
      "--measurement-interval",
      String(windowMs),
      ...(stabilityPct ? ["--stability-percentage", stabilityPct] : []),
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
  const stream = streaming && fs.existsSync(exported) ? streamFromExport(exported) : undefined;
  if (streaming && !stream) return { error: "perf_analyzer wrote no profile export" };
  return {
    throughput: cells["Inferences/Second"],
    // Streamed: to the final response, as ours (its own p50, to the last data response, is in `stream`).
    p50: stream ? stream.p50ToFinalUs : cells["p50 latency"],
    p99: stream ? stream.p99ToFinalUs : cells["p99 latency"],
    stable: true,
    trials,
    split,
    ...(stream
      ? { stream: { ...stream, ownP50Us: cells["p50 latency"], responsesPerSec: cells["Response Throughput"] } }
      : {}),
    ...r,
    stdout: undefined,
    stderr: undefined,
  };
}

/** Ours' streamed figures, in the shapes the peers report them. */
function oursStream(l) {
  const s = l.stream;
  if (!s) return undefined;
  return {
    requests: s.requests,
    responsesPerRequest: s.responsesPerRequest,
    responsesPerSec: s.responsesPerSec,
    p50ToFinalUs: l.latency.p50Us,
    avgToFinalUs: l.latency.avgUs,
    ttftP50Us: s.firstResponse.p50Us,
    ttftAvgUs: s.firstResponse.avgUs,
    itlP50Us: s.interResponse.p50Us,
    itlAvgUs: s.interResponse.avgUs,
    // genai-perf's inter-token latency is per request: (latency - TTFT) / (tokens - 1), to the
    // final response. With the same number of responses in every request (a fixed sentence) its
    // mean is this, from the means.
    genaiItlAvgUs:
      s.responsesPerRequest > 1 ? (l.latency.avgUs - s.firstResponse.avgUs) / (s.responsesPerRequest - 1) : NaN,
  };
}

async function runOurs(
  model,
  protocol,
  level,
  data,
  env,
  windowOurs = Math.round(windowMs * PA_WINDOW_FACTOR),
  stability = stabilityPct,
  cli = CLI,
) {
  const r = await sampledRun(
    process.execPath,
    [
      cli,
      "perf",
      model,
      "-i",
      protocol,
      "--concurrency-range",
      String(level),
      "-p",
      String(windowOurs),
      ...(stability ? ["--stability-percentage", stability] : []),
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
  const stream = oursStream(l);
  return {
    throughput: l.throughput,
    p50: l.latency.p50Us,
    p99: l.latency.p99Us,
    stable: l.stable,
    trials: l.trials,
    split,
    ...(stream ? { stream } : {}),
    ...r,
    stdout: undefined,
    stderr: undefined,
  };
}

/**
 * genai-perf on a streamed model: it writes perf_analyzer's input file from a prompt file, runs
 * perf_analyzer (`-i grpc --streaming`, stability 999: three windows, none refused) and reads its
 * profile export with the model's tokenizer. Its CPU is its own process and perf_analyzer's (a
 * child it waits for), so no per-request client CPU is derived while it runs.
 */
async function runGenai(model, grpcUrl, level, n) {
  const dir = path.join(work, `genai-${model}-${level}-${n}`);
  await fsp.mkdir(dir, { recursive: true });
  const r = await sampledRun(
    genai.bin,
    [
      "profile",
      "-m",
      model,
      "--endpoint-type",
      "kserve",
      "--backend",
      "tensorrtllm",
      "--streaming",
      "-u",
      grpcUrl,
      "--concurrency",
      String(level),
      "--measurement-interval",
      String(windowMs),
      "--input-file",
      genaiPrompt,
      "--tokenizer",
      genaiTokenizer,
      "--artifact-dir",
      path.join(dir, "artifacts"),
    ],
    { ...genaiEnv, PWD: dir },
    dir,
  );
  // It writes into a folder of its own naming under --artifact-dir.
  const artifacts = path.join(dir, "artifacts");
  const out = (fs.existsSync(artifacts) ? fs.readdirSync(artifacts, { recursive: true }) : [])
    .map((f) => path.join(artifacts, String(f)))
    .find((f) => f.endsWith("profile_export_genai_perf.json"));
  if (!out) return { error: (r.stdout + r.stderr).trim().split("\n").slice(-3).join(" ") };
  const j = JSON.parse(fs.readFileSync(out, "utf8"));
  const ms = (k, f) => (j[k]?.[f] ?? NaN) * 1000;
  return {
    throughput: j.request_throughput.avg,
    p50: ms("request_latency", "p50"),
    p99: ms("request_latency", "p99"),
    stable: true,
    trials: 3,
    stream: {
      requests: j.request_count.avg,
      responsesPerRequest: j.output_sequence_length.avg,
      responsesPerSec: j.output_token_throughput.avg,
      p50ToFinalUs: ms("request_latency", "p50"),
      avgToFinalUs: ms("request_latency", "avg"),
      ttftP50Us: ms("time_to_first_token", "p50"),
      ttftAvgUs: ms("time_to_first_token", "avg"),
      genaiItlP50Us: ms("inter_token_latency", "p50"),
      genaiItlAvgUs: ms("inter_token_latency", "avg"),
    },
    ...r,
    clientCores: undefined,
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
  stabilityPct: stabilityPct ?? "tools' default (10)",
  ...(vsCli ? { vs: vsCli } : {}),
  startedAt: new Date().toISOString(),
  rows: [],
};
// text_streamer_genai is text_streamer's code in genai-perf's shape: its folder from bench/models,
// the streamer's model.py (which it subclasses) and vocabulary beside its own.
const prepare = async (models) => {
  for (const c of cases)
    if (SEQUENCE_MODELS.has(c.model))
      await fsp.cp(path.join(ROOT, "test/fixtures/sequence", c.model), path.join(models, c.model), { recursive: true });
  if (!cases.some((c) => c.model === "text_streamer_genai")) return;
  const dst = path.join(models, "text_streamer_genai");
  await fsp.cp(path.join(ROOT, "bench/models/text_streamer_genai"), dst, { recursive: true });
  const src = path.join(ROOT, "models/text_streamer/1");
  await fsp.copyFile(path.join(src, "model.py"), path.join(dst, "1/text_streamer_model.py"));
  await fsp.copyFile(path.join(src, "vocab.txt"), path.join(dst, "1/vocab.txt"));
};
const server = await startServer({ only: cases.map((c) => c.model), prepare });
// `timeout -s INT` (bench/gpu/vs-pa-on-gpu.sh) or Ctrl-C: keep what was measured, stop the server.
let interrupted = false;
process.once("SIGINT", () => {
  interrupted = true;
  console.error("bench: interrupted; saving the rows measured so far and stopping the server");
  save()
    .catch(() => undefined)
    .then(() => server.stop())
    .then(() => fsp.rm(work, { recursive: true, force: true }))
    .finally(() => process.exit(130));
});
const save = async () => {
  await fsp.mkdir(path.dirname(outFile), { recursive: true });
  await fsp.writeFile(outFile, JSON.stringify(results, null, 2));
};
// Decoupled models (their config's transaction policy) are streamed, by both tools, over gRPC.
for (const c of cases) {
  const r = await fetch(`http://127.0.0.1:${server.ports.http}/v2/models/${c.model}/config`);
  c.streaming = r.ok && (await r.json()).model_transaction_policy?.decoupled === true;
}
const rows = [
  [
    "protocol",
    "model",
    "conc",
    "peer infer/s",
    "ours infer/s",
    "thr ratio",
    "peer p50 us",
    "ours p50 us",
    "p50 ratio",
    "per round (thr, p50)",
    "batch peer/ours",
    "client cpu us/req peer/ours",
    "outside server us peer/ours",
    "goal",
  ],
];
// Streamed rows, in the figures streams have (medians over the rounds, peer/ours).
const streamRows = [
  [
    "model",
    "conc",
    "peer",
    "req/s peer/ours",
    "resp/req peer/ours",
    "resp/s peer/ours",
    "p50 to final us peer/ours",
    "pa's own p50 us",
    "TTFT p50 us peer/ours",
    "TTFT avg us peer/ours",
    "ITL p50 us peer/ours",
    "ITL avg us peer/ours",
  ],
];
// --vs: the other build beside ours, both against the same peer rounds (medians, per round).
const vsRows = [
  [
    "protocol",
    "model",
    "conc",
    "thr ratio vs/ours",
    "p50 ratio vs/ours",
    "ours/vs thr (median; per round)",
    "client cpu us/req vs/ours",
    "TTFT p50 us vs/ours",
  ],
];
// Jobs: every case under every protocol asked for; a streamed case once, over gRPC's stream.
const jobs = [];
for (const protocol of protocols)
  for (const c of cases)
    if (!c.streaming || protocol === protocols[0]) jobs.push({ protocol: c.streaming ? "grpc" : protocol, c });
let failures = 0;
try {
  for (const { protocol, c } of jobs) {
    const url = `127.0.0.1:${protocol === "grpc" ? server.ports.grpc : server.ports.http}`;
    const label = c.streaming ? "grpc stream" : protocol;
    const viaGenai = c.peer === "genai-perf";
    if (viaGenai && !genai?.bin) {
      rows.push([
        label,
        c.model,
        c.levels.join(","),
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "no genai-perf",
      ]);
      continue;
    }
    // genai-perf runs perf_analyzer with stability 999 (three windows, whatever they measure);
    // ours measures the same way in those rows.
    const oursStability = viaGenai ? "999" : stabilityPct;
    for (const level of c.levels) {
      // The same untimed load before either tool measures: the model's first calls (imports,
      // allocations, the batcher's first queues) land here, not in round 1 of one tool.
      if (warmupMs > 0) await runOurs(c.model, protocol, level, c.data, server.env, warmupMs);
      // Paired rounds, alternating who goes first; the median of the rounds is reported, so
      // one disturbed round (other work on the machine) does not decide the figure.
      const pairs = [];
      const skipped = [];
      for (let round = 0, tries = 0; pairs.length < ROUNDS && tries < ROUNDS + 3; tries++, round++) {
        const goPa = () =>
          observed(c.model, server.ports.http, () =>
            viaGenai ? runGenai(c.model, url, level, round) : runPa(c.model, url, protocol, level, c.data, c.streaming),
          );
        const goOurs = () =>
          observed(c.model, server.ports.http, () =>
            runOurs(c.model, protocol, level, c.data, server.env, undefined, oursStability),
          );
        const goVs = () =>
          observed(c.model, server.ports.http, () =>
            runOurs(c.model, protocol, level, c.data, server.env, undefined, oursStability, vsCli),
          );
        let a;
        let o;
        let v;
        if (vsCli) {
          // Three tools: each goes first, second and third in turn.
          const order = [
            ["pa", "ours", "vs"],
            ["ours", "vs", "pa"],
            ["vs", "pa", "ours"],
          ][round % 3];
          for (const who of order) {
            if (who === "pa") a = await goPa();
            else if (who === "ours") o = await goOurs();
            else v = await goVs();
          }
          if (!v.error && !v.stable) v.error = `not stable within ${v.trials} windows`;
        } else if (round % 2 === 0) {
          a = await goPa();
          o = await goOurs();
        } else {
          o = await goOurs();
          a = await goPa();
        }
        // perf_analyzer reports nothing for a level that did not stabilise within its trials;
        // ours reports it marked unstable. Either way the round does not count.
        if (!o.error && !o.stable) o.error = `not stable within ${o.trials} windows`;
        if (a.error || o.error || v?.error) {
          console.error(
            `bench: round skipped (${a.error ? `${c.peer}: ${a.error.slice(0, 160)}` : o.error ? `ours: ${o.error.slice(0, 120)}` : `--vs: ${v.error.slice(0, 120)}`})`,
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
          ...(v ? { vs: v, vtr: v.throughput / a.throughput, vpr: v.p50 / a.p50 } : {}),
        };
        pairs.push(p);
        const sa = a.stream;
        const so = o.stream;
        console.error(
          `bench: ${label} ${c.model} c=${level} round ${pairs.length} (${p.first === "pa" ? c.peer : "ours"} first): ${c.peer} ${fmt(a.throughput)} ours ${fmt(o.throughput)} ${c.streaming ? "req/s" : "infer/s"}, ratio ${fmt(p.tr, 3)}, p50 ratio ${fmt(p.pr, 3)}; ` +
            `batch ${fmt(a.server.avgBatch, 2)}/${fmt(o.server.avgBatch, 2)}, client ${fmt(perReq(a), 0)}/${fmt(perReq(o), 0)} us/req, ` +
            `client cores ${fmt(a.clientCores, 2)}/${fmt(o.clientCores, 2)}, machine busy ${fmt(100 * a.machineBusy, 0)}%/${fmt(100 * o.machineBusy, 0)}%, ` +
            `server us/req ${fmt(a.server.requestUs, 0)}/${fmt(o.server.requestUs, 0)}, outside the server ${fmt(outside(a, level), 0)}/${fmt(outside(o, level), 0)} us/req` +
            (sa && so
              ? `; resp/req ${fmt(sa.responsesPerRequest, 1)}/${fmt(so.responsesPerRequest, 1)}, TTFT p50 ${fmt(sa.ttftP50Us, 0)}/${fmt(so.ttftP50Us, 0)} us` +
                (sa.ownP50Us !== undefined
                  ? `, pa's own p50 (to its last data response) ${fmt(sa.ownP50Us, 0)} us`
                  : "")
              : "") +
            (v
              ? `; --vs build ${fmt(v.throughput)} ${c.streaming ? "req/s" : "infer/s"} (ratio to ${c.peer} ${fmt(p.vtr, 3)}, p50 ratio ${fmt(p.vpr, 3)}, client ${fmt(perReq(v), 0)} us/req${v.stream ? `, TTFT p50 ${fmt(v.stream.ttftP50Us, 0)} us` : ""})`
              : "") +
            (a.server.avgBatch > 1.05 || o.server.avgBatch > 1.05
              ? `; executions by batch size pa ${batchList(a.server.batches)} ours ${batchList(o.server.batches)}`
              : ""),
        );
      }
      if (pairs.length === 0) {
        rows.push([label, c.model, level, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "no complete round"]);
        results.rows.push({ protocol: label, model: c.model, peer: c.peer, level, pairs, skipped });
        await save();
        failures++;
        continue;
      }
      const tr = median(pairs.map((p) => p.tr));
      const pr = median(pairs.map((p) => p.pr));
      const ok = tr >= 0.95 && tr <= 1.05 && Math.abs(pr - 1) <= 0.1;
      if (!ok) failures++;
      const m = (f) => median(pairs.map(f));
      const both = (f, digits = 0) =>
        `${fmt(
          m((p) => f(p.pa) ?? NaN),
          digits,
        )}/${fmt(
          m((p) => f(p.ours) ?? NaN),
          digits,
        )}`;
      rows.push([
        label,
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
        both((r) => r.server.avgBatch, 2),
        both((r) => perReq(r)),
        both((r) => outside(r, level)),
        ok ? "met" : "missed",
      ]);
      if (vsCli) {
        const both2 = (f, digits = 0) =>
          `${fmt(
            m((p) => f(p.vs) ?? NaN),
            digits,
          )}/${fmt(
            m((p) => f(p.ours) ?? NaN),
            digits,
          )}`;
        const ov = pairs.map((p) => p.ours.throughput / p.vs.throughput);
        vsRows.push([
          label,
          c.model,
          level,
          `${fmt(
            m((p) => p.vtr),
            3,
          )}/${fmt(tr, 3)}`,
          `${fmt(
            m((p) => p.vpr),
            3,
          )}/${fmt(pr, 3)}`,
          `${fmt(median(ov), 3)}; ${ov.map((x) => fmt(x, 2)).join(" ")}`,
          both2((r) => perReq(r)),
          both2((r) => r.stream?.ttftP50Us),
        ]);
      }
      if (c.streaming)
        streamRows.push([
          c.model,
          level,
          c.peer,
          both((r) => r.throughput, 1),
          both((r) => r.stream?.responsesPerRequest, 1),
          both((r) => r.stream?.responsesPerSec),
          both((r) => r.stream?.p50ToFinalUs),
          fmt(
            m((p) => p.pa.stream?.ownP50Us ?? NaN),
            0,
          ),
          both((r) => r.stream?.ttftP50Us),
          both((r) => r.stream?.ttftAvgUs),
          // Against genai-perf, its per-request definition on both sides (ours from the means);
          // against perf_analyzer, the gaps between data responses on both.
          viaGenai ? both((r) => r.stream?.genaiItlP50Us, 1) : both((r) => r.stream?.itlP50Us, 1),
          viaGenai ? both((r) => r.stream?.genaiItlAvgUs, 1) : both((r) => r.stream?.itlAvgUs, 1),
        ]);
      results.rows.push({
        protocol: label,
        model: c.model,
        peer: c.peer,
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
  `triton-dev perf vs perf_analyzer${genai?.bin ? " and genai-perf" : ""} on ${os.cpus().length} CPUs (${windowMs} ms interval: ${Math.round(windowMs * PA_WINDOW_FACTOR)} ms windows for both; ratio = ours / peer, median of ${ROUNDS} paired rounds)`,
);
console.log(table(rows));
if (streamRows.length > 1) {
  console.log(
    "\nstreamed requests (median of the rounds, peer/ours; latency to the final response for both; ITL: gaps between data responses against perf_analyzer, genai-perf's per-request (latency - TTFT) / (tokens - 1) against genai-perf)",
  );
  console.log(table(streamRows));
}
if (vsRows.length > 1) {
  console.log(`\n--vs ${path.relative(process.cwd(), vsCli)} (vs) beside this build (ours), in the same rounds`);
  console.log(table(vsRows));
}
console.log(
  `${rows.length - 1 - failures} of ${rows.length - 1} within the goal (throughput 0.95-1.05, p50 within 10%); raw results: ${path.relative(process.cwd(), outFile)}`,
);
