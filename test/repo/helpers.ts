import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Diagnostic } from "../../src/repo/diagnostics.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const SAMPLE_MODELS = path.join(ROOT, "models");
export const ARTICLE_FIXTURES = path.join(ROOT, "test/repo/fixtures/article");

/** The smallest python model that loads: echoes INPUT0 as every output. */
export const ECHO_MODEL_PY = `import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.cfg = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, self.cfg["input"][0]["name"]).as_numpy()
            outs = [pb_utils.Tensor(o["name"], x.astype(pb_utils.triton_string_to_numpy(o["data_type"]))) for o in self.cfg["output"]]
            responses.append(pb_utils.InferenceResponse(output_tensors=outs))
        return responses
`;

export const ECHO_IO = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;

/** A real ONNX model with ECHO_IO's tensors (INPUT0 -> OUTPUT0, FP32 [batch, len]): fixtures/onnx/make.py. */
export const ECHO_ONNX: Uint8Array = fs.readFileSync(path.join(ROOT, "test/repo/fixtures/onnx/echo.onnx"));

/** A python model config: name, backend, max_batch_size, then `body` (default: one FP32 input and output). */
export function pythonConfig(name: string, body = ECHO_IO, maxBatchSize = 8): string {
  return `name: "${name}"\nbackend: "python"\nmax_batch_size: ${maxBatchSize}\n${body}`;
}

const created: string[] = [];

/** A fresh temporary folder; `removeTempRepos` (in afterAll) deletes every one made so far. */
export async function tempRepo(): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-lint-"));
  created.push(dir);
  return dir;
}

export async function removeTempRepos(): Promise<void> {
  // Synchronous: a tree of small files is removed with one system call at a time, without a trip
  // through libuv's thread pool and back for each (these helpers serve most unit test files).
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Writes files into `repo`: keys are paths relative to it; a key ending in "/" makes an empty
 * folder. Bytes are written as they are (for text that is not valid UTF-8). Synchronous, for the
 * reason removeTempRepos gives, and each folder is made once.
 */
export async function writeFiles(repo: string, files: Record<string, string | Uint8Array>): Promise<void> {
  const made = new Set<string>();
  const mkdir = (dir: string) => {
    if (made.has(dir)) return;
    fs.mkdirSync(dir, { recursive: true });
    made.add(dir);
  };
  for (const [rel, text] of Object.entries(files)) {
    const p = path.join(repo, rel);
    if (rel.endsWith("/")) {
      mkdir(p);
      continue;
    }
    mkdir(path.dirname(p));
    fs.writeFileSync(p, text);
  }
}

/** A python model folder: config.pbtxt plus 1/model.py. */
export function pythonModel(name: string, config = pythonConfig(name)): Record<string, string> {
  return { [`${name}/config.pbtxt`]: config, [`${name}/1/model.py`]: ECHO_MODEL_PY };
}

/** 1-based line and column of the `occurrence`-th `needle` in `text`, plus `shift` characters. */
export function posOf(text: string, needle: string, shift = 0, occurrence = 1): { line: number; column: number } {
  let at = -1;
  for (let k = 0; k < occurrence; k++) {
    at = text.indexOf(needle, at + 1);
    if (at < 0) throw new Error(`'${needle}' (occurrence ${occurrence}) not in text`);
  }
  const offset = at + shift;
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}

export function byCode(ds: readonly Diagnostic[], code: string): Diagnostic[] {
  return ds.filter((d) => d.code === code);
}

export function errors(ds: readonly Diagnostic[]): Diagnostic[] {
  return ds.filter((d) => d.severity === "error");
}

/** Compact `severity code@line:col` strings, for readable failure output. */
export function summary(ds: readonly Diagnostic[]): string[] {
  return ds.map((d) => `${d.severity} ${d.code}@${d.line}:${d.column} ${d.message}`);
}
