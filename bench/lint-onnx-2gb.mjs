#!/usr/bin/env node
// Benchmark: `triton-dev lint` on a repository holding one 2 GB ONNX model, in two variants, beside
// peers measured in the same run on the same files:
//   inline:   the weights are one initializer's raw_data inside model.onnx (2,000,000,000 bytes,
//             under protobuf's 2 GiB message limit);
//   external: model.onnx is small and names weights.bin (2 GB) as its initializer's external data.
// Both files are sparse (the weights are a hole of zeros), so they are written in milliseconds and
// the disk never limits anyone; the model is the one of test/repo/model-io/make-onnx-models.py
// (ReduceSum over W, added to INPUT0 FLOAT [batch,4]), its bytes written here by hand.
// Printed for each: wall time and peak RSS of
//   - `triton-dev lint DIR` as a new process (dist/cli/main.js),
//   - lintRepository in-process (after the CLI's modules are loaded), with the bytes it read,
//   - `python -c "import onnx; onnx.load(path, load_external_data=False)"` (the test tools' Python,
//     $TRITON_DEV_TEST_TOOLS or .triton-dev/test-tools; it also checks the file is a valid model),
//   - `cat model.onnx > /dev/null`.
//
//   npm run build && node bench/lint-onnx-2gb.mjs [--dir /tmp/triton-dev-bench/onnx-2gb] [--keep]
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ROOT, pbInt, pbLen, pbLenHead, pbStr, requireBuild, table } from "./lib.mjs";

requireBuild();
const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const DIR = flag("--dir", "/tmp/triton-dev-bench/onnx-2gb");
const WEIGHT_BYTES = 2_000_000_000;
const CLI = path.join(ROOT, "dist/cli/main.js");
const tools = process.env.TRITON_DEV_TEST_TOOLS ?? path.join(ROOT, ".triton-dev", "test-tools");
const PYTHON = path.join(tools, "bin", "python");

const len = pbLen;
const lenHead = pbLenHead;
const int = pbInt;
const str = pbStr;

const dim = (d) => len(1, typeof d === "number" ? int(1, d) : str(2, d));
const valueInfo = (name, dims) =>
  Buffer.concat([str(1, name), len(2, len(1, Buffer.concat([int(1, 1), len(2, Buffer.concat(dims.map(dim)))])))]);
const node = (op, ins, outs, attrs = Buffer.alloc(0)) =>
  Buffer.concat([...ins.map((i) => str(1, i)), ...outs.map((o) => str(2, o)), str(4, op), attrs]);
const keepdims0 = len(5, Buffer.concat([str(1, "keepdims"), int(3, 0), int(20, 2)]));

/**
 * Writes a ModelProto whose graph holds initializer W of WEIGHT_BYTES/4 floats: inline (its
 * raw_data a hole in the file) or external (weights.bin, a sparse file of the same size).
 */
function writeModel(dir, variant, WEIGHT_BYTES) {
  fs.mkdirSync(path.join(dir, "m", "1"), { recursive: true });
  const file = path.join(dir, "m", "1", "model.onnx");
  const nodes = Buffer.concat([
    len(1, node("ReduceSum", ["W"], ["Wsum"], keepdims0)),
    len(1, node("Add", ["INPUT0", "Wsum"], ["OUTPUT0"])),
  ]);
  const tensorHead = Buffer.concat([int(1, WEIGHT_BYTES / 4), int(2, 1), str(8, "W")]);
  const external =
    variant === "external"
      ? Buffer.concat([
          len(13, Buffer.concat([str(1, "location"), str(2, "weights.bin")])),
          len(13, Buffer.concat([str(1, "offset"), str(2, "0")])),
          len(13, Buffer.concat([str(1, "length"), str(2, String(WEIGHT_BYTES))])),
          int(14, 1),
        ])
      : Buffer.alloc(0);
  const tensorLen =
    variant === "inline"
      ? tensorHead.length + lenHead(9, WEIGHT_BYTES).length + WEIGHT_BYTES
      : tensorHead.length + external.length;
  const tail = Buffer.concat([
    str(2, "add"),
    len(11, valueInfo("INPUT0", ["batch", 4])),
    len(12, valueInfo("OUTPUT0", ["batch", 4])),
  ]);
  const graphLen = nodes.length + lenHead(5, tensorLen).length + tensorLen + tail.length;
  const head = Buffer.concat([
    int(1, 8),
    str(2, "triton-dev bench"),
    len(8, int(2, 13)),
    lenHead(7, graphLen),
    nodes,
    lenHead(5, tensorLen),
    tensorHead,
    ...(variant === "inline" ? [lenHead(9, WEIGHT_BYTES)] : [external]),
  ]);
  const fd = fs.openSync(file, "w");
  fs.writeSync(fd, head, 0, head.length, 0);
  const tailAt = head.length + (variant === "inline" ? WEIGHT_BYTES : 0);
  fs.writeSync(fd, tail, 0, tail.length, tailAt);
  fs.closeSync(fd);
  if (variant === "external") {
    const w = path.join(dir, "m", "1", "weights.bin");
    fs.writeFileSync(w, "");
    fs.truncateSync(w, WEIGHT_BYTES);
  }
  fs.writeFileSync(path.join(dir, "m", "config.pbtxt"), 'name: "m"\nplatform: "onnxruntime_onnx"\n');
  return file;
}

