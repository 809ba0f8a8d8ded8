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
// usage: node bench/onnx-adapter.mjs [--batch 8] [--requests 300] [--threads 1] [--hidden 1024] [--rounds 3]
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
  const rows = [
    [
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
    ],
  ];
  const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first: a shared machine drifts between runs.
    const order = r % 2 === 0 ? ["direct", "client", "echo"] : ["echo", "client", "direct"];
    const got = {};
    for (const which of order) {
      const res =
        which === "direct"
          ? await run(
              envPython,
              ["-c", DIRECT, modelFile, String(BATCH), String(REQUESTS), String(THREADS)],
              process.env,
            )
          : await run(
              testTools,
              [
                "-c",
                CLIENT,
                `127.0.0.1:${ports.http}`,
                String(BATCH),
                String(REQUESTS),
                which === "client" ? "mlp" : "echo",
              ],
              process.env,
            );
      if (res.code !== 0) throw new Error(`bench: ${which} failed: ${res.stderr}`);
      got[which] = JSON.parse(res.stdout);
    }
    const s = got.client.compute_us / got.direct.mean_us;
    const e = got.client.p50_us / got.direct.p50_us;
    ratios.push({ s, e, beyond: got.client.p50_us - got.echo.p50_us - got.direct.p50_us });
    rows.push([
      String(r + 1),
      fmt(got.direct.p50_us),
      fmt(got.direct.mean_us),
      fmt(got.client.compute_us),
      fmt(got.client.p50_us),
      fmt(got.echo.compute_us),
      fmt(got.echo.p50_us),
      fmt(got.client.p50_us - got.echo.p50_us - got.direct.p50_us),
      fmt(s, 2),
      fmt(e, 2),
    ]);
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `onnxruntime adapter vs ONNX Runtime alone: MLP 256-${HIDDEN}-${HIDDEN}-16, batch ${BATCH}, ${THREADS} intra-op thread(s), ${REQUESTS} requests a round`,
  );
  console.log(table(rows));
  console.log(
    `median ratio: server compute / direct ${fmt(med(ratios.map((x) => x.s)), 2)}, end to end / direct ${fmt(med(ratios.map((x) => x.e)), 2)}; beyond the python floor ${fmt(med(ratios.map((x) => x.beyond)))} us`,
  );
  // The adapter's own profile (TRITON_DEV_ADAPTER_PROFILE): medians inside the stub, every 100 executes.
  const log = await fsp.readFile(path.join(status.repository, "..", "tritonserver.log"), "utf8").catch(() => "");
  const profiles = log.split("\n").filter((l) => l.includes("triton-dev adapter profile:"));
  const inStub = profiles
    .map((l) =>
      / (\d+) executes, median execute ([\d.]+) us, the runtime's run ([\d.]+) us, the adapter's own ([\d.]+) us/.exec(
        l,
      ),
    )
    .filter(Boolean);
  if (inStub.length > 0) {
    const col = (i) => inStub.map((m) => Number(m[i]));
    console.log(
      `in the stub (${inStub.length} windows of 100 executes, median of their medians): execute ${fmt(med(col(2)))} us, ` +
        `ONNX Runtime's run ${fmt(med(col(3)))} us, the adapter's own ${fmt(med(col(4)))} us ` +
        `(windows' range ${fmt(Math.min(...col(4)))}-${fmt(Math.max(...col(4)))} us)`,
    );
  }
} finally {
  await stop();
}
