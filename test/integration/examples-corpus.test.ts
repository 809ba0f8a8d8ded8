import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, freePorts, portArgs, runCli, tempDir, testEnv, type CliResult } from "../helpers/cli.js";
import { output, tritonclient, type Call, type TensorIn } from "../helpers/tritonclient.js";

/**
 * The corpus in test/fixtures/examples (models in the shapes of Triton's public python_backend
 * examples, written by us; its README says which each mirrors) through lint, `up --detach`, real
 * requests through NVIDIA's tritonclient over HTTP and gRPC (gRPC streams for the decoupled
 * models), its custom metric, one edit seen through a BLS caller, and `down`, on the real
 * tritonserver. The misplaced layouts (test/fixtures/examples/misplaced) are a repository of
 * their own, in examples-misplaced.test.ts.
 */
const CORPUS = path.join(ROOT, "test/fixtures/examples");
const MODELS = [
  "auto_complete",
  "bls_async",
  "bls_callee",
  "bls_sync",
  "pipeline",
  "preprocess",
  "repeat",
  "request_counter",
  "scorer",
  "square",
];

const fp32 = (name: string, shape: number[], data: number[]): TensorIn => ({ name, datatype: "FP32", shape, data });
const int32 = (name: string, shape: number[], data: number[]): TensorIn => ({ name, datatype: "INT32", shape, data });
const infer = (protocol: "http" | "grpc", model: string, inputs: TensorIn[]): Call => ({
  kind: "infer",
  protocol,
  model,
  inputs,
});

/** What the corpus's preprocess -> scorer computes, in the test's own arithmetic. */
function pipelineExpected(rows: number[][]): number[][] {
  const w = [
    [1.5, -1.5],
    [0.5, -0.5],
    [-0.5, 0.5],
    [-1.5, 1.5],
  ];
  return rows.map((row) => {
    const mean = row.reduce((a, b) => a + b, 0) / row.length;
    const std = Math.sqrt(row.reduce((a, b) => a + (b - mean) ** 2, 0) / row.length) || 1;
    const f = row.map((v) => (v - mean) / std);
    const logits = [0, 1].map((c) => f.reduce((a, v, i) => a + v * w[i]![c]!, 0));
    const m = Math.max(...logits);
    const e = logits.map((l) => Math.exp(l - m));
    const s = e[0]! + e[1]!;
    return e.map((x) => x / s);
  });
}

