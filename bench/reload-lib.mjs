// Shared pieces of the hot-reload benchmarks (reload-latency.mjs, reload-soak.mjs): a detached
// `triton-dev up` on a copy of the sample models, its edit timeline read from the run's
// events.jsonl, saves to a sample python model that change what it computes, inference to check
// what is served, raw tritonserver from the same environment, and /proc counts.
import { spawn } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, ROOT, freePort, requireBuild, rng, run } from "./lib.mjs";

export { rng };

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  if (i < 0) return dflt;
  const v = process.argv[i + 1];
  return typeof dflt === "number" ? Number(v) : v;
}
export const flag = (name) => process.argv.includes(name);

export function percentile(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
export const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

export async function freePorts() {
  const seen = new Set();
  while (seen.size < 3) seen.add(await freePort());
  const [http, grpc, metrics] = [...seen];
  return { http, grpc, metrics };
}

/** The environment `triton-dev setup` prepared (tritonserver, backends, venv). */
export function readEnvironment() {
  const home = process.env.TRITON_DEV_HOME
    ? path.resolve(process.env.TRITON_DEV_HOME)
    : path.join(
        process.env.XDG_CACHE_HOME ? path.resolve(process.env.XDG_CACHE_HOME) : path.join(os.homedir(), ".cache"),
        "triton-dev",
      );
  const file = path.join(home, "environment.json");
  if (!fs.existsSync(file)) {
    console.error(`bench: no environment at ${home}; run \`triton-dev setup\` (or set TRITON_DEV_HOME)`);
    process.exit(2);
  }
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

/** The sample models a model needs beside it (sentiment_classifier reads the tokenizer's vocabulary). */
const NEEDS = { sentiment_classifier: ["bert_tokenizer"] };

/** Copy sample models (all, or `only` and what they need) into `dest`, without caches. */
export async function copyModels(dest, only) {
  const keep = only ? new Set(only.flatMap((m) => [m, ...(NEEDS[m] ?? [])])) : undefined;
  const src = path.join(ROOT, "models");
  await fsp.cp(src, dest, {
    recursive: true,
    filter: (s) => {
      const rel = path.relative(src, s);
      return !rel.split(path.sep).includes("__pycache__") && (!keep || rel === "" || keep.has(rel.split(path.sep)[0]));
    },
  });
}

/**
 * A detached `triton-dev up` on a copy of all the sample models, in its own state folder.
 * Returns where its run lives (events.jsonl, Triton's log) and a stop that runs `down`.
 */
export async function startUp({ mode, pollSecs = 1, extraArgs = [] }) {
  requireBuild();
  const stateDir = await fsp.mkdtemp(path.join(os.tmpdir(), `triton-dev-bench-reload-${mode}-`));
  const env = { ...process.env, TRITON_DEV_STATE_DIR: stateDir, CI: "1" };
  const ports = await freePorts();
  const modelsDir = path.join(stateDir, "models");
  await copyModels(modelsDir);
  const args = [
    "up",
    "--detach",
    "--models",
    modelsDir,
    "--reload",
    mode,
    ...(mode === "poll" ? ["--poll-secs", String(pollSecs)] : []),
    "--http-port",
    String(ports.http),
    "--grpc-port",
    String(ports.grpc),
    "--metrics-port",
    String(ports.metrics),
    ...extraArgs,
  ];
  const up = await run(process.execPath, [CLI, ...args], env);
  const stop = async () => {
    const r = await run(process.execPath, [CLI, "down"], env);
    if (r.code !== 0) console.error(`bench: triton-dev down: ${r.stderr}`);
    await fsp.rm(stateDir, { recursive: true, force: true });
  };
  if (up.code !== 0) {
    console.error(up.stdout + up.stderr);
    await stop();
    throw new Error(`bench: \`triton-dev ${args.join(" ")}\` failed`);
  }
  const status = JSON.parse((await run(process.execPath, [CLI, "status", "--json"], env)).stdout);
  const runDir = path.dirname(status.logFile);
  return {
    env,
    ports,
    stateDir,
    modelsDir,
    runDir,
    status,
    baseUrl: `http://127.0.0.1:${ports.http}`,
    eventsFile: path.join(runDir, "events.jsonl"),
    logFile: status.logFile,
    stop,
  };
}

/** Follows a file of lines as it grows (the run's events.jsonl, Triton's log). */
export class LineFollower {
  constructor(file, { fromEnd = false, parse = (l) => l } = {}) {
    this.file = file;
    this.offset = fromEnd && fs.existsSync(file) ? fs.statSync(file).size : 0;
    this.partial = "";
    this.items = [];
    this.parse = parse;
  }
  poll() {
    let st;
    try {
      st = fs.statSync(this.file);
    } catch {
      return;
    }
    if (st.size <= this.offset) return;
    const fd = fs.openSync(this.file, "r");
    try {
      const buf = Buffer.alloc(st.size - this.offset);
      fs.readSync(fd, buf, 0, buf.length, this.offset);
      this.offset = st.size;
      const lines = (this.partial + buf.toString("utf8")).split("\n");
      this.partial = lines.pop() ?? "";
      for (const l of lines) {
        if (!l.trim()) continue;
        try {
          this.items.push({ item: this.parse(l), seenAt: Date.now() });
        } catch {
          // a torn line; the writer appends whole lines, so this is rare and harmless
        }
      }
    } finally {
      fs.closeSync(fd);
    }
  }
  /** The first item at index >= from matching pred, polling every 10 ms; undefined at the deadline. */
  async waitFor(pred, timeoutMs, from = 0) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.poll();
      for (let i = from; i < this.items.length; i++)
        if (pred(this.items[i].item)) return { ...this.items[i], index: i };
      if (Date.now() > deadline) return undefined;
      await sleep(10);
    }
  }
}

