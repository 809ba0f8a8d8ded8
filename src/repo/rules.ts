/**
 * Lint's rules as a table: each area of repo/rules/ holds its diagnostic codes (with severity and
 * a one-line description) and the checks of one model that report them; this file puts the
 * areas together, says in which order a model's checks run, and is what `lint --list-rules` and
 * the language server read. A new rule goes into the area it checks (a new file for a new area,
 * added to AREAS), its codes into that area's table; reporting a code no table has does not
 * compile (Reporter takes RuleCode).
 */
import { CONFIG } from "./rules/config.js";
import { ENSEMBLE } from "./rules/ensemble.js";
import { FIELDS, DUPLICATE_KEYS_RULE, MODEL_METRICS_RULE, NEWER_FIELDS_RULE } from "./rules/fields.js";
import { INSTANCES, INSTANCE_GROUPS_RULE } from "./rules/instances.js";
import { IO, BATCH_IO_RULE, IO_RULE, MAX_BATCH_SIZE_RULE } from "./rules/io.js";
import { MODEL_IO } from "./rules/model-io.js";
import { NAME_RULE, PLATFORM, PLATFORM_BACKEND_RULE, RUNTIME_FIELD_RULE } from "./rules/platform.js";
import { EXECUTION_ENV_RULE, PYTHON, STUB_COMMAND_LINE_RULE } from "./rules/python.js";
import { REPOSITORY } from "./rules/repository.js";
import { REQUIREMENTS } from "./rules/requirements.js";
import { SERVING } from "./rules/serving.js";
import { STAGING } from "./rules/staging.js";
import { EDITOR } from "./rules/editor.js";
import type { ModelContext, Reporter } from "./rules/reporter.js";
import type { Command, RuleCode } from "./rules/codes.js";
import type { ModelRule, RuleSeverity } from "./rules/rule.js";
import { DYNAMIC_BATCHING_RULE, RESPONSE_CACHE_RULE, SCHEDULING, SEQUENCE_BATCHING_RULE } from "./rules/scheduling.js";
import { VERSIONS, VERSIONS_RULE } from "./rules/versions.js";

export { Reporter, dataTypeName, enumName, shapeString } from "./rules/reporter.js";
export type { LintOptions, ModelContext } from "./rules/reporter.js";
export { checkRuntimeBackend, tensorRtCompletes, undeterminedBackend } from "./rules/platform.js";
export { BACKEND_ERRORS } from "./rules/rule.js";
export { pythonFileNameProblem } from "./rules/python.js";
export { topLevelModelFiles, versionConfigs, versionsToLoad } from "./rules/versions.js";

/** Every area, in the order `lint --list-rules` shows them. */
export const AREAS = [
  REPOSITORY,
  CONFIG,
  PLATFORM,
  IO,
  SCHEDULING,
  INSTANCES,
  FIELDS,
  PYTHON,
  VERSIONS,
  MODEL_IO,
  ENSEMBLE,
  REQUIREMENTS,
  SERVING,
  STAGING,
  EDITOR,
] as const;

/** Every diagnostic code any command reports, and those reported as errors or as warnings (rules/codes.ts). */
export type { ErrorCode, RuleCode, WarningCode } from "./rules/codes.js";

/**
 * Core's ValidateModelConfig and friends, in the order they run on one model: a rule's `applies`
 * may depend on what the rules before it reported (after ensemble-platform Triton cannot tell what
 * runs the model, so nothing after it applies).
 */
export const MODEL_RULES: readonly ModelRule[] = [
  NAME_RULE,
  PLATFORM_BACKEND_RULE,
  MAX_BATCH_SIZE_RULE,
  IO_RULE,
  BATCH_IO_RULE,
  DYNAMIC_BATCHING_RULE,
  SEQUENCE_BATCHING_RULE,
  RESPONSE_CACHE_RULE,
  NEWER_FIELDS_RULE,
  MODEL_METRICS_RULE,
  INSTANCE_GROUPS_RULE,
  DUPLICATE_KEYS_RULE,
  RUNTIME_FIELD_RULE,
  STUB_COMMAND_LINE_RULE,
  EXECUTION_ENV_RULE,
  VERSIONS_RULE,
];

/** Runs the rules of one model's own config and folder. */
export async function checkModel(ctx: ModelContext, r: Reporter): Promise<void> {
  for (const rule of MODEL_RULES) {
    if (rule.applies && !rule.applies(ctx, r)) continue;
    await rule.check(ctx, r);
  }
}

export interface RuleRow {
  code: RuleCode;
  severity: RuleSeverity;
  area: string;
  /** The commands whose output carries it. */
  commands: readonly Command[];
  description: string;
}

/** Lint's codes are reported by lint and by what runs lint: `up` (and its watcher) and the language server. */
const LINT_COMMANDS: readonly Command[] = ["lint", "up", "lsp"];

/** One row per code, areas in order, codes as their area lists them. */
export function ruleTable(): RuleRow[] {
  return AREAS.flatMap((a) =>
    Object.entries(a.codes).map(([code, info]) => ({
      code: code as RuleCode,
      severity: info.severity,
      area: a.area,
      commands: "commands" in a && a.commands ? a.commands : LINT_COMMANDS,
      description: info.description,
    })),
  );
}
