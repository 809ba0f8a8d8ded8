#!/usr/bin/env node
// Benchmark (d): `triton-dev lint` on a generated repository of 500 models (python, ONNX,
// TensorRT and PyTorch models, dynamic and sequence batching, priority queues, instance groups,
// version policies, warmup, ensembles of 2-3 steps), beside the Python `protobuf` package's text
// parser (google.protobuf.text_format.Parse into Triton's ModelConfig, built from our
// model_config.proto through a FileDescriptorSet that `buf build` writes) on the same files, in
// the same run. Two comparisons, both printed as ratios:
//   parse:  our parseModelConfig against text_format.Parse, the same texts already in memory;
//   lint:   the whole lintRepository (read the folders and files, parse, every rule, the ensembles
//           across models) against that parse alone.
// The goal: the whole repository linted in well under a second.
//
//   npm run build && node bench/lint-vs-protobuf.mjs [--models 500] [--rounds 7] [--keep]
//
// The Python side runs in /tmp/triton-dev-bench/protobuf-venv, created with pip on first use
// ($BENCH_PYTHON: a python3 that already has protobuf). Timings are in-process on both sides
// (Python's start-up and our module loading are left out), after one warm-up round; the median
// round is reported.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ROOT, fmt, onnxModelBytes, rng, table } from "./lib.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const MODELS = Number(flag("--models", 500)) || 500;
const ROUNDS = Number(flag("--rounds", 7)) || 7;
const VENV = "/tmp/triton-dev-bench/protobuf-venv";

const lintJs = path.join(ROOT, "dist/repo/lint.js");
if (!fs.existsSync(lintJs)) {
  console.error("bench: run `npm run build` first (dist/repo/lint.js is missing)");
  process.exit(2);
}
const { lintRepository } = await import(lintJs);
const { parseModelConfig } = await import(path.join(ROOT, "dist/repo/parse.js"));

// ---------------------------------------------------------------------------------------------
// The repository: deterministic (seeded), configs shaped like the sample models and the article's

const rand = rng(20251129);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const PY = `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        pass

    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[]) for _ in requests]
`;

const io = (kind, tensors) =>
  `${kind} [\n${tensors.map((t) => `  {\n    name: "${t.name}"\n    data_type: ${t.type}\n    dims: [ ${t.dims.join(", ")} ]${t.reshape ? `\n    reshape { shape: [ ${t.reshape.join(", ")} ] }` : ""}\n  }`).join(",\n")}\n]\n`;

function dynamicBatching(mbs) {
  const sizes = [2, 4, 8, 16, 32, 64, 128].filter((s) => s <= mbs);
  const preferred = sizes.filter(() => rand() < 0.5);
  let text = "dynamic_batching {\n";
  if (preferred.length) text += `  preferred_batch_size: [ ${preferred.join(", ")} ]\n`;
  text += `  max_queue_delay_microseconds: ${pick([100, 500, 1000, 4000, 5000, 10000])}\n`;
  if (rand() < 0.4) {
    const levels = int(2, 4);
    text += `  default_queue_policy {\n    timeout_action: REJECT\n    default_timeout_microseconds: ${pick([1000000, 10000000])}\n    allow_timeout_override: true\n    max_queue_size: ${pick([64, 256, 512])}\n  }\n`;
    text += `  priority_levels: ${levels}\n  default_priority_level: ${int(1, levels)}\n`;
    if (rand() < 0.5)
      text += `  priority_queue_policy {\n    key: 1\n    value { timeout_action: DELAY default_timeout_microseconds: 2000 max_queue_size: 32 }\n  }\n`;
  } else if (rand() < 0.3) {
    text += "  preserve_ordering: true\n";
  }
  return `${text}}\n`;
}

const instanceGroup = () =>
  `instance_group [\n  {\n    count: ${int(1, 8)}\n    kind: ${pick(["KIND_CPU", "KIND_CPU", "KIND_AUTO"])}\n  }\n]\n`;

