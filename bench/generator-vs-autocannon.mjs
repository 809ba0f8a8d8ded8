#!/usr/bin/env node
// Benchmark (b): raw capacity of the built-in load generator against autocannon, both sending the
// identical infer POST (binary tensor extension, bert_tokenizer, one sentence) to the same server
// over the same number of keep-alive connections for the same time. Goal: ours / autocannon >= 0.8.
//
//   npm run build && node bench/generator-vs-autocannon.mjs [--seconds N] [--connections 1,8,32]
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
const connectionList = (args.includes("--connections") ? args[args.indexOf("--connections") + 1] : "1,8,32").split(",").map(Number);

const model = "bert_tokenizer";
const inputs = [{ name: "TEXT_INPUT", datatype: "BYTES", shape: [1, 1], data: encodeTensorData("BYTES", ["this movie was wonderful, i loved it, a great and beautiful film"]) }];
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
      { url: `http://127.0.0.1:${port}/v2/models/${model}/infer`, method: "POST", headers, body, connections, pipelining: 1, duration: seconds + 1 },
      (err, r) => {
        if (err) return reject(err);
        // autocannon counts per second; its mean over the run (including the first second).
        resolve({ rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx });
      },
    );
  });
}

const server = await startServer();
const rows = [["connections", "autocannon req/s", "ours req/s", "ratio", "autocannon p50 ms", "ours p50 ms", "errors (ac/ours)", "goal >= 0.8"]];
let missed = 0;
try {
  for (const c of connectionList) {
    // Two rounds, alternating order; the better round of each tool counts.
    const a = [];
    const o = [];
    for (let round = 0; round < 2; round++) {
      if (round === 0) {
        a.push(await cannon(server.ports.http, c));
        o.push(await ours(server.ports.http, c));
      } else {
        o.push(await ours(server.ports.http, c));
        a.push(await cannon(server.ports.http, c));
      }
    }
    const best = (xs) => xs.reduce((x, y) => (y.rps > x.rps ? y : x));
    const A = best(a);
    const O = best(o);
    const ratio = O.rps / A.rps;
    if (ratio < 0.8) missed++;
    rows.push([c, fmt(A.rps, 0), fmt(O.rps, 0), fmt(ratio, 3), fmt(A.p50, 2), fmt(O.p50, 2), `${A.errors}/${O.errors}`, ratio >= 0.8 ? "met" : "missed"]);
    console.error(`bench: ${c} connections: ours ${fmt(O.rps, 0)} req/s, autocannon ${fmt(A.rps, 0)} req/s`);
  }
} finally {
  await server.stop();
}
console.log(`generator capacity vs autocannon (${model}, identical binary infer POST, ${seconds} s per run, best of 2 rounds)`);
console.log(table(rows));
console.log(missed === 0 ? "goal met at every connection count" : `goal missed at ${missed} connection count(s)`);
