/**
 * Lint: every model of a repository checked the way Triton would load it (`lintRepository`), one
 * model and the ensembles that run it (`lintModel`), and an editor's lint kept between changes
 * (`RepositoryLint`).
 *
 * The parts, by what each answers: the checks on a model folder that need no config: its name,
 * its files, a folder without config.pbtxt (`lint/model-checks.ts`); a python model's
 * auto_complete_config run, or said not run (`lint/completion.ts`); one model analysed: its
 * config parsed or completed and the rules run on it (`lint/model.ts`); the rules across models,
 * ensembles against the models they run (`lint/across-models.ts`); what lint answers, with the
 * findings on the repository itself (`lint/result.ts`); the whole repository read and checked
 * (`lint/repository.ts`); the incremental lint, with unsaved text in place of files
 * (`lint/repository-lint.ts`). Other modules import them from here.
 */
export type { LintOptions } from "./rules.js";
export type { ModelConfigJson } from "./model-config.js";
export { COMPLETABLE_FIELDS } from "./lint/completion.js";
export type { LintResult, LintedModel } from "./lint/result.js";
export { lintModel, lintRepository } from "./lint/repository.js";
export { type ConfigOverlay, RepositoryLint } from "./lint/repository-lint.js";
