import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, SAMPLE_MODELS, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { testToolsPython } from "../helpers/test-tools.js";
import { output, tritonclient } from "../helpers/tritonclient.js";

/**
 * ONNX models written here with the onnx package (fixed seed): a batching one whose config lists
 * nothing (auto-complete fills inputs, outputs and max_batch_size), one named by
 * default_model_filename with its weights as external data beside it, and one the onnxruntime
 * backend refuses at load (an execution accelerator it does not know).
 */
const MAKE_MODELS = String.raw`
import sys, os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T
repo = sys.argv[1]
rng = np.random.default_rng(7)
def save(model, name, file="model.onnx", external=False):
    d = os.path.join(repo, name, "1")
    os.makedirs(d, exist_ok=True)
    if external:
        onnx.save(model, os.path.join(d, file), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=file + ".data", size_threshold=0)
    else:
        onnx.save(model, os.path.join(d, file))
def mlp(batch):
    W1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "W1")
    b1 = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1")
    W2 = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "W2")
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
             helper.make_node("Cast", ["x"], ["x64"], to=T.INT64)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", T.FLOAT, [batch, 4])],
                          [helper.make_tensor_value_info("probs", T.FLOAT, [batch, 3]),
                           helper.make_tensor_value_info("x64", T.INT64, [batch, 4])], [W1, b1, W2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m
save(mlp("N"), "ort_batch")
save(mlp(2), "ort_named", file="net.onnx", external=True)
save(mlp("N"), "ort_refused")
g = helper.make_graph([helper.make_node("Identity", ["s"], ["s_out"])], "strings",
                      [helper.make_tensor_value_info("s", T.STRING, ["N", 2])],
                      [helper.make_tensor_value_info("s_out", T.STRING, ["N", 2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
save(m, "ort_strings")
`;

/** onnxruntime itself, in the environment the run built for the models: the reference answers. */
const DIRECT = String.raw`
import json, sys
import numpy as np
import onnxruntime as ort
path, rows = sys.argv[1], json.loads(sys.argv[2])
so = ort.SessionOptions()
so.intra_op_num_threads = 1
s = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
probs, x64 = s.run(["probs", "x64"], {"x": np.array(rows, dtype=np.float32)})
print(json.dumps({"version": ort.__version__, "probs": probs.reshape(-1).tolist(), "x64": x64.reshape(-1).tolist()}))
`;

const CONFIGS: Record<string, string> = {
  // The article's form: the platform only; the onnxruntime backend completes the rest.
  ort_batch: `platform: "onnxruntime_onnx"
max_batch_size: 8
parameters: { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters: { key: "execution_mode" value: { string_value: "0" } }
optimization { execution_accelerators { cpu_execution_accelerator: [ { name: "openvino" } ] } }
`,
  ort_named: `backend: "onnxruntime"
default_model_filename: "net.onnx"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 4 ] } ]
output [ { name: "probs" data_type: TYPE_FP32 dims: [ 2, 3 ] }, { name: "x64" data_type: TYPE_INT64 dims: [ 2, 4 ] } ]
`,
  // TorchScript through PyTorch in the python backend: this machine's model environment has no
  // torch (bench/gpu/torchscript-adapter.sh serves one where it has), so the load says where torch goes.
  pt_no_torch: `platform: "pytorch_libtorch"
max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`,
  // String tensors: Triton's bytes go to onnxruntime as str and come back as bytes.
  ort_strings: `platform: "onnxruntime_onnx"
max_batch_size: 4
`,
  ort_refused: `platform: "onnxruntime_onnx"
max_batch_size: 4
optimization { execution_accelerators { cpu_execution_accelerator: [ { name: "tvm" } ] } }
`,
};

const ROWS = [
  [0.5, -1, 2, 0.25],
  [1, 2, 3, 4],
  [-3, 0.5, 0, 1.5],
];

/**
 * The local runtime serves ONNX models through Triton's python backend running ONNX Runtime: the
 * real tritonserver, the runtime library from PyPI in the model's environment, answers compared
 * with onnxruntime called directly, and what the onnxruntime backend refuses refused in its words.
 */