/** A composing model: its config, its files, and the tensors an ensemble can map. */
function composingModel(name) {
  const shape = pick(["text", "image", "vector", "sequence"]);
  const backend = shape === "sequence" ? "python" : pick(["python", "python", "python", "onnx", "trt", "pytorch"]);
  const mbs = pick([0, 8, 16, 32, 64, 128, 256]);
  const header =
    backend === "python"
      ? `name: "${name}"\nbackend: "python"\n`
      : backend === "onnx"
        ? `name: "${name}"\nplatform: "onnxruntime_onnx"\n`
        : backend === "trt"
          ? `name: "${name}"\nplatform: "tensorrt_plan"\n`
          : `name: "${name}"\nbackend: "pytorch"\n`;
  const file = { python: "model.py", onnx: "model.onnx", trt: "model.plan", pytorch: "model.pt" }[backend];
  let inputs;
  let outputs;
  if (shape === "text") {
    inputs = [{ name: "TEXT", type: "TYPE_STRING", dims: [1] }];
    outputs = [
      { name: "IDS", type: "TYPE_INT64", dims: [128] },
      { name: "MASK", type: "TYPE_INT64", dims: [128] },
    ];
  } else if (shape === "image") {
    inputs = [{ name: "IMAGE", type: pick(["TYPE_FP32", "TYPE_FP16"]), dims: [3, 224, 224] }];
    outputs = [{ name: "PROBS", type: "TYPE_FP32", dims: [1000] }];
  } else if (shape === "vector") {
    inputs = [
      { name: "IDS", type: "TYPE_INT64", dims: [128] },
      { name: "MASK", type: "TYPE_INT64", dims: [128] },
    ];
    outputs = [{ name: "LOGITS", type: "TYPE_FP32", dims: [int(2, 8)] }];
  } else {
    inputs = [{ name: "FRAME", type: "TYPE_FP32", dims: [-1, 80], reshape: [-1, 2, 40] }];
    outputs = [{ name: "STATE", type: "TYPE_FP32", dims: [-1, 80] }];
  }
  // The pytorch backend names tensors <name>__<index> (lint checks it now).
  if (backend === "pytorch") {
    inputs = inputs.map((t, i) => ({ ...t, name: `${t.name}__${i}` }));
    outputs = outputs.map((t, i) => ({ ...t, name: `${t.name}__${i}` }));
  }
  let text = `# ${shape} model, generated for the lint benchmark\n${header}max_batch_size: ${shape === "sequence" ? Math.max(mbs, 8) : mbs}\n${io("input", inputs)}${io("output", outputs)}`;
  if (shape === "sequence") {
    text += `sequence_batching {\n  max_sequence_idle_microseconds: 5000000\n  control_input [\n    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },\n    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }\n  ]\n  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] }\n}\n`;
  } else if (mbs > 0 && rand() < 0.7) {
    text += dynamicBatching(mbs);
  }
  if (rand() < 0.8) text += instanceGroup();
  const versions = rand() < 0.2 ? [1, 2, 3] : [1];
  if (versions.length > 1)
    text += pick([
      `version_policy { latest { num_versions: 2 } }\n`,
      `version_policy { specific { versions: [ 1, 3 ] } }\n`,
      `version_policy { all { } }\n`,
    ]);
  // The packed environment it names is written beside the config (lint checks that it exists).
  const packedEnv = rand() < 0.3;
  if (packedEnv)
    text += `parameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }\n`;
  if (backend === "onnx" && rand() < 0.5)
    text += `optimization { execution_accelerators { cpu_execution_accelerator : [ { name : "openvino" } ] } }\n`;
  if (rand() < 0.2 && shape !== "text") {
    const t = inputs[0];
    text += `model_warmup [\n  {\n    name: "zeros"\n    batch_size: ${mbs > 0 ? 1 : 0}\n    inputs { key: "${t.name}" value { data_type: ${t.type} dims: [ ${t.dims.map((d) => (d === -1 ? 16 : d)).join(", ")} ] zero_data: true } }\n  }\n]\n`;
  }
  // Triton has no response cache for sequence models.
  if (rand() < 0.15 && shape !== "sequence") text += "response_cache { enable: true }\n";
  const files = { "config.pbtxt": text, ...(packedEnv ? { "env.tar.gz": "conda-pack archive stand-in" } : {}) };
  // ONNX models are read against their config now: a weightless model with the config's tensors.
  const batched = (t) => ({ ...t, dims: mbs > 0 ? [-1, ...t.dims] : t.dims });
  const onnx = backend === "onnx" ? onnxModelBytes(inputs.map(batched), outputs.map(batched)) : undefined;
  for (const v of versions) files[`${v}/${file}`] = backend === "python" ? PY : (onnx ?? "weights");
  return {
    name,
    files,
    shape,
    mbs: shape === "sequence" ? Math.max(mbs, 8) : mbs,
    inputs,
    outputs,
    sequence: shape === "sequence",
    pytorch: backend === "pytorch",
  };
}

