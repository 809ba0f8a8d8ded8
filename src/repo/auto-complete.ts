import path from "node:path";
import type { Diagnostic } from "./diagnostics.js";
import { readUserText } from "./layout.js";
import { listModelFiles } from "./model-files.js";
import type { ModelConfigJson } from "./model-config.js";
import type { WarningCode } from "./rules.js";

/**
 * Triton's config auto-complete (on unless `--disable-auto-complete-config`) costs every python
 * model load a fixed second, whatever the model: the python backend starts a stub process only
 * to call the model's `auto_complete_config`, then sleeps 1 s (StubLauncher::UpdateHealth) before
 * stopping it, and only then starts the instance stubs. Measured here: an image_classifier load
 * takes 1.5 s with it and 0.3 s without. A model gains nothing from it when its config.pbtxt is
 * there, it is served by the python backend (or is an ensemble), and its code defines no
 * `auto_complete_config`; for any other model Triton may need it to fill in the config.
 */

/** The parts of a linted model this needs (`lintModel`/`lintRepository` give them). */
export interface AutoCompleteSubject {
  name: string;
  /** Absolute path of the model folder. */
  dir: string;
  /** Absent when config.pbtxt is missing or unreadable. */
  config?: ModelConfigJson;
  /** The backend Triton runs it with (lint's `backend`). */
  backend?: string;
  /** What auto-complete fills in from its model file, as lint read it with auto-complete on. */
  modelIO?: { autoComplete: boolean; filled: readonly string[] };
}

/** Python files larger than this are not read: weights or data shipped as .py, not model code. */
const MAX_SOURCE_BYTES = 4 * 1024 * 1024;

/**
 * Why Triton's auto-complete must stay on for this model, or undefined when it is a no-op for it.
 * `adapted`: the backends the runtime serves through the python backend (its facts'
 * adaptedBackends): their adapter completes the staged config as the backend would, so a model
 * whose config leaves the backend nothing to fill in needs nothing of Triton's auto-complete.
 */
export async function autoCompleteReason(
  m: AutoCompleteSubject,
  adapted: readonly string[] = [],
): Promise<string | undefined> {
  const c = m.config;
  if (!c) return `${m.name} has no readable config.pbtxt, which Triton completes from the model files`;
  if (c.platform === "ensemble" || c.ensemble_scheduling) return undefined;
  const completesNothing = m.modelIO?.autoComplete === true && m.modelIO.filled.length === 0;
  if (m.backend !== undefined && adapted.includes(m.backend) && completesNothing) return undefined;
  if (c.backend !== "python")
    return `${m.name} uses ${c.backend ? `the ${c.backend} backend` : `platform ${c.platform ?? "(none)"}`}, whose config Triton can complete`;
  const file = await findAutoCompleteDefinition(m.dir, m.name);
  return file ? `${path.relative(m.dir, file)} of ${m.name} defines auto_complete_config` : undefined;
}

/** The models, among those given, for which Triton's auto-complete does something, with why. */
export async function autoCompleteNeeds(
  models: readonly AutoCompleteSubject[],
  adapted: readonly string[] = [],
): Promise<Array<{ model: string; reason: string }>> {
  const reasons = await Promise.all(
    models.map(async (m) => ({ model: m.name, reason: await autoCompleteReason(m, adapted) })),
  );
  return reasons.filter((r): r is { model: string; reason: string } => r.reason !== undefined);
}

/**
 * A warning for a model saved while Triton runs without auto-complete (it was started that way
 * because no model needed it): Triton will load the model as its config.pbtxt stands.
 */
export function autoCompleteOffDiagnostic(m: AutoCompleteSubject, reason: string): Diagnostic {
  return {
    severity: "warning",
    file: m.config ? path.join(m.dir, "config.pbtxt") : m.dir,
    line: 1,
    column: 1,
    model: m.name,
    code: "auto-complete-off" satisfies WarningCode,
    message: `${reason}, but this run started Triton with config auto-complete off (no model needed it then), so Triton loads the config as written`,
    hint: "Restart `triton-dev up` to have Triton complete the config (reloads of python models then take about a second longer).",
  };
}

/** The first python file of the model (walked by the model-file rule) that mentions auto_complete_config. */
async function findAutoCompleteDefinition(dir: string, model: string): Promise<string | undefined> {
  // A file the rule refuses is staging's and lint's to report; here it is only not searched.
  const files = await listModelFiles(dir, model, { problems: [] }).catch(() => []);
  for (const f of files) {
    if (f.kind !== "file" || !f.rel.endsWith(".py") || f.size > MAX_SOURCE_BYTES) continue;
    const read = await readUserText(f.path, MAX_SOURCE_BYTES);
    // Any mention counts (a def, an assignment, a mixin's name): keeping auto-complete on for
    // a model that did not need it only costs time, turning it off for one that does breaks it.
    if ("text" in read && /\bauto_complete_config\b/.test(read.text)) return f.path;
  }
  return undefined;
}
