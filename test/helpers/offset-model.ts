import fsp from "node:fs/promises";
import path from "node:path";
import { closingFetch, TritonHttpClient } from "../../src/triton/http-client.js";

/** A small python model with dynamic batching that adds 1 to its input: what the dashboard tests edit and reload. */
export const OFFSET_CONFIG = `name: "offset"
backend: "python"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 100 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

export const OFFSET_MODEL = `import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + 1.0).astype(np.float32))]))
        return out
`;

/** Write model `offset` into `repo`: its config (first time) and version `version`'s model.py. */
export async function writeOffsetModel(repo: string, version: string): Promise<void> {
  await fsp.mkdir(path.join(repo, "offset", version), { recursive: true });
  await fsp.writeFile(path.join(repo, "offset", "config.pbtxt"), OFFSET_CONFIG);
  await fsp.writeFile(path.join(repo, "offset", version, "model.py"), OFFSET_MODEL);
}

/** Waits until model `offset` at 127.0.0.1:`httpPort` adds `want`; `what` names the step in the error. */
export async function untilOffsetServes(
  httpPort: number,
  want: number,
  what: string,
  timeoutMs = 45_000,
): Promise<void> {
  // Its connections close: a pooled keep-alive one would hold the next stop's exit for seconds
  // (Triton waits for open HTTP connections), which a test or bench would count as down's.
  const client = new TritonHttpClient(`http://127.0.0.1:${httpPort}`, { timeoutMs: 30_000, fetch: closingFetch });
  const served = async () => {
    const r = await client.infer("offset", [{ name: "X", shape: [1, 4], datatype: "FP32", data: [0, 0, 0, 0] }]);
    return (r.outputs[0]!.data as number[])[0]!;
  };
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    last = await served().catch((e: unknown) => e);
    if (last === want) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: offset never served ${want} (last: ${String(last)})`);
}