describe("the python_backend examples corpus on the real tritonserver", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let repo: string;
  let lint: CliResult;
  let up: CliResult;
  let upMs = 0;
  const t0 = Date.now();
  const send = (calls: Call[]) => tritonclient(ports, calls);

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    repo = path.join(await tempDir("examples"), "models");
    // The README documents the corpus and misplaced/ is a repository of its own; neither is a model.
    await fs.cp(CORPUS, repo, {
      recursive: true,
      filter: (src) => !src.includes("__pycache__") && src !== path.join(CORPUS, "misplaced"),
    });
    await fs.rm(path.join(repo, "README.md"));
    lint = await runCli(["lint", repo], env);
    const started = Date.now();
    up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
    upMs = Date.now() - started;
  }, 180_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    console.info(
      `examples corpus: up --detach ${(upMs / 1000).toFixed(1)} s, whole file ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
  }, 60_000);

  it("lint says every model of the corpus would load, and up serves all of them", async () => {
    expect(lint.code).toBe(0);
    expect(lint.stdout).toMatch(/10 models checked: 0 errors.*\(10 of 10 would load\)/);
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    expect(up.stdout).toMatch(/10 of 10 models? READY/);
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(s.serverReady).toBe(true);
    expect(s.models.map((m: { name: string }) => m.name).sort()).toEqual(MODELS);
    expect(s.models.every((m: { state: string }) => m.state === "READY")).toBe(true);
  });

  it("BLS sync and async call bls_callee and compute, through tritonclient over HTTP and gRPC", async () => {
    const x = [1, -2, 3.5];
    const a = await send(
      (["http", "grpc"] as const).flatMap((p) => [
        infer(p, "bls_sync", [fp32("INPUT0", [3], x)]),
        infer(p, "bls_async", [fp32("INPUT0", [3], x)]),
      ]),
    );
    for (const i of [0, 2]) expect(output(a[i], "OUTPUT0")).toEqual({ shape: [3], data: x.map((v) => v * 2 + 1) });
    for (const i of [1, 3]) expect(output(a[i], "OUTPUT0").data).toEqual(x.map((v) => v * 2 * 1.5));
  });

  it("decoupled repeat: a gRPC stream gets one response per element, then the final flag alone", async () => {
    const values = [7, -3, 42, 0, 9];
    const [a] = await send([
      { kind: "streams", streams: [{ model: "repeat", id: "repeat-1", inputs: [int32("IN", [5], values)] }] },
    ]);
    const msgs = a!.streams![0]!;
    expect(msgs.map((m) => m.error)).toEqual(msgs.map(() => undefined));
    expect(msgs).toHaveLength(values.length + 1);
    const data = msgs.slice(0, -1);
    expect(data.map((m) => m.outputs!["OUT"]!.data[0])).toEqual(values);
    expect(data.map((m) => m.outputs!["IDX"]!.data[0])).toEqual(values.map((_, i) => i));
    expect(msgs.every((m) => m.id === "repeat-1")).toBe(true);
    expect(data.map((m) => m.final)).toEqual(values.map(() => false));
    expect(msgs.at(-1)).toEqual({ id: "repeat-1", final: true, outputs: {} });
  });

  it("decoupled square: responses sent from the model's own thread after execute returned, n of them, for three streams at once", async () => {
    const ask = (n: number, id: string) => ({ model: "square", id, inputs: [int32("IN", [1], [n])] });
    const [a, bad] = await send([
      { kind: "streams", streams: [ask(4, "sq-4"), ask(3, "sq-3"), ask(0, "sq-0")] },
      { kind: "streams", streams: [ask(-1, "sq-bad")] },
    ]);
    for (const [msgs, n, id] of [
      [a!.streams![0]!, 4, "sq-4"],
      [a!.streams![1]!, 3, "sq-3"],
      [a!.streams![2]!, 0, "sq-0"],
    ] as const) {
      expect(msgs.map((m) => m.error)).toEqual(msgs.map(() => undefined));
      expect(msgs).toHaveLength(n + 1);
      expect(msgs.slice(0, -1).map((m) => m.outputs!["OUT"]!.data)).toEqual(Array.from({ length: n }, () => [n]));
      expect(msgs.every((m) => m.id === id)).toBe(true);
      expect(msgs.at(-1)).toMatchObject({ final: true, outputs: {} });
    }
    expect(bad!.streams![0]!.map((m) => m.error).join(" ")).toMatch(/IN must be 0 or more, got -1/);
  });

  it("decoupled repeat over HTTP /infer: Triton 2.51 answers 501, decoupled models need a stream", async () => {
    // Measured: 501 Not Implemented (not 400), the message naming the decoupled policy.
    const [a] = await send([infer("http", "repeat", [int32("IN", [2], [1, 2])])]);
    expect(a!.error).toMatch(/decoupled/i);
    expect(a!.status).toBe("501");
  });

  it("auto-complete: Triton takes inputs, outputs and max_batch_size from auto_complete_config", async () => {
    const cfg = (await (await fetch(`http://127.0.0.1:${ports.http}/v2/models/auto_complete/config`)).json()) as {
      backend: string;
      max_batch_size: number;
      input: Array<{ name: string; data_type: string; dims: string[] }>;
      output: Array<{ name: string }>;
    };
    expect(cfg.backend).toBe("python");
    expect(cfg.max_batch_size).toBe(8);
    expect(cfg.input.map((i) => [i.name, i.data_type, i.dims.map(Number)])).toEqual([
      ["INPUT0", "TYPE_FP32", [4]],
      ["INPUT1", "TYPE_FP32", [4]],
    ]);
    expect(cfg.output.map((o) => o.name)).toEqual(["SUM", "DIFF"]);
    const a = [1, 2, 3, 4, 5, 6, 7, 8];
    const b = [8, 7, 6, 5, 4, 3, 2, 1];
    const [h, g] = await send([
      infer("http", "auto_complete", [fp32("INPUT0", [2, 4], a), fp32("INPUT1", [2, 4], b)]),
      infer("grpc", "auto_complete", [fp32("INPUT0", [1, 4], a.slice(0, 4)), fp32("INPUT1", [1, 4], b.slice(0, 4))]),
    ]);
    expect(output(h, "SUM")).toEqual({ shape: [2, 4], data: a.map((v, i) => v + b[i]!) });
    expect(output(h, "DIFF").data).toEqual(a.map((v, i) => v - b[i]!));
    expect(output(g, "SUM")).toEqual({ shape: [1, 4], data: [9, 9, 9, 9] });
  });

  it("custom metrics: the model's MetricFamily counter counts its requests on /metrics", async () => {
    const metric = async (name: string) => {
      const text = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`model="request_counter"`));
      return line === undefined ? undefined : Number(line.split(" ").pop());
    };
    // The family exists from initialize on, before any request.
    expect(await metric("corpus_requests_total")).toBe(0);
    const answers = await send([
      ...[1, 2, 3].map((i) => infer("http", "request_counter", [fp32("INPUT0", [3], [i, i, i])])),
      ...[0, 1].map(() => infer("grpc", "request_counter", [fp32("INPUT0", [2], [0.5, 2])])),
    ]);
    // One request after another, so the cumulative sums are in this order.
    [1, 2, 3].forEach((i, k) => expect(output(answers[k], "OUTPUT0").data).toEqual([i, 2 * i, 3 * i]));
    for (const k of [3, 4]) expect(output(answers[k], "OUTPUT0").data).toEqual([0.5, 2.5]);
    expect(await metric("corpus_requests_total")).toBe(5);
    expect(await metric("corpus_last_input_sum")).toBe(2.5);
  });

  it("the python pipeline ensemble runs preprocess then scorer", async () => {
    const rows = [
      [1, 2, 3, 4],
      [40, 30, 20, 10],
      [5, 5, 5, 5],
    ];
    const expected = pipelineExpected(rows);
    const [h, g] = await send([
      infer("http", "pipeline", [fp32("RAW", [3, 4], rows.flat())]),
      infer("grpc", "pipeline", [fp32("RAW", [1, 4], rows[0]!)]),
    ]);
    const probs = output(h, "PROBS");
    expect(probs.shape).toEqual([3, 2]);
    probs.data.forEach((p, i) => expect(p).toBeCloseTo(expected.flat()[i]!, 5));
    expect(probs.data[1]).toBeGreaterThan(0.99); // rising
    expect(probs.data[2]).toBeGreaterThan(0.99); // falling
    expect(probs.data[4]).toBeCloseTo(0.5, 6); // flat
    output(g, "PROBS").data.forEach((p, i) => expect(p).toBeCloseTo(expected[0]![i]!, 5));
  });

  it("poll mode loads each model once: no model (auto-completed ones included) reloads while it only serves", async () => {
    // Three poll intervals after every request above: a stub's __pycache__ or a completed
    // config read as a change would show as a second "loading:" line by now.
    await new Promise((res) => setTimeout(res, 3_500));
    const log = (await runCli(["logs"], env)).stdout;
    const loads = new Map<string, number>();
    for (const m of log.matchAll(/"loading: ([^:"]+):\d+"/g)) loads.set(m[1]!, (loads.get(m[1]!) ?? 0) + 1);
    expect(Object.fromEntries(loads)).toEqual(Object.fromEntries(MODELS.map((m) => [m, 1])));
  }, 30_000);

  it("an edit to the BLS callee's constant is served through both callers", async () => {
    const file = path.join(repo, "bls_callee/1/model.py");
    const before = await fs.readFile(file, "utf8");
    expect(before).toMatch(/^SCALE = 2\.0$/m);
    const saved = Date.now();
    await fs.writeFile(file, before.replace(/^SCALE = 2\.0$/m, "SCALE = 3.0"));
    const x = [1, 2];
    let seen: number[] = [];
    // Bounded: the watcher settles, stages and reloads bls_callee; the caller serves throughout.
    // The poll is a plain HTTP request (a Python start per poll would blur the timing).
    while (Date.now() - saved < 60_000) {
      const res = await fetch(`http://127.0.0.1:${ports.http}/v2/models/bls_sync/infer`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ inputs: [fp32("INPUT0", [2], x)] }),
      });
      expect(res.status).toBe(200);
      seen = ((await res.json()) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data;
      if (seen[0] !== 3) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(seen).toEqual([4, 7]);
    console.info(
      `examples corpus: callee edit served through bls_sync ${((Date.now() - saved) / 1000).toFixed(1)} s after saving`,
    );
    const [h, g] = await send([
      infer("http", "bls_async", [fp32("INPUT0", [2], x)]),
      infer("grpc", "bls_sync", [fp32("INPUT0", [2], x)]),
    ]);
    expect(output(h, "OUTPUT0").data).toEqual([4.5, 9]);
    expect(output(g, "OUTPUT0").data).toEqual([4, 7]);
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(s.serverReady).toBe(true);
    expect(s.models.find((m: { name: string }) => m.name === "bls_callee")).toMatchObject({ state: "READY" });
  }, 90_000);

  it("down stops the server and frees its ports", async () => {
    const r = await runCli(["down"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/stopped Triton/);
    await expect(fetch(`http://127.0.0.1:${ports.http}/v2/health/live`)).rejects.toThrow();
  });
});
