#!/usr/bin/env node
// Benchmark: `triton-dev lsp` as an editor meets it. A seeded workspace of 200 models (python
// models, ONNX models with their files, two-step ensembles) plus one ONNX model whose config is
// 300 lines; the built server is started over stdio and driven by vscode-languageserver-protocol's
// client, as VS Code's is. Measured in one run:
//
// - diagnostics: from a didChange of the 300-line config (alternately breaking an enum value and
//   fixing it) to the publishDiagnostics that answers it (the error there, or gone);
// - completion: from a completion request (field names inside `input [ { } ]`, enum values after
//   `data_type:`, ensemble step model names) to its answer;
// - the server's memory (VmRSS, and VmHWM, its peak) after the runs;
// - peers, in the same run: a request the server does not handle (the protocol's round trip and
//   nothing else), and `lintModel` of the same model called in this process on the saved files
//   (what a non-incremental server would do for each change: read and lint the whole repository).
//
//   npm run build && node bench/lsp.mjs [--rounds 200] [--out FILE.json]
//
// `--scale [--sizes 200,2000,20000]`: the same server on generated repositories of that many
// python models (every tenth an ensemble of one of them), each started fresh: open-to-first-
// diagnostics of one model's config (while the rest of the repository is still being read), the
// slowest answer to a request sent every 50 ms meanwhile (peer: the same request once the
// repository is read), keystroke p95 (a didChange to its publishDiagnostics), a new model folder
// named by an open ensemble seen (its finding gone), the same folder removed (its finding back), a
// model_name completion's size and time, and VmRSS once the repository is read. Goals (issue):
// requests within 100 ms while reading, a new or removed folder within 1 s at 20,000 models.
//
// Goals (issue): diagnostics p95 < 50 ms, completion p95 < 30 ms, RSS < 150 MB. Starts no Triton.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import {
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { CLI, ROOT, fmt, onnxModelBytes, requireBuild, rng, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const ROUNDS = Math.max(20, Number(flag("--rounds", 200)) || 200);
const OUT = flag("--out", undefined);
const MODELS = 200;
// Node flags for the server alone, e.g. BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p"
// (NODE_OPTIONS refuses --cpu-prof): where its event loop is busy.
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean);

requireBuild();
if (args.includes("--scale")) {
  await scaleBench((flag("--sizes", "200,2000,20000") ?? "").split(",").map(Number).filter(Boolean));
  process.exit(0);
}
const random = rng(26);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-lsp-bench-"));
const repo = path.join(work, "models");
const write = (rel, data) => {
  const p = path.join(repo, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, data);
};

// --- the workspace -----------------------------------------------------------------------------
const PY = `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x * 2)]))
        return out
`;
const io = (kind, name, type, dims) =>
  `${kind} [\n  {\n    name: "${name}"\n    data_type: ${type}\n    dims: [ ${dims.join(", ")} ]\n  }\n]\n`;
