/**
 * One model analysed: its folder read (analyseModel), its config parsed or completed
 * (analyseLayout), and the rules run on the config (lintParsed), before the rules across models.
 */
import fs from "node:fs";
import path from "node:path";
import { setsExecutionEnv } from "../../envs/execution-env.js";
import { REQUIREMENTS_FILE } from "../../envs/requirements.js";
import { checkRequirementsFile } from "../../envs/requirements-check.js";
import { autofillBackendFields } from "../autofill.js";
import { ENSEMBLE_PLATFORM } from "../backends.js";
import { countBySeverity } from "../diagnostics.js";
import { CONFIG_FILE, type ModelLayout, scanModel } from "../layout.js";
import { type ModelIOReport, checkModelIO } from "../model-io/compare.js";
import { type ParsedConfig, parseModelConfig } from "../parse.js";
import {
  BACKEND_ERRORS,
  type LintOptions,
  type ModelContext,
  Reporter,
  checkModel,
  checkRuntimeBackend,
} from "../rules.js";
import { type RepoModel, checkEnsembleGraph } from "../rules/ensemble.js";
import { COMPLETABLE_FIELDS, type Completion, completeConfig } from "./completion.js";
import { checkFolderName, checkModelFiles, checkWithoutConfig } from "./model-checks.js";

export interface Analysed extends RepoModel {
  reporter: Reporter;
  notes?: string[];
  completed?: boolean;
  modelIO?: ModelIOReport;
  /** What this machine or runtime lacks to load it (see LintedModel.unavailable). */
  unavailable?: string;
  backend?: string;
}

export async function analyseModel(
  repo: string,
  name: string,
  options: LintOptions,
  taken: ReadonlySet<string> = new Set(),
  configText?: string,
): Promise<Analysed> {
  const layout = await scanModel(repo, name, configText);
  const analysed = await analyseLayout(layout, options, taken);
  await checkModelFiles(layout, options, analysed.reporter);
  // A python model's requirements.txt, as `up` checks it before pip reads it.
  const requirements = path.join(layout.dir, REQUIREMENTS_FILE);
  if (analysed.backend === "python" && !setsExecutionEnv(layout.configText ?? "") && fs.existsSync(requirements)) {
    // A runtime that installs nothing from requirements.txt (the image's Python) never hands it to pip.
    const installs = !options.server || options.server.buildsEnvironments;
    analysed.reporter.diagnostics.push(
      ...checkRequirementsFile(requirements, layout.dir, { model: layout.name }).diagnostics.map((d) =>
        installs
          ? d
          : {
              ...d,
              severity: "warning" as const,
              message: `${d.message} (the ${options.server?.runtime} runtime does not install requirements.txt; --runtime local refuses it)`,
            },
      ),
    );
  }
  if (analysed.backend === "python" && options.importChecker && !setsExecutionEnv(layout.configText ?? "")) {
    analysed.reporter.diagnostics.push(...(await options.importChecker(layout.name, layout.dir, layout.configText)));
  }
  analysed.errorCount = countBySeverity(analysed.reporter.diagnostics).errors;
  return analysed;
}

