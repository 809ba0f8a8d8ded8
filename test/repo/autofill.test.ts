import { afterAll, describe, expect, it } from "vitest";
import { autofillBackendFields } from "../../src/repo/autofill.js";
import { scanModel } from "../../src/repo/layout.js";
import { lintRepository } from "../../src/repo/lint.js";
import { ECHO_IO, ECHO_MODEL_PY, ECHO_ONNX, removeTempRepos, summary, tempRepo, writeFiles } from "./helpers.js";

afterAll(removeTempRepos);

const none = { platform: "", backend: "", defaultModelFilename: "" };

/** Autofill on model `name` whose folder holds `files` (paths relative to the model folder). */
async function autofill(files: Record<string, string | Uint8Array>, config = none, name = "m") {
  const repo = await tempRepo();
  await writeFiles(repo, Object.fromEntries(Object.entries(files).map(([k, v]) => [`${name}/${k}`, v])));
  return autofillBackendFields(name, config, await scanModel(repo, name));
}

describe("the backend Triton settles on (core's AutoCompleteBackendFields)", () => {
  it("takes it from the first sub-folder's model file, in Triton's order", async () => {
    expect(await autofill({ "1/model.plan": "p", "1/model.py": "" })).toEqual({
      platform: "tensorrt_plan",
      backend: "tensorrt",
      defaultModelFilename: "model.plan",
      inferredFrom: "1/model.plan",
    });
    expect(await autofill({ "1/model.onnx": "o", "1/model.py": "" })).toMatchObject({
      platform: "onnxruntime_onnx",
      backend: "onnxruntime",
    });
    expect(await autofill({ "1/model.xml": "x", "1/model.pt": "" })).toMatchObject({
      platform: "",
      backend: "openvino",
    });
    expect(await autofill({ "1/model.pt": "t", "1/model.py": "" })).toMatchObject({
      platform: "pytorch_libtorch",
      backend: "pytorch",
    });
    expect(await autofill({ "1/model.py": "" })).toEqual({
      platform: "",
      backend: "python",
      defaultModelFilename: "model.py",
      inferredFrom: "1/model.py",
    });
  });

  it("TensorFlow comes first, and a GraphDef file wins over a SavedModel folder", async () => {
    expect(await autofill({ "1/model.savedmodel/saved_model.pb": "", "1/model.plan": "" })).toMatchObject({
      platform: "tensorflow_savedmodel",
      backend: "tensorflow",
      defaultModelFilename: "model.savedmodel",
    });
    expect(await autofill({ "1/model.savedmodel/x": "", "1/model.graphdef": "g" })).toMatchObject({
      platform: "tensorflow_graphdef",
      inferredFrom: "1/model.graphdef",
    });
  });

  it("passes over a file of the wrong kind: model.plan, model.pt and model.graphdef folders, a model.savedmodel file", async () => {
    const files = {
      "1/model.plan/": "",
      "1/model.pt/": "",
      "1/model.graphdef/": "",
      "1/model.savedmodel": "f",
      "1/model.py": "",
    };
    expect(await autofill(files)).toMatchObject({ backend: "python", inferredFrom: "1/model.py" });
    // A model.onnx folder is a large ONNX model: taken.
    expect(await autofill({ "1/model.onnx/model.onnx": ECHO_ONNX })).toMatchObject({ backend: "onnxruntime" });
  });

  it("looks only into the first sub-folder in byte order, a version folder or not", async () => {
    expect(await autofill({ "0old/model.onnx": "o", "1/model.py": "" })).toMatchObject({
      backend: "onnxruntime",
      inferredFrom: "0old/model.onnx",
    });
    expect(await autofill({ "10/model.py": "", "9/model.plan": "p" })).toMatchObject({ backend: "python" });
  });

  it("takes default_model_filename or the platform without looking, and fills in the rest", async () => {
    expect(await autofill({ "1/model.py": "" }, { ...none, defaultModelFilename: "model.plan" })).toMatchObject({
      platform: "tensorrt_plan",
      backend: "tensorrt",
      inferredFrom: "default_model_filename 'model.plan'",
    });
    expect(await autofill({ "1/model.py": "" }, { ...none, backend: "tensorrt" })).toEqual({
      platform: "tensorrt_plan",
      backend: "tensorrt",
      defaultModelFilename: "model.plan",
    });
    expect(await autofill({ "1/model.py": "" }, { ...none, platform: "pytorch_libtorch" })).toMatchObject({
      backend: "pytorch",
      defaultModelFilename: "model.pt",
    });
    // backend tensorflow with neither a SavedModel folder nor a GraphDef file: no platform.
    expect(await autofill({ "1/model.py": "" }, { ...none, backend: "tensorflow" })).toMatchObject({
      platform: "",
      backend: "tensorflow",
    });
  });

  it("takes a custom backend from the model's name, and cannot tell without a '.'", async () => {
    expect(await autofill({ "1/": "" }, none, "thing.identity")).toEqual({
      platform: "",
      backend: "identity",
      defaultModelFilename: "model.identity",
      inferredFrom: "the model's name 'thing.identity' (the part after its first '.')",
    });
    expect(await autofill({ "1/weights.bin": "w" })).toMatchObject({ backend: "", undetermined: "name" });
    expect(await autofill({}, none)).toMatchObject({ undetermined: "name" });
    // A default_model_filename no backend is known by leaves Triton with none.
    expect(await autofill({ "1/other.py": "" }, { ...none, defaultModelFilename: "other.py" })).toMatchObject({
      backend: "",
      undetermined: "file",
    });
  });
});