describe("onnxruntime models on the local runtime (real Triton, real onnxruntime)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let runDir: string;
  const temps: string[] = [];

  beforeAll(async () => {
    repo = await tempDir("local-backends");
    temps.push(repo);
    await execa(testToolsPython(), ["-c", MAKE_MODELS, repo]);
    await fsp.mkdir(path.join(repo, "pt_no_torch", "1"), { recursive: true });
    await fsp.writeFile(path.join(repo, "pt_no_torch", "1", "model.pt"), "not read: torch is missing");
    for (const [name, text] of Object.entries(CONFIGS))
      await fsp.writeFile(path.join(repo, name, "config.pbtxt"), text);
    env = await testEnv();
    temps.push(env.TRITON_DEV_STATE_DIR!);
    ports = await freePorts();
    // The first run builds the environment with onnxruntime from PyPI (about a minute); later
    // runs find it in the home's cache.
    const up = await runCli(
      ["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(ports)],
      env,
      600_000,
    );
    runDir = JSON.parse((await runCli(["status", "--json"], env)).stdout).repository.replace(/\/repository$/, "");
    expect(up.stderr + up.stdout).toContain("served through ONNX Runtime 1.20 in the python backend (local runtime)");
  }, 660_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    for (const t of temps) await fsp.rm(t, { recursive: true, force: true });
  });

  const direct = async (model: string, file: string, rows: number[][]) => {
    const staged = await fsp.readFile(path.join(runDir, "repository", model, "config.pbtxt"), "utf8");
    const envDir = /key: "EXECUTION_ENV_PATH" value: \{ string_value: "([^"]+)"/.exec(staged)![1]!;
    const r = await execa(path.join(envDir, "bin", "python"), [
      "-c",
      DIRECT,
      path.join(repo, model, "1", file),
      JSON.stringify(rows),
    ]);
    return JSON.parse(r.stdout) as { version: string; probs: number[]; x64: number[] };
  };

  it("answers as onnxruntime itself: a batch over HTTP and gRPC, auto-completed config, default_model_filename with external data", async () => {
    const x = { name: "x", datatype: "FP32", shape: [3, 4], data: ROWS.flat() };
    const [http, grpc, named] = await tritonclient(ports, [
      { kind: "infer", protocol: "http", model: "ort_batch", inputs: [x] },
      { kind: "infer", protocol: "grpc", model: "ort_batch", inputs: [x] },
      {
        kind: "infer",
        protocol: "http",
        model: "ort_named",
        inputs: [{ ...x, shape: [2, 4], data: ROWS.slice(0, 2).flat() }],
      },
    ]);
    const want = await direct("ort_batch", "model.onnx", ROWS);
    expect(want.version).toBe("1.20.1");
    for (const a of [http, grpc]) {
      expect(output(a, "probs").shape).toEqual([3, 3]);
      expect(output(a, "probs").data).toEqual(want.probs);
      expect(output(a, "x64").data).toEqual(want.x64);
    }
    const wantNamed = await direct("ort_named", "net.onnx", ROWS.slice(0, 2));
    expect(output(named, "probs").data).toEqual(wantNamed.probs);
    // Triton holds the config the onnxruntime backend would have completed.
    const cfg = (await fetch(`http://127.0.0.1:${ports.http}/v2/models/ort_batch/config`).then((r) => r.json())) as {
      max_batch_size: number;
      input: Array<{ name: string; data_type: string; dims: number[] }>;
      output: Array<{ name: string }>;
      dynamic_batching?: object;
    };
    expect(cfg.max_batch_size).toBe(8);
    expect(cfg.input.map((i) => [i.name, i.data_type, i.dims])).toEqual([["x", "TYPE_FP32", [4]]]);
    expect(cfg.output.map((o) => o.name).sort()).toEqual(["probs", "x64"]);
    expect(cfg.dynamic_batching).toBeDefined();
    const [strings] = await tritonclient(ports, [
      {
        kind: "infer",
        protocol: "http",
        model: "ort_strings",
        inputs: [{ name: "s", datatype: "BYTES", shape: [1, 2], data: ["ok", "héllo"] } as never],
      },
    ]);
    expect(output(strings, "s_out").data).toEqual(["ok", "héllo"]);
  }, 120_000);

  it("runs requests Triton batched together as one batch, each answered with its own rows", async () => {
    const calls = ROWS.map((row) => ({
      kind: "infer" as const,
      protocol: "http" as const,
      model: "ort_batch",
      inputs: [{ name: "x", datatype: "FP32", shape: [1, 4], data: row }],
    }));
    const answers = await Promise.all(calls.map((c) => tritonclient(ports, [c])));
    const want = await direct("ort_batch", "model.onnx", ROWS);
    answers.forEach(([a], i) => expect(output(a, "probs").data).toEqual(want.probs.slice(i * 3, i * 3 + 3)));
  }, 120_000);

  it("refuses what the onnxruntime backend refuses, in its words, and warns of the accelerators it does not offer", async () => {
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout) as {
      models: Array<{ name: string; state: string; reason?: string; servedAs?: string }>;
    };
    const refused = status.models.find((m) => m.name === "ort_refused")!;
    expect(refused.state).toBe("UNAVAILABLE");
    expect(refused.reason).toContain("unknown Execution Accelerator 'tvm' is requested");
    const noTorch = status.models.find((m) => m.name === "pt_no_torch")!;
    expect(noTorch.state).toBe("UNAVAILABLE");
    expect(noTorch.reason).toContain("torch is not importable in this model's environment");
    const served = status.models.find((m) => m.name === "ort_batch")!;
    expect(served.state).toBe("READY");
    expect(served.servedAs).toBe("served through ONNX Runtime 1.20 in the python backend (local runtime)");
    const log = await fsp.readFile(path.join(runDir, "tritonserver.log"), "utf8");
    expect(log).toContain("cpu_execution_accelerator 'openvino' is not offered by the local runtime");
    // The user's files are as they were: the adapter lives in the staged copy only.
    expect(await fsp.readFile(path.join(repo, "ort_batch", "config.pbtxt"), "utf8")).toBe(CONFIGS.ort_batch);
    expect(await fsp.readdir(path.join(repo, "ort_batch", "1"))).toEqual(["model.onnx"]);
    const lint = await runCli(["lint", repo, "--runtime", "local"], env);
    expect(lint.stdout).toContain("note: served through ONNX Runtime 1.20 in the python backend (local runtime)");
  }, 120_000);
});

