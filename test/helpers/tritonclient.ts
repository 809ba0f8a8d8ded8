import { execFile } from "node:child_process";
import path from "node:path";
import { ROOT } from "./cli.js";
import { testToolsPython } from "./test-tools.js";

/**
 * Requests through NVIDIA's tritonclient (HTTP and gRPC, gRPC streams for decoupled models), as a
 * user's client sends them: test/helpers/triton-requests.py run with the tests' own Python. Calls
 * of one batch share one Python start (tritonclient's import is most of its cost).
 */
const SCRIPT = path.join(ROOT, "test/helpers/triton-requests.py");

export interface TensorIn {
  name: string;
  datatype: string;
  shape: number[];
  data: number[];
}

export interface TensorOut {
  shape: number[];
  data: number[];
}

export type Call =
  | { kind: "infer"; protocol: "http" | "grpc"; model: string; version?: number; inputs: TensorIn[] }
  | { kind: "streams"; streams: Array<{ model: string; id: string; inputs: TensorIn[] }> };

export interface StreamMessage {
  id?: string;
  final?: boolean;
  outputs?: Record<string, TensorOut>;
  error?: string;
}

export interface Answer {
  outputs?: Record<string, TensorOut>;
  error?: string;
  /** Of an error: the HTTP status ("501") or gRPC code ("StatusCode.INVALID_ARGUMENT"). */
  status?: string;
  streams?: StreamMessage[][];
}

export function tritonclient(
  ports: { http: number; grpc: number },
  calls: Call[],
  python: string = testToolsPython(),
  timeoutMs = 120_000,
): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      python,
      [SCRIPT],
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`tritonclient requests failed: ${String(stderr).trim()}`, { cause: err }));
        else resolve(JSON.parse(String(stdout)) as Answer[]);
      },
    );
    child.stdin!.end(JSON.stringify({ http: `127.0.0.1:${ports.http}`, grpc: `127.0.0.1:${ports.grpc}`, calls }));
  });
}

/** One output of one answer, failing the test with the whole answer when it is not there. */
export function output(a: Answer | undefined, name: string): TensorOut {
  const o = a?.outputs?.[name];
  if (!o) throw new Error(`no output ${name} in ${JSON.stringify(a)}`);
  return o;
}
