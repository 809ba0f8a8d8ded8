// How long Triton keeps running after `q` in the dashboard and after `triton-dev down`, on the
// sample repository (models/), stopping as triton-dev does (only the unloads that run a model's
// code, finalize, are waited for) against waiting for every unload as Triton's own exit does
// (TRITON_DEV_STOP=wait-all, what triton-dev did before), measured in the same run.
//
//   npm run build && TRITON_DEV_HOME=... node bench/stop.mjs [--runs 5]
//
// Each run serves the sample repository on the local runtime with its own state folder and free
// loopback ports. `q`: `up` with its dashboard in a private tmux terminal, `q` sent once Triton is
// ready. `down`: `up --detach`, then `triton-dev down`. The time is from the key (or the start of
// the `down` command) until no process of the server's group is left (zombies aside), polled every
// 10 ms in /proc; `down`'s own exit is reported beside it. The two ways alternate (new, old, old,
// new, ...) so that whatever else the machine does weighs on both alike. Prints each side's median
// and the ratio old/new.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, fmt, freePort, has, requireBuild, ROOT, run } from "./lib.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const RUNS = arg("--runs", 5);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SOCKET = `triton-dev-stop-bench-${process.pid}`;
const tmux = (...a) => execFileSync("tmux", ["-L", SOCKET, ...a], { encoding: "utf8" });

/** Members of process group `pgid` still running (zombies waiting to be reaped have exited). */
function groupAlive(pgid) {
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z" && state !== "X") return true;
    } catch {
      // exited meanwhile
    }
  }
  return false;
}

async function untilGone(pgid, t0, limitMs = 60_000) {
  while (groupAlive(pgid)) {
    if (Date.now() - t0 > limitMs) throw new Error(`process group ${pgid} still running after ${limitMs} ms`);
    await sleep(10);
  }
  return Date.now() - t0;
}

/** The python backend's shared-memory regions the group's members map; those still there after a stop are counted. */
function mappedRegions(pgid) {
  const found = new Set();
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) !== pgid) continue;
      for (const line of fs.readFileSync(`/proc/${e}/maps`, "utf8").split("\n")) {
        const at = line.indexOf("/dev/shm/triton_python_backend_shm_region_");
        if (at >= 0) found.add(line.slice(at).replace(/ \(deleted\)$/, ""));
      }
    } catch {
      // exited meanwhile
    }
  }
  return [...found];
}
let leftRegions = 0;
function countLeft(what, regions) {
  const left = regions.filter((r) => fs.existsSync(r));
  if (left.length) console.error(`${what}: ${left.length} of ${regions.length} shared-memory regions left`);
  leftRegions += left.length;
}

async function setup(way) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `triton-dev-stop-bench-`));
  const models = path.join(dir, "models");
  await fsp.cp(path.join(ROOT, "models"), models, { recursive: true, filter: (s) => !s.includes("__pycache__") });
  const ports = { http: await freePort(), grpc: await freePort(), metrics: await freePort() };
  const env = { ...process.env, TRITON_DEV_STATE_DIR: path.join(dir, "state") };
  delete env.CI;
  delete env.CONTINUOUS_INTEGRATION;
  if (way === "old") env.TRITON_DEV_STOP = "wait-all";
  else delete env.TRITON_DEV_STOP;
  const portArgs = ["--http-port", ports.http, "--grpc-port", ports.grpc, "--metrics-port", ports.metrics].map(String);
  return { dir, models, ports, env, portArgs };
}

const record = async (s) => JSON.parse(await fsp.readFile(path.join(s.env.TRITON_DEV_STATE_DIR, "run.json"), "utf8"));

async function waitReady(s, describe) {
  const deadline = Date.now() + 180_000;
  for (;;) {
    // A connection kept open would hold Triton's exit (it waits for every open HTTP connection).
    const ok = await fetch(`http://127.0.0.1:${s.ports.http}/v2/health/ready`, { headers: { connection: "close" } })
      .then((r) => r.ok)
      .catch(() => false);
    if (ok && fs.existsSync(path.join(s.env.TRITON_DEV_STATE_DIR, "run.json"))) return;
    if (Date.now() > deadline) throw new Error(`Triton did not become ready: ${describe()}`);
    await sleep(250);
  }
}