async function analyseLayout(
  layout: ModelLayout,
  options: LintOptions,
  taken: ReadonlySet<string> = new Set(),
): Promise<Analysed> {
  const { name } = layout;
  const configFile = layout.configFile;
  if (layout.configText === undefined) {
    const completion = layout.configReadError ? undefined : await completeConfig(layout, undefined, options);
    if (!completion?.notRun && (completion?.parsed || completion?.diagnostics.length)) {
      // Triton completes the config from model.py: that is what it loads, and what is checked.
      const file = completion.elsewhere?.file ?? layout.dir;
      return lintParsed(layout, completion.parsed, completion, options, taken, file);
    }
    const reporter = new Reporter(name, undefined, configFile);
    checkFolderName(name, layout.dir, taken, reporter);
    if (layout.configReadError) {
      reporter.error(
        "config-unreadable",
        undefined,
        `cannot read ${CONFIG_FILE}: ${layout.configReadError.message}`,
        layout.configReadError.hint,
      );
    } else {
      if (completion?.notRun) reporter.diagnostics.push(...completion.diagnostics);
      const unavailable = checkWithoutConfig(layout, options, reporter);
      const inferred = autofillBackendFields(name, { platform: "", backend: "", defaultModelFilename: "" }, layout);
      const backend = inferred.undetermined ? undefined : inferred.backend;
      return {
        name,
        layout,
        reporter,
        errorCount: countBySeverity(reporter.diagnostics).errors,
        ...(unavailable ? { unavailable } : {}),
        ...(backend ? { backend } : {}),
        ...(completion?.notes.length ? { notes: completion.notes } : {}),
      };
    }
    return { name, layout, reporter, errorCount: countBySeverity(reporter.diagnostics).errors };
  }

  const result = parseModelConfig(layout.configText, configFile, { model: name });
  if (!result.parsed) {
    const reporter = new Reporter(name, undefined, configFile);
    checkFolderName(name, layout.dir, taken, reporter);
    reporter.diagnostics.push(...result.diagnostics);
    return { name, layout, reporter, errorCount: countBySeverity(reporter.diagnostics).errors };
  }
  const completion = await completeConfig(layout, result.parsed, options);
  return lintParsed(layout, completion?.parsed ?? result.parsed, completion, options, taken, configFile);
}

/**
 * The rules on a parsed config: the file's, or the one auto_complete_config completed from it
 * (then its findings on what model.py added point at model.py, and a failed completion is an
 * error of its own beside the file's findings).
 */
async function lintParsed(
  layout: ModelLayout,
  parsed: ParsedConfig | undefined,
  completion: Completion | undefined,
  options: LintOptions,
  taken: ReadonlySet<string>,
  defaultFile: string,
): Promise<Analysed> {
  const { name } = layout;
  const reporter = new Reporter(
    name,
    parsed,
    defaultFile,
    completion?.parsed ? completion.elsewhere : undefined,
    completion?.notRun
      ? { fields: COMPLETABLE_FIELDS, note: `(unless auto_complete_config in ${completion.notRun} sets it: not run)` }
      : undefined,
  );
  checkFolderName(name, layout.dir, taken, reporter);
  reporter.diagnostics.push(...(completion?.diagnostics ?? []));
  const extra: { notes?: string[]; completed?: true } = {
    ...(completion?.notes.length ? { notes: completion.notes } : {}),
    ...(completion?.parsed ? { completed: true } : {}),
  };
  let unavailable: string | undefined;
  let modelIO: ModelIOReport | undefined;
  let backend: string | undefined;
  if (parsed) {
    const autofill = autofillBackendFields(name, parsed.config, layout);
    if (parsed.config.platform !== ENSEMBLE_PLATFORM) backend = autofill.backend;
    const ctx: ModelContext = { name, layout, parsed, options, autofill };
    await checkModel(ctx, reporter);
    // The model file against the config, once the config says what reads it (model-io/).
    if (!reporter.hasError(...BACKEND_ERRORS)) modelIO = await checkModelIO(ctx, reporter);
    const missingBackend = checkRuntimeBackend(ctx, reporter);
    // Not an ensemble to Triton (see checkModel): its graph would only report consequences.
    if (!reporter.hasError("ensemble-platform")) checkEnsembleGraph(parsed, reporter);
    // The same findings as those warnings, put as what stops the model here: the summary counts
    // it as not loading, and the ensembles that run it cannot load either.
    // A backend the runtime serves through the python backend: said, since it is not the C++ backend.
    const adapted = backend ? options.server?.adaptedBackends?.[backend] : undefined;
    if (adapted && !missingBackend) extra.notes = [...(extra.notes ?? []), adapted.servedAs];
    if (missingBackend) {
      unavailable = `needs the ${missingBackend} backend, not in ${options.server?.servedBy ?? `the ${options.server?.runtime} runtime`}`;
    } else if (reporter.diagnostics.some((d) => d.code === "gpu-unavailable")) {
      unavailable = "needs a GPU";
    }
  }
  const { errors } = countBySeverity(reporter.diagnostics);
  return {
    name,
    layout,
    ...(parsed ? { parsed } : {}),
    reporter,
    errorCount: errors,
    ...(unavailable ? { unavailable } : {}),
    ...(backend ? { backend } : {}),
    ...extra,
    ...(modelIO ? { modelIO } : {}),
  };
}
