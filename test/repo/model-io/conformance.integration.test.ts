import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../../src/repo/lint.js";
import { posOf, removeTempRepos, tempRepo, writeFiles } from "../helpers.js";
import { MODEL_FILE_CASES, type ModelFileCase } from "./conformance-cases.js";
import { makeOnnxModels } from "./onnx-models.js";

let models: Awaited<ReturnType<typeof makeOnnxModels>>;
beforeAll(async () => {
  models = await makeOnnxModels();
}, 60_000);
afterAll(async () => {
  await models?.remove();
  await removeTempRepos();
});

async function lintCase(c: ModelFileCase) {
  const repo = await tempRepo();
  const files: Record<string, string | Uint8Array> = {
    [`${c.model}/config.pbtxt`]: `name: "${c.model}"\n${c.config}`,
  };
  for (const [name, content] of Object.entries(c.files)) {
    files[`${c.model}/1/${name}`] =
      typeof content === "string" ? content : await fsp.readFile(models.file(content.onnx));
  }
  await writeFiles(repo, files);
  // external.onnx's data file is left out on purpose (onnx_external_data_missing).
  const result = await lintRepository(repo, c.autoComplete === undefined ? {} : { autoComplete: c.autoComplete });
  return result.models[0]!;
}

describe("lint agrees with the backends on model files (verdicts derived from their rules)", () => {
  for (const c of MODEL_FILE_CASES) {
    it(`${c.model}: ${c.lint}`, async () => {
      const m = await lintCase(c);
      const errors = m.diagnostics.filter((d) => d.severity === "error");
      if (c.lint === "accepted") {
        expect(errors.map((d) => `${d.code}: ${d.message}`)).toEqual([]);
        expect(m.wouldLoad).toBe(true);
      } else {
        expect(errors.map((d) => d.code)).toContain(c.lint);
        expect(m.wouldLoad).toBe(false);
        // Every finding points into the user's files.
        for (const d of errors) expect(d.file.startsWith(path.dirname(m.dir))).toBe(true);
      }
      const warnings = m.diagnostics.filter((d) => d.severity === "warning").map((d) => d.code);
      if (c.warning) expect(warnings).toContain(c.warning);
    });
  }

  it("shows the config auto-complete leaves, and says it assumed auto-complete on", async () => {
    const m = await lintCase(MODEL_FILE_CASES.find((c) => c.model === "onnx_completed")!);
    expect(m.modelIO?.assumed).toBe(true);
    expect(m.modelIO?.completed).toMatchObject({
      max_batch_size: 4,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
    });
    const off = await lintCase({ ...MODEL_FILE_CASES.find((c) => c.model === "onnx_completed")!, autoComplete: false });
    expect(off.modelIO).toMatchObject({ assumed: false, autoComplete: false, completed: { max_batch_size: 0 } });
    expect(off.modelIO?.completed.input).toEqual([]);
  });

  it("fewer inputs than the model has: the count Triton checks first, what it counted, and what to add", async () => {
    const c = MODEL_FILE_CASES.find((x) => x.model === "onnx_fewer_inputs")!;
    const m = await lintCase(c);
    const d = m.diagnostics.find((x) => x.code === "model-io-count")!;
    expect(d.file).toBe(path.join(m.dir, "config.pbtxt"));
    expect({ line: d.line, column: d.column }).toEqual(posOf(`name: "${c.model}"\n${c.config}`, "input ["));
    expect(d.message).toBe(
      `config.pbtxt gives onnx_fewer_inputs/1/model.onnx 1 input (1 listed), but it has 2, 'INPUT1' among them unlisted (Triton: "unable to load model 'onnx_fewer_inputs', configuration expects 1 inputs, model provides 2")`,
    );
    expect(d.hint).toContain('add input { name: "INPUT1" data_type: TYPE_FP32 dims: [-1,4] }');
    // The same finding is not given again as the warning about an unlisted input.
    expect(m.diagnostics.map((x) => x.code)).not.toContain("model-io-missing");
  });

  it("ONNX sequence control inputs are counted as the onnxruntime backend counts them, never asked for as inputs", async () => {
    const controls = (["START", "END", "READY"] as const)
      .map((k) => `{ name: "${k}" control [ { kind: CONTROL_SEQUENCE_${k} int32_false_true: [ 0, 1 ] } ] }`)
      .join(", ");
    const config = `platform: "onnxruntime_onnx"
max_batch_size: 8
sequence_batching {
  control_input [ ${controls}, { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT32 } ] } ]
}
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;
    const m = await lintCase({
      model: "simple_sequence",
      config,
      files: { "model.onnx": { onnx: "simple_sequence.onnx" } },
      lint: "accepted",
      derived: "onnxruntime_backend src/onnxruntime.cc ModelInstanceState: one input per sequence control kind",
    });
    expect(m.diagnostics.map((d) => `${d.code}: ${d.message}`)).toEqual([]);
    expect(m.wouldLoad).toBe(true);
    // Without the sequence batcher, the same inputs are what requests must send: then said.
    const plain = await lintCase({
      model: "simple_sequence",
      config: config
        .slice(config.indexOf("\ninput [") + 1)
        .replace(/^/, 'platform: "onnxruntime_onnx"\nmax_batch_size: 8\n'),
      files: { "model.onnx": { onnx: "simple_sequence.onnx" } },
      lint: "model-io-count",
      derived: "onnxruntime_backend src/onnxruntime.cc ModelInstanceState",
    });
    expect(plain.diagnostics.map((d) => d.code)).toContain("model-io-count");
  });

  it("a TensorRT plan's missing data_type and dims are said to be left to Triton's auto-complete", async () => {
    const m = await lintCase(MODEL_FILE_CASES.find((x) => x.model === "tensorrt_incomplete_completed")!);
    const d = m.diagnostics.find((x) => x.code === "model-file-not-checked")!;
    expect(d.message).toContain(
      "the data_type and dims missing from input 'INPUT0', output 'OUTPUT0' are left to Triton's auto-complete, which fills them in from the plan",
    );
  });

  it("a dims mismatch says where, what the model has, and which auto-complete it assumed", async () => {
    const c = MODEL_FILE_CASES.find((x) => x.model === "onnx_wrong_dims")!;
    const m = await lintCase(c);
    const d = m.diagnostics.find((x) => x.code === "model-io-dims")!;
    expect(d.file).toBe(path.join(m.dir, "config.pbtxt"));
    expect({ line: d.line, column: d.column }).toEqual(posOf(`name: "${c.model}"\n${c.config}`, "dims: [ 3 ]"));
    expect(d.message).toContain("dims [3] in config.pbtxt but onnx_wrong_dims/1/model.onnx gives it [4]");
    expect(d.message).toContain("auto-complete on, assumed");
    expect(d.hint).toBe("Set dims: [4] (without the batch dimension).");
  });
});
