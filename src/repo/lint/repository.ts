/**
 * The whole-repository pass: every model analysed, eight at a time, then the rules across models;
 * reported whole (lintRepository) or as one model and the ensembles that run it (lintModel).
 */
import path from "node:path";
import { log } from "../../log/logger.js";
import { READ_CONCURRENCY, mapPool } from "../fd-limit.js";
import { type NotAModelFolder, readRepositoryEntries } from "../layout.js";
import type { LintOptions } from "../rules.js";
import { ensembleSteps } from "../rules/ensemble.js";
import { checkAcrossModels } from "./across-models.js";
import { type Analysed, analyseModel } from "./model.js";
import { type LintResult, emptyRepository, notAModelFolder, toResult } from "./result.js";

const logger = log.child("repo");

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
