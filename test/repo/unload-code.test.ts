import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { finalizeIn, pythonCode, unloadsRunningCode } from "../../src/repo/unload-code.js";

const PLAIN = `import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    """Adds one. Triton calls finalize only when a model defines it."""

    def initialize(self, args):
        self.k = 1.0  # finalize is not needed here

    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for r in requests]
`;

describe("finalizeIn: whether unloading a model.py runs its code", () => {
  it("passes a model without finalize, finalize in comments and prose notwithstanding", () => {
    expect(finalizeIn(PLAIN)).toBeUndefined();
    // Every sample model that the CPU machine serves has no finalize.
    for (const m of ["bert_tokenizer", "image_classifier", "sentiment_classifier", "text_streamer"]) {
      const text = fs.readFileSync(path.join("models", m, "1", "model.py"), "utf8");
      expect(finalizeIn(text), m).toBeUndefined();
    }
  });

  it("finds a finalize method, sync or async, with its line", () => {
    const withDef = PLAIN + "\n    def finalize(self):\n        open('/tmp/x', 'w').close()\n";
    expect(finalizeIn(withDef)).toBe("model.py:13 defines finalize");
    expect(finalizeIn(PLAIN + "\n    async def finalize(self):\n        pass\n", "1/model.py")).toBe(
      "1/model.py:13 defines finalize",
    );
    const sample = fs.readFileSync("models/resnet50_fp16/1/model.py", "utf8");
    expect(finalizeIn(sample)).toMatch(/defines finalize/);
  });

  it("errs towards waiting on every other way a finalize may come about", () => {
    expect(finalizeIn(PLAIN + "\n    finalize = lambda self: None\n")).toMatch(/:13 names finalize/);
    expect(finalizeIn(PLAIN + '\nsetattr(TritonPythonModel, "finalize", print)\n')).toMatch(/in a string/);
    expect(finalizeIn(PLAIN + "\n    def __getattr__(self, name):\n        return print\n")).toMatch(/__getattr__/);
    expect(finalizeIn("from base import TritonPythonModel\n")).toMatch(/does not define TritonPythonModel/);
    expect(finalizeIn(PLAIN.replace("class TritonPythonModel:", "class TritonPythonModel(Base):"))).toMatch(
      /inherits from Base/,
    );
    expect(finalizeIn(PLAIN.replace("class TritonPythonModel:", "@register\nclass TritonPythonModel:"))).toMatch(
      /decorates TritonPythonModel/,
    );
    // A base of this file without finalize is fine; `object` too.
    expect(
      finalizeIn(
        `class Base:\n    pass\n\n${PLAIN.replace("class TritonPythonModel:", "class TritonPythonModel(Base, object):")}`,
      ),
    ).toBeUndefined();
  });

  it("reads strings and comments as Python does", () => {
    const tricky = `s = 'it''s'  # def finalize(self):
r = r"\\"def finalize(self):"
t = """
    def finalize(self):
"""
u = b'\\'' ; v = f"{1}"
class TritonPythonModel:
    pass
`;
    expect(finalizeIn(tricky)).toBeUndefined();
    const { code, strings } = pythonCode(tricky);
    expect(code.split("\n")).toHaveLength(tricky.split("\n").length);
    expect(code).not.toMatch(/finalize/);
    expect(strings).toContain("\n    def finalize(self):\n");
    // A class line inside a string is no class.
    expect(finalizeIn('"""\nclass TritonPythonModel:\n"""\n')).toMatch(/does not define/);
  });
});

describe("unloadsRunningCode: the loaded models of a staged repository", () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-unload-code-"));
  afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));
  const model = async (name: string, config: string, files: Record<string, string> = {}) => {
    await fsp.mkdir(path.join(repo, name, "1"), { recursive: true });
    await fsp.writeFile(path.join(repo, name, "config.pbtxt"), config);
    for (const [f, text] of Object.entries(files)) {
      await fsp.mkdir(path.dirname(path.join(repo, name, f)), { recursive: true });
      await fsp.writeFile(path.join(repo, name, f), text);
    }
  };

  it("waits for python models with finalize and whatever it cannot tell, not for the rest", async () => {
    await model("plain", 'backend: "python"', { "1/model.py": PLAIN });
    await model("fin", 'backend: "python"', { "1/model.py": PLAIN + "\n    def finalize(self):\n        pass\n" });
    await model("named_file", 'backend: "python"\ndefault_model_filename: "main.py"', {
      "1/main.py": PLAIN + "\n    def finalize(self):\n        pass\n",
    });
    await model("v2", 'backend: "python"', { "2/model.py": PLAIN + "\n    def finalize(self):\n        pass\n" });
    await model("no_backend", "max_batch_size: 0", { "1/model.py": PLAIN });
    await model("onnx", 'platform: "onnxruntime_onnx"');
    await model("ens", 'platform: "ensemble"');
    await model("vllm_model", 'backend: "vllm"');
    await model("broken", "backend: [");
    const waits = await unloadsRunningCode(repo, [
      { name: "plain", version: "1" },
      { name: "fin", version: "1" },
      { name: "named_file", version: "1" },
      { name: "v2", version: "2" },
      { name: "no_backend", version: "1" },
      { name: "onnx", version: "1" },
      { name: "ens", version: "1" },
      { name: "vllm_model", version: "1" },
      { name: "broken", version: "1" },
      { name: "gone", version: "1" },
    ]);
    expect(waits).toEqual([
      { model: "fin", why: "1/model.py:13 defines finalize" },
      { model: "named_file", why: "1/main.py:13 defines finalize" },
      { model: "v2", why: "2/model.py:13 defines finalize" },
      { model: "vllm_model", why: "its backend vllm may run code when it unloads" },
      { model: "broken", why: "its config.pbtxt could not be read" },
      { model: "gone", why: "neither its config nor a model.py says its backend" },
    ]);
  });
});
