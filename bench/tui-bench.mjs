// CPU and memory of the `triton-dev up` dashboard, idle and while `triton-dev perf` loads its
// server, beside the same run with --no-ui; and the perf throughput with each.
//
//   npm run build && TRITON_DEV_HOME=... node bench/tui-bench.mjs [--idle-s 60] [--pairs 4] [--screen]
//
// Both runs are up at once, each in its own tmux terminal (120x40) with its own Triton and state
// folder: they sit idle through the same minute, then perf runs go to one and the other in the
// order ui, no-ui, no-ui, ui, ... so that whatever else the machine does weighs on both alike
// (on 2 cores, throughput drifts by more than the 5% under test from one minute to the next).
// Goals (issue 7): idle <= 2% of a core, RSS <= 150 MB, throughput with the dashboard within 5%.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, fmt, freePort, has, perfJson, requireBuild, run } from "./lib.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const IDLE_S = arg("--idle-s", 60);
const PAIRS = arg("--pairs", 4);
const SETTLE_S = 10;
const PERF_ARGS = ["offset", "--concurrency-range", "4", "-p", "2000"];
const TICK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

const CONFIG = `name: "offset"
backend: "python"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 100 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;
const MODEL = `import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", (pb_utils.get_input_tensor_by_name(r, "X").as_numpy() + 1.0).astype(np.float32))]) for r in requests]
`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SOCKET = `triton-dev-tui-bench-${process.pid}`;
const tmux = (...a) => execFileSync("tmux", ["-L", SOCKET, ...a], { encoding: "utf8" });

function cpuTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}
function rssMb(pid) {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

/** One `triton-dev up` in its own tmux window; `pid` is the `up` process itself. */
async function startUp(mode) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `triton-dev-tui-bench-${mode}-`));
  const models = path.join(dir, "models");
  await fsp.mkdir(path.join(models, "offset", "1"), { recursive: true });
  await fsp.writeFile(path.join(models, "offset", "config.pbtxt"), CONFIG);
  await fsp.writeFile(path.join(models, "offset", "1", "model.py"), MODEL);
  const ports = { http: await freePort(), grpc: await freePort(), metrics: await freePort() };
  const env = { ...process.env, TRITON_DEV_STATE_DIR: path.join(dir, "state") };
  delete env.CI;
  delete env.CONTINUOUS_INTEGRATION;
  const args = [
    "up",
    ...(mode === "no-ui" ? ["--no-ui"] : []),
    "--models",
    models,
    "--http-port",
    String(ports.http),
    "--grpc-port",
    String(ports.grpc),
    "--metrics-port",
    String(ports.metrics),
  ];
  const vars = Object.entries(env)
    .filter(([k]) => /^(PATH|HOME|LANG|TRITON_DEV_\w+)$/.test(k))
    .map(([k, v]) => `${k}=${v}`);
  // env(1) execs node, so the pane's pid is the `up` process.
  tmux(
    mode === "ui" ? "new-session" : "new-window",
    ...(mode === "ui" ? ["-d", "-s", "bench", "-x", "120", "-y", "40"] : ["-d", "-t", "bench"]),
    "-n",
    mode,
    "--",
    "env",
    "-i",
    "TERM=tmux-256color",
    ...vars,
    process.execPath,
    CLI,
    ...args,
  );
  const pid = Number(tmux("display-message", "-p", "-t", `bench:${mode}`, "#{pane_pid}").trim());
  return { mode, dir, env, ports, pid, target: `bench:${mode}`, runs: [], ticks: 0, secs: 0, rssMax: 0 };
}

async function waitReady(u) {
  const deadline = Date.now() + 180_000;
  while (
    !(await fetch(`http://127.0.0.1:${u.ports.http}/v2/health/ready`)
      .then((r) => r.ok)
      .catch(() => false))
  ) {
    if (Date.now() > deadline)
      throw new Error(`${u.mode}: Triton did not become ready:\n${tmux("capture-pane", "-p", "-t", u.target)}`);
    await sleep(500);
  }
}

