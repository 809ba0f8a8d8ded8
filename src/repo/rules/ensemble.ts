/**
 * The ensemble area: its codes, and the checks across models lint.ts runs once every model has its
 * own findings. The checks themselves are in ensemble/, by what each answers: the ensemble's own
 * graph (graph.ts), the ensemble against the models its steps run (steps.ts), decoupled steps'
 * origins (decoupled.ts), what they share (config.ts); ensembles running each other is here.
 */
import { cycleText } from "../suggest.js";
import type { Reporter } from "./reporter.js";
import { codes, type RuleArea } from "./rule.js";
import { type RepoModel, ensembleSteps, findCycles, isEnsemble, stepPath } from "./ensemble/config.js";

export { type RepoModel, ensembleSteps, findCycles, isEnsemble } from "./ensemble/config.js";
export { heldDecoupled } from "./ensemble/decoupled.js";
export { checkEnsembleGraph } from "./ensemble/graph.js";
export { checkEnsembleSteps } from "./ensemble/steps.js";

export const ENSEMBLE_CODES = codes({
  "ensemble-no-steps": { severity: "error", description: "ensemble_scheduling without a step" },
  "ensemble-no-io": { severity: "error", description: "an ensemble that declares no input and no output" },
  "ensemble-instance-group": { severity: "error", description: "an ensemble with an instance_group" },
  "ensemble-optimization": { severity: "error", description: "an ensemble with optimization settings" },
  "ensemble-warmup": { severity: "error", description: "an ensemble with model_warmup" },
  "ensemble-step-model-missing": { severity: "error", description: "a step without model_name" },
  "ensemble-step-input-map-missing": { severity: "error", description: "a step without input_map" },
  "ensemble-step-output-map-missing": { severity: "error", description: "a step without output_map" },
  "ensemble-tensor-written-twice": { severity: "error", description: "an ensemble tensor that two steps write" },
  "ensemble-input-unused": { severity: "error", description: "an ensemble input no step reads" },
  "ensemble-input-overwritten": {
    severity: "warning",
    description: "a step writes a tensor of the ensemble input's name",
  },
  "ensemble-output-not-written": { severity: "error", description: "an ensemble output no step writes" },
  "ensemble-tensor-not-produced": { severity: "error", description: "a step reads a tensor nothing writes" },
  "ensemble-tensor-unused": { severity: "error", description: "a step writes a tensor nothing reads" },
  "ensemble-map-duplicate-key": {
    severity: "warning",
    description: "a step maps one of its model's tensors twice; Triton keeps the last",
  },
  "ensemble-tensor-cycle": { severity: "error", description: "the steps' tensors form a cycle" },
  "ensemble-type-mismatch": {
    severity: "error",
    description: "an ensemble tensor whose data type differs between the models that share it",
  },
  "ensemble-shape-mismatch": {
    severity: "error",
    description: "an ensemble tensor whose shape differs between the models that share it",
  },
  "ensemble-model-name-unsafe": {
    severity: "error",
    description: "a step runs a model whose name Triton cannot serve",
  },
  "ensemble-model-missing": { severity: "error", description: "a step runs a model that is not in the repository" },
  "ensemble-model-invalid": { severity: "error", description: "a step runs a model whose config has errors" },
  "ensemble-model-unavailable": {
    severity: "warning",
    description: "a step runs a model whose backend the runtime lacks",
  },
  "ensemble-model-version": { severity: "error", description: "a step names a version its model does not load" },
  "ensemble-max-batch-size": {
    severity: "error",
    description: "the ensemble allows larger batches than a step's model",
  },
  "ensemble-unknown-input": {
    severity: "error",
    description: "a step's input_map names an input its model does not have",
  },
  "ensemble-input-not-mapped": { severity: "error", description: "a step leaves inputs of its model unfed" },
  "ensemble-unknown-output": {
    severity: "error",
    description: "a step's output_map names an output its model does not have",
  },
  "ensemble-decoupled-origins": {
    severity: "error",
    description: "outputs from different origins once a step is decoupled, which Triton refuses",
  },
  "ensemble-cycle": { severity: "error", description: "ensembles that run each other" },
});

declare module "./codes.js" {
  interface CodeTables {
    ensemble: typeof ENSEMBLE_CODES;
  }
}

/** The checks of an ensemble against the models it runs: lint.ts runs them once every model has its own. */
export const ENSEMBLE: RuleArea<typeof ENSEMBLE_CODES> = {
  area: "ensemble",
  codes: ENSEMBLE_CODES,
  rules: [],
  reportedBy:
    "the checks across models (checkEnsembleGraph, checkEnsembleSteps, checkEnsembleCycles), after each model's own",
};

/** Ensembles that (directly or through other ensembles) run each other. */
export function checkEnsembleCycles(
  models: Map<string, RepoModel>,
  reporterFor: (model: string) => Reporter,
): Set<string> {
  const cyclic = new Set<string>();
  const ensembles = [...models.values()].filter((m) => m.parsed && isEnsemble(m.parsed.config));
  const edges = (n: string): string[] => {
    const m = models.get(n);
    if (!m?.parsed) return [];
    return ensembleSteps(m.parsed.config)
      .map((s) => s.modelName)
      .filter((x) => {
        const t = models.get(x);
        return !!t?.parsed && isEnsemble(t.parsed.config);
      });
  };
  for (const cycle of findCycles(
    ensembles.map((e) => e.name),
    edges,
  )) {
    cycle.forEach((n) => cyclic.add(n));
    const text = cycleText(cycle);
    cycle.forEach((n, i) => {
      const target = cycle[(i + 1) % cycle.length]!;
      const steps = ensembleSteps(models.get(n)!.parsed!.config);
      const s = steps.findIndex((st) => st.modelName === target);
      reporterFor(n).error(
        "ensemble-cycle",
        `${stepPath(s)}.model_name#value`,
        cycle.length === 1 ? `ensemble '${n}' runs itself` : `ensembles run each other in a cycle: ${text}`,
        "An ensemble cannot depend on itself; break the cycle by running a different model in one step.",
      );
    });
  }
  return cyclic;
}
