// Shared pieces of the benchmarks: a private Triton started with `triton-dev up --detach` on the
// sample models (own state folder, free loopback ports), and `triton-dev perf` run as a user would.
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// $TRITON_DEV_CLI runs the benches with another build of the CLI, e.g. the one-file bundle
// (bundle/triton-dev.mjs) on a machine without node_modules.
export const CLI = process.env.TRITON_DEV_CLI
  ? path.resolve(process.env.TRITON_DEV_CLI)
  : path.join(ROOT, "dist/cli/main.js");

export function requireBuild() {
  if (!fs.existsSync(CLI)) {
    console.error(`bench: run \`npm run build\` first (${path.relative(ROOT, CLI)} is missing)`);
    process.exit(2);
  }
}

/**
 * Import TypeScript of this repository (the test harnesses, the helpers, src) into a bench: `source`
 * is a TS module (relative imports from the repository root, e.g. `export { startNode } from
 * "./test/fixtures/k8s-node/harness.js"`), bundled with esbuild into one ESM file under dist/
 * (git-ignored; packages stay external, so node_modules resolves from there) and imported. Each
 * file's `import.meta.url` is its own, as it is under vitest, so a harness still finds the
 * scripts beside it. The bundle is removed when the process exits.
 */
export async function importTs(source, name = "bench-ts") {
  const { build } = await import("esbuild");
  const dir = path.join(ROOT, "dist", ".bench");
  await fsp.mkdir(dir, { recursive: true });
  const out = path.join(dir, `${name}-${process.pid}-${Date.now()}.mjs`);
  const ownUrl = {
    name: "own-import-meta-url",
    setup(b) {
      b.onLoad({ filter: /\.[cm]?ts$/ }, async (a) => ({
        contents: (await fsp.readFile(a.path, "utf8")).replaceAll(
          "import.meta.url",
          JSON.stringify(pathToFileURL(a.path).href),
        ),
        loader: "ts",
      }));
    },
  };
  await build({
    stdin: { contents: source, resolveDir: ROOT, sourcefile: `${name}.ts`, loader: "ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    outfile: out,
    plugins: [ownUrl],
    logLevel: "warning",
  });
  process.once("exit", () => fs.rmSync(out, { force: true }));
  return import(pathToFileURL(out).href);
}

/** A seeded generator (mulberry32, as src/perf/inputs.ts), so two runs of a bench do the same. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A free TCP port on 127.0.0.1, for a server a bench starts. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen({ port: 0, host: "127.0.0.1" }, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export function run(file, args, env, timeoutMs = 600_000) {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({
        code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      });
    });
  });
}

/**
 * Start a private server; returns its environment, ports and a stop function. `only` names the
 * sample models to serve (default: all of models/); `prepare(modelsDir)` adds to the copied
 * repository before Triton starts (a bench's own models); `upArgs` are more flags of `up`.
 */
export async function startServer({ only, prepare, upArgs = [] } = {}) {
  requireBuild();
  const stateDir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-"));
  const env = { ...process.env, TRITON_DEV_STATE_DIR: stateDir, CI: "1" };
  const ports = { http: await freePort(), grpc: await freePort(), metrics: await freePort() };
  const models = path.join(stateDir, "models");
  const top = (s) => path.relative(path.join(ROOT, "models"), s).split(path.sep)[0];
  await fsp.cp(path.join(ROOT, "models"), models, {
    recursive: true,
    filter: (s) => !s.includes("__pycache__") && (!only || top(s) === "" || only.includes(top(s))),
  });
  await prepare?.(models);
  console.error(`bench: starting Triton (state ${stateDir}) ...`);
  const up = await run(
    process.execPath,
    [
      CLI,
      "up",
      "--detach",
      "--models",
      models,
      "--http-port",
      String(ports.http),
      "--grpc-port",
      String(ports.grpc),
      "--metrics-port",
      String(ports.metrics),
      ...upArgs,
    ],
    env,
  );
  if (up.code !== 0) {
    console.error(up.stdout + up.stderr);
    throw new Error("bench: `triton-dev up` failed");
  }
  const stop = async () => {
    await run(process.execPath, [CLI, "down"], env);
    await fsp.rm(stateDir, { recursive: true, force: true });
  };
  return { env, ports, stop };
}

/** `triton-dev perf ARGS --json`, through the CLI (or the test harness until main.ts registers perf). */
export async function perfJson(args, env) {
  const entry = CLI;
  const r = await run(process.execPath, [entry, "perf", ...args, "--json", "--no-history"], env);
  if (r.code !== 0) throw new Error(`triton-dev perf ${args.join(" ")} failed (${r.code}):\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

export function has(cmd) {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export const fmt = (x, d = 1) => (x === undefined || Number.isNaN(x) ? "-" : x.toFixed(d));

export function table(rows) {
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => String(c).padStart(w[i])).join("  ")).join("\n");
}

// --- protobuf encoding, just enough for an ONNX ModelProto (field numbers of onnx.proto) ---------
export const pbVarint = (n) => {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
};
const pbTag = (field, wire) => pbVarint(field * 8 + wire);
export const pbLen = (field, body) => Buffer.concat([pbTag(field, 2), pbVarint(body.length), body]);
/** The header of a length-delimited field whose `size` bytes follow (written separately, or a hole). */
export const pbLenHead = (field, size) => Buffer.concat([pbTag(field, 2), pbVarint(size)]);
export const pbInt = (field, n) => Buffer.concat([pbTag(field, 0), pbVarint(n)]);
export const pbStr = (field, s) => pbLen(field, Buffer.from(s));

const ONNX_ELEM = {
  TYPE_FP32: 1,
  TYPE_UINT8: 2,
  TYPE_INT8: 3,
  TYPE_INT32: 6,
  TYPE_INT64: 7,
  TYPE_STRING: 8,
  TYPE_BOOL: 9,
  TYPE_FP16: 10,
  TYPE_FP64: 11,
  TYPE_UINT64: 13,
};
/** ValueInfoProto of a tensor: Triton type name (or ONNX elem number), dims as numbers or dim_param strings. */
export const onnxValueInfo = (name, type, dims) =>
  Buffer.concat([
    pbStr(1, name),
    pbLen(
      2,
      pbLen(
        1,
        Buffer.concat([
          pbInt(1, typeof type === "number" ? type : ONNX_ELEM[type]),
          pbLen(
            2,
            Buffer.concat(dims.map((d) => pbLen(1, typeof d === "number" && d >= 0 ? pbInt(1, d) : pbStr(2, "n")))),
          ),
        ]),
      ),
    ),
  ]);
/** A weightless ONNX model with these graph inputs and outputs ({ name, type, dims }). */
export function onnxModelBytes(inputs, outputs) {
  const graph = Buffer.concat([
    pbStr(2, "bench"),
    ...inputs.map((t) => pbLen(11, onnxValueInfo(t.name, t.type, t.dims))),
    ...outputs.map((t) => pbLen(12, onnxValueInfo(t.name, t.type, t.dims))),
  ]);
  return Buffer.concat([pbInt(1, 8), pbLen(8, pbInt(2, 13)), pbLen(7, graph)]);
}
