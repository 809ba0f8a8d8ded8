// The local runtime's onnxruntime adapter (Triton's python backend running ONNX Runtime) against
// ONNX Runtime alone on the same model, batch and threads, in one run on this machine:
//
//   direct       InferenceSession.run in one Python process (the model's own environment, so the
//                same onnxruntime build), input already in memory: p50, and mean (Triton's compute
//                time is a mean: server/direct divides mean by mean, and on a busy machine both
//                carry the outliers that p50 drops)
//   server       Triton's compute_infer time per request (/v2/models/M/stats): the python backend's
//                hand-over to the stub, the adapter, session.run, the outputs back; no transport
//   end to end   a tritonclient HTTP request per batch, p50 (adds the HTTP transport and the client)
//   python floor a python model that returns its input (same tensor, same server): what the python
//                backend's hand-over costs with no model at all
//
// The ratios server/direct and end-to-end/direct are the adapter's cost; "beyond floor" (p50s only,
// the figure that holds still on a busy machine) is the adapter's end-to-end p50 less the python
// floor's end-to-end p50 and direct's p50: what the adapter's own Python and a model run after a
// wait (caches cold, unlike direct's back-to-back loop) add to the python backend's hand-over.
//
// The openvino adapter is measured the same way on the same MLP (converted to OpenVINO IR by
// OpenVINO's own converter in the model's environment, FP32 weights) against OpenVINO alone: the
// IR read, compiled for the CPU with the same INFERENCE_NUM_THREADS, and one infer request's infer
// with the input in memory (the adapter's own call, share_inputs included). The server starts with
// the committed OpenVINO fixture (test/fixtures/openvino), which builds the model environment that
// has openvino; the MLP's IR is then written with that environment's Python and loads by reload.
//
// usage: node bench/onnx-adapter.mjs [--batch 8] [--requests 300] [--threads 1] [--hidden 1024] [--rounds 3]
//                                     [--openvino 1]   (0: the onnxruntime adapter only)
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { ROOT, fmt, run, startServer, table } from "./lib.mjs";

const arg = (name, d) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const BATCH = arg("batch", 8);
const REQUESTS = arg("requests", 300);
const THREADS = arg("threads", 1);
const HIDDEN = arg("hidden", 1024);
const ROUNDS = arg("rounds", 3);
const OPENVINO = arg("openvino", 1) !== 0;

const testTools = path.join(
  process.env.TRITON_DEV_TEST_TOOLS ?? path.join(ROOT, ".triton-dev/test-tools"),
  "bin/python",
);
if (!fs.existsSync(testTools)) {
  console.error(`bench: no test tools at ${testTools} (tritonclient and onnx): run .ci/run once`);
  process.exit(2);
}

const MAKE = String.raw`
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
path, hidden = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
def w(name, *shape): return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)
init = [w("W1", 256, hidden), w("W2", hidden, hidden), w("W3", hidden, 16)]
nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
         helper.make_node("MatMul", ["r1", "W2"], ["h2"]), helper.make_node("Relu", ["h2"], ["r2"]),
         helper.make_node("MatMul", ["r2", "W3"], ["logits"])]
g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 256])],
                      [helper.make_tensor_value_info("logits", T.FLOAT, ["N", 16])], init)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, path)
`;

const DIRECT = String.raw`
import json, sys, time, numpy as np, onnxruntime as ort
path, batch, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions(); so.intra_op_num_threads = threads
s = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
x = np.random.default_rng(1).standard_normal((batch, 256)).astype(np.float32)
for _ in range(20): s.run(None, {"x": x})
t = []
for _ in range(n):
    a = time.perf_counter(); s.run(None, {"x": x}); t.append(time.perf_counter() - a)
print(json.dumps({"p50_us": float(np.median(t) * 1e6), "mean_us": float(np.mean(t) * 1e6), "version": ort.__version__}))
`;

const DIRECT_OV = String.raw`
import json, sys, time, numpy as np, openvino as ov
path, batch, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
core = ov.Core()
core.set_property("CPU", {"INFERENCE_NUM_THREADS": threads})
req = core.compile_model(core.read_model(path), "CPU").create_infer_request()
x = np.random.default_rng(1).standard_normal((batch, 256)).astype(np.float32)
for _ in range(20): req.infer({"x": x}, share_inputs=True)
t = []
for _ in range(n):
    a = time.perf_counter(); req.infer({"x": x}, share_inputs=True); t.append(time.perf_counter() - a)
print(json.dumps({"p50_us": float(np.median(t) * 1e6), "mean_us": float(np.mean(t) * 1e6), "version": ov.__version__.split("-")[0]}))
`;

// OpenVINO's converter, as users make their IR (test/fixtures/openvino/make-ir.py), weights kept FP32
// so both adapters run the same arithmetic.
const CONVERT = String.raw`
import sys, openvino as ov
ov.save_model(ov.convert_model(sys.argv[1]), sys.argv[2], compress_to_fp16=False)
`;

