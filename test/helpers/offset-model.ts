import fsp from "node:fs/promises";
import path from "node:path";

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