/** OpenVINO itself, in the environment the run built for the model: the reference answers. */
const DIRECT_OV = String.raw`
import json, sys
import numpy as np
import openvino as ov
path, rows = sys.argv[1], json.loads(sys.argv[2])
compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": 1, "PERFORMANCE_HINT": "LATENCY"})
out = compiled.create_infer_request().infer({"x": np.array(rows, dtype=np.float32)})
by_name = {k.get_any_name(): v for k, v in out.items()}
print(json.dumps({"version": ov.__version__, "probs": by_name["probs"].reshape(-1).tolist(), "x32": by_name["x32"].reshape(-1).tolist()}))
`;

/** The IR test/fixtures/openvino/make-ir.py converted from ONNX with OpenVINO's own converter. */
const OV_IR = path.join(ROOT, "test/fixtures/openvino/mlp");

const OV_CONFIGS: Record<string, string> = {
  // Inputs and outputs left to the openvino backend's auto-complete; parameters it maps to CPU properties.
  ov_batch: `backend: "openvino"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 50000 }
parameters: { key: "INFERENCE_NUM_THREADS" value: { string_value: "1" } }
parameters: { key: "PERFORMANCE_HINT" value: { string_value: "latency" } }
`,
  ov_fixed: `backend: "openvino"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 4 ] } ]
output [ { name: "probs" data_type: TYPE_FP32 dims: [ -1, 3 ] }, { name: "x32" data_type: TYPE_INT32 dims: [ -1, 4 ] } ]
`,
  // ParseParameterHelper accepts LATENCY, THROUGHPUT or CUMULATIVE_THROUGHPUT only.
  ov_refused: `backend: "openvino"
max_batch_size: 8
parameters: { key: "PERFORMANCE_HINT" value: { string_value: "Fastest" } }
`,
};

/**
 * The local runtime serves OpenVINO IR models (backend "openvino", model.xml and model.bin)
 * through Triton's python backend running OpenVINO from PyPI: answers compared with OpenVINO
 * called directly on the same IR, and what the openvino backend refuses refused in its words.
 */
