/** Decoupled models in an ensemble: which steps Triton holds as decoupled, and the origins of what they write. */
import type { ModelEnsembling_Step } from "../../gen/model_config_pb.js";
import type { Reporter } from "../reporter.js";
import { type RepoModel, ensembleSteps, isEnsemble, stepPath } from "./config.js";

/**
 * Whether Triton holds this model as decoupled: its config says so, or it is an ensemble one of
 * whose steps runs a decoupled model (core's ValidateEnsembleConfig sets the ensemble's
 * model_transaction_policy.decoupled when any of its steps gave a decoupled label, so an
 * ensemble running it sees it decoupled).
 */
export function heldDecoupled(
  name: string,
  models: ReadonlyMap<string, RepoModel>,
  seen: Set<string> = new Set(),
): boolean {
  const c = models.get(name)?.parsed?.config;
  if (!c || seen.has(name)) return false;
  if (c.modelTransactionPolicy?.decoupled === true) return true;
  if (!isEnsemble(c)) return false;
  seen.add(name);
  return ensembleSteps(c).some((s) => heldDecoupled(s.modelName, models, seen));
}

/** The origin of what the ensemble's request carries; a decoupled step's outputs have the step as theirs. */
const REQUEST = -1;

/**
 * core's ValidateEnsembleConfig (ensemble_utils.cc), which walks the tensors from the ensemble's
 * inputs: each tensor gets a decouple label, the request's for the inputs, a new one for the
 * outputs of each step running a decoupled model (the outputs of one step share it), and its
 * inputs' label for the outputs of any other step. A tensor whose producers' inputs carry
 * different labels is refused ("in ensemble e, step of model 'x' receives inputs originated from
 * different decoupled models", x being whichever model's config first named the tensor, the
 * ensemble's for its outputs; measured on 2.51): the responses of a decoupled model arrive on
 * their own, so Triton could not tell which inputs belong together. So a step is refused when its
 * inputs come from two decoupled steps (two steps of the same model included), or from one and
 * the ensemble's request (measured); the ensemble's outputs are held to the same rule. A step
 * running an ensemble that has a decoupled step is a decoupled step (heldDecoupled; measured).
 */
export function checkDecoupledOrigins(
  self: string,
  ensembleInputs: readonly string[],
  ensembleOutputs: readonly string[],
  steps: readonly ModelEnsembling_Step[],
  models: Map<string, RepoModel>,
  r: Reporter,
): void {
  const decoupled = steps.map((s) => heldDecoupled(s.modelName, models, new Set([self])));
  if (!decoupled.includes(true)) return;
  const origins = new Map<string, Set<number>>(ensembleInputs.map((t) => [t, new Set([REQUEST])]));
  const originsOf = (tensors: readonly string[]): Set<number> =>
    new Set(tensors.flatMap((t) => [...(origins.get(t) ?? [])]));
  const stepOrigins = (step: ModelEnsembling_Step) => originsOf(Object.values(step.inputMap));
  // Each pass carries origins one step further along the graph, so as many passes as steps reach
  // every tensor (a cycle is reported elsewhere and only ends the loop early here).
  for (let pass = 0; pass < steps.length; pass++) {
    let changed = false;
    steps.forEach((step, s) => {
      const from = decoupled[s] ? new Set([s]) : stepOrigins(step);
      for (const t of Object.values(step.outputMap)) {
        const had = origins.get(t) ?? new Set<number>();
        const merged = new Set([...had, ...from]);
        if (merged.size !== had.size) {
          origins.set(t, merged);
          changed = true;
        }
      }
    });
    if (!changed) break;
  }
  const named = (from: Set<number>) =>
    [...from]
      .sort((a, b) => a - b)
      .map((o) => (o === REQUEST ? "the ensemble's request" : `step ${o} ('${steps[o]!.modelName}', decoupled)`))
      .join(" and ");
  const fix =
    "Feed it from one decoupled step only (or make the others not decoupled), or merge their outputs in one model first.";
  steps.forEach((step, s) => {
    const from = stepOrigins(step);
    if (from.size < 2) return;
    r.error(
      "ensemble-decoupled-origins",
      `${stepPath(s)}.model_name#value`,
      `step ${s} runs '${step.modelName}' on inputs that come from ${named(from)}, and Triton refuses a step whose inputs come from different origins once one is a decoupled model ("in ensemble ${self}, step of model '...' receives inputs originated from different decoupled models"): their responses arrive independently`,
      fix,
    );
  });
  const out = originsOf(ensembleOutputs);
  if (out.size >= 2) {
    r.error(
      "ensemble-decoupled-origins",
      "output",
      `the ensemble's outputs come from ${named(out)}, and Triton refuses outputs from different origins once one is a decoupled model ("in ensemble ${self}, step of model '${self}' receives inputs originated from different decoupled models"): their responses arrive independently`,
      fix,
    );
  }
}
