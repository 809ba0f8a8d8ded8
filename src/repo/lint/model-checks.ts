/**
 * The checks on a model folder that need no config: its name (checkFolderName), its files
 * (checkModelFiles), and a folder without config.pbtxt as Triton takes it (checkWithoutConfig).
 */
import path from "node:path";
import { autofillBackendFields } from "../autofill.js";
import { CONFIG_FILE, type ModelLayout } from "../layout.js";
import { ModelFileError, listModelFiles } from "../model-files.js";
import { modelNameProblem, servableName, shownName } from "../model-name.js";
import {
  type LintOptions,
  Reporter,
  pythonFileNameProblem,
  topLevelModelFiles,
  undeterminedBackend,
  versionConfigs,
} from "../rules.js";

/**
 * A folder name Triton or its python backend cannot serve (see model-name.ts): an error on the
 * folder, with the name to rename it to. It is checked before anything else, since such a model
 * must never be staged, whatever its config says.
 */
export function checkFolderName(name: string, dir: string, taken: ReadonlySet<string>, reporter: Reporter): void {
  const problem = modelNameProblem(name);
  if (!problem) return;
  const rename = servableName(name, taken);
  reporter.error(
    "model-name-unsafe",
    undefined,
    `model folder '${shownName(name)}' cannot be served: its name ${problem}`,
    `Rename the folder to '${rename}' (names hold only letters, digits, '_', '-' and '.'), and write that name in its config.pbtxt's name and in the ensemble steps that run it.`,
    dir,
  );
}

/** Enough to see what is wrong; a model with a thousand dangling links is reported by its first. */
const MAX_FILE_PROBLEMS = 20;

/**
 * What the model-file rule (repo/model-files.ts) refuses in this model, as errors on the files
 * themselves: staging would refuse the model for them. A file another rule already reports an
 * error on (a config.pbtxt that is a FIFO) is not reported twice.
 */
export async function checkModelFiles(layout: ModelLayout, options: LintOptions, reporter: Reporter): Promise<void> {
  const problems: ModelFileError[] = [];
  try {
    await listModelFiles(layout.dir, layout.name, { problems, limits: options.modelFileLimits });
  } catch (err) {
    if (!(err instanceof ModelFileError)) throw err;
    problems.push(err);
  }
  const reported = new Set(reporter.diagnostics.filter((d) => d.severity === "error").map((d) => d.file));
  for (const p of problems.slice(0, MAX_FILE_PROBLEMS)) {
    if (reported.has(p.file)) continue;
    const where = p.file === layout.dir ? `model folder '${layout.name}'` : path.relative(layout.dir, p.file);
    reporter.error(`model-files-${p.problem}` as const, undefined, `${where} ${p.is}`, p.hint, p.file);
  }
}

/**
 * A model folder without config.pbtxt, as Triton 2.51 takes it (measured, see
 * test/repo/agreement-cases.ts): with auto-complete on it completes a config from the first
 * version folder's model file, and without a version folder or a model file it recognises it
 * refuses the model ("Could not determine backend"). A config.pbtxt inside a version folder is
 * never read. Returns why it cannot load here when the runtime lacks the backend Triton infers.
 */
export function checkWithoutConfig(layout: ModelLayout, options: LintOptions, reporter: Reporter): string | undefined {
  const { name } = layout;
  const rel = (p: string) => path.relative(path.dirname(layout.dir), p);
  const top = rel(layout.configFile);
  const misplaced = versionConfigs(layout);
  if (misplaced.length > 0) {
    const first = path.join(misplaced[0]!.dir, CONFIG_FILE);
    reporter.error(
      "config-in-version-folder",
      { line: 1, column: 1, offset: 0 },
      `${rel(first)} is inside a version folder, where Triton never reads a config: it reads only ${top}, so model '${name}' has no config`,
      misplaced.length === 1
        ? `Move it to ${top}; the version folder keeps only the model files.`
        : `Triton reads one config for every version: move the one you mean to ${top} and delete the others (${misplaced
            .slice(1)
            .map((v) => rel(path.join(v.dir, CONFIG_FILE)))
            .join(", ")}).`,
      first,
    );
    return undefined;
  }
  if (layout.versions.length === 0) {
    const stray = topLevelModelFiles(layout);
    const v1 = path.join(layout.dir, "1");
    reporter.error(
      "version-missing",
      undefined,
      stray.length > 0
        ? `model '${name}' has no ${CONFIG_FILE} and no version folder: ${stray.join(", ")} at the top of the folder is never read, so Triton cannot tell what runs it ("Could not determine backend")`
        : `model '${name}' has no ${CONFIG_FILE} and no version folder, so Triton cannot tell what runs it ("Could not determine backend")`,
      `Put the model file in a numbered version folder (${rel(path.join(v1, stray[0] ?? "model.py"))}) and write ${top} beside it (\`triton-dev init\` scaffolds one).`,
      layout.dir,
    );
    return undefined;
  }
  if (options.autoComplete === false) {
    reporter.error(
      "config-missing",
      undefined,
      `model '${name}' has no ${CONFIG_FILE}, and Triton runs with config auto-complete off, so it refuses the model ("${top}: No such file or directory")`,
      `Write ${top} (\`triton-dev init\` scaffolds one), or serve it with auto-complete on: \`triton-dev up\` keeps it on when a model needs it, so a run started with it off needs a restart.`,
      layout.dir,
    );
    return undefined;
  }
  const inferred = autofillBackendFields(name, { platform: "", backend: "", defaultModelFilename: "" }, layout);
  if (inferred.undetermined) {
    const first = layout.subdirs[0]!;
    const { message } = undeterminedBackend(name, layout, inferred, "");
    reporter.error(
      "backend-missing",
      undefined,
      `model '${name}' has no ${CONFIG_FILE}: ${message.replace(/^the config sets neither platform nor backend, /, "")}`,
      `Write ${top} naming its backend (\`triton-dev init\` scaffolds a python one), or put the model file in ${rel(path.join(layout.dir, first))}/ under its default name (model.py, model.onnx, model.plan, model.pt, model.xml).`,
      layout.dir,
    );
    return undefined;
  }
  const server = options.server;
  const has = server?.backends;
  if (server && has && !has.includes(inferred.backend)) {
    const { message, hint } = server.missingBackend(inferred.backend);
    reporter.warning(
      "backend-unavailable",
      undefined,
      `model '${name}' has no ${CONFIG_FILE}; Triton infers backend '${inferred.backend}' from ${inferred.inferredFrom}, and ${message}`,
      hint,
      layout.dir,
    );
    return `needs the ${inferred.backend} backend, not in ${server.servedBy ?? `the ${server.runtime} runtime`}`;
  }
  if (inferred.backend === "python" && !inferred.defaultModelFilename.endsWith(".py")) {
    const { message, hint } = pythonFileNameProblem(inferred.defaultModelFilename, inferred.inferredFrom);
    reporter.error(
      "python-model-filename",
      undefined,
      `model '${name}' has no ${CONFIG_FILE}; ${message}`,
      hint.replace("in config.pbtxt", `in ${top}`),
      layout.dir,
    );
    return undefined;
  }
  reporter.warning(
    "config-missing",
    undefined,
    `model '${name}' has no ${CONFIG_FILE}`,
    `Triton will try to complete a configuration from the model files; write ${top} to be sure of what it serves (\`triton-dev init\` scaffolds one).`,
    layout.dir,
  );
  return undefined;
}