/** Sample CPU and RSS of several processes over the same span. */
async function watch(procs, during) {
  const t0 = Date.now();
  const c0 = procs.map((p) => cpuTicks(p.pid));
  const rss = procs.map(() => []);
  let done = false;
  const sampler = (async () => {
    while (!done) {
      procs.forEach((p, i) => rss[i].push(rssMb(p.pid)));
      await sleep(1000);
    }
  })();
  await during();
  done = true;
  await sampler;
  const secs = (Date.now() - t0) / 1000;
  return procs.map((p, i) => ({
    ticks: cpuTicks(p.pid) - c0[i],
    secs,
    cpu: ((cpuTicks(p.pid) - c0[i]) / TICK / secs) * 100,
    rssMean: rss[i].reduce((a, b) => a + b, 0) / rss[i].length,
    rssMax: Math.max(...rss[i]),
  }));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

requireBuild();
if (!has("tmux")) {
  console.error("bench: tmux is needed (apt-get install tmux)");
  process.exit(2);
}
const ups = [];
try {
  ups.push(await startUp("ui"));
  ups.push(await startUp("no-ui"));
  await Promise.all(ups.map(waitReady));
  await sleep(SETTLE_S * 1000);
  console.error(`bench: both idle for ${IDLE_S} s ...`);
  const idle = await watch(ups, () => sleep(IDLE_S * 1000));
  ups.forEach((u, i) => (u.idle = idle[i]));
  const order = [];
  for (let i = 0; i < PAIRS; i++) order.push(...(i % 2 ? [ups[1], ups[0]] : [ups[0], ups[1]]));
  for (const u of order) {
    console.error(`bench: perf against the ${u.mode} run ...`);
    const [w] = await watch([u], async () => {
      const r = await perfJson(PERF_ARGS, u.env);
      u.runs.push(r.sweeps[0].levels[0].throughput);
    });
    u.ticks += w.ticks;
    u.secs += w.secs;
    u.rssMax = Math.max(u.rssMax, w.rssMax);
  }
  const [ui, plain] = ups;
  const screen = tmux("capture-pane", "-p", "-t", ui.target);
  const row = (u) =>
    `${u.mode.padEnd(6)}  ${fmt(u.idle.cpu, 2).padStart(9)}  ${fmt(u.idle.rssMean, 0).padStart(8)}  ${fmt(u.idle.rssMax, 0).padStart(7)}  ${fmt((u.ticks / TICK / u.secs) * 100, 2).padStart(9)}  ${fmt(u.rssMax, 0).padStart(7)}  ${fmt(median(u.runs), 0).padStart(7)}`;
  console.log(
    `triton-dev up in tmux (120x40), both at once: ${IDLE_S} s idle, then \`triton-dev perf ${PERF_ARGS.join(" ")}\` ${PAIRS}x against each, alternating (python model, local runtime, ${os.cpus().length} cores)`,
  );
  console.log("mode    idle CPU%  idle RSS  RSS max  perf CPU%  RSS max  infer/s (median)");
  console.log(row(ui));
  console.log(row(plain));
  console.log(
    `throughput per run: ui ${ui.runs.map((x) => fmt(x, 0)).join(", ")}; no-ui ${plain.runs.map((x) => fmt(x, 0)).join(", ")}`,
  );
  const ratio = median(ui.runs) / median(plain.runs);
  const rssMax = Math.max(ui.idle.rssMax, ui.rssMax);
  console.log(
    `with the dashboard / without: throughput ${fmt(ratio, 3)} (goal >= 0.95); dashboard idle CPU ${fmt(ui.idle.cpu, 2)}% of a core (goal <= 2); RSS max ${fmt(rssMax, 0)} MB (goal <= 150)`,
  );
  if (process.argv.includes("--screen")) console.log("\n" + screen);
} finally {
  for (const u of ups) {
    try {
      tmux("send-keys", "-t", u.target, u.mode === "ui" ? "q" : "C-c");
    } catch {
      // window already gone
    }
  }
  await sleep(6000);
  try {
    execFileSync("tmux", ["-L", SOCKET, "kill-server"], { stdio: "ignore" });
  } catch {
    // no server left
  }
  for (const u of ups) {
    await run(process.execPath, [CLI, "down"], u.env);
    await fsp.rm(u.dir, { recursive: true, force: true });
  }
}
