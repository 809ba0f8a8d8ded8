#!/usr/bin/env node
// Benchmark: the language server's navigation on large repositories. Generated repositories of N
// python models, every tenth an ensemble running the model before it (as `lsp.mjs --scale`
// makes them); the built server over stdio, driven by vscode-languageserver-protocol's client.
// One model's config is opened and the repository read whole (the first references request waits
// for that: "first refs s"); then, each request `--rounds` times: hover on a tensor, references of
// a model and of a tensor, rename of a tensor, workspace symbols (a query matching every model,
// capped at 100, and one matching none, which walks every model), the outline and folding. Peer,
// in the same run: a request the server does not handle (the protocol's round trip alone).
//
//   npm run build && node bench/lsp-navigation.mjs [--sizes 2000,20000] [--rounds 30]
//
// Goal (issue 41): every navigation request answered within 100 ms at 20,000 models once read.
// Starts no Triton.
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
import { CLI, fmt, requireBuild, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const SIZES = (flag("--sizes", "2000,20000") ?? "").split(",").map(Number).filter(Boolean);
const ROUNDS = Math.max(5, Number(flag("--rounds", 30)) || 30);

requireBuild();
const pct = (xs, p) => {
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
};
const cfg = (name) =>
  `name: "${name}"\nbackend: "python"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n`;
const ens = (name, step) =>
  `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 8\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]\nensemble_scheduling { step [ { model_name: "${step}" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }\n`;
const py = `class TritonPythonModel:\n    def execute(self, requests):\n        return []\n`;

const rows = [["models", "request", "p50 ms", "p95 ms", "max ms", "answer"]];
for (const n of SIZES) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `triton-dev-lsp-nav-${n}-`));
  const models = path.join(dir, "models");
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
  const child = spawn(process.execPath, [CLI, "lsp", "--stdio"], { env, stdio: ["pipe", "pipe", "inherit"] });
  const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.onNotification("textDocument/publishDiagnostics", () => {});
  conn.onNotification("window/showMessage", () => {});
  conn.listen();
  await conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(models).href,
    capabilities: { workspace: { workspaceEdit: { documentChanges: true, resourceOperations: ["rename"] } } },
  });
  await conn.sendNotification("initialized", {});
  // A step model in the middle, and the ensemble that runs it.
  const target = names[Math.floor(n / 2 / 10) * 10 + 8];
  const file = path.join(models, target, "config.pbtxt");
  const uri = pathToFileURL(file).href;
  const text = cfg(target);
  await conn.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "pbtxt", version: 1, text } });
  const at = (needle, d = 2) => {
    const i = text.indexOf(needle) + d;
    const before = text.slice(0, i);
    return { line: before.split("\n").length - 1, character: i - before.lastIndexOf("\n") - 1 };
  };
  const doc = { textDocument: { uri } };
  let t0 = performance.now();
  await conn.sendRequest("textDocument/references", {
    ...doc,
    position: at(`"${target}"`),
    context: { includeDeclaration: true },
  });
  const firstRefs = (performance.now() - t0) / 1000;
  const cases = [
    ["(peer) unhandled request", () => conn.sendRequest("triton-dev/none", {}).catch(() => "refused")],
    ["hover on a tensor", () => conn.sendRequest("textDocument/hover", { ...doc, position: at('"INPUT0"') })],
    [
      "references: model",
      () =>
        conn.sendRequest("textDocument/references", {
          ...doc,
          position: at(`"${target}"`),
          context: { includeDeclaration: true },
        }),
    ],
    [
      "references: tensor",
      () =>
        conn.sendRequest("textDocument/references", {
          ...doc,
          position: at('"OUTPUT0"'),
          context: { includeDeclaration: true },
        }),
    ],
    [
      "rename: tensor",
      () => conn.sendRequest("textDocument/rename", { ...doc, position: at('"INPUT0"'), newName: "X" }),
    ],
    ["workspace symbols 'm'", () => conn.sendRequest("workspace/symbol", { query: "m" })],
    ["workspace symbols (none)", () => conn.sendRequest("workspace/symbol", { query: "zzz" })],
    ["document symbols", () => conn.sendRequest("textDocument/documentSymbol", doc)],
    ["folding ranges", () => conn.sendRequest("textDocument/foldingRange", doc)],
  ];
  rows.push([String(n), "first references (reads the repository)", fmt(firstRefs * 1000, 0), "-", "-", "-"]);
  for (const [label, send] of cases) {
    const times = [];
    let answer;
    for (let r = 0; r < ROUNDS; r++) {
      t0 = performance.now();
      answer = await send();
      times.push(performance.now() - t0);
    }
    const size = Array.isArray(answer)
      ? `${answer.length} items`
      : answer?.documentChanges
        ? `${answer.documentChanges.length} files`
        : typeof answer === "string"
          ? answer
          : answer
            ? "1"
            : "none";
    rows.push([String(n), label, fmt(pct(times, 50)), fmt(pct(times, 95)), fmt(Math.max(...times)), size]);
  }
  await conn.sendRequest("shutdown").catch(() => undefined);
  await conn.sendNotification("exit").catch(() => undefined);
  await new Promise((r) => child.once("exit", r));
  conn.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(table(rows));
