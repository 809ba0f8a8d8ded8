/** The shape of lint's rule table: codes with their severity and meaning, and model rules. */
import type { CodeTable, Command, RuleCode } from "./codes.js";
import type { ModelContext, Reporter } from "./reporter.js";

export { codes } from "./codes.js";
export type { CodeInfo, CodeTable, Command, RuleSeverity } from "./codes.js";

/**
 * One check of a model's config and folder. It reports under its area's codes; `applies` says
 * whether it runs for this model at all, given what the checks before it reported (the order is
 * rules.ts `MODEL_RULES`).
 */
export interface ModelRule {
  /** What it checks, in a few words. */
  readonly name: string;
  readonly applies?: (ctx: ModelContext, r: Reporter) => boolean;
  readonly check: (ctx: ModelContext, r: Reporter) => void | Promise<void>;
}

/**
 * One area of lint (one file of repo/rules/): its codes, and the checks of one model that report
 * them. An area whose codes come from elsewhere (the parser, the repository walk, the checks
 * across models) says where in `reportedBy` and has no model rules.
 */
export interface RuleArea<T extends CodeTable = CodeTable> {
  readonly area: string;
  readonly codes: T;
  readonly rules: readonly ModelRule[];
  /** Where the codes are reported when not by `rules`. */
  readonly reportedBy?: string;
  /** The commands that report its codes (absent: lint's, which `up` and the language server run too). */
  readonly commands?: readonly Command[];
}

/** Errors that leave the backend unknown, so the model-file and runtime checks have nothing to go on. */
export const BACKEND_ERRORS: readonly RuleCode[] = [
  "platform-unknown",
  "platform-backend-mismatch",
  "backend-unknown",
  "backend-missing",
  "platform-missing",
  "ensemble-platform",
];

/**
 * Whether Triton sees the config as a model at all: with ensemble-platform it cannot tell what
 * runs it and stops there, so every later rule would only report what follows from that.
 */
export function seenAsModel(_ctx: ModelContext, r: Reporter): boolean {
  return !r.hasError("ensemble-platform");
}
