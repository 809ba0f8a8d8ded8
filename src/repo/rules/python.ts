/**
 * Lint rules, area `python`: the python backend's particulars: what its stub's command line cannot
 * carry, EXECUTION_ENV_PATH, and model.py read as text (the versions rule hands it over with each
 * version's model file).
 */
import { readUserText } from "../layout.js";
import { servableName, shownName } from "../model-name.js";
import fs from "node:fs";
import path from "node:path";
import type { ModelContext, Reporter } from "./reporter.js";
import { seenAsModel, codes, type ModelRule, type RuleArea } from "./rule.js";

export const PYTHON_CODES = codes({
  "instance-group-name-unsafe": {
    severity: "error",
    description: "a python model's instance group name that breaks the stub's command line",
  },
  "model-filename-unsafe": {
    severity: "error",
    description: "a python model's default_model_filename that breaks the stub's command line",
  },
  "execution-env-relative": {
    severity: "error or warning",
    description:
      "a relative EXECUTION_ENV_PATH: found from tritonserver's start folder (error here: triton-dev's run folder)",
  },
  "execution-env-missing": { severity: "error", description: "an EXECUTION_ENV_PATH that does not exist" },
  "python-model-class": { severity: "error", description: "a model.py without class TritonPythonModel" },
  "python-model-execute": { severity: "warning", description: "a TritonPythonModel without an execute method" },
  "python-import-missing": {
    severity: "error or warning",
    description: "a module the model's files import at load that its environment lacks, with the pip package to add",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    python: typeof PYTHON_CODES;
  }
}

const MODEL_DIRECTORY_VAR = "$$TRITON_MODEL_DIRECTORY";

/** A python model's EXECUTION_ENV_PATH as the backend reads it: `$$TRITON_MODEL_DIRECTORY` is the model's folder. */
export function executionEnv(ctx: ModelContext): { value: string; inModel: boolean; resolved: string } | undefined {
  if (ctx.autofill.backend !== "python") return undefined;
  const value = ctx.parsed.config.parameters["EXECUTION_ENV_PATH"]?.stringValue;
  if (!value) return undefined;
  const inModel = value.startsWith(MODEL_DIRECTORY_VAR);
  return {
    value,
    inModel,
    resolved: inModel ? path.join(ctx.layout.dir, value.slice(MODEL_DIRECTORY_VAR.length)) : value,
  };
}

/**
 * The python backend's EXECUTION_ENV_PATH (a conda-pack tar.gz or an unpacked environment) with
 * `$$TRITON_MODEL_DIRECTORY` replaced by the model's folder: a path that does not exist fails the
 * load (measured on 2.51: "Failed to get the canonical path for <path>"). Inside the model folder
 * it is known on every runtime; an absolute path elsewhere only where Triton runs on this machine.
 */
function checkExecutionEnv(ctx: ModelContext, r: Reporter): void {
  const env = executionEnv(ctx);
  if (!env) return;
  const { value, inModel, resolved } = env;
  const at = "parameters{EXECUTION_ENV_PATH}.string_value#value";
  // An absolute path is this machine's only where Triton sees this machine's files (no container's
  // mounts between). Without --runtime it is judged as `up` judges it where it runs Triton here
  // (the local runtime, `auto`'s fallback), so lint never passes what `up` then refuses.
  const server = ctx.options.server;
  if (!inModel && !path.isAbsolute(value)) {
    const fix = `Write it as "${MODEL_DIRECTORY_VAR}/${value.replace(/^\.\//, "")}" (the model's folder) or as an absolute path.`;
    // triton-dev starts tritonserver here in a run folder of its own, where the path never is
    // (measured: "Failed to get the canonical path for <value>"); a container's start folder is the image's.
    if (!server?.stagingElsewhere) {
      r.error(
        "execution-env-relative",
        at,
        `EXECUTION_ENV_PATH '${value}' is relative: the python backend looks for it from the folder tritonserver runs in, a run folder of triton-dev's on this machine, where it is not, and fails the load ("Failed to get the canonical path")`,
        fix,
      );
      return;
    }
    r.warning(
      "execution-env-relative",
      at,
      `EXECUTION_ENV_PATH '${value}' is relative, so it depends on the folder tritonserver was started in`,
      fix,
    );
    return;
  }
  if (!inModel && server?.stagingElsewhere) return;
  if (fs.existsSync(resolved)) return;
  r.error(
    "execution-env-missing",
    at,
    `EXECUTION_ENV_PATH '${value}' names ${resolved}, which does not exist: the python backend fails the load ("Failed to get the canonical path")`,
    inModel
      ? `Put the environment there (a conda-pack .tar.gz or an unpacked environment folder), or delete the parameter and list the model's packages in ${path.join(ctx.layout.dir, "requirements.txt")}, from which triton-dev builds its environment.`
      : `Point it at an existing conda-pack .tar.gz or environment folder, or delete the parameter and list the model's packages in requirements.txt beside config.pbtxt${server ? "" : " (a path inside a container's image: lint with --runtime docker, which does not look for it here)"}.`,
  );
}

/** What may stand unquoted in the python backend's `bash -c` command line (see model-name.ts). */
const STUB_WORD = /^[A-Za-z0-9_.-]+$/;

/**
 * Besides the model's folder (checked by lint for every model), the python backend puts an
 * instance group's name (in each instance's name) and default_model_filename (in the model
 * file's path) unquoted on the `bash -c` command line that starts each stub: a space splits it
 * and the stub never starts, `$(...)` runs.
 */
function checkStubCommandLine(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (ctx.autofill.backend !== "python") return;
  const why =
    "the python backend starts each instance's process through bash with it unquoted on the command line, so the process never starts (or part of it runs as a command)";
  c.instanceGroup.forEach((g, i) => {
    if (!g.name || STUB_WORD.test(g.name)) return;
    r.error(
      "instance-group-name-unsafe",
      `instance_group[${i}].name#value`,
      `instance group name '${shownName(g.name)}' cannot be used: ${why}`,
      `Use only letters, digits, '_', '-' and '.' (for example "${servableName(g.name)}"), or leave the name out.`,
    );
  });
  const file = c.defaultModelFilename;
  if (file && !file.split("/").every((seg) => STUB_WORD.test(seg))) {
    r.error(
      "model-filename-unsafe",
      "default_model_filename#value",
      `default_model_filename '${shownName(file)}' cannot be used: ${why}`,
      `Name the file with letters, digits, '_', '-' and '.' only (for example "${file
        .split("/")
        .map((seg) => servableName(seg))
        .join("/")}"), or leave default_model_filename out to use model.py.`,
    );
  }
}

/**
 * The python backend imports its model file only when the name ends in '.py' (measured on 2.51:
 * "Model name must end with '.py'"); autofill hands a model named "m.python" model.python.
 */
export function pythonFileNameProblem(file: string, inferredFrom?: string): { message: string; hint: string } {
  const byName = inferredFrom?.startsWith("the model's name");
  return {
    message: `the python backend loads only a file whose name ends in .py, and Triton hands it ${file}${byName ? `, taking backend 'python' and that file from ${inferredFrom}` : ""} (Triton: "Model name must end with '.py'. Model name is "${file}".")`,
    hint: byName
      ? 'Write backend: "python" in config.pbtxt (the python backend then loads model.py), or rename the model folder without the dot.'
      : "Set default_model_filename to a name ending in .py, or delete it to use model.py.",
  };
}

export async function checkPythonModel(file: string, r: Reporter): Promise<void> {
  const read = await readUserText(file);
  if (!("text" in read)) return;
  const text = read.text;
  if (!/\bclass\s+TritonPythonModel\b|^TritonPythonModel\s*=/m.test(text)) {
    r.error(
      "python-model-class",
      { line: 1, column: 1, offset: 0 },
      "model.py defines no class TritonPythonModel",
      "The python backend loads class TritonPythonModel with an execute(self, requests) method.",
      file,
    );
    return;
  }
  if (!/^\s+(async\s+)?def\s+execute\s*\(/m.test(text)) {
    r.warning(
      "python-model-execute",
      { line: 1, column: 1, offset: 0 },
      "TritonPythonModel has no execute method",
      "Define execute(self, requests) returning one response per request.",
      file,
    );
  }
}

export const STUB_COMMAND_LINE_RULE: ModelRule = {
  name: "python stub command line",
  applies: seenAsModel,
  check: checkStubCommandLine,
};
export const EXECUTION_ENV_RULE: ModelRule = {
  name: "EXECUTION_ENV_PATH",
  applies: seenAsModel,
  check: checkExecutionEnv,
};

export const PYTHON: RuleArea<typeof PYTHON_CODES> = {
  area: "python",
  codes: PYTHON_CODES,
  // model.py itself is read by the versions rule, with the model file of each version.
  rules: [STUB_COMMAND_LINE_RULE, EXECUTION_ENV_RULE],
};