describe("rules that depend on what runs the model use what Triton infers", () => {
  const lintOne = async (files: Record<string, string | Uint8Array>, name = "m") => {
    const repo = await tempRepo();
    await writeFiles(repo, files);
    return (await lintRepository(repo, {})).models.find((x) => x.name === name)!;
  };
  const io = `max_batch_size: 8\n${ECHO_IO}`;
  const profile = 'instance_group [ { kind: KIND_GPU profile: [ "0" ] } ]\n';

  it("TensorRT-only options are allowed on a model whose platform Triton infers from 1/model.plan, or from its backend", async () => {
    const inferred = await lintOne({ "m/config.pbtxt": `${io}${profile}`, "m/1/model.plan": "p" });
    expect(summary(inferred.diagnostics.filter((d) => d.severity === "error"))).toEqual([]);
    const backend = await lintOne({
      "m/config.pbtxt": `backend: "tensorrt"\n${io.replace("dims: [ -1 ] }", "dims: [ -1 ] is_shape_tensor: true }")}`,
      "m/1/model.plan": "p",
    });
    expect(summary(backend.diagnostics.filter((d) => d.severity === "error"))).toEqual([]);
    // ... and refused on the python model Triton infers from 1/model.py.
    const python = await lintOne({ "m/config.pbtxt": `${io}${profile}`, "m/1/model.py": ECHO_MODEL_PY });
    expect(python.diagnostics.map((d) => d.code)).toContain("instance-profile-platform");
  });

  it("the ONNX model file is compared with the config on a backend inferred from the file", async () => {
    const m = await lintOne({
      "m/config.pbtxt": io.replace('"INPUT0"', '"INPUT_0"'),
      "m/1/model.onnx": ECHO_ONNX,
    });
    expect(m.diagnostics.find((d) => d.code === "model-io-unknown")?.message).toContain(
      "input 'INPUT_0' is not an input of m/1/model.onnx",
    );
  });

  it("a model named <name>.python is handed model.python, which the python backend refuses", async () => {
    const m = await lintOne({ "n.python/config.pbtxt": io, "n.python/1/model.python": ECHO_MODEL_PY }, "n.python");
    expect(m.wouldLoad).toBe(false);
    const d = m.diagnostics.find((x) => x.code === "python-model-filename")!;
    expect(d.message).toContain(
      "Triton hands it model.python, taking backend 'python' and that file from the model's name",
    );
    expect(d.message).toContain("Model name must end with '.py'");
    expect(d.hint).toContain('Write backend: "python"');
    const noConfig = await lintOne({ "n.python/1/model.python": ECHO_MODEL_PY }, "n.python");
    expect(noConfig.diagnostics.map((x) => `${x.severity} ${x.code}`)).toEqual(["error python-model-filename"]);
  });

  it("says Triton cannot tell what runs a model, in Triton's words, with what to do", async () => {
    const m = await lintOne({ "m/config.pbtxt": io, "m/1/weights.bin": "w" });
    const d = m.diagnostics.find((x) => x.code === "backend-missing")!;
    expect(d.message).toContain("\"Could not determine backend for model 'm'\"");
    expect(d.message).toContain("its name 'm' is not of the form <name>.<backend>");
    expect(d.hint).toContain('Add backend: "python"');
    const dmf = await lintOne({
      "m/config.pbtxt": `default_model_filename: "other.py"\n${io}`,
      "m/1/other.py": ECHO_MODEL_PY,
      "m/1/model.py": ECHO_MODEL_PY,
    });
    const e = dmf.diagnostics.find((x) => x.code === "backend-missing")!;
    expect(e.message).toContain("(\"unexpected platform type ''\")");
    expect(e.hint).toBe('Add backend: "python".');
    expect({ line: e.line, column: e.column }).toEqual({ line: 1, column: 25 });
  });
});
