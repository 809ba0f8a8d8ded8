import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../src/net/ports.js";
import type { SessionEvent } from "../../src/session/events.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const CLI = path.join(ROOT, "dist/cli/main.js");
export const SAMPLE_MODELS = path.join(ROOT, "models");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run the built CLI as a user would, with its own state folder and the shared Triton environment;
 * `cwd`: from that folder (where a relative path the command writes would land).
 */
/** A `--json` run's events: its stdout's JSON lines. */
export interface JsonEvent {
  type: string;
  [k: string]: unknown;
}
export const jsonEvents = (r: CliResult): JsonEvent[] =>
  r.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as JsonEvent);

/**
 * A `--json` event of the session's `type` as src/session/events.ts types it, with the time
 * printEvents adds: what a test casts a JsonEvent it found by type to, so a field src renames or
 * retypes fails `npm run typecheck:test` instead of leaving a test that reads a field no longer written.
 */
export type SessionJsonEvent<K extends SessionEvent["type"]> = Extract<SessionEvent, { type: K }> & { time: string };

export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 240_000, cwd?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, ...(cwd ? { cwd } : {}) },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === "number"
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
}

const madeDirs: string[] = [];

/** A fresh temporary folder; `removeTempDirs` (in a file's afterAll) deletes every one made so far. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `triton-dev-${prefix}-`));
  madeDirs.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of madeDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A per-test environment: own state folder (so runs never collide), the shared managed venv. */
export async function testEnv(extra: NodeJS.ProcessEnv = {}): Promise<NodeJS.ProcessEnv> {
  const stateDir = await tempDir("state");
  return {
    ...process.env,
    TRITON_DEV_STATE_DIR: stateDir,
    TRITON_DEV_LOG: process.env.TRITON_DEV_LOG ?? "warn",
    CI: "1",
    ...extra,
  };
}

export async function freePorts(): Promise<{ http: number; grpc: number; metrics: number }> {
  const ports = new Set<number>();
  while (ports.size < 3) ports.add(await freePort());
  const [http, grpc, metrics] = [...ports] as [number, number, number];
  return { http, grpc, metrics };
}

export function portArgs(p: { http: number; grpc: number; metrics: number }): string[] {
  return ["--http-port", String(p.http), "--grpc-port", String(p.grpc), "--metrics-port", String(p.metrics)];
}

/**
 * `up --json`'s ready event on the sample models without a GPU: every model READY, by name, as
 * [name, state] (resnet50_fp16 is skipped: it needs one).
 */
export const SAMPLE_CPU_READY: Array<[string, string]> = [
  ["bert_large", "READY"],
  ["bert_pipeline", "READY"],
  ["bert_tokenizer", "READY"],
  ["image_classifier", "READY"],
  ["sentiment_classifier", "READY"],
  ["sentiment_pipeline", "READY"],
  ["text_streamer", "READY"],
];

/**
 * The same on the stand-in image of the docker and kind runtimes' tests
 * (test/fixtures/docker/build-image.sh), which has only the python backend: bert_large (ONNX) and
 * the ensemble running it are skipped, saying where they run (NGC's image has the onnxruntime backend).
 */
export const SAMPLE_STAND_IN_READY = SAMPLE_CPU_READY.filter(
  ([name]) => name !== "bert_large" && name !== "bert_pipeline",
);

/** What `up` says of bert_large on the stand-in image `image`: the backend, the image, where it runs. */
export const standInSkip = (runtime: "docker" | "kind", image: string): string =>
  `backend 'onnxruntime' is not in the ${runtime} runtime's image ${image}; ONNX models run in the docker or kind runtime with the image nvcr.io/nvidia/tritonserver:24.10-py3`;

export async function copySampleModels(): Promise<string> {
  const dir = await tempDir("models");
  await fsp.cp(SAMPLE_MODELS, dir, { recursive: true, filter: (src) => !src.includes("__pycache__") });
  return dir;
}

export function fileExists(f: string): boolean {
  return fs.existsSync(f);
}
