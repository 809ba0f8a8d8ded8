import fsp from "node:fs/promises";
import path from "node:path";
import { UserError } from "../errors.js";
import { CONFIG_FILE } from "./layout.js";

/** Names that work as a folder, a Triton model name and a URL path segment alike. */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

export function validateModelName(name: string): string | undefined {
  if (!MODEL_NAME_PATTERN.test(name)) {
    return `model name '${name}' must start with a letter, digit or '_' and hold only letters, digits, '_', '-' and '.'`;
  }
  if (name.length > 128) return `model name '${name.slice(0, 20)}...' is longer than 128 characters`;
  return undefined;
}

export function pythonModelConfig(name: string): string {
  return `# A python backend model scaffolded by \`triton-dev init\`: doubles a float vector.
# Edit the inputs and outputs to match your model.py; \`triton-dev lint\` checks the two agree
# with what Triton accepts.
name: "${name}"
backend: "python"
max_batch_size: 8

input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]

output [
  {
    name: "OUTPUT0"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]

instance_group [
  {
    count: 1
    kind: KIND_CPU
  }
]

dynamic_batching {
  max_queue_delay_microseconds: 1000
}
`;
}

export const PYTHON_MODEL = `"""Scaffolded by \`triton-dev init\`: the smallest useful python backend model.

Triton calls execute() with a list of requests (several when dynamic batching groups them) and
expects exactly one response per request, in order.
"""
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        output = pb_utils.get_output_config_by_name(config, "OUTPUT0")
        self.output_dtype = pb_utils.triton_string_to_numpy(output["data_type"])

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            y = (x * 2).astype(self.output_dtype)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", y)]))
        return responses

    def finalize(self):
        pass
`;

export interface ScaffoldResult {
  modelDir: string;
  files: string[];
}

/**
 * Creates `<repo>/<name>/config.pbtxt` and `<repo>/<name>/1/model.py`, and the repository folder
 * if needed. Never overwrites: an existing model folder is the user's work.
 */
export async function scaffoldPythonModel(repo: string, name: string): Promise<ScaffoldResult> {
  const problem = validateModelName(name);
  if (problem)
    throw new UserError(problem, {
      hint: "Pick a name like my_model: it becomes the folder and the name clients call.",
    });
  const modelDir = path.join(repo, name);
  try {
    await fsp.mkdir(repo, { recursive: true });
    await fsp.mkdir(modelDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      throw new UserError(`${modelDir} already exists`, {
        hint: "Choose another name with --name; init never overwrites a model.",
      });
    }
    throw new UserError(`cannot create ${modelDir}: ${(err as Error).message}`, { cause: err });
  }
  const config = path.join(modelDir, CONFIG_FILE);
  const code = path.join(modelDir, "1", "model.py");
  await fsp.mkdir(path.dirname(code));
  await fsp.writeFile(config, pythonModelConfig(name), { flag: "wx" });
  await fsp.writeFile(code, PYTHON_MODEL, { flag: "wx" });
  return { modelDir, files: [config, code] };
}
