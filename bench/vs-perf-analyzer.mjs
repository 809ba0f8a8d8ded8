#!/usr/bin/env node
// Benchmark (a): `triton-dev perf` against NVIDIA's perf_analyzer, on the same server, model,
// inputs and concurrencies, in one run. Prints throughput and p50 ratios (ours / perf_analyzer);
// the goal is a throughput ratio within 0.95-1.05 and p50 within 10%.
//
//   npm run build && node bench/vs-perf-analyzer.mjs [--window MS] [--rounds N] [--grpc]
//
// perf_analyzer: taken from $PERF_ANALYZER, PATH, or installed into /tmp/triton-dev-bench/pa-venv.
// PyPI's `perf-analyzer` project serves only a placeholder here, so the binary comes from the
// tritonclient wheel of the server's own release (2.51.0, manylinux), which ships bin/perf_analyzer;
// it needs libb64 (Debian: libb64-0d) and libcudart.so.12 (PyPI: nvidia-cuda-runtime-cu12).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fmt, has, perfJson, run, startServer, table } from "./lib.mjs";

const args = process.argv.slice(2);
const windowMs = Number(args[args.indexOf("--window") + 1] || 3000) || 3000;
const protocols = args.includes("--grpc") ? ["http", "grpc"] : ["http"];
const VENV = "/tmp/triton-dev-bench/pa-venv";

function libDirs() {
  const dirs = [];
  for (const py of fs.existsSync(path.join(VENV, "lib")) ? fs.readdirSync(path.join(VENV, "lib")) : []) {
    const d = path.join(VENV, "lib", py, "site-packages/nvidia/cuda_runtime/lib");
    if (fs.existsSync(d)) dirs.push(d);
  }
  return dirs;
}

function ensurePerfAnalyzer() {
  if (process.env.PERF_ANALYZER) return process.env.PERF_ANALYZER;
  const bin = path.join(VENV, "bin/perf_analyzer");
  if (!fs.existsSync(bin)) {
    console.error(`bench: installing perf_analyzer into ${VENV} (tritonclient 2.51.0 wheel, nvidia-cuda-runtime-cu12) ...`);
    execFileSync("python3", ["-m", "venv", VENV], { stdio: "inherit" });
    execFileSync(path.join(VENV, "bin/pip"), ["install", "-q", "--only-binary=:all:", "tritonclient==2.51.0", "nvidia-cuda-runtime-cu12"], { stdio: "inherit" });
  }
  const libb64 = execFileSync("sh", ["-c", "ldconfig -p | grep -c libb64.so.0d || true"]).toString().trim() !== "0";
  if (!libb64) {
    if (process.getuid?.() === 0 && has("apt-get")) {
      console.error("bench: installing libb64-0d (perf_analyzer links it) ...");
      execFileSync("sh", ["-c", "apt-get install -y -qq libb64-0d >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libb64-0d)"], { stdio: "inherit" });
    } else {
      console.error("bench: perf_analyzer needs libb64.so.0d: install Debian's libb64-0d (as root: apt-get install libb64-0d)");
      process.exit(2);
    }
  }
  return bin;
}

const pa = ensurePerfAnalyzer();
const paEnv = { ...process.env, LD_LIBRARY_PATH: [...libDirs(), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":") };
const check = await run(pa, ["--version"], paEnv);
if (/error while loading shared libraries/.test(check.stderr)) {
  console.error(`bench: perf_analyzer cannot start: ${check.stderr.trim()}`);
  process.exit(2);
}

const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-pa-"));
const textData = path.join(work, "text.json");
await fsp.writeFile(textData, JSON.stringify({ data: [{ TEXT_INPUT: ["this movie was wonderful, i loved it, a great and beautiful film"] }] }));
// Both tools send exactly the same inputs: a fixed sentence for the tokenizer, zeros for images.
const cases = [
  { model: "bert_tokenizer", data: textData, levels: [1, 4] },
  { model: "image_classifier", data: "zero", levels: [16] },
];
const ROUNDS = Number(args[args.indexOf("--rounds") + 1] || 3) || 3;

