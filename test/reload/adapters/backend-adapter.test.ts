import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelEnvironments } from "../../../src/envs/model-environments.js";
import {
  ADAPTER_FILE,
  type BackendAdapterOptions,
  FORCE_CPU_ONLY_INPUTS_PARAM,
  TORCH_TENSORS_PARAM,
  tensorPlacementParameters,
} from "../../../src/reload/adapters/backend-adapter.js";
import { StagingRepository, servedAs } from "../../../src/reload/stage.js";
import { hashModelDir } from "../../../src/repo/model-files.js";
import { ECHO_ONNX } from "../../repo/helpers.js";

/**
 * The seam to the environment builder (test/integration/local-backends.test.ts builds the real
 * one with pip): the runtime library's requirements file is read and answered with a folder.
 */
function environments(asked: string[]): ModelEnvironments {
  return {
    prepare: async () => undefined,
    async prepareRuntime(model, file) {
      asked.push(`${model}:${(await fsp.readFile(file, "utf8")).trim()}`);
      return { dir: `/envs/${model}`, key: model, cached: true, ms: 0, packages: [] };
    },
  };
}

const ADAPTERS = (asked: string[], autoComplete = true): BackendAdapterOptions => ({
  backends: {
    onnxruntime: {
      library: "ONNX Runtime",
      requirement: "onnxruntime==1.20.1",
      servedAs: "served through ONNX Runtime 1.20 in the python backend (local runtime)",
    },
    pytorch: {
      library: "PyTorch",
      requirement: "",
      servedAs: "served through PyTorch in the python backend (local runtime)",
    },
  },
  environments: environments(asked),
  autoComplete: () => autoComplete,
});

