#!/usr/bin/env node
// Benchmark (b): raw capacity of the built-in load generator against autocannon, both sending the
// identical infer POST (binary tensor extension, bert_tokenizer, one sentence) to the same server
// over the same number of keep-alive connections for the same time. Goal: ours / autocannon >= 0.8.
//
//   npm run build && node bench/generator-vs-autocannon.mjs [--seconds N] [--connections 1,8,32] [--rounds N]
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { startServer, fmt, table } from "./lib.mjs";
import { buildBinaryInferBody, encodeTensorData } from "../dist/triton/binary.js";
import { HttpTransport } from "../dist/perf/transport.js";
import { LoadGenerator } from "../dist/perf/load.js";

const require = createRequire(import.meta.url);
let autocannon;
try {
  autocannon = require("autocannon");
} catch {
  console.error("bench: autocannon is missing: run `npm install` (it is a devDependency)");
  process.exit(2);
}

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf("--seconds") + 1] || 8) || 8;
const connectionList = (args.includes("--connections") ? args[args.indexOf("--connections") + 1] : "1,8,32")
  .split(",")
  .map(Number);

const model = "bert_tokenizer";
const inputs = [
  {
    name: "TEXT_INPUT",
    datatype: "BYTES",
    shape: [1, 1],
    data: encodeTensorData("BYTES", ["this movie was wonderful, i loved it, a great and beautiful film"]),
  },
];
const { body, headerLength } = buildBinaryInferBody(inputs);
const headers = { "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": String(headerLength) };

async function ours(port, connections) {
  const transport = new HttpTransport("127.0.0.1", port, { model, payloads: [inputs], maxConnections: connections });
  const gen = new LoadGenerator(transport, { kind: "concurrency", concurrency: connections });
  gen.start();
  await new Promise((r) => setTimeout(r, 1000)); // warm-up, as autocannon's first second is its connect phase
  gen.cut();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const w = gen.cut();
  const elapsed = (performance.now() - t0) / 1000;
  await gen.stop();
  transport.close();
  const errors = [...w.errors.values()].reduce((a, b) => a + b, 0);
  return { rps: w.success / elapsed, p50: w.histogram.percentile(50) / 1000, errors };
}

function cannon(port, connections) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${port}/v2/models/${model}/infer`,
        method: "POST",
        headers,
        body,
        connections,
        pipelining: 1,
        duration: seconds + 1,
      },
      (err, r) => {
        if (err) return reject(err);
        // autocannon counts per second; its mean over the run (including the first second).
        resolve({ rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx });
      },
    );
  });
}

const server = await startServer();
const ROUNDS = Number(args[args.indexOf("--rounds") + 1] || 3) || 3;
const rows = [
  [
    "connections",
    "autocannon req/s",
    "ours req/s",
    "ratio",
    "autocannon p50 ms",
    "ours p50 ms",
    "errors (ac/ours)",
    "rounds",
    "goal >= 0.8",
  ],
];
let missed = 0;
try {
  for (const c of connectionList) {
    // Paired rounds, alternating who goes first; the median ratio counts, so one round disturbed
    // by other work on the machine does not decide the figure.
    const pairs = [];
    for (let round = 0; round < ROUNDS; round++) {
      let a;
      let o;
      if (round % 2 === 0) {
        a = await cannon(server.ports.http, c);
        o = await ours(server.ports.http, c);
      } else {
        o = await ours(server.ports.http, c);
        a = await cannon(server.ports.http, c);
      }
      pairs.push({ a, o, ratio: o.rps / a.rps });
      console.error(
        `bench: ${c} connections, round ${round + 1}: ours ${fmt(o.rps, 0)} req/s, autocannon ${fmt(a.rps, 0)} req/s, ratio ${fmt(o.rps / a.rps, 3)}`,
      );
    }
    const sorted = [...pairs].sort((x, y) => x.ratio - y.ratio);
    const mid = sorted[Math.floor(sorted.length / 2)];
    if (mid.ratio < 0.8) missed++;
    rows.push([
      c,
      fmt(mid.a.rps, 0),
      fmt(mid.o.rps, 0),
      fmt(mid.ratio, 3),
      fmt(mid.a.p50, 2),
      fmt(mid.o.p50, 2),
      `${mid.a.errors}/${mid.o.errors}`,
      pairs.map((p) => fmt(p.ratio, 2)).join("/"),
      mid.ratio >= 0.8 ? "met" : "missed",
    ]);
  }
} finally {
  await server.stop();
}
console.log(
  `generator capacity vs autocannon (${model}, identical binary infer POST, ${seconds} s per run, median of ${ROUNDS} paired rounds)`,
);
console.log(table(rows));
console.log(missed === 0 ? "goal met at every connection count" : `goal missed at ${missed} connection count(s)`);
