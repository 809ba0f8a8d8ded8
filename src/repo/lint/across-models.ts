/**
 * The rules across models: each ensemble against the models it runs, inner ensembles first
 * (checkAcrossModels). lintRepository runs them on the whole repository, RepositoryLint again on
 * the models a change touches.
 */
import { countBySeverity } from "../diagnostics.js";
import { checkEnsembleCycles, checkEnsembleSteps, ensembleSteps, isEnsemble } from "../rules/ensemble.js";
import type { Analysed } from "./model.js";

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

/**
 * The rules across models (ensembles against the models they run); adds to the ensembles'
 * findings. `models`: those checked, which hold every model they run; `names`: the repository's,
 * which a missing step's hint suggests from.
 */
export function checkAcrossModels(models: Map<string, Analysed>, names: Iterable<string> = models.keys()): void {
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