/** Wall seconds and peak RSS (MiB) of a command, from GNU time. */
function measure(cmd, cmdArgs, env = process.env) {
  const r = spawnSync("/usr/bin/time", ["-f", "%e %M", cmd, ...cmdArgs], { encoding: "utf8", env });
  const last = r.stderr.trim().split("\n").at(-1) ?? "";
  const [wall, kb] = last.split(" ").map(Number);
  if (r.status !== 0 && r.status !== 1) throw new Error(`${cmd} ${cmdArgs.join(" ")} failed: ${r.stderr.slice(-2000)}`);
  return { wall, rssMiB: kb / 1024, stdout: r.stdout, status: r.status };
}

const inProcess = `
const { lintRepository } = await import(${JSON.stringify(path.join(ROOT, "dist/repo/lint.js"))});
const { readOnnxModel } = await import(${JSON.stringify(path.join(ROOT, "dist/repo/model-io/onnx.js"))});
const t0 = performance.now();
const r = await lintRepository(process.argv[1]);
const ms = performance.now() - t0;
const info = await readOnnxModel(process.argv[2]);
console.log(JSON.stringify({ ms, errors: r.errorCount, codes: r.diagnostics.map((d) => d.code), bytesRead: info.bytesRead, completed: r.models[0].modelIO?.completed }));
`;

const rows = [["variant", "what", "wall", "peak RSS", "notes"]];
// The same model with 16 bytes of weights: what `triton-dev lint` costs on this machine anyway.
{
  const dir = path.join(DIR, "small");
  fs.rmSync(dir, { recursive: true, force: true });
  writeModel(dir, "inline", 16);
  const cli = measure(process.execPath, [CLI, "lint", dir]);
  rows.push([
    "16 bytes",
    "`triton-dev lint DIR` (new process)",
    `${cli.wall.toFixed(2)} s`,
    `${cli.rssMiB.toFixed(0)} MiB`,
    "baseline: the same model, 16 bytes of weights",
  ]);
  fs.rmSync(dir, { recursive: true, force: true });
}
for (const variant of ["inline", "external"]) {
  const dir = path.join(DIR, variant);
  fs.rmSync(dir, { recursive: true, force: true });
  const t0 = performance.now();
  const file = writeModel(dir, variant, WEIGHT_BYTES);
  const writeMs = performance.now() - t0;
  const size = fs.statSync(file).size;
  const cli = measure(process.execPath, [CLI, "lint", dir]);
  const inproc = measure(process.execPath, ["--input-type=module", "-e", inProcess, dir, file]);
  const res = JSON.parse(inproc.stdout.trim().split("\n").at(-1));
  if (res.errors !== 0) throw new Error(`lint found errors on the bench model: ${res.codes.join(", ")}`);
  const py = fs.existsSync(PYTHON)
    ? measure(PYTHON, ["-c", "import sys, onnx; onnx.load(sys.argv[1], load_external_data=False)", file])
    : undefined;
  const cat = measure("/bin/sh", ["-c", `cat "${file}" > /dev/null`]);
  const mb = (n) => `${(n / 1e6).toFixed(0)} MB`;
  rows.push([
    variant,
    "`triton-dev lint DIR` (new process)",
    `${cli.wall.toFixed(2)} s`,
    `${cli.rssMiB.toFixed(0)} MiB`,
    `model.onnx ${mb(size)}${variant === "external" ? `, weights.bin ${mb(WEIGHT_BYTES)}` : ""}; written in ${writeMs.toFixed(0)} ms`,
  ]);
  rows.push([
    "",
    "lintRepository in-process",
    `${res.ms.toFixed(0)} ms`,
    `${inproc.rssMiB.toFixed(0)} MiB (whole process)`,
    `read ${res.bytesRead} bytes of model.onnx; completed max_batch_size ${res.completed?.max_batch_size}`,
  ]);
  rows.push([
    "",
    "python onnx.load(load_external_data=False)",
    py ? `${py.wall.toFixed(2)} s` : "-",
    py ? `${py.rssMiB.toFixed(0)} MiB` : "-",
    py ? `python ${py.status === 0 ? "reads it" : "fails"}` : `no ${PYTHON}`,
  ]);
  rows.push([
    "",
    "`cat model.onnx > /dev/null`",
    `${cat.wall.toFixed(2)} s`,
    `${cat.rssMiB.toFixed(0)} MiB`,
    "sparse: the page cache serves zeros",
  ]);
  if (!args.includes("--keep")) fs.rmSync(dir, { recursive: true, force: true });
}
console.log(table(rows));
