import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeMissingImports, findMissingImports } from "../../src/envs/missing-imports.js";
import { managedPython } from "../helpers/wheels.js";

/**
 * The import check against the managed environment's real Python: the model's files are parsed,
 * never run (a model.py that would write a file on import leaves none).
 */
describe("missing imports of a python model", () => {
  let dir: string;
  let python: string;
  beforeAll(async () => {
    python = managedPython().python;
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "td-imports-"));
  });
  afterAll(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  async function model(files: Record<string, string>): Promise<string> {
    const m = await fsp.mkdtemp(path.join(dir, "m-"));
    for (const [f, text] of Object.entries(files)) {
      await fsp.mkdir(path.dirname(path.join(m, f)), { recursive: true });
      await fsp.writeFile(path.join(m, f), text);
    }
    return path.join(m, "1", "model.py");
  }

  it("names every missing module at once, with the package where its name differs, at each import", async () => {
    const entry = await model({
      "1/model.py": [
        "import json",
        "import requests",
        "import cv2",
        "from PIL import Image",
        "import numpy as np",
        "import triton_python_backend_utils as pb_utils",
        "import helper",
        "from google.protobuf import json_format",
        "try:",
        "    import yaml",
        "except ImportError:",
        "    yaml = None",
        "def later():",
        "    import torch",
        "open(__file__ + '.ran', 'w').write('ran')",
        "class TritonPythonModel:",
        "    def execute(self, requests):",
        "        return []",
        "",
      ].join("\n"),
      "1/helper.py": "from sklearn.linear_model import LinearRegression\nfrom .pkg import sub\n",
      "1/pkg/__init__.py": "",
      "1/pkg/sub.py": "import bs4\n",
    });
    const r = await findMissingImports({ entry, python });
    const missing = r.missing.map((m) => [path.basename(m.file), m.line, m.column, m.missing, m.package]);
    expect(missing).toEqual([
      ["model.py", 2, 1, "requests", "requests"],
      ["model.py", 3, 1, "cv2", "opencv-python-headless"],
      ["model.py", 4, 1, "PIL", "pillow"],
      ["model.py", 8, 1, "google.protobuf", "protobuf"],
      ["helper.py", 1, 1, "sklearn", "scikit-learn"],
      ["sub.py", 1, 1, "bs4", "beautifulsoup4"],
    ]);
    // Read, never run.
    await expect(fsp.access(entry + ".ran")).rejects.toThrow();
    const said = describeMissingImports("m", path.dirname(path.dirname(entry)), r.missing);
    expect(said.message).toBe(
      "m imports 6 modules the model's environment lacks: 'requests', 'cv2' (package opencv-python-headless), 'PIL' (package pillow), 'google.protobuf' (package protobuf), 'sklearn' (package scikit-learn), 'bs4' (package beautifulsoup4)",
    );
    expect(said.hint).toContain("requests, opencv-python-headless, pillow, protobuf, scikit-learn, beautifulsoup4");
    expect(said.diagnostics).toHaveLength(6);
  });

  it("leaves out a file whose imports depend on code (sys.path), and one that does not parse", async () => {
    const entry = await model({
      "1/model.py": "import sys\nsys.path.insert(0, '/opt/lib')\nimport vendored_thing\n",
    });
    expect((await findMissingImports({ entry, python })).missing).toEqual([]);
    const broken = await model({ "1/model.py": "import cv2\ndef (:\n" });
    const r = await findMissingImports({ entry: broken, python });
    expect(r.missing).toEqual([]);
    expect(r.skipped.map((s) => s.why)).toEqual(["SyntaxError"]);
  });

  it("counts a module on the PYTHONPATH tritonserver passes on to the stub", async () => {
    const lib = await fsp.mkdtemp(path.join(dir, "lib-"));
    await fsp.writeFile(path.join(lib, "vendored_thing.py"), "");
    const entry = await model({ "1/model.py": "import vendored_thing\n" });
    expect((await findMissingImports({ entry, python, env: {} })).missing.map((m) => m.missing)).toEqual([
      "vendored_thing",
    ]);
    expect((await findMissingImports({ entry, python, env: { PYTHONPATH: lib } })).missing).toEqual([]);
  });

  it("reads no file a link leads to outside the model folder", async () => {
    const outside = path.join(dir, "outside.py");
    await fsp.writeFile(outside, "import cv2\n");
    const entry = await model({ "1/helper_target.py": "" });
    await fsp.writeFile(entry, "import helper\n");
    await fsp.symlink(outside, path.join(path.dirname(entry), "helper.py"));
    const r = await findMissingImports({ entry, python });
    expect(r.missing).toEqual([]);
    expect(r.skipped).toEqual([{ file: path.join(path.dirname(entry), "helper.py"), why: "outside the model" }]);
  });
});
