/** The shape of lint's rule table: codes with their severity and meaning, and model rules. */
import type { RuleCode } from "../rules.js";
import type { ModelContext, Reporter } from "./reporter.js";

/**
 * How grave a code's findings are. "error or warning": the situation decides (a KIND_GPU group
 * on a machine without a GPU is a warning while linting and an error when `up` is about to serve
 * it). Any error becomes a warning when it is on a field that model code lint did not run may
 * still set (Reporter's `completable`).
 */
export type RuleSeverity = "error" | "warning" | "error or warning";

export interface CodeInfo {
  readonly severity: RuleSeverity;
  /** One line: what the finding means (`triton-dev lint --list-rules`). */
  readonly description: string;
}

/** An area's diagnostic codes. */
export type CodeTable = Readonly<Record<string, CodeInfo>>;

/** Keeps a code table's codes and severities as literal types, so that reporting checks them. */
export function codes<const T extends CodeTable>(table: T): T {
  return table;
}

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