/** A tokenizer -> classifier ensemble (the article's pipeline), over two existing models. */
function ensembleModel(name, tok, cls) {
  const mbs = Math.min(...[tok.mbs, cls.mbs].filter((m) => m > 0), 64);
  const text = `name: "${name}"
platform: "ensemble"
max_batch_size: ${tok.mbs === 0 || cls.mbs === 0 ? 0 : mbs}
input [ { name: "RAW_TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "SCORES" data_type: TYPE_FP32 dims: [ ${cls.outputs[0].dims[0]} ] } ]
ensemble_scheduling {
  step [
    {
      model_name: "${tok.name}"
      model_version: -1
      input_map { key: "TEXT" value: "RAW_TEXT" }
      output_map [ { key: "IDS" value: "ids" }, { key: "MASK" value: "mask" } ]
    },
    {
      model_name: "${cls.name}"
      model_version: -1
      input_map [ { key: "IDS" value: "ids" }, { key: "MASK" value: "mask" } ]
      output_map { key: "LOGITS" value: "SCORES" }
    }
  ]
}
`;
  return { name, files: { "config.pbtxt": text, "1/": "" } };
}

async function generate(dir, n) {
  const models = [];
  const byShape = { text: [], vector: [] };
  for (let i = 0; models.length < n; i++) {
    const canEnsemble = byShape.text.length > 0 && byShape.vector.length > 0;
    if (canEnsemble && rand() < 0.15) {
      const tok = pick(byShape.text);
      const cls = pick(byShape.vector.filter((c) => (tok.mbs === 0) === (c.mbs === 0)).concat([]));
      if (cls) {
        models.push(ensembleModel(`pipeline_${i}`, tok, cls));
        continue;
      }
    }
    const m = composingModel(`model_${i}`);
    models.push(m);
    if (m.shape in byShape && !m.pytorch) byShape[m.shape].push(m);
  }
  for (const m of models) {
    for (const [rel, text] of Object.entries(m.files)) {
      const p = path.join(dir, m.name, rel);
      if (rel.endsWith("/")) {
        await fsp.mkdir(p, { recursive: true });
        continue;
      }
      await fsp.mkdir(path.dirname(p), { recursive: true });
      await fsp.writeFile(p, text);
    }
  }
  return models;
}

// ---------------------------------------------------------------------------------------------
// Python protobuf

