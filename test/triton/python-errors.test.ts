import { describe, expect, it } from "vitest";
import { readablePythonError } from "../../src/triton/python-errors.js";

// As Triton 2.51's python backend reported an import that failed in /repo/m/1/model.py (measured).
const MISSING =
  "Internal: ModuleNotFoundError: No module named 'jaxlib_not_here' At: /repo/m/1/model.py(1): <module> " +
  "<frozen importlib._bootstrap>(241): _call_with_frames_removed <frozen importlib._bootstrap_external>(940): exec_module " +
  "<frozen importlib._bootstrap>(705): _load_unlocked <frozen importlib._bootstrap>(1150): _find_and_load_unlocked " +
  "<frozen importlib._bootstrap>(1176): _find_and_load";

describe("readablePythonError", () => {
  it("drops the importer's frames and names the model's requirements.txt for a missing module", () => {
    expect(readablePythonError(MISSING, "/repo")).toBe(
      "Internal: ModuleNotFoundError: No module named 'jaxlib_not_here' At: /repo/m/1/model.py(1): <module>" +
        " (add jaxlib_not_here to /repo/m/requirements.txt: triton-dev builds the model an environment from it)",
    );
  });

  it("names the top-level package of a dotted module, and the model's file wherever the repository is", () => {
    const text = MISSING.replace("'jaxlib_not_here'", "'jax.numpy'").replaceAll("/repo/", "/home/u/my repo/");
    expect(readablePythonError(text, "/home/u/my repo/")).toContain("add jax to /home/u/my repo/m/requirements.txt");
  });

  it("keeps the user's own frames and leaves other messages as they are", () => {
    const raised =
      "Internal: RuntimeError: a broken edit At: /repo/m/1/model.py(12): initialize <frozen importlib._bootstrap>(241): x";
    expect(readablePythonError(raised, "/repo")).toBe(
      "Internal: RuntimeError: a broken edit At: /repo/m/1/model.py(12): initialize",
    );
    const plain = "unable to find backend library 'libtriton_nope.so' for model 'm'";
    expect(readablePythonError(plain, "/repo")).toBe(plain);
  });
});

describe("readablePythonError where requirements.txt builds nothing (docker, kind)", () => {
  it("says the image lacks the module", () => {
    expect(readablePythonError(MISSING, "/repo", { buildsEnvironments: false })).toContain(
      "this runtime's image lacks 'jaxlib_not_here': install jaxlib_not_here in the image",
    );
  });
});

describe("the package to add where its name is not the module's", () => {
  it.each([
    ["cv2", "opencv-python-headless"],
    ["PIL", "pillow"],
    ["sklearn", "scikit-learn"],
    ["yaml", "pyyaml"],
  ])("import %s: add %s", (module, pkg) => {
    const text = MISSING.replace("'jaxlib_not_here'", `'${module}'`);
    expect(readablePythonError(text, "/repo")).toContain(
      `(add ${pkg} (the package that provides '${module}') to /repo/m/requirements.txt`,
    );
    expect(readablePythonError(text, "/repo", { buildsEnvironments: false })).toContain(`install ${pkg} (the package`);
  });
});