const pythonNames = [];
const onnxNames = [];
for (let i = 0; i < MODELS - 1; i++) {
  const kind = i % 10 < 6 ? "python" : i % 10 < 8 ? "onnx" : "ensemble";
  const name = `${kind}_${String(i).padStart(3, "0")}`;
  const dim = 1 + Math.floor(random() * 64);
  if (kind === "python") {
    pythonNames.push(name);
    write(
      `${name}/config.pbtxt`,
      `name: "${name}"\nbackend: "python"\nmax_batch_size: 8\n${io("input", "INPUT0", "TYPE_FP32", [dim])}${io("output", "OUTPUT0", "TYPE_FP32", [dim])}instance_group [ { count: 1 kind: KIND_CPU } ]\n`,
    );
    write(`${name}/1/model.py`, PY);
  } else if (kind === "onnx") {
    onnxNames.push(name);
    write(
      `${name}/config.pbtxt`,
      `name: "${name}"\nbackend: "onnxruntime"\nmax_batch_size: 8\n${io("input", "INPUT0", "TYPE_FP32", [dim])}${io("output", "OUTPUT0", "TYPE_FP32", [dim])}`,
    );
    write(
      `${name}/1/model.onnx`,
      onnxModelBytes(
        [{ name: "INPUT0", type: "TYPE_FP32", dims: [-1, dim] }],
        [{ name: "OUTPUT0", type: "TYPE_FP32", dims: [-1, dim] }],
      ),
    );
  } else {
    const a = pythonNames[Math.floor(random() * pythonNames.length)];
    write(
      `${name}/config.pbtxt`,
      `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 8\n${io("input", "IN", "TYPE_FP32", [-1])}${io("output", "OUT", "TYPE_FP32", [-1])}ensemble_scheduling {\n  step [\n    {\n      model_name: "${a}"\n      model_version: -1\n      input_map { key: "INPUT0" value: "IN" }\n      output_map { key: "OUTPUT0" value: "OUT" }\n    }\n  ]\n}\n`,
    );
    write(`${name}/1/.keep`, "");
  }
}
// The model whose config is edited: 300 lines, an ONNX file with its 30 inputs and 15 outputs.
const BIG = "big_detector";
const inputs = Array.from({ length: 30 }, (_, k) => ({ name: `in_${k}`, type: "TYPE_FP32", dims: [-1, 3, 32 + k] }));
const outputs = Array.from({ length: 15 }, (_, k) => ({ name: `out_${k}`, type: "TYPE_FP32", dims: [-1, 100 + k] }));
const tensorBlock = (kind, ts) =>
  `${kind} [\n${ts
    .map(
      (t, k) =>
        `  {\n    # ${kind} ${k}\n    name: "${t.name}"\n    data_type: TYPE_FP32\n    dims: [ ${t.dims.slice(1).join(", ")} ]\n  }${k + 1 < ts.length ? "," : ""}`,
    )
    .join("\n")}\n]\n`;
let big = `# A detector with many heads: the config the bench edits.\nname: "${BIG}"\nbackend: "onnxruntime"\nmax_batch_size: 16\n${tensorBlock("input", inputs)}${tensorBlock("output", outputs)}dynamic_batching {\n  preferred_batch_size: [ 4, 8, 16 ]\n  max_queue_delay_microseconds: 200\n}\ninstance_group [\n  {\n    count: 2\n    kind: KIND_CPU\n  }\n]\n`;
let fill = 0;
while (big.split("\n").length < 300) {
  big += `parameters {\n  key: "option_${fill}"\n  value: { string_value: "${fill++}" }\n}\n`;
}
write(`${BIG}/config.pbtxt`, big);
write(`${BIG}/1/model.onnx`, onnxModelBytes(inputs, outputs));
const bigFile = path.join(repo, BIG, "config.pbtxt");
const lines = big.split("\n").length - 1;

// --- the client --------------------------------------------------------------------------------
const env = { ...process.env, TRITON_DEV_STATE_DIR: path.join(work, "state"), CI: "1" };
const child = spawn(process.execPath, [...SERVER_NODE_ARGS, CLI, "lsp", "--stdio"], {
  env,
  stdio: ["pipe", "pipe", "inherit"],
});
const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
let onDiagnostics = () => {};
conn.onNotification("textDocument/publishDiagnostics", (p) => onDiagnostics(p));
conn.listen();
const uri = pathToFileURL(bigFile).href;
const diagnosticsFor = (want) =>
  new Promise((resolve) => {
    onDiagnostics = (p) => {
      if (p.uri === uri && want(p.diagnostics)) resolve(p.diagnostics);
    };
  });

await conn.sendRequest("initialize", {
  processId: process.pid,
  rootUri: pathToFileURL(repo).href,
  capabilities: { textDocument: { completion: { completionItem: { snippetSupport: true } } } },
});
await conn.sendNotification("initialized", {});
let t0 = performance.now();
const first = diagnosticsFor(() => true);
await conn.sendNotification("textDocument/didOpen", {
  textDocument: { uri, languageId: "pbtxt", version: 1, text: big },
});
const firstDiagnostics = await first;
const openMs = performance.now() - t0;
if (firstDiagnostics.length !== 0) {
  console.error(`bench: the workspace's big config is not clean: ${JSON.stringify(firstDiagnostics.slice(0, 3))}`);
  process.exit(1);
}

// --- diagnostics after a change --------------------------------------------------------------------
let version = 1;
const broken = big.replace("data_type: TYPE_FP32", "data_type: TYPE_FP3");
const diagMs = [];
for (let r = 0; r < ROUNDS + 5; r++) {
  const breaking = r % 2 === 0;
  const got = diagnosticsFor((ds) => (breaking ? ds.some((d) => d.code === "config-enum") : ds.length === 0));
  t0 = performance.now();
  await conn.sendNotification("textDocument/didChange", {
    textDocument: { uri, version: ++version },
    contentChanges: [{ text: breaking ? broken : big }],
  });
  await got;
  if (r >= 5) diagMs.push(performance.now() - t0);
}