const CLIENT = String.raw`
import json, sys, time, urllib.request, numpy as np
import tritonclient.http as httpclient
url, batch, n, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = httpclient.InferenceServerClient(url)
x = np.random.default_rng(1).standard_normal((batch, 256)).astype(np.float32)
i = httpclient.InferInput("x", list(x.shape), "FP32"); i.set_data_from_numpy(x)
for _ in range(20): c.infer(model, [i])
def stats():
    s = json.load(urllib.request.urlopen("http://" + url + "/v2/models/" + model + "/stats"))["model_stats"][0]["inference_stats"]
    return s["compute_infer"]["ns"], s["compute_infer"]["count"]
ns0, c0 = stats()
t = []
for _ in range(n):
    a = time.perf_counter(); c.infer(model, [i]); t.append(time.perf_counter() - a)
ns1, c1 = stats()
print(json.dumps({"p50_us": float(np.median(t) * 1e6), "compute_us": (ns1 - ns0) / max(1, c1 - c0) / 1e3}))
`;

const { env, ports, stop } = await startServer({
  only: [],
  prepare: async (models) => {
    const dir = path.join(models, "mlp", "1");
    await fsp.mkdir(dir, { recursive: true });
    const made = await run(testTools, ["-c", MAKE, path.join(dir, "model.onnx"), String(HIDDEN)], process.env);
    if (made.code !== 0) throw new Error(`bench: could not write the model: ${made.stderr}`);
    // The article's form; one instance, no dynamic batching: each request is one session.run.
    await fsp.writeFile(
      path.join(models, "mlp", "config.pbtxt"),
      `platform: "onnxruntime_onnx"\nmax_batch_size: ${Math.max(BATCH, 1)}\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n` +
        `parameters: { key: "intra_op_thread_count" value: { string_value: "${THREADS}" } }\n` +
        `parameters: { key: "inter_op_thread_count" value: { string_value: "1" } }\n` +
        `parameters: { key: "TRITON_DEV_ADAPTER_PROFILE" value: { string_value: "yes" } }\n`,
    );
    if (OPENVINO) {
      // Only for the environment with openvino (and its Python, which converts the MLP below).
      await fsp.cp(path.join(ROOT, "test/fixtures/openvino/mlp"), path.join(models, "ov_probe", "1"), {
        recursive: true,
      });
      await fsp.writeFile(path.join(models, "ov_probe", "config.pbtxt"), `backend: "openvino"\nmax_batch_size: 4\n`);
    }
    await fsp.mkdir(path.join(models, "echo", "1"), { recursive: true });
    await fsp.writeFile(
      path.join(models, "echo", "config.pbtxt"),
      `backend: "python"\nmax_batch_size: ${Math.max(BATCH, 1)}\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n` +
        `input [ { name: "x" data_type: TYPE_FP32 dims: [ 256 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ 256 ] } ]\n`,
    );
    await fsp.writeFile(
      path.join(models, "echo", "1", "model.py"),
      "import triton_python_backend_utils as pb_utils\n\n\nclass TritonPythonModel:\n    def execute(self, requests):\n" +
        '        return [pb_utils.InferenceResponse([pb_utils.Tensor("y", pb_utils.get_input_tensor_by_name(r, "x").as_numpy())]) for r in requests]\n',
    );
  },
});
try {
  const status = JSON.parse(
    (await run(process.execPath, [path.join(ROOT, "dist/cli/main.js"), "status", "--json"], env)).stdout,
  );
  const staged = await fsp.readFile(path.join(status.repository, "mlp", "config.pbtxt"), "utf8");
  const envPython = path.join(
    /key: "EXECUTION_ENV_PATH" value: \{ string_value: "([^"]+)"/.exec(staged)[1],
    "bin/python",
  );
  const modelFile = path.join(status.modelsDir, "mlp", "1", "model.onnx");
  const envOf = async (model) =>
    path.join(
      /key: "EXECUTION_ENV_PATH" value: \{ string_value: "([^"]+)"/.exec(
        await fsp.readFile(path.join(status.repository, model, "config.pbtxt"), "utf8"),
      )[1],
      "bin/python",
    );
  const backends = [{ name: "onnxruntime", model: "mlp", python: envPython, file: modelFile, direct: DIRECT }];
  if (OPENVINO) {
    // The MLP as OpenVINO IR, written beside the models and moved in whole: reload loads it.
    const ovPython = await envOf("ov_probe");
    const tmp = path.join(status.modelsDir, "..", "ov_mlp.tmp");
    await fsp.mkdir(path.join(tmp, "1"), { recursive: true });
    const conv = await run(ovPython, ["-c", CONVERT, modelFile, path.join(tmp, "1", "model.xml")], process.env);
    if (conv.code !== 0) throw new Error(`bench: OpenVINO could not convert the MLP: ${conv.stderr}`);
    await fsp.writeFile(
      path.join(tmp, "config.pbtxt"),
      `backend: "openvino"\nmax_batch_size: ${Math.max(BATCH, 1)}\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n` +
        `parameters: { key: "INFERENCE_NUM_THREADS" value: { string_value: "${THREADS}" } }\n` +
        `parameters: { key: "TRITON_DEV_ADAPTER_PROFILE" value: { string_value: "yes" } }\n`,
    );
    await fsp.rename(tmp, path.join(status.modelsDir, "ov_mlp"));
    const deadline = Date.now() + 180_000;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${ports.http}/v2/models/ov_mlp/ready`).catch(() => undefined);
      if (ready?.ok) break;
      if (Date.now() > deadline)
        throw new Error("bench: ov_mlp was not ready 180 s after it was written (see Triton's log)");
      await new Promise((r) => setTimeout(r, 500));
    }
    backends.push({
      name: "openvino",
      model: "ov_mlp",
      python: ovPython,
      file: path.join(status.modelsDir, "ov_mlp", "1", "model.xml"),
      direct: DIRECT_OV,
    });
  }
  const header = [
    "round",
    "direct p50 us",
    "direct mean us",
    "server compute us",
    "end-to-end p50 us",
    "python floor us",
    "floor e2e p50 us",
    "beyond floor us",
    "server/direct",
    "e2e/direct",
  ];
  const rows = Object.fromEntries(backends.map((b) => [b.name, [header]]));
  const ratios = Object.fromEntries(backends.map((b) => [b.name, []]));
  const versions = {};
  const client = (model) =>
    run(testTools, ["-c", CLIENT, `127.0.0.1:${ports.http}`, String(BATCH), String(REQUESTS), model], process.env);
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order: a shared machine drifts between runs.
    const steps = [
      ...backends.flatMap((b) => [
        {
          key: `direct:${b.name}`,
          go: () =>
            run(b.python, ["-c", b.direct, b.file, String(BATCH), String(REQUESTS), String(THREADS)], process.env),
        },
        { key: `client:${b.name}`, go: () => client(b.model) },
      ]),
      { key: "echo", go: () => client("echo") },
    ];
    if (r % 2 === 1) steps.reverse();
    const got = {};
    for (const step of steps) {
      const res = await step.go();
      if (res.code !== 0) throw new Error(`bench: ${step.key} failed: ${res.stderr}`);
      got[step.key] = JSON.parse(res.stdout);
    }
    for (const b of backends) {
      const direct = got[`direct:${b.name}`];
      const server = got[`client:${b.name}`];
      versions[b.name] = direct.version;
      const sr = server.compute_us / direct.mean_us;
      const er = server.p50_us / direct.p50_us;
      const beyond = server.p50_us - got.echo.p50_us - direct.p50_us;
      ratios[b.name].push({ s: sr, e: er, beyond });
      rows[b.name].push([
        String(r + 1),
        fmt(direct.p50_us),
        fmt(direct.mean_us),
        fmt(server.compute_us),
        fmt(server.p50_us),
        fmt(got.echo.compute_us),
        fmt(got.echo.p50_us),
        fmt(beyond),
        fmt(sr, 2),
        fmt(er, 2),
      ]);
    }
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const spread = (xs) => `${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)}`;
  // The adapter's own profile (TRITON_DEV_ADAPTER_PROFILE): medians inside the stub, every 100 executes.
  const log = await fsp.readFile(path.join(status.repository, "..", "tritonserver.log"), "utf8").catch(() => "");
  const LIBRARY = { onnxruntime: "ONNX Runtime", openvino: "OpenVINO" };
  for (const b of backends) {
    const lib = LIBRARY[b.name];
    console.log(
      `\n${b.name} adapter vs ${lib} ${versions[b.name]} alone: MLP 256-${HIDDEN}-${HIDDEN}-16, batch ${BATCH}, ${THREADS} intra-op thread(s), ${REQUESTS} requests a round`,
    );
    console.log(table(rows[b.name]));
    const rs = ratios[b.name];
    console.log(
      `${b.name} median ratio: server compute / direct ${fmt(med(rs.map((x) => x.s)), 2)} (rounds ${spread(rs.map((x) => x.s))}), ` +
        `end to end / direct ${fmt(med(rs.map((x) => x.e)), 2)} (rounds ${spread(rs.map((x) => x.e))}); beyond the python floor ${fmt(med(rs.map((x) => x.beyond)))} us`,
    );
    const inStub = log
      .split("\n")
      .filter((l) => l.includes(`triton-dev adapter profile: model '${b.model}',`))
      .map((l) =>
        / (\d+) executes, median execute ([\d.]+) us, the runtime's run ([\d.]+) us, the adapter's own ([\d.]+) us/.exec(
          l,
        ),
      )
      .filter(Boolean);
    if (inStub.length > 0) {
      const col = (i) => inStub.map((m) => Number(m[i]));
      console.log(
        `${b.name} in the stub (${inStub.length} windows of 100 executes, median of their medians): execute ${fmt(med(col(2)))} us, ` +
          `${lib}'s run ${fmt(med(col(3)))} us, the adapter's own ${fmt(med(col(4)))} us ` +
          `(windows' range ${fmt(Math.min(...col(4)))}-${fmt(Math.max(...col(4)))} us)`,
      );
    }
  }
} finally {
  await stop();
}