describe("the local runtime's backend adapter at staging", () => {
  const temps: string[] = [];
  afterEach(async () => {
    for (const t of temps.splice(0)) await fsp.rm(t, { recursive: true, force: true });
  });
  const repoWith = async (models: Record<string, { config?: string; file?: string }>) => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), "adapter-"));
    temps.push(root);
    const repo = path.join(root, "models");
    for (const [name, m] of Object.entries(models)) {
      await fsp.mkdir(path.join(repo, name, "1"), { recursive: true });
      await fsp.writeFile(path.join(repo, name, "1", m.file ?? "model.onnx"), ECHO_ONNX);
      if (m.config !== undefined) await fsp.writeFile(path.join(repo, name, "config.pbtxt"), m.config);
    }
    return { repo, runDir: path.join(root, "run") };
  };

  it("stages a python config completed as the onnxruntime backend completes it, the adapter and the library's environment", async () => {
    const { repo, runDir } = await repoWith({ echo: { config: 'platform: "onnxruntime_onnx"\n' } });
    const asked: string[] = [];
    const staging = new StagingRepository(runDir, { adapters: ADAPTERS(asked) });
    await staging.init(repo);
    const dir = path.join(staging.repository, "echo");
    const staged = await fsp.readFile(path.join(dir, "config.pbtxt"), "utf8");
    expect(staged).not.toContain("platform");
    expect(staged).toContain('backend: "python"');
    expect(staged).toContain(`default_model_filename: "${ADAPTER_FILE}"`);
    // Every tensor's first dimension is variable: the backend's default max_batch_size, dynamic batching.
    expect(staged).toContain("max_batch_size: 4");
    expect(staged).toContain('{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }');
    expect(staged).toContain('{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }');
    expect(staged).toContain("dynamic_batching { }");
    expect(staged).toContain('key: "TRITON_DEV_ADAPTED_FILE" value: { string_value: "model.onnx" }');
    expect(staged).toContain('key: "EXECUTION_ENV_PATH" value: { string_value: "/envs/echo" }');
    expect(fs.existsSync(path.join(dir, "1", ADAPTER_FILE))).toBe(true);
    expect(asked).toEqual(["echo:onnxruntime==1.20.1"]);
    expect(staging.adapted("echo")?.servedAs).toBe(
      "served through ONNX Runtime 1.20 in the python backend (local runtime)",
    );
    expect(await servedAs(runDir)).toEqual(
      new Map([["echo", "served through ONNX Runtime 1.20 in the python backend (local runtime)"]]),
    );
    // The snapshot still hashes as the user's folder, so a save that changes nothing stays unchanged.
    expect(await hashModelDir(dir)).toBe(await hashModelDir(path.join(repo, "echo")));
  });

  it("keeps a config that lists its tensors, names the user's default_model_filename to the adapter, and completes nothing with auto-complete off", async () => {
    const config = `backend: "onnxruntime"
default_model_filename: "echo.onnx"
max_batch_size: 2
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 8 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 8 ] } ]
`;
    const { repo, runDir } = await repoWith({ echo: { config, file: "echo.onnx" } });
    const staging = new StagingRepository(runDir, { adapters: ADAPTERS([], false) });
    await staging.init(repo);
    const staged = await fsp.readFile(path.join(staging.repository, "echo", "config.pbtxt"), "utf8");
    expect(staged).toContain('key: "TRITON_DEV_ADAPTED_FILE" value: { string_value: "echo.onnx" }');
    expect(staged).toContain("max_batch_size: 2");
    expect(staged).not.toContain("dynamic_batching");
    expect(staged.match(/name: "INPUT0"/g)).toHaveLength(1);
    expect(staged).toContain(`default_model_filename: "${ADAPTER_FILE}"`);
    expect(staged).not.toContain('default_model_filename: "echo.onnx"');
  });

  it("leaves python models and runtimes without adapters alone", async () => {
    const { repo, runDir } = await repoWith({ echo: { config: 'platform: "onnxruntime_onnx"\n' } });
    const staging = new StagingRepository(runDir);
    await staging.init(repo);
    expect(await fsp.readFile(path.join(staging.repository, "echo", "config.pbtxt"), "utf8")).toBe(
      'platform: "onnxruntime_onnx"\n',
    );
    expect(staging.adapted("echo")).toBeUndefined();
    expect(await servedAs(runDir)).toEqual(new Map());
  });

  it("lets a TorchScript model on a GPU instance take GPU tensors, keeping what the user's config sets", async () => {
    const torch = (groups: string, params = "") =>
      `platform: "pytorch_libtorch"\nmax_batch_size: 8\n` +
      `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n` +
      `output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n${groups}${params}`;
    const { repo, runDir } = await repoWith({
      plain: { config: torch("instance_group [ { count: 1 kind: KIND_GPU } ]\n"), file: "model.pt" },
      gpu: {
        config: torch(
          "instance_group [ { count: 1 kind: KIND_GPU } ]\n",
          `parameters: { key: "${TORCH_TENSORS_PARAM}" value: { string_value: "dlpack" } }\n`,
        ),
        file: "model.pt",
      },
      cpu: { config: torch("instance_group [ { count: 2 kind: KIND_CPU } ]\n"), file: "model.pt" },
      own: {
        config: torch(
          "instance_group [ { kind: KIND_GPU } ]\n",
          `parameters: { key: "${FORCE_CPU_ONLY_INPUTS_PARAM}" value: { string_value: "yes" } }\n` +
            `parameters: { key: "${TORCH_TENSORS_PARAM}" value: { string_value: "numpy" } }\n`,
        ),
        file: "model.pt",
      },
    });
    const staging = new StagingRepository(runDir, { adapters: ADAPTERS([]) });
    await staging.init(repo);
    const staged = async (m: string) => fsp.readFile(path.join(staging.repository, m, "config.pbtxt"), "utf8");
    // Without asking: DLPack, the adapter's default on a GPU, with inputs left where they are.
    const plain = await staged("plain");
    expect(plain).toContain(`key: "${FORCE_CPU_ONLY_INPUTS_PARAM}" value: { string_value: "no" }`);
    expect(plain).not.toContain(TORCH_TENSORS_PARAM);
    const gpu = await staged("gpu");
    expect(gpu).toContain(`key: "${FORCE_CPU_ONLY_INPUTS_PARAM}" value: { string_value: "no" }`);
    expect(gpu.match(new RegExp(TORCH_TENSORS_PARAM, "g"))).toHaveLength(1);
    const cpu = await staged("cpu");
    expect(cpu).not.toContain(FORCE_CPU_ONLY_INPUTS_PARAM);
    expect(cpu).not.toContain(TORCH_TENSORS_PARAM);
    // The user's values stay, once each; the user's own file is untouched.
    const own = await staged("own");
    expect(own.match(new RegExp(FORCE_CPU_ONLY_INPUTS_PARAM, "g"))).toHaveLength(1);
    expect(own).toContain(`key: "${FORCE_CPU_ONLY_INPUTS_PARAM}" value: { string_value: "yes" }`);
    expect(own.match(new RegExp(TORCH_TENSORS_PARAM, "g"))).toHaveLength(1);
    expect(own).toContain(`key: "${TORCH_TENSORS_PARAM}" value: { string_value: "numpy" }`);
    expect(await fsp.readFile(path.join(repo, "gpu", "config.pbtxt"), "utf8")).not.toContain(
      FORCE_CPU_ONLY_INPUTS_PARAM,
    );
  });
});