// --- completion ----------------------------------------------------------------------------------
const bigLines = big.split("\n");
const lineOf = (needle) => bigLines.findIndex((l) => l.includes(needle));
const completionAt = [
  { what: "field names in input [ { } ]", line: lineOf('name: "in_7"'), character: 4 },
  { what: "enum values after data_type:", line: lineOf('name: "in_9"') + 1, character: "    data_type: ".length },
  { what: "fields in dynamic_batching { }", line: lineOf("max_queue_delay_microseconds"), character: 2 },
];
const complMs = [];
const counts = new Map();
for (let r = 0; r < ROUNDS + 5; r++) {
  const at = completionAt[r % completionAt.length];
  t0 = performance.now();
  const items = await conn.sendRequest("textDocument/completion", {
    textDocument: { uri },
    position: { line: at.line, character: at.character },
  });
  if (r >= 5) complMs.push(performance.now() - t0);
  counts.set(at.what, items.length);
}
// Step model names in an ensemble (the repository's 200 names).
const ensembleFile = path.join(repo, "ensemble_008", "config.pbtxt");
const ensembleText = fs.readFileSync(ensembleFile, "utf8");
await conn.sendNotification("textDocument/didOpen", {
  textDocument: { uri: pathToFileURL(ensembleFile).href, languageId: "pbtxt", version: 1, text: ensembleText },
});
const stepLine = ensembleText.split("\n").findIndex((l) => l.includes("model_name:"));
const stepMs = [];
let stepItems = 0;
for (let r = 0; r < Math.floor(ROUNDS / 2) + 5; r++) {
  t0 = performance.now();
  const items = await conn.sendRequest("textDocument/completion", {
    textDocument: { uri: pathToFileURL(ensembleFile).href },
    position: { line: stepLine, character: "      model_name: ".length },
  });
  if (r >= 5) stepMs.push(performance.now() - t0);
  stepItems = items.length;
}

// --- peers ---------------------------------------------------------------------------------------
const rttMs = [];
for (let r = 0; r < ROUNDS + 5; r++) {
  t0 = performance.now();
  try {
    await conn.sendRequest("textDocument/documentSymbol", { textDocument: { uri } });
  } catch {
    // MethodNotFound: the round trip is what is measured.
  }
  if (r >= 5) rttMs.push(performance.now() - t0);
}
const { lintModel } = await import(pathToFileURL(path.join(ROOT, "dist/repo/lint.js")).href);
const peerLintMs = [];
for (let r = 0; r < Math.min(ROUNDS, 40) + 2; r++) {
  t0 = performance.now();
  await lintModel(repo, BIG);
  if (r >= 2) peerLintMs.push(performance.now() - t0);
}

const status = fs.readFileSync(`/proc/${child.pid}/status`, "utf8");
const rssMb = Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
const hwmMb = Number(/VmHWM:\s+(\d+)/.exec(status)[1]) / 1024;

await conn.sendRequest("shutdown");
await conn.sendNotification("exit");
await new Promise((r) => child.once("exit", r));
conn.dispose();
if (!process.env.BENCH_KEEP) fs.rmSync(work, { recursive: true, force: true });
else console.log(`kept ${work}`);

// --- report --------------------------------------------------------------------------------------
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const rtt50 = q(rttMs, 50);
const row = (name, xs, goal) => [
  name,
  fmt(q(xs, 50), 1),
  fmt(q(xs, 95), 1),
  fmt(Math.max(...xs), 1),
  fmt(q(xs, 50) / rtt50, 1) + "x",
  goal ?? "",
];
console.log(
  `workspace: ${MODELS} models (${pythonNames.length} python, ${onnxNames.length} ONNX, ${MODELS - 1 - pythonNames.length - onnxNames.length} ensembles, 1 edited), edited config ${lines} lines; ${ROUNDS} rounds; node ${process.version}, ${os.cpus().length} cores`,
);
console.log(`open to first diagnostics (the whole workspace linted once): ${fmt(openMs, 0)} ms`);
console.log(
  table([
    ["ms", "p50", "p95", "max", "p50 vs round trip", "goal"],
    row("diagnostics after a change (300-line config)", diagMs, "p95 < 50"),
    row(`completion in the 300-line config (${[...counts.values()].join("/")} items)`, complMs, "p95 < 30"),
    row(`completion of step model names (${stepItems} items)`, stepMs, "p95 < 30"),
    row("peer: a request the server does not handle", rttMs),
    row("peer: lintModel in-process on saved files (re-reads the repository)", peerLintMs),
  ]),
);
console.log(`server memory after the runs: RSS ${fmt(rssMb, 0)} MB, peak ${fmt(hwmMb, 0)} MB (goal < 150 MB)`);
console.log(
  `diagnostics p50 vs in-process lintModel p50: ${fmt(q(diagMs, 50) / q(peerLintMs, 50), 2)}x (the server re-reads only the changed model)`,
);
const pass = q(diagMs, 95) < 50 && q(complMs, 95) < 30 && q(stepMs, 95) < 30 && hwmMb < 150;
console.log(pass ? "goals met" : "goals NOT met");
if (OUT)
  fs.writeFileSync(
    OUT,
    JSON.stringify({ rounds: ROUNDS, openMs, diagMs, complMs, stepMs, rttMs, peerLintMs, rssMb, hwmMb }, null, 2),
  );

