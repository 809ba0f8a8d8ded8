import path from "node:path";
import { log } from "../log/logger.js";
import { RUNTIME_BACKENDS, effectiveBackend } from "./backends.js";
import { type Diagnostic, compareDiagnostics, countBySeverity, dedupeDiagnostics } from "./diagnostics.js";
import { type RepoModel, checkEnsembleCycles, checkEnsembleGraph, checkEnsembleSteps, ensembleSteps, isEnsemble } from "./ensemble.js";
import { CONFIG_FILE, listModelNames, scanModel } from "./layout.js";
import type { ModelConfigJson } from "./model-config.js";
import { parseModelConfig } from "./parse.js";
import { type LintOptions, type ModelContext, Reporter, checkModel, checkRuntimeBackend } from "./rules.js";

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
}

export interface LintResult {
  models: LintedModel[];
  /** Every diagnostic of every model above, errors first. */
  diagnostics: Diagnostic[];
  errorCount: number;
  warningCount: number;
}

interface Analysed extends RepoModel {
  reporter: Reporter;
  /** The runtime cannot load it (its backend is missing there). */
  unavailable: boolean;
}

async function analyseModel(repo: string, name: string, options: LintOptions): Promise<Analysed> {
  const layout = await scanModel(repo, name);
  const configFile = layout.configFile;
  if (layout.configText === undefined) {
    const reporter = new Reporter(name, undefined, configFile);
    if (layout.configReadError) {
      reporter.error("config-unreadable", undefined, `cannot read ${CONFIG_FILE}: ${layout.configReadError}`, "Check the file's permissions.");
    } else {
      reporter.warning(
        "config-missing",
        undefined,
        `model '${name}' has no ${CONFIG_FILE}`,
        `Triton will try to complete a configuration from the model files; write ${path.join(name, CONFIG_FILE)} to be sure of what it serves (\`triton-dev init\` scaffolds one).`,
        layout.dir,
      );
    }
    return { name, layout, reporter, errorCount: 0, unavailable: false };
  }

  const result = parseModelConfig(layout.configText, configFile, { model: name });
  const reporter = new Reporter(name, result.parsed, configFile);
  reporter.diagnostics.push(...result.diagnostics);
  let unavailable = false;
  if (result.parsed) {
    const ctx: ModelContext = { name, layout, parsed: result.parsed, options };
    await checkModel(ctx, reporter);
    checkRuntimeBackend(ctx, reporter);
    checkEnsembleGraph(result.parsed, reporter);
    const c = result.parsed.config;
    const backend = effectiveBackend(c.platform, c.backend);
    unavailable = !!options.runtime && !isEnsemble(c) && !!backend && !RUNTIME_BACKENDS[options.runtime].includes(backend);
  }
  const { errors } = countBySeverity(reporter.diagnostics);
  return { name, layout, parsed: result.parsed, reporter, errorCount: errors, unavailable };
}

/** Ensembles after the ensembles they run, so a broken inner ensemble is known before the outer one is checked. */
function ensembleOrder(models: Map<string, Analysed>): string[] {
  const order: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (n: string): void => {
    if (state.has(n)) return;
    state.set(n, "visiting");
    const m = models.get(n);
    if (m?.parsed) for (const s of ensembleSteps(m.parsed.config)) if (models.get(s.modelName)?.parsed) visit(s.modelName);
    state.set(n, "done");
    if (m?.parsed && isEnsemble(m.parsed.config)) order.push(n);
  };
  for (const n of [...models.keys()].sort()) visit(n);
  return order;
}

async function analyseRepository(repo: string, options: LintOptions): Promise<Map<string, Analysed>> {
  const names = await listModelNames(repo);
  const models = new Map<string, Analysed>();
  for (const m of await Promise.all(names.map((n) => analyseModel(repo, n, options)))) models.set(m.name, m);

  const cyclic = checkEnsembleCycles(models, (n) => models.get(n)!.reporter);
  for (const name of ensembleOrder(models)) {
    const m = models.get(name)!;
    checkEnsembleSteps(m.parsed!, name, models, m.reporter, cyclic);
    for (const [s, step] of ensembleSteps(m.parsed!.config).entries()) {
      const dep = models.get(step.modelName);
      if (dep?.unavailable) {
        m.reporter.warning(
          "ensemble-model-unavailable",
          `ensemble_scheduling.step[${s}].model_name#value`,
          `step ${s} runs '${step.modelName}', which the ${options.runtime} runtime cannot load, so neither can this ensemble`,
          "See the warning on that model.",
        );
        m.unavailable = true;
      }
    }
    m.errorCount = countBySeverity(m.reporter.diagnostics).errors;
  }
  return models;
}

function toResult(models: Analysed[]): LintResult {
  const linted: LintedModel[] = models.map((m) => ({
    name: m.name,
    dir: m.layout.dir,
    ...(m.parsed ? { config: m.parsed.json } : {}),
    diagnostics: dedupeDiagnostics(m.reporter.diagnostics).sort(compareDiagnostics),
  }));
  const all = linted.flatMap((m) => m.diagnostics).sort(compareDiagnostics);
  const { errors, warnings } = countBySeverity(all);
  return { models: linted, diagnostics: all, errorCount: errors, warningCount: warnings };
}

/**
 * Checks every model of a repository the way Triton would when loading it, plus the files around
 * the configs (version folders, model files) and the ensembles across models. Throws UserError
 * when `dir` cannot be read; everything wrong inside it is a diagnostic.
 */
export async function lintRepository(dir: string, opts: LintOptions = {}): Promise<LintResult> {
  const repo = path.resolve(dir);
  const started = Date.now();
  const models = await analyseRepository(repo, opts);
  const result = toResult([...models.values()]);
  logger.debug("linted repository", { repo, models: models.size, errors: result.errorCount, warnings: result.warningCount, ms: Date.now() - started });
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
  const models = await analyseRepository(repo, opts);
  const wanted = new Set<string>();
  if (models.has(name)) wanted.add(name);
  const users = (target: string): string[] =>
    [...models.values()].filter((m) => m.parsed && ensembleSteps(m.parsed.config).some((s) => s.modelName === target)).map((m) => m.name);
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
  return toResult([...wanted].sort().map((n) => models.get(n)!));
}