async function runPa(model, url, protocol, level, data) {
  const csv = path.join(work, `pa-${model}-${protocol}-${level}.csv`);
  const r = await run(pa, ["-m", model, "-u", url, "-i", protocol, "--concurrency-range", String(level), "--measurement-interval", String(windowMs), "--input-data", data, "-f", csv], paEnv);
  if (!fs.existsSync(csv)) return { error: (r.stdout + r.stderr).trim().split("\n").slice(-2).join(" ") };
  const [head, row] = fs.readFileSync(csv, "utf8").trim().split("\n");
  const cells = Object.fromEntries(head.split(",").map((h, i) => [h, Number(row.split(",")[i])]));
  return { throughput: cells["Inferences/Second"], p50: cells["p50 latency"] };
}

async function runOurs(model, protocol, level, data, env) {
  const r = await perfJson([model, "-i", protocol, "--concurrency-range", String(level), "-p", String(windowMs), "--input-data", data], env);
  const l = r.sweeps[0].levels[0];
  return { throughput: l.throughput, p50: l.latency.p50Us, stable: l.stable };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const server = await startServer();
const rows = [["protocol", "model", "conc", "pa infer/s", "ours infer/s", "thr ratio", "pa p50 us", "ours p50 us", "p50 ratio", "rounds", "goal"]];
let failures = 0;
try {
  for (const protocol of protocols) {
    const url = `127.0.0.1:${protocol === "grpc" ? server.ports.grpc : server.ports.http}`;
    for (const c of cases) {
      for (const level of c.levels) {
        // Paired rounds, alternating who goes first; the median round is reported, so one
        // disturbed round (other work on the machine) does not decide the figure.
        const pairs = [];
        for (let round = 0, tries = 0; pairs.length < ROUNDS && tries < ROUNDS + 3; tries++, round++) {
          let a;
          let o;
          if (round % 2 === 0) {
            a = await runPa(c.model, url, protocol, level, c.data);
            o = await runOurs(c.model, protocol, level, c.data, server.env);
          } else {
            o = await runOurs(c.model, protocol, level, c.data, server.env);
            a = await runPa(c.model, url, protocol, level, c.data);
          }
          if (a.error) {
            console.error(`bench: perf_analyzer round skipped (${a.error.slice(0, 80)})`);
            continue;
          }
          pairs.push({ a, o, tr: o.throughput / a.throughput, pr: o.p50 / a.p50 });
          console.error(`bench: ${protocol} ${c.model} c=${level} round ${pairs.length}: pa ${fmt(a.throughput)} ours ${fmt(o.throughput)} infer/s, ratio ${fmt(o.throughput / a.throughput, 3)}, p50 ratio ${fmt(o.p50 / a.p50, 3)}`);
        }
        if (pairs.length === 0) {
          rows.push([protocol, c.model, level, "-", "-", "-", "-", "-", "-", 0, "no stable perf_analyzer run"]);
          failures++;
          continue;
        }
        const mid = pairs.find((p) => p.tr === median(pairs.map((x) => x.tr)));
        const ok = mid.tr >= 0.95 && mid.tr <= 1.05 && Math.abs(mid.pr - 1) <= 0.1;
        if (!ok) failures++;
        rows.push([protocol, c.model, level, fmt(mid.a.throughput), fmt(mid.o.throughput), fmt(mid.tr, 3), fmt(mid.a.p50, 0), fmt(mid.o.p50, 0), fmt(mid.pr, 3), pairs.map((p) => fmt(p.tr, 2)).join("/"), ok ? "met" : "missed"]);
      }
    }
  }
} finally {
  await server.stop();
  await fsp.rm(work, { recursive: true, force: true });
}
console.log(`triton-dev perf vs perf_analyzer (${windowMs} ms windows, same server, inputs and concurrency; ratio = ours / perf_analyzer)`);
console.log(table(rows));
console.log(`${rows.length - 1 - failures} of ${rows.length - 1} within the goal (throughput 0.95-1.05, p50 within 10%)`);
