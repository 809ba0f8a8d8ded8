/**
 * Lint rules, area `versions`: version folders and the model file in each: which versions Triton
 * loads (version_policy), folders it ignores, the file the backend reads, a config left in a
 * version folder.
 */
import { ENSEMBLE_PLATFORM, defaultModelFile } from "../backends.js";
import { AUTOFILL_FILE_NAMES } from "../autofill.js";
import type { ModelConfig } from "../gen/model_config_pb.js";
import { CONFIG_FILE, type ModelLayout, type VersionDir } from "../layout.js";
import path from "node:path";
import type { ModelContext, Reporter } from "./reporter.js";
import { executionEnv, pythonFileNameProblem, checkPythonModel } from "./python.js";
import { BACKEND_ERRORS, seenAsModel, codes, type ModelRule, type RuleArea } from "./rule.js";

export const VERSIONS_CODES = codes({
  "version-missing": { severity: "error", description: "no version folder, so Triton has nothing to load" },
  "version-dir-ignored": {
    severity: "warning",
    description: "a folder Triton does not take for a version (not a number, or a reserved name)",
  },
  "version-specific-missing": { severity: "warning", description: "version_policy names a version that has no folder" },
  "version-none-selected": { severity: "error", description: "no version folder matches the version_policy" },
  "model-file-missing": { severity: "error", description: "a version folder without the model file the backend loads" },
  "model-file-kind": {
    severity: "error",
    description: "a file where the backend loads a folder (a SavedModel, for one)",
  },
  "python-model-filename": { severity: "error", description: "a python model file Triton cannot import by its name" },
  "config-in-version-folder": {
    severity: "error or warning",
    description: "a config.pbtxt inside a version folder, which Triton never reads",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    versions: typeof VERSIONS_CODES;
  }
}

/**
 * Files at the top of a model folder that look like model files (python code, or a name a backend
 * loads): Triton reads model files only inside numbered version folders, so these are never read.
 */
export function topLevelModelFiles(layout: ModelLayout): string[] {
  const known = new Set([...AUTOFILL_FILE_NAMES, "model.bin"]);
  return layout.topFiles.filter((f) => f.endsWith(".py") || known.has(f));
}

/** Version folders holding a config.pbtxt, which Triton never reads (it reads only the model folder's). */
export function versionConfigs(layout: ModelLayout): VersionDir[] {
  return layout.versions.filter((v) => v.entries.has(CONFIG_FILE) && !v.entries.get(CONFIG_FILE)!.isDir);
}

/** The versions Triton will load under the config's version policy (core's VersionsToLoad). */
export function versionsToLoad(
  config: ModelConfig,
  layout: ModelLayout,
): { load: number[]; missingSpecific: number[] } {
  const existing = layout.versions.map((v) => v.version).sort((a, b) => b - a);
  const vp = config.versionPolicy?.policyChoice;
  if (vp?.case === "specific") {
    const wanted = vp.value.versions.map(Number);
    return {
      load: wanted.filter((v) => existing.includes(v)),
      missingSpecific: wanted.filter((v) => !existing.includes(v)),
    };
  }
  if (vp?.case === "all") return { load: existing, missingSpecific: [] };
  const n = vp?.case === "latest" ? Math.max(1, vp.value.numVersions) : 1;
  return { load: existing.slice(0, n), missingSpecific: [] };
}

async function checkVersions(ctx: ModelContext, r: Reporter): Promise<void> {
  const { layout, parsed } = ctx;
  const c = parsed.config;
  const rel = (p: string) => path.relative(path.dirname(layout.dir), p);
  const env = executionEnv(ctx);
  for (const d of layout.ignoredDirs) {
    // The folder EXECUTION_ENV_PATH names is the model's environment, not a misnamed version.
    const dir = path.join(layout.dir, d);
    if (env?.inModel && (env.resolved === dir || env.resolved.startsWith(dir + path.sep))) continue;
    const why = /^0\d+$/.test(d) ? "has a leading zero" : "is not a number";
    const fix = /^0\d+$/.test(d)
      ? `Rename it to '${String(Number(d))}'.`
      : "Version folders are named 1, 2, ...; move other files into a version folder.";
    r.warning(
      "version-dir-ignored",
      undefined,
      `folder '${d}' ${why}, so Triton ignores it as a version`,
      fix,
      path.join(layout.dir, d),
    );
  }
  const isEnsemble = c.platform === ENSEMBLE_PLATFORM;
  for (const v of versionConfigs(layout)) {
    r.warning(
      "config-in-version-folder",
      { line: 1, column: 1, offset: 0 },
      `${rel(path.join(v.dir, CONFIG_FILE))} is never read: Triton reads one config for every version, ${rel(layout.configFile)}`,
      `Move what it sets into ${rel(layout.configFile)} and delete it (a version folder holds only the model files).`,
      path.join(v.dir, CONFIG_FILE),
    );
  }
  if (layout.versions.length === 0) {
    const stray = topLevelModelFiles(layout);
    const v1 = path.join(layout.dir, "1");
    r.error(
      "version-missing",
      undefined,
      stray.length > 0
        ? `model '${ctx.name}' has no version folder: ${stray.join(", ")} at the top of the folder is never read, Triton loads model files only from numbered version folders ("at least one version must be available")`
        : `model '${ctx.name}' has no version folder`,
      isEnsemble
        ? `An ensemble still needs an (empty) version folder: create ${rel(v1)}/.`
        : stray.length > 0
          ? `Move ${stray.length === 1 ? "it" : "them"} into ${rel(v1)}/ (${rel(path.join(v1, stray[0]!))}); ${rel(layout.configFile)} stays where it is.`
          : `Create ${rel(v1)}/ holding the model file.`,
    );
    return;
  }
  const { load, missingSpecific } = versionsToLoad(c, layout);
  for (const v of missingSpecific) {
    r.warning(
      "version-specific-missing",
      "version_policy",
      `version_policy names version ${v}, which has no folder`,
      `Create ${rel(path.join(layout.dir, String(v)))}/ or remove ${v} from versions.`,
    );
  }
  if (load.length === 0) {
    r.error(
      "version-none-selected",
      "version_policy",
      "no version folder matches the version_policy",
      "Make the policy name an existing version folder.",
    );
    return;
  }
  if (isEnsemble || r.hasError(...BACKEND_ERRORS)) return;
  const af = ctx.autofill;
  const backend = af.backend;
  const known = defaultModelFile(af.platform, backend, c.defaultModelFilename);
  if (!known) return;
  // The file autofill hands the backend: a model named "m.python" gets model.python.
  const file = c.defaultModelFilename || af.defaultModelFilename || known.file;
  const want = file === known.file ? known : { file };
  const where = c.defaultModelFilename
    ? "default_model_filename#value"
    : c.backend
      ? "backend#value"
      : c.platform
        ? "platform#value"
        : undefined;
  if (backend === "python" && !want.file.endsWith(".py")) {
    const problem = pythonFileNameProblem(want.file, c.defaultModelFilename ? undefined : af.inferredFrom);
    r.error("python-model-filename", where, problem.message, problem.hint);
    return;
  }
  for (const version of load) {
    const v = layout.versions.find((x) => x.version === version)!;
    const entry = v.entries.get(want.file);
    const hasCc = Object.values(c.ccModelFilenames).some((f) => v.entries.has(f));
    if (!entry && !hasCc) {
      r.error(
        "model-file-missing",
        where,
        `version ${version} has no ${want.file} (${rel(path.join(v.dir, want.file))})`,
        backend === "python"
          ? `Put the model code in ${rel(path.join(v.dir, want.file))} (class TritonPythonModel).`
          : `Put the ${backend || c.platform} model file there, or set default_model_filename.`,
      );
      continue;
    }
    if (entry && want.isDir && !entry.isDir) {
      r.error(
        "model-file-kind",
        where,
        `${rel(path.join(v.dir, want.file))} must be a directory`,
        "A SavedModel is a folder; export it with tf.saved_model.save.",
      );
    }
    if (backend === "python" && entry && !entry.isDir) await checkPythonModel(path.join(v.dir, want.file), r);
  }
}

export const VERSIONS_RULE: ModelRule = {
  name: "versions and model files",
  applies: seenAsModel,
  check: checkVersions,
};

export const VERSIONS: RuleArea<typeof VERSIONS_CODES> = {
  area: "versions",
  codes: VERSIONS_CODES,
  rules: [VERSIONS_RULE],
};
