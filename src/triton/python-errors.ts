import path from "node:path";

/**
 * What the python backend reports when a model.py raises, made readable: its traceback ("At:
 * <file>(<line>): <function> ...") carries the interpreter's own import machinery frames, which say
 * nothing about the user's code, and a missing module is the one error whose fix is ours to name.
 */

/** `<frozen importlib._bootstrap>(241): _call_with_frames_removed`, one frame of Python's importer. */
const FROZEN_FRAME = /\s*<frozen [^>]+>\(\d+\): [^\s;]+/g;
const MISSING_MODULE = /ModuleNotFoundError: No module named '([^']+)'/;
/** A model's python file in the user's repository, as a traceback names it: `<repo>/<model>/<version>/x.py(<line>)`. */
const MODEL_FILE = (repo: string) =>
  new RegExp(`${repo.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}([^/\\s]+)/\\d+/[^\\s(]+\\.py\\(\\d+\\)`);

// The table of module -> package names is shared with the import check (envs/missing-imports.ts).
export { MODULE_PACKAGES, packageFor } from "../module-packages.js";
import { packageFor } from "../module-packages.js";

/**
 * The message without Python's importer frames and, for a module the model's environment lacks,
 * where to list it: the model's requirements.txt, from which triton-dev builds its environment
 * (`buildsEnvironments: false`, the docker and kind runtimes: the image's own Python).
 */
export function readablePythonError(text: string, userRepo: string, o: { buildsEnvironments?: boolean } = {}): string {
  if (!text.includes("At: ") && !MISSING_MODULE.test(text)) return text;
  let out = text.replace(FROZEN_FRAME, "");
  const missing = MISSING_MODULE.exec(out);
  if (missing && !out.includes("requirements.txt")) {
    const repo = userRepo.endsWith(path.sep) ? userRepo : userRepo + path.sep;
    const model = MODEL_FILE(repo).exec(out)?.[1];
    const top = missing[1]!.split(".")[0]!;
    const pkg = packageFor(top);
    const where = model !== undefined ? path.join(repo, model, "requirements.txt") : "the model's requirements.txt";
    const named = pkg.differs ? `${pkg.package} (the package that provides '${top}')` : pkg.package;
    out +=
      o.buildsEnvironments === false
        ? ` (this runtime's image lacks '${top}': install ${named} in the image; triton-dev builds environments from requirements.txt on the local runtime only)`
        : ` (add ${named} to ${where}: triton-dev builds the model an environment from it)`;
  }
  return out;
}