/** `down` after `up --detach`: ms until the group is gone, and until `down` exited. */
async function measureDown(way) {
  const s = await setup(way);
  const up = await run(
    process.execPath,
    [CLI, "up", "--detach", "--runtime", "local", "--models", s.models, ...s.portArgs],
    s.env,
  );
  if (up.code !== 0) throw new Error(`up --detach failed:\n${up.stdout}${up.stderr}`);
  const { pid } = await record(s);
  await sleep(1000);
  const regions = mappedRegions(pid);
  // For scale: the same machine starting the CLI for a command that does nothing.
  const v0 = Date.now();
  await run(process.execPath, [CLI, "--version"], s.env);
  const version = Date.now() - v0;
  const t0 = Date.now();
  const child = spawn(process.execPath, [CLI, "down"], { env: s.env, stdio: "ignore" });
  const exited = new Promise((r) => child.once("exit", () => r(Date.now() - t0)));
  const gone = await untilGone(pid, t0);
  const cli = await exited;
  countLeft(`down (${way})`, regions);
  await fsp.rm(s.dir, { recursive: true, force: true });
  return { gone, cli, version };
}

/** `q` in the dashboard of a foreground `up`: ms until the group is gone. */
async function measureQ(way) {
  const s = await setup(way);
  const vars = Object.entries(s.env)
    .filter(([k]) => /^(PATH|HOME|LANG|TRITON_DEV_\w+)$/.test(k))
    .map(([k, v]) => `${k}=${v}`);
  tmux(
    "new-session",
    "-d",
    "-s",
    "q",
    "-x",
    "120",
    "-y",
    "40",
    "--",
    "env",
    "-i",
    "TERM=tmux-256color",
    ...vars,
    process.execPath,
    CLI,
    "up",
    "--runtime",
    "local",
    "--models",
    s.models,
    ...s.portArgs,
  );
  try {
    await waitReady(s, () => tmux("capture-pane", "-p", "-t", "q"));
    const { pid } = await record(s);
    // env(1) execs node, so the pane's process is `up` itself.
    const upPid = Number(tmux("display-message", "-p", "-t", "q", "#{pane_pid}").trim());
    await sleep(1000);
    const regions = mappedRegions(pid);
    const t0 = Date.now();
    tmux("send-keys", "-t", "q", "q");
    const gone = await untilGone(pid, t0);
    // The regions are removed once the group is gone, before `up` exits.
    await untilGone(upPid, Date.now(), 30_000).catch(() => undefined);
    countLeft(`q (${way})`, regions);
    return { gone };
  } finally {
    try {
      execFileSync("tmux", ["-L", SOCKET, "kill-server"], { stdio: "ignore" });
    } catch {
      // the session ended with `up`
    }
    await run(process.execPath, [CLI, "down"], s.env, 60_000);
    await fsp.rm(s.dir, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
  requireBuild();
  if (!has("tmux")) {
    console.error("bench: tmux is needed for the dashboard's q");
    process.exit(2);
  }
  const results = { q: { new: [], old: [] }, down: { new: [], old: [], newCli: [], oldCli: [] }, version: [] };
  for (let i = 0; i < RUNS; i++) {
    const order = i % 2 === 0 ? ["new", "old"] : ["old", "new"];
    for (const way of order) {
      const d = await measureDown(way);
      results.down[way].push(d.gone);
      results.down[`${way}Cli`].push(d.cli);
      results.version.push(d.version);
      const q = await measureQ(way);
      results.q[way].push(q.gone);
      console.error(`run ${i + 1} ${way}: down ${d.gone} ms (command ${d.cli} ms), q ${q.gone} ms`);
    }
  }
  console.log(
    `Stop on the sample repository (local runtime), median of ${RUNS} each, ms from the key until no process of the server is left:`,
  );
  console.log("");
  console.log("| stop | waiting for every unload (before) | only the unloads that run code (now) | before / now |");
  console.log("| --- | --- | --- | --- |");
  for (const k of ["q", "down"]) {
    const o = median(results[k].old);
    const n = median(results[k].new);
    console.log(`| ${k} | ${fmt(o, 0)} | ${fmt(n, 0)} | ${fmt(o / n, 1)}x |`);
  }
  console.log(
    `| down, the command's exit | ${fmt(median(results.down.oldCli), 0)} | ${fmt(median(results.down.newCli), 0)} | ${fmt(median(results.down.oldCli) / median(results.down.newCli), 1)}x |`,
  );
  console.log(
    `| \`triton-dev --version\` (starting the CLI, for scale) | ${fmt(median(results.version), 0)} | ${fmt(median(results.version), 0)} | - |`,
  );
  console.log("");
  console.log(`raw (ms): ${JSON.stringify(results)}`);
  console.log(`python shared-memory regions of these servers left in /dev/shm: ${leftRegions}`);
}

await main();