function python() {
  if (process.env.BENCH_PYTHON) return process.env.BENCH_PYTHON;
  const bin = path.join(VENV, "bin/python");
  const has = () => {
    try {
      execFileSync(bin, ["-c", "import google.protobuf"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
  if (!fs.existsSync(bin) || !has()) {
    console.error(`bench: installing protobuf into ${VENV} ...`);
    execFileSync("python3", ["-m", "venv", VENV], { stdio: "inherit" });
    execFileSync(path.join(VENV, "bin/pip"), ["install", "-q", "--only-binary=:all:", "protobuf"], {
      stdio: "inherit",
    });
  }
  return bin;
}

const PYTHON_BENCH = String.raw`
import json, os, sys, time
from google.protobuf import __version__, descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.internal import api_implementation

fds_path, repo, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
fds = descriptor_pb2.FileDescriptorSet.FromString(open(fds_path, "rb").read())
pool = descriptor_pool.DescriptorPool()
for f in fds.file:
    pool.Add(f)
ModelConfig = message_factory.GetMessageClass(pool.FindMessageTypeByName("inference.ModelConfig"))
names = sorted(d for d in os.listdir(repo) if os.path.isfile(os.path.join(repo, d, "config.pbtxt")))
texts = [open(os.path.join(repo, d, "config.pbtxt"), encoding="utf-8").read() for d in names]

def parse_all():
    ok = 0
    for t in texts:
        try:
            text_format.Parse(t, ModelConfig())
            ok += 1
        except text_format.ParseError:
            pass
    return ok

parsed = parse_all()  # warm-up
times = []
for _ in range(rounds):
    t0 = time.perf_counter()
    parse_all()
    times.append((time.perf_counter() - t0) * 1000)
print(json.dumps({"version": __version__, "implementation": api_implementation.Type(), "python": sys.version.split()[0], "files": len(texts), "parsed": parsed, "ms": times}))
`;

// ---------------------------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-lint-"));
const repo = path.join(work, "models");
try {
  const models = await generate(repo, MODELS);
  const configs = models.map((m) => path.join(repo, m.name, "config.pbtxt"));
  const texts = configs.map((f) => fs.readFileSync(f, "utf8"));
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  const ensembles = models.filter((m) => m.name.startsWith("pipeline_")).length;

  // Ours: lint of the whole repository (first run cold, in a fresh process' module state), then warm rounds.
  const options = { gpuMissingSeverity: "warning" };
  let t0 = performance.now();
  const first = await lintRepository(repo, options);
  const coldMs = performance.now() - t0;
  const lintMs = [];
  for (let r = 0; r < ROUNDS; r++) {
    t0 = performance.now();
    await lintRepository(repo, options);
    lintMs.push(performance.now() - t0);
  }
  // Ours: the parser alone on the texts in memory, as the Python side measures.
  let ourParsed = 0;
  for (const [i, t] of texts.entries()) if (parseModelConfig(t, configs[i]).parsed) ourParsed++;
  const parseMs = [];
  for (let r = 0; r < ROUNDS; r++) {
    t0 = performance.now();
    for (const [i, t] of texts.entries()) parseModelConfig(t, configs[i]);
    parseMs.push(performance.now() - t0);
  }

  // The command as a user runs it: a new node process, module loading and output included.
  const cliMs = [];
  for (let r = 0; r < Math.min(ROUNDS, 3); r++) {
    t0 = performance.now();
    try {
      execFileSync(process.execPath, [path.join(ROOT, "dist/cli/main.js"), "lint", repo, "--no-gpu"], {
        stdio: "ignore",
      });
    } catch (err) {
      console.error(`bench: triton-dev lint exited ${err.status}`);
    }
    cliMs.push(performance.now() - t0);
  }

  // Python: the descriptor set of the very .proto our code is generated from.
  const fds = path.join(work, "model_config.binpb");
  execFileSync(path.join(ROOT, "node_modules/.bin/buf"), ["build", path.join(ROOT, "src/repo/proto"), "-o", fds], {
    cwd: ROOT,
  });
  const py = JSON.parse(
    execFileSync(python(), ["-c", PYTHON_BENCH, fds, repo, String(ROUNDS)], { maxBuffer: 16 * 1024 * 1024 }).toString(),
  );

  const lint = median(lintMs);
  const ours = median(parseMs);
  const theirs = median(py.ms);
  console.log(
    `lint vs protobuf text_format: ${MODELS} generated models (${ensembles} ensembles), ${(bytes / 1024).toFixed(0)} KiB of config.pbtxt, median of ${ROUNDS} rounds after a warm-up`,
  );
  console.log(
    `node ${process.version}; python ${py.python}, protobuf ${py.version} (${py.implementation} backend); ${os.cpus().length} x ${os.cpus()[0]?.model ?? "cpu"}`,
  );
  console.log(
    `lint found ${first.errorCount} errors, ${first.warningCount} warnings; both parsers accept ${ourParsed} / ${py.parsed} of ${texts.length} configs`,
  );
  console.log(
    table([
      ["what", "whole repository ms", "per model µs", "vs protobuf parse"],
      [
        "`triton-dev lint DIR` (new process, all included)",
        fmt(median(cliMs)),
        fmt((median(cliMs) * 1000) / MODELS, 0),
        `${fmt(median(cliMs) / theirs, 2)}x`,
      ],
      [
        "triton-dev lint (cold, first run)",
        fmt(coldMs),
        fmt((coldMs * 1000) / MODELS, 0),
        `${fmt(coldMs / theirs, 2)}x`,
      ],
      [
        "triton-dev lint (files, parse, rules, ensembles)",
        fmt(lint),
        fmt((lint * 1000) / MODELS, 0),
        `${fmt(lint / theirs, 2)}x`,
      ],
      [
        "triton-dev parseModelConfig (texts in memory)",
        fmt(ours),
        fmt((ours * 1000) / MODELS, 0),
        `${fmt(ours / theirs, 2)}x`,
      ],
      ["python protobuf text_format.Parse (texts in memory)", fmt(theirs), fmt((theirs * 1000) / MODELS, 0), "1.00x"],
    ]),
  );
  console.log(
    `ratio (time, lower is faster): parse ours / protobuf = ${fmt(ours / theirs, 2)}; whole lint / protobuf parse = ${fmt(lint / theirs, 2)}`,
  );
  console.log(
    `goal: whole repository well under 1 s -> ${fmt(lint)} ms warm, ${fmt(coldMs)} ms cold: ${coldMs < 1000 ? "met" : "NOT met"}`,
  );
  if (first.errorCount > 0 || ourParsed !== py.parsed) {
    console.error("bench: the generated repository should lint without errors and parse identically on both sides:");
    for (const d of first.diagnostics.filter((x) => x.severity === "error").slice(0, 10))
      console.error(`  ${d.file}:${d.line}:${d.column}: ${d.message}`);
    process.exitCode = 1;
  }
  if (args.includes("--keep")) console.log(`repository kept in ${repo}`);
} finally {
  if (!args.includes("--keep")) await fsp.rm(work, { recursive: true, force: true });
}
