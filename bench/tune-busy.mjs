#!/usr/bin/env node
// Benchmark: does `triton-dev tune` pick the right candidate on a busy machine? Sleep-bound
// models (test/fixtures/tune/sleepy: 8 ms + 0.5 ms per request held, sleeping, so the answer does
// not depend on how many cores are free) with answers known by construction, searched again and
// again while other processes keep cores busy (node busy loops, `--busy N`, default 1):
//
//   instances   sleepy, 1 instance, no batching, space instances 1-2 at concurrency 4: two
//               instances serve twice what one does; the answer is 2.
//   batching    sleepy, 1 instance, space batching off/on at concurrency 8: a batch of 8 costs
//               12 ms where 8 single requests cost 68; the answer is batching on.
//   stay        sleepy with 2 instances, space instances 1-2 at concurrency 4: the search must not
//               step down; the answer is 2.
//
// `--runs N` (default 20) cycles through the cases. `--baseline CLI.js` runs another build of the
// CLI (e.g. an earlier commit's dist/cli/main.js) on the same server, alternating with this one
// run by run, so both meet the same machine: the bench prints each one's right answers and search
// time, and the time ratio. Raw results with `--out FILE.json`.
//
//   npm run build && node bench/tune-busy.mjs [--runs 20] [--busy 1] [--window 500] [--trials 4]
//     [--baseline OTHER/dist/cli/main.js] [--out FILE.json]
import { spawn } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, ROOT, fmt, run, startServer, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : def;
};
const runs = Number(flag("--runs", "20"));
const busy = Number(flag("--busy", "1"));
const windowMs = flag("--window", "500");
const trials = flag("--trials", "4");
const baseline = flag("--baseline", undefined);
const outFile = flag("--out", undefined);

const FIXTURE = path.join(ROOT, "test/fixtures/tune/sleepy");
const CASES = [
  {
    name: "instances",
    model: "sleepy",
    concurrency: 4,
    space: { batching: [false], instances: [1, 2] },
    want: (c) => c.instances === 2,
    answer: "2 instances",
  },
  {
    name: "batching",
    model: "sleepy",
    concurrency: 8,
    space: { batching: [false, true], maxQueueDelayMicroseconds: [0], preferredBatchSize: [[]], instances: [1] },
    want: (c) => c.batching,
    answer: "batching on",
  },
  {
    name: "stay",
    model: "sleepy_two",
    concurrency: 4,
    space: { batching: [false], instances: [1, 2] },
    want: (c) => c.instances === 2,
    answer: "2 instances",
  },
];

const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-tune-busy-"));
const server = await startServer({
  only: [],
  prepare: async (models) => {
    await fsp.cp(FIXTURE, path.join(models, "sleepy"), { recursive: true });
    await fsp.cp(FIXTURE, path.join(models, "sleepy_two"), { recursive: true });
    const cfg = path.join(models, "sleepy_two", "config.pbtxt");
    const text = await fsp.readFile(cfg, "utf8");
    await fsp.writeFile(cfg, text.replace('name: "sleepy"', 'name: "sleepy_two"').replace("count: 1", "count: 2"));
  },
});
const loops = [];
for (let i = 0; i < busy; i++) loops.push(spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
const stopAll = async () => {
  for (const l of loops) l.kill("SIGKILL");
  await server.stop();
  await fsp.rm(work, { recursive: true, force: true });
};
process.on("SIGINT", () => void stopAll().then(() => process.exit(130)));

const sides = [
  { label: "this build", cli: CLI },
  ...(baseline ? [{ label: "baseline", cli: path.resolve(baseline) }] : []),
];
const results = [];
const load = () => os.loadavg()[0];
try {
  for (let i = 0; i < runs; i++) {
    const c = CASES[i % CASES.length];
    const spaceFile = path.join(work, `${c.name}.json`);
    await fsp.writeFile(spaceFile, JSON.stringify(c.space));
    // Alternate which side goes first, so neither always meets the same moment of the machine.
    const order = i % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const t0 = Date.now();
      const r = await run(
        process.execPath,
        [
          side.cli,
          "tune",
          c.model,
          "--concurrency",
          String(c.concurrency),
          "--space",
          spaceFile,
          "-p",
          windowMs,
          "-r",
          trials,
          "--json",
          "--no-history",
        ],
        server.env,
        600_000,
      );
      const wallS = (Date.now() - t0) / 1000;
      let rep;
      try {
        rep = JSON.parse(r.stdout);
      } catch {
        rep = undefined;
      }
      const winner = rep?.trials.find((t) => t.index === rep.winner);
      const row = {
        run: i + 1,
        case: c.name,
        side: side.label,
        load: load(),
        ok: r.code === 0 && winner !== undefined && c.want(winner.candidate),
        winner: winner?.key ?? `exit ${r.code}: ${(r.stderr.trim().split("\n").pop() ?? "").slice(0, 120)}`,
        candidates: rep?.trials.length ?? 0,
        searchS: rep ? rep.elapsedMs / 1000 : wallS,
        confirmS: rep?.timing?.confirmMs !== undefined ? rep.timing.confirmMs / 1000 : undefined,
        verdict: rep?.confirmation?.verdict ?? rep?.notConfirmed ?? "-",
        throughputs: rep?.trials.map((t) => (t.measured ? Math.round(t.measured.throughput) : null)),
      };
      results.push(row);
      console.error(
        `run ${row.run} ${row.case} (${row.side}, load ${fmt(row.load)}): ${row.ok ? "right" : "WRONG"}, ${row.winner}, ${fmt(row.searchS)} s, ${row.verdict}, ${JSON.stringify(row.throughputs)}`,
      );
      if (outFile) await fsp.writeFile(outFile, JSON.stringify({ runs, busy, windowMs, trials, results }, null, 2));
    }
  }
} finally {
  await stopAll();
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
const summary = sides.map((side) => {
  const rows = results.filter((r) => r.side === side.label);
  return {
    side: side.label,
    right: rows.filter((r) => r.ok).length,
    runs: rows.length,
    medianS: median(rows.map((r) => r.searchS)),
    totalS: rows.reduce((a, r) => a + r.searchS, 0),
    overturned: rows.filter((r) => r.verdict === "overturned").length,
  };
});
console.log(
  `tune on a busy machine: ${runs} runs, ${busy} busy loop(s) beside the server, ${windowMs} ms windows, at most ${trials}; cases: ${CASES.map((c) => `${c.name} -> ${c.answer}`).join(", ")}`,
);
console.log(
  table([
    ["build", "right answers", "median search s", "total search s", "overturned by the side-by-side check"],
    ...summary.map((s) => [s.side, `${s.right}/${s.runs}`, fmt(s.medianS), fmt(s.totalS), String(s.overturned)]),
  ]),
);
if (summary.length === 2 && summary[1].totalS > 0)
  console.log(`search time, this build / baseline: ${fmt(summary[0].totalS / summary[1].totalS, 2)}`);