/** Triton's glog prefix: "I1129 20:43:51.528058 5709 file.cc:123] ..." in local time. */
export function tritonLogTime(line, now = new Date()) {
  const m = /^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) /.exec(line);
  if (!m) return undefined;
  const [, mo, d, h, mi, s, us] = m;
  return new Date(
    now.getFullYear(),
    Number(mo) - 1,
    Number(d),
    Number(h),
    Number(mi),
    Number(s),
    Math.floor(Number(us) / 1000),
  ).getTime();
}

/**
 * Saves of a sample model's model.py that change what it computes: models with a `SEED = N`
 * line get a new seed (new weights, so a new output for the same input); others get a changed
 * comment line. `save(k)` writes edit k as an editor would and returns when the new content
 * became visible (ms since epoch).
 */
export class ModelEditor {
  constructor(modelsDir, model, style = "rename") {
    this.model = model;
    this.file = path.join(modelsDir, model, "1", "model.py");
    this.original = fs.readFileSync(this.file, "utf8");
    this.seeded = /^SEED = \d+$/m.test(this.original);
    this.style = style;
  }
  content(k, { broken = false } = {}) {
    let text = this.seeded
      ? this.original.replace(/^SEED = (\d+)$/m, (_m, n) => `SEED = ${Number(n) + k}`)
      : `${this.original}\n# bench edit ${k}\n`;
    // A module-level raise makes the load fail (for the soak's invalid edits).
    if (broken) text += `\nraise RuntimeError("bench: broken edit ${k}")\n`;
    return text;
  }
  async save(k, opts) {
    const text = this.content(k, opts);
    if (this.style === "inplace") {
      const at = Date.now();
      await fsp.writeFile(this.file, text);
      return at;
    }
    // Write-then-rename, as editors with atomic saves do (JetBrains, vim's default, ...).
    const tmp = path.join(path.dirname(this.file), `.model.py.bench-${process.pid}.tmp`);
    await fsp.writeFile(tmp, text);
    const at = Date.now();
    await fsp.rename(tmp, this.file);
    return at;
  }
  async restore() {
    await fsp.writeFile(this.file, this.original);
  }
}

/** One request with a fixed input to a sample model; resolves with the output values. */
export async function infer(baseUrl, model) {
  const inputs = {
    image_classifier: () => [
      {
        name: "input_1",
        shape: [1, 3, 224, 224],
        datatype: "FP32",
        data: Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * 37) % 255) / 255),
      },
    ],
    sentiment_classifier: () => [
      {
        name: "input_ids",
        shape: [1, 128],
        datatype: "INT64",
        data: Array.from({ length: 128 }, (_, i) => (i === 0 ? 2 : i < 6 ? 100 + i * 7 : i === 6 ? 3 : 0)),
      },
      {
        name: "attention_mask",
        shape: [1, 128],
        datatype: "INT64",
        data: Array.from({ length: 128 }, (_, i) => (i <= 6 ? 1 : 0)),
      },
    ],
    bert_tokenizer: () => [
      { name: "TEXT_INPUT", shape: [1, 1], datatype: "BYTES", data: ["a movie worth seeing twice"] },
    ],
  }[model];
  if (!inputs) throw new Error(`bench: no sample input for ${model}`);
  const res = await fetch(`${baseUrl}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ inputs: inputs() }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`infer ${model}: HTTP ${res.status}: ${body.error ?? JSON.stringify(body)}`);
  return body.outputs[0].data;
}

export const sameOutput = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * tritonserver from triton-dev's environment on `repository`, as a user would run it by hand
 * (Triton's defaults, besides the mode and ports): what triton-dev is compared with.
 */
export async function startRawTriton({ environment, repository, pollSecs, logFile }) {
  const ports = await freePorts();
  const env = {
    ...process.env,
    PATH: [`${environment.venv}/bin`, process.env.PATH].filter(Boolean).join(":"),
    VIRTUAL_ENV: environment.venv,
    LD_LIBRARY_PATH: [...environment.libDirs, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
  };
  const args = [
    `--model-repository=${repository}`,
    `--backend-directory=${environment.backendDir}`,
    "--model-control-mode=poll",
    `--repository-poll-secs=${pollSecs}`,
    `--http-address=127.0.0.1`,
    `--http-port=${ports.http}`,
    `--grpc-address=127.0.0.1`,
    `--grpc-port=${ports.grpc}`,
    `--metrics-address=127.0.0.1`,
    `--metrics-port=${ports.metrics}`,
  ];
  const out = fs.openSync(logFile, "a");
  const child = spawn(environment.serverBin, args, { env, stdio: ["ignore", out, out], detached: true });
  fs.closeSync(out);
  const exited = new Promise((r) => child.once("exit", r));
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }, 20_000);
      await exited;
      clearTimeout(t);
    }
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`bench: raw tritonserver exited (${child.exitCode}); see ${logFile}`);
    const ok = await fetch(`${baseUrl}/v2/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`bench: raw tritonserver not ready within 120 s; see ${logFile}`);
    }
    await sleep(200);
  }
  return { pid: child.pid, baseUrl, ports, stop };
}

/** Open file descriptors of a process (/proc/PID/fd). */
export function openFds(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** Every process on the machine as {pid, ppid, cmd}. */
export function processes() {
  const out = [];
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmd = fs.readFileSync(`/proc/${e}/cmdline`, "utf8").replace(/\0/g, " ").trim();
      out.push({ pid: Number(e), ppid, cmd });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** `pid` and all its descendants. */
export function descendants(pid, all = processes()) {
  const tree = [];
  const walk = (p) => {
    for (const c of all.filter((x) => x.ppid === p)) {
      tree.push(c);
      walk(c.pid);
    }
  };
  walk(pid);
  return tree;
}