describe("openvino models on the local runtime (real Triton, real OpenVINO)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let runDir: string;

  beforeAll(async () => {
    repo = await tempDir("local-openvino");
    for (const [name, text] of Object.entries(OV_CONFIGS)) {
      await fsp.cp(OV_IR, path.join(repo, name, "1"), { recursive: true });
      await fsp.writeFile(path.join(repo, name, "config.pbtxt"), text);
    }
    env = await testEnv();
    ports = await freePorts();
    // The first run builds the environment with openvino from PyPI; later runs find it cached.
    const up = await runCli(
      ["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(ports)],
      env,
      600_000,
    );
    expect(up.stderr + up.stdout).toContain("served through OpenVINO 2024.4 in the python backend (local runtime)");
    runDir = JSON.parse((await runCli(["status", "--json"], env)).stdout).repository.replace(/\/repository$/, "");
  }, 660_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    if (env?.TRITON_DEV_STATE_DIR) await fsp.rm(env.TRITON_DEV_STATE_DIR, { recursive: true, force: true });
    if (repo) await fsp.rm(repo, { recursive: true, force: true });
  });

  const direct = async (model: string, rows: number[][]) => {
    const staged = await fsp.readFile(path.join(runDir, "repository", model, "config.pbtxt"), "utf8");
    const envDir = /key: "EXECUTION_ENV_PATH" value: \{ string_value: "([^"]+)"/.exec(staged)![1]!;
    const r = await execa(path.join(envDir, "bin", "python"), [
      "-c",
      DIRECT_OV,
      path.join(repo, model, "1", "model.xml"),
      JSON.stringify(rows),
    ]);
    return JSON.parse(r.stdout) as { version: string; probs: number[]; x32: number[] };
  };

  it("answers as OpenVINO itself: a batch over HTTP and gRPC with the auto-completed config, and a fixed shape", async () => {
    const x = { name: "x", datatype: "FP32", shape: [3, 4], data: ROWS.flat() };
    const [http, grpc, fixed] = await tritonclient(ports, [
      { kind: "infer", protocol: "http", model: "ov_batch", inputs: [x] },
      { kind: "infer", protocol: "grpc", model: "ov_batch", inputs: [x] },
      {
        kind: "infer",
        protocol: "http",
        model: "ov_fixed",
        inputs: [{ ...x, shape: [2, 4], data: ROWS.slice(0, 2).flat() }],
      },
    ]);
    const want = await direct("ov_batch", ROWS);
    expect(want.version).toMatch(/^2024\.4\.0/);
    for (const a of [http, grpc]) {
      expect(output(a, "probs").shape).toEqual([3, 3]);
      expect(output(a, "probs").data).toEqual(want.probs);
      expect(output(a, "x32").data).toEqual(want.x32);
    }
    const wantFixed = await direct("ov_fixed", ROWS.slice(0, 2));
    expect(output(fixed, "probs").shape).toEqual([2, 3]);
    expect(output(fixed, "probs").data).toEqual(wantFixed.probs);
    // Triton holds the config the openvino backend would have completed from the IR.
    const cfg = (await fetch(`http://127.0.0.1:${ports.http}/v2/models/ov_batch/config`).then((r) => r.json())) as {
      input: Array<{ name: string; data_type: string; dims: number[] }>;
      output: Array<{ name: string; data_type: string; dims: number[] }>;
    };
    expect(cfg.input.map((i) => [i.name, i.data_type, i.dims])).toEqual([["x", "TYPE_FP32", [4]]]);
    expect(cfg.output.map((o) => [o.name, o.data_type, o.dims]).sort()).toEqual([
      ["probs", "TYPE_FP32", [3]],
      ["x32", "TYPE_INT32", [4]],
    ]);
  }, 120_000);

  it("runs requests Triton batched together as one batch, each answered with its own rows", async () => {
    const answers = await Promise.all(
      ROWS.map((row) =>
        tritonclient(ports, [
          {
            kind: "infer",
            protocol: "http",
            model: "ov_batch",
            inputs: [{ name: "x", datatype: "FP32", shape: [1, 4], data: row }],
          },
        ]),
      ),
    );
    const want = await direct("ov_batch", ROWS);
    answers.forEach(([a], i) => expect(output(a, "probs").data).toEqual(want.probs.slice(i * 3, i * 3 + 3)));
  }, 120_000);

  it("refuses what the openvino backend refuses, in its words; status and lint say how it is served", async () => {
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout) as {
      models: Array<{ name: string; state: string; reason?: string; servedAs?: string }>;
    };
    const refused = status.models.find((m) => m.name === "ov_refused")!;
    expect(refused.state).toBe("UNAVAILABLE");
    expect(refused.reason).toContain(
      "expected the parameter 'PERFORMANCE_HINT' to be LATENCY/THROUGHPUT/CUMULATIVE_THROUGHPUT, got fastest",
    );
    const served = status.models.find((m) => m.name === "ov_batch")!;
    expect(served.state).toBe("READY");
    expect(served.servedAs).toBe("served through OpenVINO 2024.4 in the python backend (local runtime)");
    expect(await fsp.readdir(path.join(repo, "ov_batch", "1"))).toEqual(["model.bin", "model.xml"]);
    const lint = await runCli(["lint", repo, "--runtime", "local"], env);
    expect(lint.stdout).toContain("note: served through OpenVINO 2024.4 in the python backend (local runtime)");
  }, 120_000);
});

