import fs from "node:fs";
import path from "node:path";
import { setsExecutionEnv } from "../envs/execution-env.js";
import { REQUIREMENTS_FILE } from "../envs/requirements.js";
import { checkRequirementsFile } from "../envs/requirements-check.js";
import { log } from "../log/logger.js";
import { type Diagnostic, compareDiagnostics, countBySeverity, dedupeDiagnostics } from "./diagnostics.js";
import {
  type RepoModel,
  checkEnsembleCycles,
  checkEnsembleGraph,
  checkEnsembleSteps,
  ensembleSteps,
  isEnsemble,
} from "./rules/ensemble.js";
import {
  CONFIG_FILE,
  type ModelLayout,
  type NotAModelFolder,
  classifyEntry,
  readRepositoryEntries,
  scanModel,
} from "./layout.js";
import { READ_CONCURRENCY, mapPool } from "./fd-limit.js";
import { ModelFileError, listModelFiles } from "./model-files.js";
import type { ModelConfigJson } from "./model-config.js";
import { modelNameProblem, servableName, shownName } from "./model-name.js";
import { type ParsedConfig, SourceMap, parseModelConfig } from "./parse.js";
import { fromJson } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { ModelConfigSchema, type ModelConfig } from "./gen/model_config_pb.js";
import { toModelConfigJson } from "./model-config.js";
import type { CompletionOutcome } from "./auto-complete-run.js";
import { autofillBackendFields } from "./autofill.js";
import { ENSEMBLE_PLATFORM } from "./backends.js";
import { readUserText } from "./layout.js";
import type { Pos } from "./textproto.js";
import { type ModelIOReport, checkModelIO } from "./model-io/compare.js";
import {
  BACKEND_ERRORS,
  type LintOptions,
  type ModelContext,
  Reporter,
  checkModel,
  checkRuntimeBackend,
  pythonFileNameProblem,
  topLevelModelFiles,
  undeterminedBackend,
  versionConfigs,
  versionsToLoad,
} from "./rules.js";
import type { ErrorCode, WarningCode } from "./rules.js";

export type { LintOptions } from "./rules.js";
export type { ModelConfigJson } from "./model-config.js";

const logger = log.child("repo");

export interface LintedModel {
  name: string;
  /** Absolute path of the model folder. */
  dir: string;
  /** The parsed config in Triton's JSON form; absent when config.pbtxt is missing or unreadable. */
  config?: ModelConfigJson;
  diagnostics: Diagnostic[];
  /**
   * Whether Triton would load it on this machine with the chosen runtime: no error, and nothing
   * the machine or runtime lacks (those are warnings, since the config may be meant elsewhere).
   */
  wouldLoad: boolean;
  /**
   * Why a model without errors would still not load here, as a phrase that follows its name
   * ("needs a GPU"); absent when nothing here stops it.
   */
  unavailable?: string;
  /** What lint could not check and why (auto_complete_config not run here), one sentence each. */
  notes?: string[];
  /** Whether the config checked is the one auto_complete_config completed. */
  completed?: boolean;
  /** The backend Triton runs it with, as the config names it or Triton infers it; absent for ensembles. */
  backend?: string;
  /** How Triton completes the config from the model file (`lint --explain`); absent when no model file was read. */
  modelIO?: ModelIOReport;
}

export interface LintResult {
  models: LintedModel[];
  /** Findings about the repository as a whole rather than one model (it holds no model). */
  repositoryDiagnostics: Diagnostic[];
  /** Every diagnostic of the repository and of every model above, errors first. */
  diagnostics: Diagnostic[];
  errorCount: number;
  warningCount: number;
}

interface Analysed extends RepoModel {
  reporter: Reporter;
  notes?: string[];
  completed?: boolean;
  modelIO?: ModelIOReport;
  /** What this machine or runtime lacks to load it (see LintedModel.unavailable). */
  unavailable?: string;
  backend?: string;
}

