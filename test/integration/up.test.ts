import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPortFree } from "../../src/net/ports.js";
import { findProcesses } from "../../src/state/process.js";
import { TritonHttpClient, TritonHttpError } from "../../src/triton/http-client.js";
import { copySampleModels, freePorts, portArgs, runCli, testEnv } from "../helpers/cli.js";

/**
 * The foundation, end to end, as a user runs it: `up --detach` on a copy of the sample models,
 * a real tritonserver, inference on every model, the article's queue policy, metrics, `down`.
 */
describe("up --detach on the sample models (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;
  let client: TritonHttpClient;
  let upElapsedMs = 0;

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    models = await copySampleModels();
    const t0 = Date.now();
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    upElapsedMs = Date.now() - t0;
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    expect(up.stdout).toMatch(/7 of 8 models? READY/);
    // The GPU sample model is skipped on a machine without a GPU, plainly and without failing `up`.
    expect(up.stdout).toMatch(
      /resnet50_fp16: skipped, it needs a GPU \(KIND_GPU\) and this machine has none; it runs on a machine with an NVIDIA GPU, with this runtime or the docker or kind runtime \(`--gpus all`, image nvcr\.io\/nvidia\/tritonserver:24\.10-py3\) \(.*config\.pbtxt:\d+:\d+/,
    );
    client = new TritonHttpClient(`http://127.0.0.1:${ports.http}`, { timeoutMs: 60_000 });
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("reports every model READY in status --json, with endpoints and runtime", async () => {
    const r = await runCli(["status", "--json"], env);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout);
    // The run's folder (staged copies of the user's models, Triton's log) is the user's alone.
    expect((await fs.stat(path.dirname(s.logFile))).mode & 0o777).toBe(0o700);
    expect(s.running).toBe(true);
    expect(s.runtime).toBe("local");
    expect(s.endpoints.http).toBe(`http://127.0.0.1:${ports.http}`);
    expect(s.serverReady).toBe(true);
    const byName = Object.fromEntries(s.models.map((m: { name: string }) => [m.name, m]));
    for (const m of [
      "bert_large",
      "bert_pipeline",
      "bert_tokenizer",
      "sentiment_classifier",
      "sentiment_pipeline",
      "image_classifier",
      "text_streamer",
    ]) {
      expect(byName[m]).toMatchObject({ name: m, version: "1", state: "READY" });
    }
    // The model `up` left out is listed too, with why, although Triton never saw it.
    expect(byName.resnet50_fp16).toMatchObject({
      state: "SKIPPED",
      reason:
        "it needs a GPU (KIND_GPU) and this machine has none; it runs on a machine with an NVIDIA GPU, with this runtime or the docker or kind runtime (`--gpus all`, image nvcr.io/nvidia/tritonserver:24.10-py3)",
    });
    const plain = await runCli(["status"], env);
    expect(plain.stdout).toMatch(/resnet50_fp16\s+\S*\s*SKIPPED/);
    // A rough figure for the closing note; not an assertion on speed.
    console.info(`up --detach to all models READY: ${(upElapsedMs / 1000).toFixed(1)} s`);
  });

  it("keeps the model-repository API locked to the per-run key", async () => {
    const err = await client.repositoryIndex().catch((e) => e);
    expect(err).toBeInstanceOf(TritonHttpError);
    expect(err.tritonMessage).toMatch(/restricted/);
  });

  it("tokenizes for real with the shipped vocabulary", async () => {
    const r = await client.infer("bert_tokenizer", [
      {
        name: "TEXT_INPUT",
        shape: [2, 1],
        datatype: "BYTES",
        data: ["Hello world!", "unbelievably wonderful tokenization"],
      },
    ]);
    const ids = r.outputs.find((o) => o.name === "INPUT_IDS")!;
    const mask = r.outputs.find((o) => o.name === "ATTENTION_MASK")!;
    expect(ids.shape).toEqual([2, 128]);
    expect(mask.shape).toEqual([2, 128]);
    const row = (a: unknown[], i: number) => (a as number[]).slice(i * 128, (i + 1) * 128);
    const ids0 = row(ids.data, 0);
    const mask0 = row(mask.data, 0);
    const n0 = mask0.reduce((a, b) => a + b, 0);
    expect(n0).toBeGreaterThanOrEqual(5); // [CLS] hello world ! [SEP]
    expect(ids0[0]).toBe(row(ids.data, 1)[0]); // both start with [CLS]
    expect(ids0[n0 - 1]).toBe(row(ids.data, 1)[row(mask.data, 1).reduce((a, b) => a + b, 0) - 1]); // and end with [SEP]
    expect(ids0.slice(n0).every((x) => x === 0)).toBe(true); // [PAD] = 0 after the text
    // A long word is split into several WordPiece pieces, so the second row has more tokens than words.
    expect(row(mask.data, 1).reduce((a, b) => a + b, 0)).toBeGreaterThan(3 + 2);
  });

  it("runs the article's ensemble: raw text in, two probabilities out, ordered by sentiment", async () => {
    const positive = "this movie was wonderful, i loved it, a great and beautiful film";
    const negative = "terrible, boring and awful. i hated it, the worst film";
    const r = await client.infer("sentiment_pipeline", [
      { name: "RAW_TEXT", shape: [2, 1], datatype: "BYTES", data: [positive, negative] },
    ]);
    const out = r.outputs.find((o) => o.name === "PREDICTIONS")!;
    expect(out.datatype).toBe("FP32");
    expect(out.shape).toEqual([2, 2]);
    const [pn, pp, nn, np] = out.data as number[];
    expect(pn! + pp!).toBeCloseTo(1, 5);
    expect(nn! + np!).toBeCloseTo(1, 5);
    expect(pp!).toBeGreaterThan(0.8); // [negative, positive]
    expect(nn!).toBeGreaterThan(0.8);
  });

  it("classifies an image-shaped tensor deterministically into 1000 probabilities", async () => {
    const n = 3 * 224 * 224;
    const data = Array.from({ length: n }, (_, i) => Math.sin(i * 0.001));
    const a = await client.infer("image_classifier", [
      { name: "input_1", shape: [1, 3, 224, 224], datatype: "FP32", data },
    ]);
    const b = await client.infer("image_classifier", [
      { name: "input_1", shape: [1, 3, 224, 224], datatype: "FP32", data },
    ]);
    const pa = a.outputs[0]!.data as number[];
    expect(a.outputs[0]!.name).toBe("predictions");
    expect(pa).toHaveLength(1000);
    expect(pa.reduce((x, y) => x + y, 0)).toBeCloseTo(1, 4);
    expect(b.outputs[0]!.data).toEqual(pa);
  });

  it("enforces the article's queue policy: a request past its timeout is rejected, not hung", async () => {
    const tok = await client.infer("bert_tokenizer", [
      { name: "TEXT_INPUT", shape: [1, 1], datatype: "BYTES", data: ["a fairly ordinary sentence about nothing much"] },
    ]);
    const ids = tok.outputs.find((o) => o.name === "INPUT_IDS")!.data as number[];
    const mask = tok.outputs.find((o) => o.name === "ATTENTION_MASK")!.data as number[];
    const batch = 32;
    const inputs = [
      {
        name: "input_ids",
        shape: [batch, 128],
        datatype: "INT64",
        data: Array.from({ length: batch }, () => ids).flat(),
      },
      {
        name: "attention_mask",
        shape: [batch, 128],
        datatype: "INT64",
        data: Array.from({ length: batch }, () => mask).flat(),
      },
    ];
    // 24 full batches at once keep both instances busy; each request may wait only 20 ms
    // (allow_timeout_override is on), so the ones still queued must be rejected.
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 24 }, () =>
        client.infer("sentiment_classifier", inputs, { parameters: { timeout: 20_000 } }).then(
          () => "ok" as const,
          (e: unknown) => e,
        ),
      ),
    );
    const elapsed = Date.now() - started;
    const rejected = results.filter((r) => r instanceof TritonHttpError) as TritonHttpError[];
    expect(results.filter((r) => r === "ok").length).toBeGreaterThan(0);
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected[0]!.tritonMessage).toMatch(/timeout|timed out/i);
    expect(results.every((r) => r === "ok" || r instanceof TritonHttpError)).toBe(true);
    expect(elapsed).toBeLessThan(60_000);
  }, 90_000);

  it("serves nv_inference_request_success on the metrics port for the models used", async () => {
    const text = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text();
    for (const m of ["bert_tokenizer", "sentiment_pipeline", "image_classifier", "sentiment_classifier"]) {
      const line = text
        .split("\n")
        .find((l) => l.startsWith("nv_inference_request_success") && l.includes(`model="${m}"`));
      expect(line, `metrics line for ${m}`).toBeDefined();
      expect(Number(line!.split(" ").pop())).toBeGreaterThan(0);
    }
  });

  it("refuses a second up while this one runs, naming the running server", async () => {
    const r = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/already running \(pid \d+, local runtime, http 127\.0\.0\.1:\d+/);
    expect(r.stderr).toMatch(/triton-dev down/);
  });

  it("shows the server's log", async () => {
    const r = await runCli(["logs", "-n", "500"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/successfully loaded 'sentiment_pipeline'/);
  });

  it("down stops the server and its python stubs and frees the ports", async () => {
    const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    const ours = () => findProcesses((argv) => argv.join(" ").includes(state.runDir));
    expect(ours().length).toBeGreaterThan(4); // the server and its stubs
    const r = await runCli(["down"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/stopped Triton \(pid \d+/);
    expect(ours()).toEqual([]);
    for (const p of Object.values(ports)) expect(await isPortFree(p)).toBe(true);
    const again = await runCli(["status", "--json"], env);
    expect(JSON.parse(again.stdout).running).toBe(false);
  }, 60_000);
});

describe("up: failures a user meets", () => {
  it("reports a taken port with who holds it and the flag to change", async () => {
    const env = await testEnv();
    const ports = await freePorts();
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen({ port: ports.grpc, host: "127.0.0.1" }, r));
    try {
      const models = await copySampleModels();
      const r = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`port ${ports.grpc} (grpc) on 127.0.0.1 is already in use by pid ${process.pid}`);
      expect(r.stderr).toMatch(/--grpc-port N/);
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });

  it("shows the last log lines when the server dies during start", async () => {
    // The one fake here is at the outermost edge: a tritonserver binary that fails the way a
    // broken install does. Everything else (environment record, staging, waits) is real.
    const env = await testEnv();
    const home = env.TRITON_DEV_HOME
      ? path.resolve(env.TRITON_DEV_HOME)
      : path.join(process.env.HOME ?? "/root", ".cache/triton-dev");
    const marker = JSON.parse(await fs.readFile(path.join(home, "environment.json"), "utf8"));
    const fakeHome = path.join(env.TRITON_DEV_STATE_DIR!, "home");
    await fs.mkdir(fakeHome, { recursive: true });
    const fakeBin = path.join(fakeHome, "tritonserver");
    await fs.writeFile(
      fakeBin,
      "#!/bin/sh\necho 'I1129 10:00:00.000000 1 server.cc:1] \"starting\"'\necho 'E1129 10:00:00.000001 1 main.cc:2] \"error: creating server: Internal - failed to load all models\"'\nexit 1\n",
      { mode: 0o755 },
    );
    await fs.writeFile(path.join(fakeHome, "environment.json"), JSON.stringify({ ...marker, serverBin: fakeBin }));
    const ports = await freePorts();
    const models = await copySampleModels();
    // The fake home holds no model environments: bert_large's would be built there first (pip).
    for (const m of ["bert_large", "bert_pipeline"]) await fs.rm(path.join(models, m), { recursive: true });
    const r = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], {
      ...env,
      TRITON_DEV_HOME: fakeHome,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tritonserver exited during start \(code 1\)/);
    expect(r.stderr).toMatch(/error: creating server: Internal - failed to load all models/);
    expect(r.stderr).toMatch(/hint: The full log is .*tritonserver\.log/);
    const status = await runCli(["status", "--json"], { ...env, TRITON_DEV_HOME: fakeHome });
    expect(JSON.parse(status.stdout).running).toBe(false);
  });
});