/** onnxruntime on the tokenizer's own output: what bert_large must answer. */
const DIRECT_ARTICLE = String.raw`
import json, sys
import numpy as np
import onnxruntime as ort
path, ids, mask = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
out = s.run(["output"], {"input_ids": np.array(ids, dtype=np.int64), "attention_mask": np.array(mask, dtype=np.int64)})[0]
print(json.dumps(out.reshape(-1).tolist()))
`;

/**
 * The article's ONNX model role in the sample repository (models/bert_large, written by
 * examples/make-article.py): a real ONNX model behind the samples' tokenizer, in the tokenizer ->
 * classifier ensemble bert_pipeline, on the local runtime.
 */
describe("the sample repository's ONNX bert_large in its ensemble (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let repo: string;

  beforeAll(async () => {
    repo = await tempDir("article");
    for (const m of ["bert_tokenizer", "bert_large", "bert_pipeline"])
      await fsp.cp(path.join(SAMPLE_MODELS, m), path.join(repo, m), {
        recursive: true,
        filter: (f) => !f.includes("__pycache__"),
      });
    env = await testEnv();
    ports = await freePorts();
    const up = await runCli(
      ["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(ports)],
      env,
      600_000,
    );
    expect(up.code, up.stdout + up.stderr).toBe(0);
  }, 660_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    if (env?.TRITON_DEV_STATE_DIR) await fsp.rm(env.TRITON_DEV_STATE_DIR, { recursive: true, force: true });
    if (repo) await fsp.rm(repo, { recursive: true, force: true });
  });

  it("answers raw text through the ensemble as onnxruntime answers the tokenizer's ids", async () => {
    const text = { name: "RAW_TEXT", datatype: "BYTES", shape: [2, 1], data: ["a wonderful film", "boring and awful"] };
    const [pipeline, tokens] = await tritonclient(ports, [
      { kind: "infer", protocol: "grpc", model: "bert_pipeline", inputs: [text as never] },
      { kind: "infer", protocol: "http", model: "bert_tokenizer", inputs: [{ ...text, name: "TEXT_INPUT" } as never] },
    ]);
    const ids = output(tokens, "INPUT_IDS");
    const mask = output(tokens, "ATTENTION_MASK");
    const rows = (t: { data: number[] }) => [t.data.slice(0, 128), t.data.slice(128)];
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout) as { repository: string };
    const staged = await fsp.readFile(path.join(status.repository, "bert_large", "config.pbtxt"), "utf8");
    const envDir = /key: "EXECUTION_ENV_PATH" value: \{ string_value: "([^"]+)"/.exec(staged)![1]!;
    const want = JSON.parse(
      (
        await execa(path.join(envDir, "bin", "python"), [
          "-c",
          DIRECT_ARTICLE,
          path.join(repo, "bert_large", "1", "model.onnx"),
          JSON.stringify(rows(ids)),
          JSON.stringify(rows(mask)),
        ])
      ).stdout,
    ) as number[];
    expect(output(pipeline, "PREDICTIONS").shape).toEqual([2, 2]);
    expect(output(pipeline, "PREDICTIONS").data).toEqual(want);
  }, 120_000);

  it("ships the model examples/make-article.py writes from its fixed seed and the tokenizer's vocabulary", async () => {
    const out = path.join(repo, "regenerated.onnx");
    await execa(testToolsPython(), [path.join(ROOT, "examples/make-article.py"), out]);
    expect(
      Buffer.compare(await fsp.readFile(out), await fsp.readFile(path.join(SAMPLE_MODELS, "bert_large/1/model.onnx"))),
    ).toBe(0);
  }, 60_000);
});
