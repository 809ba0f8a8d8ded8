/**
 * The shape of a code table, and the union of every diagnostic code triton-dev reports, from the
 * tables themselves. Each area of repo/rules/ enters its table in `CodeTables` (a module
 * augmentation beside the table), so this file imports none of them: the reporter, the parser
 * and `Diagnostic` type their codes from here, and the areas, which import the reporter, never
 * lead back to themselves. rules.ts `AREAS` lists the same areas for `lint --list-rules`, and
 * test/repo/rule-table.test.ts fails when an area file is missing there.
 */

/**
 * How grave a code's findings are. "error or warning": the situation decides (a KIND_GPU group
 * on a machine without a GPU is a warning while linting and an error when `up` is about to serve
 * it). Any error becomes a warning when it is on a field that model code lint did not run may
 * still set (Reporter's `completable`).
 */
export type RuleSeverity = "error" | "warning" | "error or warning";

/** The commands whose output carries a code (`lint --list-rules`' REPORTED BY). */
export type Command = "lint" | "up" | "lsp" | "status";

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
 * Every area's code table by area name, each entered by its own file:
 * `declare module "./codes.js" { interface CodeTables { io: typeof IO_CODES } }`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by the areas' augmentations
export interface CodeTables {}

type Tables = CodeTables[keyof CodeTables];

/** Every diagnostic code any command reports: `Diagnostic.code`. */
export type RuleCode = Tables extends infer T ? (T extends CodeTable ? keyof T & string : never) : never;

type CodesOf<S> = Tables extends infer T
  ? T extends CodeTable
    ? { [K in keyof T & string]: T[K]["severity"] extends S ? K : never }[keyof T & string]
    : never
  : never;
/** The codes a check may report as errors: Reporter.error takes no other, so the table's severity is the code's. */
export type ErrorCode = CodesOf<"error" | "error or warning">;
/** The codes a check may report as warnings. */
export type WarningCode = CodesOf<"warning" | "error or warning">;