describe("where an adapted model's tensors live (tensorPlacementParameters)", () => {
  const asks = (mode: string, extra: Record<string, { string_value: string }> = {}) => ({
    parameters: { [TORCH_TENSORS_PARAM]: { string_value: mode }, ...extra },
  });
  const gpuInputs = [[FORCE_CPU_ONLY_INPUTS_PARAM, "no"]];

  it("keeps the host round trip when the config asks for it", () => {
    expect(tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_GPU" }], ...asks("numpy") })).toEqual(
      [],
    );
    expect(tensorPlacementParameters("pytorch", asks("NumPy"))).toEqual([]);
  });

  it("lets inputs stay in GPU memory for a model that may run on a GPU, by default or asking for DLPack", () => {
    expect(tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_GPU" }] })).toEqual(gpuInputs);
    expect(tensorPlacementParameters("pytorch", {})).toEqual(gpuInputs);
    for (const mode of ["dlpack", "dlpack_in", "DLPack"]) {
      expect(tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_GPU" }], ...asks(mode) })).toEqual(
        gpuInputs,
      );
      // KIND_AUTO, a group without a kind, or no group at all: Triton makes GPU instances where it sees a GPU.
      expect(tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_AUTO" }], ...asks(mode) })).toEqual(
        gpuInputs,
      );
      expect(tensorPlacementParameters("pytorch", { instance_group: [{ count: 2 }], ...asks(mode) })).toEqual(
        gpuInputs,
      );
      expect(tensorPlacementParameters("pytorch", asks(mode))).toEqual(gpuInputs);
    }
  });

  it("never overrides what the user set", () => {
    expect(
      tensorPlacementParameters("pytorch", asks("dlpack", { [FORCE_CPU_ONLY_INPUTS_PARAM]: { string_value: "yes" } })),
    ).toEqual([]);
    expect(
      tensorPlacementParameters("pytorch", { parameters: { [FORCE_CPU_ONLY_INPUTS_PARAM]: { string_value: "yes" } } }),
    ).toEqual([]);
  });

  it("leaves CPU instances and the numpy-reading adapters unchanged", () => {
    expect(tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_CPU" }] })).toEqual([]);
    expect(tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_CPU" }], ...asks("dlpack") })).toEqual(
      [],
    );
    expect(
      tensorPlacementParameters("pytorch", { instance_group: [{ kind: "KIND_MODEL" }], ...asks("dlpack") }),
    ).toEqual([]);
    expect(
      tensorPlacementParameters("onnxruntime", { instance_group: [{ kind: "KIND_GPU" }], ...asks("dlpack") }),
    ).toEqual([]);
    expect(tensorPlacementParameters("openvino", asks("dlpack"))).toEqual([]);
  });
});
