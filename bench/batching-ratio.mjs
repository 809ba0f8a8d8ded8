#!/usr/bin/env node
// Benchmark (c): the article's claim on our CPU image model. `triton-dev perf image_classifier
// --compare batching --concurrency-range 64`: dynamic_batching removed (a staged sibling) against
// the sample config (preferred sizes 8-64, 5 ms delay). The article reports 450 -> 1850 infer/s
// (4.1x) for ResNet-50 on a GPU.
//
//   npm run build && node bench/batching-ratio.mjs [--window MS]
import { fmt, perfJson, startServer, table } from "./lib.mjs";

const args = process.argv.slice(2);
const windowMs = Number(args[args.indexOf("--window") + 1] || 5000) || 5000;
const server = await startServer();
let report;
try {
  report = await perfJson(
    ["image_classifier", "--compare", "batching", "--concurrency-range", "64", "-p", String(windowMs)],
    server.env,
  );
} finally {
  await server.stop();
}
const [off, on] = report.sweeps.map((s) => s.levels[0]);
const ratio = on.throughput / off.throughput;
console.log(`dynamic batching on image_classifier at concurrency 64 (${windowMs} ms windows)`);
console.log(
  table([
    ["variant", "infer/s", "p50 ms", "avg ms", "avg batch", "stable"],
    [
      "no batching",
      fmt(off.throughput),
      fmt(off.latency.p50Us / 1000),
      fmt(off.latency.avgUs / 1000),
      fmt(off.server?.avgBatchSize),
      String(off.stable),
    ],
    [
      "dynamic batching",
      fmt(on.throughput),
      fmt(on.latency.p50Us / 1000),
      fmt(on.latency.avgUs / 1000),
      fmt(on.server?.avgBatchSize),
      String(on.stable),
    ],
  ]),
);
console.log(
  `batching ratio: ${fmt(ratio, 2)}x here; the article: 1850 / 450 = ${fmt(1850 / 450, 2)}x (ResNet-50 fp16, GPU); latency ${fmt(off.latency.avgUs / on.latency.avgUs, 2)}x lower (article: 142000 / 34500 = ${fmt(142000 / 34500, 2)}x)`,
);