/**
 * A folder name Triton or its python backend cannot serve (see model-name.ts): an error on the
 * folder, with the name to rename it to. It is checked before anything else, since such a model
 * must never be staged, whatever its config says.
 */
function checkFolderName(name: string, dir: string, taken: ReadonlySet<string>, reporter: Reporter): void {
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

/**
 * What the model-file rule (repo/model-files.ts) refuses in this model, as errors on the files
 * themselves: staging would refuse the model for them. A file another rule already reports an
 * error on (a config.pbtxt that is a FIFO) is not reported twice.
 */
async function checkModelFiles(layout: ModelLayout, options: LintOptions, reporter: Reporter): Promise<void> {
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
function checkWithoutConfig(layout: ModelLayout, options: LintOptions, reporter: Reporter): string | undefined {
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
    return `needs the ${inferred.backend} backend, not in the ${server.runtime} runtime`;
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

/** The result of running a model's auto_complete_config for lint. */
interface Completion {
  /** The completed config, to lint instead of the file's; absent when completion failed or did not run. */
  parsed?: ParsedConfig;
  /** Where findings on what the completion added point (model.py, at the function). */
  elsewhere?: { file: string; pos: Pos; note: string };
  diagnostics: Diagnostic[];
  notes: string[];
  /** The model file whose auto_complete_config was not run because no model code may run (`notRun`). */
  notRun?: string;
}

/**
 * With auto-complete on, Triton has the python backend call the model's auto_complete_config on
 * the config it has so far (its own completion: the name, the backend from 1/model.py), then
 * loads what that returns. Undefined when that does nothing: auto-complete off, not a python
 * model, or a model file that never names auto_complete_config (checked by reading it, so a
 * save of an ordinary model spawns nothing).
 */
async function completeConfig(
  layout: ModelLayout,
  parsed: ParsedConfig | undefined,
  options: LintOptions,
): Promise<Completion | undefined> {
  if (options.autoComplete === false || layout.versions.length === 0) return undefined;
  const base: ModelConfig = parsed ? parsed.config : create(ModelConfigSchema);
  if (base.platform === "ensemble" || base.schedulingChoice.case === "ensembleScheduling") return undefined;
  const af = autofillBackendFields(layout.name, base, layout);
  if (af.backend !== "python") return undefined;
  const version = versionsToLoad(base, layout).load[0];
  const v = layout.versions.find((x) => x.version === version);
  const fileName = af.defaultModelFilename;
  // A file the python backend refuses by its name never gets as far as auto_complete_config.
  if (!v || !fileName.endsWith(".py") || v.entries.get(fileName)?.isDir !== false) return undefined;
  const file = path.join(v.dir, fileName);
  const read = await readUserText(file);
  if (!("text" in read) || !/\bauto_complete_config\b/.test(read.text)) return undefined;
  const lines = read.text.split("\n");
  const defLine = lines.findIndex((l) => /^\s*def\s+auto_complete_config\b/.test(l));
  const at = defLine >= 0 ? defLine : lines.findIndex((l) => /\bauto_complete_config\b/.test(l));
  const pos = { line: at + 1, column: Math.max(1, (lines[at] ?? "").search(/\S/) + 1), offset: 0 };
  const rel = path.relative(layout.dir, file);

  // Completing the config means importing the model's code: only a caller that runs it anyway
  // (`up`, the reload controller) or a user who asked (`lint --run-model-code`) gives a completer.
  if (!options.completer) return notRun(layout, file, rel, pos);
  const input = { ...toModelConfigJson(base, { withDefaults: true }) } as Record<string, unknown>;
  input.name = layout.name;
  if (!base.platform && !base.backend) input.backend = "python";
  const outcome = await options.completer.complete({ model: layout.name, dir: layout.dir, file, config: input });
  // The machine cannot wall it in: not run, said as a warning with what to do.
  if (outcome.outcome === "refused") return notRun(layout, file, rel, pos, outcome);
  return completionResult(outcome, layout, parsed, file, rel, pos);
}

/**
 * The fields a python model's auto_complete_config can set through the backend's ModelConfig
 * (set_max_batch_size, add_input, add_output, set_dynamic_batching,
 * set_model_transaction_policy): without running it, what the file says of them may not be
 * what Triton loads.
 */
export const COMPLETABLE_FIELDS: ReadonlySet<string> = new Set([
  "max_batch_size",
  "input",
  "output",
  "dynamic_batching",
  "model_transaction_policy",
]);

/**
 * auto_complete_config not run because nobody asked for model code to run: a warning, so that a
 * repository that is fine still lints clean (exit 0) while the output says what was not checked.
 * The config is checked as written, with findings on the fields the function can set made
 * warnings (see Reporter's `completable`), since the function may set them right.
 */
function notRun(
  layout: ModelLayout,
  file: string,
  rel: string,
  pos: Pos,
  refused?: { why: string; hint?: string },
): Completion {
  return {
    diagnostics: [
      {
        severity: "warning",
        file,
        line: pos.line,
        column: pos.column,
        model: layout.name,
        code: "auto-complete-not-run" satisfies WarningCode,
        message: refused
          ? `not checked: completing this config runs ${rel} (its auto_complete_config), and ${refused.why}, so the config is checked as written`
          : `not checked: completing this config runs ${rel} (its auto_complete_config), and lint runs no model code unless asked, so the config is checked as written`,
        hint:
          refused?.hint ??
          "Pass --run-model-code to have lint run it as Triton does (a subprocess of the managed environment with a time limit, walled in: no network, only its own folder and Python to read), or trust the code first: `triton-dev up` runs it in Triton anyway.",
      },
    ],
    notes: [],
    notRun: rel,
  };
}

function completionResult(
  outcome: CompletionOutcome,
  layout: ModelLayout,
  parsed: ParsedConfig | undefined,
  file: string,
  rel: string,
  pos: Pos,
): Completion | undefined {
  const err = (code: ErrorCode, message: string, hint: string, where = pos, inFile = file): Diagnostic => ({
    severity: "error",
    file: inFile,
    line: where.line,
    column: where.column,
    message,
    hint,
    model: layout.name,
    code,
  });
  switch (outcome.outcome) {
    case "absent":
    case "refused": // handled before
      return undefined;
    case "not-run":
      return {
        diagnostics: [],
        notes: [`auto_complete_config in ${rel} not run: ${outcome.why}; the config is checked as written`],
      };
    case "timeout":
      return {
        diagnostics: [
          err(
            "auto-complete-timeout",
            `auto_complete_config in ${rel} did not return within ${outcome.seconds} s (importing ${rel} included), so Triton's load would wait on it and fail`,
            "Make auto_complete_config (and what model.py does at import) quick: no downloads, no model loading; do that in initialize().",
          ),
        ],
        notes: [],
      };
    case "import":
    case "raised": {
      const where = outcome.file && outcome.line ? { line: outcome.line, column: 1, offset: 0 } : pos;
      const inFile = outcome.file ?? file;
      return {
        diagnostics: [
          err(
            "auto-complete-raised",
            outcome.outcome === "import"
              ? `importing ${rel} to complete its config failed: ${outcome.error}`
              : `auto_complete_config in ${rel} raised ${outcome.error}`,
            "Triton refuses the model when completing its config fails: fix the error (run `python -c 'import model'` in the version folder to see it).",
            where,
            inFile,
          ),
        ],
        notes: [],
      };
    }
    case "invalid":
      return {
        diagnostics: [
          err(
            "auto-complete-invalid",
            `auto_complete_config in ${rel} returned no usable config: ${outcome.error}`,
            "Return the auto_complete_model_config it was given, after calling add_input, add_output, set_max_batch_size, ... on it.",
          ),
        ],
        notes: [],
      };
    case "completed": {
      let config: ModelConfig;
      try {
        config = fromJson(ModelConfigSchema, outcome.config as never);
      } catch (e) {
        return {
          diagnostics: [
            err(
              "auto-complete-invalid",
              `auto_complete_config in ${rel} returned a config Triton cannot read: ${e instanceof Error ? e.message : String(e)}`,
              "Give inputs and outputs as {'name': ..., 'data_type': 'TYPE_FP32', 'dims': [...]}, with Triton's type names.",
            ),
          ],
          notes: [],
        };
      }
      const completed: ParsedConfig = {
        file: parsed?.file ?? layout.configFile,
        text: parsed?.text ?? "",
        config,
        json: toModelConfigJson(config),
        source: parsed?.source ?? new SourceMap(),
      };
      return {
        parsed: completed,
        elsewhere: { file, pos, note: `(in the config auto_complete_config in ${rel} completes)` },
        diagnostics: [],
        notes: [],
      };
    }
  }
}

/** Enough to see what is wrong; a model with a thousand dangling links is reported by its first. */
const MAX_FILE_PROBLEMS = 20;

async function analyseModel(
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
      unavailable = `needs the ${missingBackend} backend, not in the ${options.server?.runtime} runtime`;
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

/** Ensembles after the ensembles they run, so a broken inner ensemble is known before the outer one is checked. */
function ensembleOrder(models: Map<string, Analysed>): string[] {
  const order: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (n: string): void => {
    if (state.has(n)) return;
    state.set(n, "visiting");
    const m = models.get(n);
    if (m?.parsed)
      for (const s of ensembleSteps(m.parsed.config)) if (models.get(s.modelName)?.parsed) visit(s.modelName);
    state.set(n, "done");
    if (m?.parsed && isEnsemble(m.parsed.config)) order.push(n);
  };
  for (const n of [...models.keys()].sort()) visit(n);
  return order;
}

async function analyseRepository(
  repo: string,
  options: LintOptions,
): Promise<{ models: Map<string, Analysed>; notModels: NotAModelFolder[] }> {
  const { models: names, notModels } = await readRepositoryEntries(repo);
  const models = new Map<string, Analysed>();
  const taken = new Set(names);
  for (const m of await mapPool(names, READ_CONCURRENCY, (n) => analyseModel(repo, n, options, taken)))
    models.set(m.name, m);
  checkAcrossModels(models);
  return { models, notModels };
}

/**
 * The rules across models (ensembles against the models they run); adds to the ensembles'
 * findings. `models`: those checked, which hold every model they run; `names`: the repository's,
 * which a missing step's hint suggests from.
 */
function checkAcrossModels(models: Map<string, Analysed>, names: Iterable<string> = models.keys()): void {
  const cyclic = checkEnsembleCycles(models, (n) => models.get(n)!.reporter);
  for (const name of ensembleOrder(models)) {
    const m = models.get(name)!;
    if (m.reporter.hasError("ensemble-platform")) continue;
    checkEnsembleSteps(m.parsed!, name, models, m.reporter, cyclic, names);
    for (const [s, step] of ensembleSteps(m.parsed!.config).entries()) {
      const dep = models.get(step.modelName);
      // A step model with errors is already an error here (ensemble-model-invalid).
      if (dep?.unavailable && dep.errorCount === 0) {
        m.reporter.warning(
          "ensemble-model-unavailable",
          `ensemble_scheduling.step[${s}].model_name#value`,
          `step ${s} runs '${step.modelName}', which ${dep.unavailable}, so this ensemble cannot load here either`,
          `See the warning on ${step.modelName}.`,
        );
        m.unavailable ??= `runs '${step.modelName}', which cannot load here`;
      }
    }
    m.errorCount = countBySeverity(m.reporter.diagnostics).errors;
  }
}

function toResult(models: Analysed[], repositoryDiagnostics: Diagnostic[] = []): LintResult {
  const linted: LintedModel[] = models.map((m) => {
    const diagnostics = dedupeDiagnostics(m.reporter.diagnostics).sort(compareDiagnostics);
    const clean = !diagnostics.some((d) => d.severity === "error");
    return {
      name: m.name,
      dir: m.layout.dir,
      ...(m.parsed ? { config: m.parsed.json } : {}),
      diagnostics,
      wouldLoad: clean && !m.unavailable,
      ...(clean && m.unavailable ? { unavailable: m.unavailable } : {}),
      ...(m.notes ? { notes: m.notes } : {}),
      ...(m.completed ? { completed: true } : {}),
      ...(m.backend ? { backend: m.backend } : {}),
      ...(m.modelIO ? { modelIO: m.modelIO } : {}),
    };
  });
  const all = [...repositoryDiagnostics, ...linted.flatMap((m) => m.diagnostics)].sort(compareDiagnostics);
  const { errors, warnings } = countBySeverity(all);
  return { models: linted, repositoryDiagnostics, diagnostics: all, errorCount: errors, warningCount: warnings };
}

/** An empty repository is almost always the wrong folder; `up` refuses it too (requireModelRepository). */
function emptyRepository(repo: string): Diagnostic {
  return {
    severity: "error",
    file: repo,
    line: 1,
    column: 1,
    message: `model repository '${path.basename(repo) || repo}' holds no model directories`,
    hint: `A model directory holds config.pbtxt and a numbered version folder (my_model/config.pbtxt, my_model/1/model.py): pass the folder that holds such directories, or scaffold one with \`triton-dev init ${repo}\`.`,
    code: "repository-empty" satisfies ErrorCode,
  };
}

/**
 * A link the user probably meant as a model: said, since it is silently not served otherwise. A
 * warning, as the other models are served all the same.
 */
function notAModelFolder(e: NotAModelFolder): Diagnostic {
  const where =
    e.why === "links to a file"
      ? "a file"
      : e.code === "ENOENT"
        ? "which does not exist"
        : e.code === "ELOOP"
          ? "which leads back to itself"
          : `which cannot be followed (${e.code ?? "unknown error"})`;
  return {
    severity: "warning",
    file: e.path,
    line: 1,
    column: 1,
    message: `'${e.name}' is a symbolic link to ${e.target}, ${where}: it is not a model folder, so it is not served`,
    hint: "Point the link at a model folder (one holding config.pbtxt and a numbered version folder), or remove it.",
    code: (e.why === "links to a file" ? "model-link-not-directory" : "model-link-dangling") satisfies WarningCode,
  };
}

/**
 * Checks every model of a repository the way Triton would when loading it, plus the files around
 * the configs (version folders, model files) and the ensembles across models. Throws UserError
 * when `dir` cannot be read; everything wrong inside it is a diagnostic.
 */
export async function lintRepository(dir: string, opts: LintOptions = {}): Promise<LintResult> {
  const repo = path.resolve(dir);
  const started = Date.now();
  const { models, notModels } = await analyseRepository(repo, opts);
  const result = toResult(
    [...models.values()],
    [...(models.size === 0 ? [emptyRepository(repo)] : []), ...notModels.map(notAModelFolder)],
  );
  logger.debug("linted repository", {
    repo,
    models: models.size,
    errors: result.errorCount,
    warnings: result.warningCount,
    ms: Date.now() - started,
  });
  return result;
}

/**
 * One model plus every ensemble that runs it, directly or through other ensembles: what a save of
 * that model can break. The whole repository is read (ensembles need the models they compose),
 * but only those models are reported. A model that no longer exists yields no entry of its own,
 * while the ensembles that ran it report it missing.
 */
export async function lintModel(repoDir: string, name: string, opts: LintOptions = {}): Promise<LintResult> {
  const repo = path.resolve(repoDir);
  const { models } = await analyseRepository(repo, opts);
  return toResult([...modelAndUsers(models, name)].sort().map((n) => models.get(n)!));
}

/** `name` (when it exists) and every ensemble that runs it, directly or through other ensembles. */
function modelAndUsers(models: Map<string, Analysed>, name: string): Set<string> {
  const wanted = new Set<string>();
  if (models.has(name)) wanted.add(name);
  const users = (target: string): string[] =>
    [...models.values()]
      .filter((m) => m.parsed && ensembleSteps(m.parsed.config).some((s) => s.modelName === target))
      .map((m) => m.name);
  const queue = [name];
  const seen = new Set<string>([name]);
  while (queue.length) {
    for (const u of users(queue.shift()!)) {
      if (seen.has(u)) continue;
      seen.add(u);
      wanted.add(u);
      queue.push(u);
    }
  }
  return wanted;
}

const NO_SOURCE = new SourceMap();

/**
 * A model that is no ensemble as the rules across models need it: its config without the source
 * map its findings were placed by, and a reporter that holds only its findings (nothing is added
 * to them later: the rules across models report on ensembles).
 */
function slim(m: Analysed): Analysed {
  if (!m.parsed || isEnsemble(m.parsed.config)) return m;
  const reporter = new Reporter(m.name, undefined, m.layout.configFile);
  reporter.diagnostics.push(...m.reporter.diagnostics);
  return { ...m, parsed: { ...m.parsed, source: NO_SOURCE }, reporter };
}

/** The unsaved text of a config.pbtxt open in an editor, by the file's absolute path; undefined: read the file. */
export type ConfigOverlay = (configFile: string) => string | undefined;

interface Baseline {
  diagnostics: number;
  unavailable?: string;
}

/**
 * A repository's lint kept between calls, for an editor: each model is read again only when told
 * it changed (saved, or its unsaved text changed), with the unsaved text of open configs in place
 * of the files' (`overlay`), and the rules across models run again on what is known. The same
 * rules and findings as lintRepository and lintModel.
 */
export class RepositoryLint {
  readonly repo: string;
  private readonly models = new Map<string, Analysed>();
  /** Each model's findings before the rules across models added theirs. */
  private readonly baselines = new Map<string, Baseline>();
  private notModels: NotAModelFolder[] = [];
  private loaded = false;
  /** The model folders as last listed. */
  private listed: string[] | undefined;
  private listedSet: ReadonlySet<string> = new Set();
  /** One refresh at a time: a later one sees what the earlier one read. */
  private queue: Promise<void> = Promise.resolve();
  private readings = 0;
  /**
   * The ensembles that name each model in a step, by the name they use (the model may not
   * exist): what a change of that model can change, found without a pass over every model.
   */
  private readonly usersOf = new Map<string, Set<string>>();

  constructor(
    repo: string,
    private readonly options: LintOptions = {},
    private readonly overlay: ConfigOverlay = () => undefined,
    /**
     * Keep of each model only what later checks read: a model that is no ensemble gets no finding
     * after it is read (the rules across models report on ensembles), so its config's source map
     * is dropped unless it is open. A third of the memory of a repository of 20,000 models.
     */
    private readonly lean = false,
  ) {
    this.repo = path.resolve(repo);
  }

  /**
   * Reads the list of models again, and the models named in `changed` (every model on the first
   * call, and any model not seen before). Throws UserError when the repository cannot be read.
   */
  refresh(changed: Iterable<string> = [], o: { relist?: boolean | "entries"; only?: boolean } = {}): Promise<void> {
    const wanted = new Set(changed);
    const run = this.queue.then(() => this.doRefresh(wanted, o.relist ?? true, o.only ?? false));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * `relist` false: the changed models' text changed, not the repository's folders (an editor's
   * unsaved change), so the list of models is not read again, unless a changed model is not in it.
   * `"entries"`: only the changed names' entries are looked at again (a watcher saw them change),
   * not the whole folder, which at 20,000 models costs more than the model read.
   */
  private async doRefresh(changed: Set<string>, relist: boolean | "entries", only: boolean): Promise<void> {
    let relisted = false;
    if (relist === true || !this.listed) {
      relisted = !!this.listed;
      const entries = await readRepositoryEntries(this.repo);
      this.notModels = entries.notModels;
      this.listed = entries.models;
      this.listedSet = new Set(entries.models);
    } else if (relist === "entries" || [...changed].some((n) => !this.listedSet.has(n))) {
      relisted = await this.relistEntries(changed);
    }
    const names = this.listed!;
    const taken = this.listedSet;
    /** Models gone from the listing: the ensembles that ran them are checked again. */
    const gone: string[] = [];
    for (const n of [...this.models.keys()]) {
      if (!taken.has(n)) {
        this.forget(n);
        gone.push(n);
      }
    }
    const todo = only
      ? names.filter((n) => changed.has(n))
      : names.filter((n) => changed.has(n) || !this.models.has(n));
    if (!only) this.loaded = true;
    const read = (ns: string[]) =>
      mapPool(ns, READ_CONCURRENCY, async (n) => {
        const open = this.overlay(path.join(this.repo, n, CONFIG_FILE));
        const m = await analyseModel(this.repo, n, this.options, taken, open);
        return this.lean && open === undefined ? slim(m) : m;
      });
    const readNow = [...todo];
    for (const m of await read(todo)) this.remember(m);
    // `only`: the models the changed ones run (ensemble steps, transitively) that were not read
    // yet, and nothing else, so the first findings of one model of a large repository need only
    // what they depend on.
    let frontier = only ? todo : [];
    while (frontier.length) {
      const next = new Set<string>();
      for (const n of frontier)
        for (const s of ensembleSteps(this.models.get(n)?.parsed?.config ?? create(ModelConfigSchema)))
          if (taken.has(s.modelName) && !this.models.has(s.modelName)) next.add(s.modelName);
      frontier = [...next];
      readNow.push(...frontier);
      for (const m of await read(frontier)) this.remember(m);
    }
    // The rules across models, on the models linked by ensemble steps (either way) to those read
    // now or gone: a model's findings across models depend on nothing outside those links, so the
    // rest keep theirs, and a change costs what it touches, not the repository.
    // A missing step's hint names the repository's models: when they change, every ensemble with
    // a missing (or unservable) step is checked again.
    const hinted = relisted ? [...this.usersOf.keys()].filter((n) => !this.models.has(n) || modelNameProblem(n)) : [];
    const scope = this.linkedTo([...readNow, ...gone, ...hinted]);
    for (const [n, m] of scope) {
      const b = this.baselines.get(n)!;
      m.reporter.diagnostics.length = b.diagnostics;
      m.unavailable = b.unavailable;
      m.errorCount = countBySeverity(m.reporter.diagnostics).errors;
    }
    checkAcrossModels(scope, this.listed);
    this.readings++;
  }

  /** How many refreshes have finished: a cache of what is known is stale once this moves. */
  get generation(): number {
    return this.readings;
  }

  /**
   * The models joined to `names` through ensemble steps, in either direction and transitively
   * (their connected part of the step graph): checking the rules across models on it gives each
   * of its models what a check on the whole repository gives (the graph's other parts share no
   * model with it, and cycles are found from the same starts in the same order).
   */
  private linkedTo(names: Iterable<string>): Map<string, Analysed> {
    const scope = new Map<string, Analysed>();
    const seen = new Set<string>();
    const queue = [...names];
    while (queue.length) {
      const n = queue.pop()!;
      if (seen.has(n)) continue;
      seen.add(n);
      const m = this.models.get(n);
      if (m) {
        scope.set(n, m);
        if (m.parsed) for (const s of ensembleSteps(m.parsed.config)) queue.push(s.modelName);
      }
      for (const u of this.usersOf.get(n) ?? []) queue.push(u);
    }
    return scope;
  }

  /** Lists again only the repository's entries named (a model folder added, removed, or a link changed). */
  private async relistEntries(names: Iterable<string>): Promise<boolean> {
    const listed = new Set(this.listed);
    const notModels = new Map(this.notModels.map((e) => [e.name, e]));
    for (const n of new Set(names)) {
      const kind = await classifyEntry(this.repo, n);
      notModels.delete(n);
      if (kind === "model") listed.add(n);
      else {
        listed.delete(n);
        if (typeof kind === "object") notModels.set(n, kind);
      }
    }
    const changed = listed.size !== this.listedSet.size || [...listed].some((n) => !this.listedSet.has(n));
    this.listed = [...listed].sort();
    this.listedSet = listed;
    this.notModels = [...notModels.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    return changed;
  }

  private unindex(name: string): void {
    const old = this.models.get(name);
    if (old?.parsed)
      for (const s of ensembleSteps(old.parsed.config)) {
        const users = this.usersOf.get(s.modelName);
        users?.delete(name);
        if (users?.size === 0) this.usersOf.delete(s.modelName);
      }
  }

  private forget(name: string): void {
    this.unindex(name);
    this.models.delete(name);
    this.baselines.delete(name);
  }

  private remember(m: Analysed): void {
    // Kept in its place in the map (lintRepository lists models in the order first read).
    this.unindex(m.name);
    if (m.parsed)
      for (const s of ensembleSteps(m.parsed.config)) {
        let users = this.usersOf.get(s.modelName);
        if (!users) this.usersOf.set(s.modelName, (users = new Set()));
        users.add(m.name);
      }
    this.models.set(m.name, m);
    this.baselines.set(m.name, {
      diagnostics: m.reporter.diagnostics.length,
      ...(m.unavailable ? { unavailable: m.unavailable } : {}),
    });
  }

  /** Every model folder of the repository as last listed (read or not yet), sorted. */
  listedNames(): string[] {
    return this.listed ?? [];
  }

  /** Whether a model folder of that name was listed. */
  isListed(name: string): boolean {
    return this.listedSet.has(name);
  }

  /** Whether every listed model has been read (a refresh without `only` has run). */
  get complete(): boolean {
    return this.loaded;
  }

  /** The model names known at the last refresh, sorted. */
  modelNames(): string[] {
    return [...this.models.keys()].sort();
  }

  /** What the last refresh knows of a model: its folder's layout, and its parsed config when it parsed. */
  model(name: string): { layout: ModelLayout; parsed?: ParsedConfig } | undefined {
    const m = this.models.get(name);
    return m ? { layout: m.layout, ...(m.parsed ? { parsed: m.parsed } : {}) } : undefined;
  }

  /** `lintModel`'s answer from what is known: the model and every ensemble that runs it. */
  lintModel(name: string): LintResult {
    const wanted = new Set<string>();
    const queue = [name];
    while (queue.length) {
      const n = queue.pop()!;
      if (wanted.has(n)) continue;
      wanted.add(n);
      queue.push(...(this.usersOf.get(n) ?? []));
    }
    return toResult(
      [...wanted]
        .filter((n) => this.models.has(n))
        .sort()
        .map((n) => this.models.get(n)!),
    );
  }

  /** Each of the named models' findings as `lintRepository` gives them (a model not read yet: none). */
  diagnosticsOf(names: Iterable<string>): Map<string, Diagnostic[]> {
    const known = [...names].map((n) => this.models.get(n)).filter((m): m is Analysed => !!m);
    return new Map(toResult(known).models.map((m) => [m.name, m.diagnostics]));
  }

  /** `lintRepository`'s answer from what is known. */
  lintRepository(): LintResult {
    // In the listing's order, as lintRepository's (models read later are not last).
    return toResult(
      this.modelNames().map((n) => this.models.get(n)!),
      this.repositoryDiagnostics(),
    );
  }

  /** The findings on the repository as a whole (`LintResult.repositoryDiagnostics`), from what is known. */
  repositoryDiagnostics(): Diagnostic[] {
    return [...(this.models.size === 0 ? [emptyRepository(this.repo)] : []), ...this.notModels.map(notAModelFolder)];
  }
}