// --- --scale ------------------------------------------------------------------------------------
async function scaleBench(sizes) {
  const rows = [
    [
      "models",
      "first diag ms",
      "req p95 ms (reading)",
      "req max ms (reading)",
      "peer p95/max ms",
      "req p50 ms (read)",
      "keystroke p95 ms",
      "new folder ms",
      "removed folder ms",
      "completion items",
      "completion ms",
      "index s",
      "RSS MB",
    ],
  ];
  const pct = (xs, p) => {
    const a = [...xs].sort((x, y) => x - y);
    return a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
  };
  for (const n of sizes) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `triton-dev-lsp-scale-${n}-`));
    const models = path.join(dir, "models");
    const py = `class TritonPythonModel:\n    def execute(self, requests):\n        return []\n`;
    const cfg = (name) =>
      `name: "${name}"\nbackend: "python"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n`;
    const ens = (name, step) =>
      `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 8\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]\nensemble_scheduling { step [ { model_name: "${step}" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }\n`;
    const names = [];
    for (let i = 0; i < n; i++) {
      const name = `m${String(i).padStart(5, "0")}`;
      names.push(name);
      fs.mkdirSync(path.join(models, name, "1"), { recursive: true });
      if (i % 10 === 9) {
        fs.writeFileSync(path.join(models, name, "config.pbtxt"), ens(name, names[i - 1]));
        fs.writeFileSync(path.join(models, name, "1", ".keep"), "");
      } else {
        fs.writeFileSync(path.join(models, name, "config.pbtxt"), cfg(name));
        fs.writeFileSync(path.join(models, name, "1", "model.py"), py);
      }
    }
    const env = { ...process.env, TRITON_DEV_STATE_DIR: path.join(dir, "state"), CI: "1" };
    const child = spawn(process.execPath, [...SERVER_NODE_ARGS, CLI, "lsp", "--stdio"], {
      env,
      stdio: ["pipe", "pipe", "inherit"],
    });
    const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const waiters = [];
    conn.onNotification("textDocument/publishDiagnostics", (p) => {
      for (const w of [...waiters])
        if (w.uri === p.uri && w.want(p.diagnostics)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(p.diagnostics);
        }
    });
    conn.listen();
    const diag = (uri, want) => new Promise((resolve) => waiters.push({ uri, want, resolve }));
    await conn.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(models).href,
      capabilities: {},
    });
    await conn.sendNotification("initialized", {});
    const target = names[Math.floor(n / 2)];
    const file = path.join(models, target, "config.pbtxt");
    const uri = pathToFileURL(file).href;
    let text = cfg(target);
    const started = performance.now();
    const first = diag(uri, () => true);
    await conn.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "pbtxt", version: 1, text },
    });
    // Requests while the repository is read: every 50 ms, until it is read (or 240 s).
    const reading = [];
    let indexed = false;
    // Peer: an idle node process answering the same cadence of requests meanwhile, on the same
    // busy machine: what a wait costs there without any work of the server's.
    const echo = spawn(process.execPath, ["-e", "process.stdin.on('data', (d) => process.stdout.write(d))"], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const peer = [];
    const peerProbe = (async () => {
      while (!indexed && performance.now() - started < 240_000) {
        const t = performance.now();
        await new Promise((r) => {
          echo.stdout.once("data", r);
          echo.stdin.write("x");
        });
        peer.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const probe = (async () => {
      while (!indexed && performance.now() - started < 240_000) {
        const t = performance.now();
        await conn.sendRequest("triton-dev/bench-probe", {}).catch(() => undefined);
        reading.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await first;
    const firstMs = performance.now() - started;
    // Keystrokes: break and fix a type, each to its publish.
    const keys = [];
    let version = 1;
    for (let r = 0; r < 30; r++) {
      const broken = r % 2 === 0;
      text = cfg(target).replace("TYPE_FP32", broken ? "TYPE_FP3" : "TYPE_FP32");
      const t = performance.now();
      const got = diag(uri, (ds) =>
        broken ? ds.some((d) => d.code === "config-enum") : !ds.some((d) => d.code === "config-enum"),
      );
      await conn.sendNotification("textDocument/didChange", {
        textDocument: { uri, version: ++version },
        contentChanges: [{ text }],
      });
      await got;
      keys.push(performance.now() - t);
    }
    // The repository read whole: an ensemble whose step names a folder that is then created.
    const late = "zz_late_model";
    const ensFile = path.join(models, names[9], "config.pbtxt");
    const ensUri = pathToFileURL(ensFile).href;
    const ensText = ens(names[9], late);
    const missing = diag(ensUri, (ds) => ds.length > 0);
    await conn.sendNotification("textDocument/didOpen", {
      textDocument: { uri: ensUri, languageId: "pbtxt", version: 1, text: ensText },
    });
    await missing;
    // Wait for the whole repository (the server's RSS and its requests once read).
    const indexStart = started;
    const everyone = (async () => {
      const deadline = performance.now() + 600_000;
      while (performance.now() < deadline) {
        const st = fs.readFileSync(`/proc/${child.pid}/status`, "utf8");
        const cpu = fs.readFileSync(`/proc/${child.pid}/stat`, "utf8").split(" ");
        // Reading is done when the server sits idle: no CPU over 1 s.
        const ticks = Number(cpu[13]) + Number(cpu[14]);
        await new Promise((r) => setTimeout(r, 1000));
        const ticks2 = fs.readFileSync(`/proc/${child.pid}/stat`, "utf8").split(" ");
        if (Number(ticks2[13]) + Number(ticks2[14]) - ticks <= 2) return st;
      }
    })();
    await everyone;
    indexed = true;
    await probe;
    await peerProbe;
    echo.kill();
    const indexS = (performance.now() - indexStart) / 1000;
    const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]) / 1024;
    const after = [];
    for (let r = 0; r < 20; r++) {
      const t = performance.now();
      await conn.sendRequest("triton-dev/bench-probe", {}).catch(() => undefined);
      after.push(performance.now() - t);
    }
    const t1 = performance.now();
    const gone = diag(ensUri, (ds) => ds.length === 0);
    fs.mkdirSync(path.join(models, late, "1"), { recursive: true });
    fs.writeFileSync(path.join(models, late, "1", "model.py"), py);
    fs.writeFileSync(path.join(models, late, "config.pbtxt"), cfg(late));
    const seen = await Promise.race([
      gone.then(() => performance.now() - t1),
      new Promise((r) => setTimeout(() => r(NaN), 30_000)),
    ]);
    // The same folder removed: the ensemble's finding comes back.
    const t3 = performance.now();
    const back = diag(ensUri, (ds) => ds.length > 0);
    fs.rmSync(path.join(models, late), { recursive: true, force: true });
    const removed = await Promise.race([
      back.then(() => performance.now() - t3),
      new Promise((r) => setTimeout(() => r(NaN), 30_000)),
    ]);
    const line = ensText.split("\n").findIndex((l) => l.includes("model_name"));
    const col = ensText.split("\n")[line].indexOf(`"${late}"`) + 1;
    const t2 = performance.now();
    const list = await conn.sendRequest("textDocument/completion", {
      textDocument: { uri: ensUri },
      position: { line, character: col },
    });
    const complMs = performance.now() - t2;
    const items = Array.isArray(list) ? list.length : list.items.length;
    rows.push([
      n,
      fmt(firstMs, 0),
      fmt(pct(reading, 95), 0),
      fmt(Math.max(...reading, 0), 0),
      `${fmt(pct(peer, 95), 0)}/${fmt(Math.max(...peer, 0), 0)}`,
      fmt(pct(after, 50), 1),
      fmt(pct(keys, 95), 1),
      fmt(seen, 0),
      fmt(removed, 0),
      items,
      fmt(complMs, 1),
      fmt(indexS, 1),
      fmt(rss, 0),
    ]);
    await conn.sendRequest("shutdown").catch(() => undefined);
    await conn.sendNotification("exit").catch(() => undefined);
    await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
    conn.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
    console.error(`lsp --scale: ${n} models done`);
  }
  console.log(table(rows));
}
