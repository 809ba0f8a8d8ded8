import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { autoCompleteNeeds, autoCompleteOffDiagnostic, autoCompleteReason } from "../../src/repo/auto-complete.js";
import { lintRepository } from "../../src/repo/lint.js";
import { RUNTIME_FACTS, lintFacts } from "../../src/runtimes/kinds.js";
import {
  ECHO_ONNX,
  SAMPLE_MODELS,
  pythonConfig,
  pythonModel,
  removeTempRepos,
  tempRepo,
  writeFiles,
} from "./helpers.js";

afterAll(removeTempRepos);

describe("Triton's config auto-complete: which models need it", () => {
  it("is not needed by the sample models on the local runtime (python with full configs, ensembles, an adapted ONNX model it fills nothing in)", async () => {
    const lint = await lintRepository(SAMPLE_MODELS, { ...lintFacts("local"), gpuAvailable: true });
    const adapted = Object.keys(RUNTIME_FACTS.local.adaptedBackends ?? {});
    expect(adapted).toContain("onnxruntime");
    expect(await autoCompleteNeeds(lint.models, adapted)).toEqual([]);
    // Where Triton's own onnxruntime backend serves it, that backend completes its config.
    expect(await autoCompleteNeeds(lint.models)).toEqual([
      { model: "bert_large", reason: "bert_large uses platform onnxruntime_onnx, whose config Triton can complete" },
    ]);
  });

  it("is needed by an adapted ONNX model whose config leaves its backend something to fill in", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      "onnx/config.pbtxt": 'name: "onnx"\nplatform: "onnxruntime_onnx"\n',
      "onnx/1/model.onnx": ECHO_ONNX,
    });
    const lint = await lintRepository(repo, { ...lintFacts("local"), gpuAvailable: true });
    expect(await autoCompleteNeeds(lint.models, ["onnxruntime"])).toEqual([
      { model: "onnx", reason: "onnx uses platform onnxruntime_onnx, whose config Triton can complete" },
    ]);
  });

  it("is needed by a python model that defines auto_complete_config, one without config.pbtxt, and other backends", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("plain"),
      "completes/config.pbtxt": pythonConfig("completes"),
      "completes/1/model.py":
        "class TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(c):\n        return c\n\n    def execute(self, requests):\n        return []\n",
      "noconfig/1/model.py": "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n",
      "onnx/config.pbtxt": 'name: "onnx"\nplatform: "onnxruntime_onnx"\n',
      "onnx/1/model.onnx": ECHO_ONNX,
    });
    const lint = await lintRepository(repo, { ...lintFacts("docker"), gpuAvailable: true });
    const needs = await autoCompleteNeeds(lint.models);
    expect(needs.map((n) => n.model).sort()).toEqual(["completes", "noconfig", "onnx"]);
    expect(needs.find((n) => n.model === "completes")!.reason).toBe(
      `${path.join("1", "model.py")} of completes defines auto_complete_config`,
    );
    expect(await autoCompleteReason(lint.models.find((m) => m.name === "plain")!)).toBeUndefined();
  });

  it("warns, with the fix, when such a model is saved while Triton runs without it", async () => {
    const d = autoCompleteOffDiagnostic(
      { name: "m", dir: "/r/m", config: { backend: "python" } },
      "1/model.py of m defines auto_complete_config",
    );
    expect(d).toMatchObject({ severity: "warning", file: "/r/m/config.pbtxt", code: "auto-complete-off" });
    expect(d.hint).toMatch(/Restart `triton-dev up`/);
  });
});
