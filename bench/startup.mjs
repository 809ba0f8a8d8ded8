#!/usr/bin/env node
// Benchmark: how long the CLI takes to start, as a user meets it: each command below is a whole
// process (node, module loading, the command, exit), timed from spawn to exit, beside
// `node -e 0` measured in the same run so that a busy machine shows in both. Rounds are
// interleaved (every command once per round, the order rotated each round) after one untimed
// warm-up round, and the median, min and max per command are reported.
//
//   npm run build && node bench/startup.mjs [--rounds 11] [--vs OTHER/dist/cli/main.js] [--out FILE.json]
//
// $TRITON_DEV_CLI times another build (e.g. bundle/triton-dev.mjs). --vs also times a second
// build (an older commit built in a temporary folder) in the same rounds, each of its commands
// beside ours, and prints ours / its. `status` runs with $TRITON_DEV_STATE_DIR an empty
// temporary folder, so it finds nothing running; `lint models` lints the sample repository.
// Starts no server.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { CLI, ROOT, fmt, requireBuild, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const ROUNDS = Math.max(5, Number(flag("--rounds", 11)) || 11);
const OUT = flag("--out", undefined);
const VS = flag("--vs", undefined) && path.resolve(flag("--vs"));
if (VS && !fs.existsSync(VS)) {
  console.error(`bench: --vs ${VS} does not exist`);
  process.exit(2);
}

requireBuild();
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-startup-"));
const env = { ...process.env, TRITON_DEV_STATE_DIR: stateDir, CI: "1" };

// `code`: the exit status the command must end with (status says "nothing is running" with 1);
// `targetMs`: the goal for its median, where it has one.
const COMMANDS = [
  { name: "--help", args: ["--help"], code: 0, targetMs: 120 },
  { name: "--version", args: ["--version"], code: 0 },
  { name: "status", args: ["status"], code: 1, targetMs: 120 },
  { name: "lint models", args: ["lint", "models"], code: 0, targetMs: 250 },
  { name: "up --help", args: ["up", "--help"], code: 0 },
];
const CASES = [
  { name: "node -e 0", argv: ["-e", "0"], code: 0 },
  ...COMMANDS.map((c) => ({ ...c, name: `triton-dev ${c.name}`, argv: [CLI, ...c.args] })),
  ...(VS ? COMMANDS.map((c) => ({ ...c, name: `vs: triton-dev ${c.name}`, argv: [VS, ...c.args], vs: true })) : []),
];

// CPU time of the waited-for children (user + system), from this process's /proc/self/stat in
// clock ticks (USER_HZ, 100 on Linux): 10 ms steps, so only its mean over the rounds is shown. It
// leaves out the time spent waiting for a core, which a busy machine adds to the wall time (it
// still slows the work itself); undefined where there is no /proc.
function childCpuMs() {
  try {
    const f = fs.readFileSync("/proc/self/stat", "utf8");
    const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

function once(c) {
  const cpu0 = childCpuMs();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, c.argv, { cwd: ROOT, env, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  const ms = performance.now() - t0;
  const cpu1 = childCpuMs();
  if (cpu0 !== undefined && cpu1 !== undefined) cpuMs.set(c.name, (cpuMs.get(c.name) ?? 0) + cpu1 - cpu0);
  if (r.status !== c.code) {
    console.error(`bench: \`${c.name}\` exited ${r.status ?? r.signal}, expected ${c.code}:\n${r.stdout}${r.stderr}`);
    process.exit(1);
  }
  return ms;
}

const samples = new Map(CASES.map((c) => [c.name, []]));
const cpuMs = new Map();
for (const c of CASES) once(c);
cpuMs.clear();
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < CASES.length; i++) {
    const c = CASES[(i + round) % CASES.length];
    samples.get(c.name).push(once(c));
  }
}
fs.rmSync(stateDir, { recursive: true, force: true });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stats = CASES.map((c) => {
  const xs = samples.get(c.name);
  const cpu = cpuMs.has(c.name) ? cpuMs.get(c.name) / xs.length : undefined;
  return { ...c, median: median(xs), min: Math.min(...xs), max: Math.max(...xs), cpu, samples: xs };
});
const base = stats[0].median;
const vsOf = (s) => stats.find((v) => v.name === `vs: ${s.name}`);
const rows = [
  ["command", "median ms", "min", "max", "x node -e 0", ...(VS ? ["x vs"] : []), "cpu ms (mean)", "target", "met"],
];
for (const s of stats)
  rows.push([
    s.name,
    fmt(s.median),
    fmt(s.min),
    fmt(s.max),
    fmt(s.median / base, 2),
    ...(VS ? [vsOf(s) ? fmt(s.median / vsOf(s).median, 2) : "-"] : []),
    s.cpu === undefined ? "-" : fmt(s.cpu, 0),
    s.targetMs && !s.vs ? `<= ${s.targetMs}` : "-",
    s.targetMs && !s.vs ? (s.median <= s.targetMs ? "yes" : "no") : "-",
  ]);
const shown = (f) => (f.startsWith(ROOT + path.sep) ? path.relative(ROOT, f) : f);
console.log(
  `${shown(CLI)}${VS ? ` vs ${shown(VS)}` : ""}, node ${process.version}, ${ROUNDS} rounds, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}`,
);
console.log(table(rows));
if (OUT)
  fs.writeFileSync(
    OUT,
    JSON.stringify(
      {
        cli: CLI,
        ...(VS ? { vs: VS } : {}),
        node: process.version,
        rounds: ROUNDS,
        cases: stats.map(({ name, median, min, max, cpu, targetMs, vs, samples }) => ({
          name,
          median,
          min,
          max,
          ...(cpu !== undefined ? { cpuMeanMs: cpu } : {}),
          ratio: median / base,
          ...(targetMs && !vs ? { targetMs, met: median <= targetMs } : {}),
          samples,
        })),
      },
      null,
      2,
    ) + "\n",
  );
