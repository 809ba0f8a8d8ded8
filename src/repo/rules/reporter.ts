/**
 * What every rule is given: the model (ModelContext), the options lint runs with, and the Reporter
 * its findings go to, which places them in the config and keeps to the table's codes.
 */
import type { AutofilledBackend } from "../autofill.js";
import { type Diagnostic, type Severity, clipLongRuns } from "../diagnostics.js";
import type { DescEnum } from "@bufbuild/protobuf";
import { DataType, DataTypeSchema } from "../gen/model_config_pb.js";
import type { ConfigCompleter } from "../auto-complete-run.js";
import type { ModelLayout } from "../layout.js";
import type { ModelFileLimits } from "../model-files.js";
import type { ParsedConfig } from "../parse.js";
import { SuggestionBudget, closest } from "../suggest.js";
import type { Pos } from "../textproto.js";
import type { ErrorCode, RuleCode, WarningCode } from "./codes.js";

/**
 * The runtime that will serve the repository, as the data lint needs of it: runtimes/kinds.ts
 * `lintFacts` builds it from the runtime's facts (and the image, where the image decides), so
 * lint imports nothing of runtimes/ and sits below them.
 */
export interface LintServer {
  /** Its name ("docker"). */
  readonly runtime: string;
  /**
   * What serves the models, for messages ("not in the docker runtime's image X"): the image where
   * the image decides the backends. Absent: "the <runtime> runtime".
   */
  readonly servedBy?: string;
  /** The backends its server has (the image's, where it decides); undefined: an image nothing is known of. */
  readonly backends: readonly string[] | undefined;
  /** What a user reads when a model's backend is not there, and where it runs instead. */
  readonly missingBackend: (backend: string) => { message: string; hint: string };
  /** The Triton release it always runs; undefined when the image decides. */
  readonly tritonVersion?: string;
  /** The libraries each backend's folder holds, where the runtime fixes them. */
  readonly backendLibraries?: Readonly<Record<string, readonly string[]>>;
  /**
   * Backends it serves through the python backend: the module the adapter imports, what pip
   * installs (empty: the library must already be there), and how lint and status say it.
   */
  readonly adaptedBackends?: Readonly<
    Record<string, { readonly module: string; readonly requirement: string; readonly servedAs: string }>
  >;
  /** Its Triton sees the staging folder at other paths than this machine's (a container's mounts). */
  readonly stagingElsewhere: boolean;
  /** A python model's requirements.txt gets an environment built for it; elsewhere the image's Python. */
  readonly buildsEnvironments: boolean;
}

export interface LintOptions {
  /** The runtime that will serve the repository; enables the backend-availability check. */
  server?: LintServer;
  /**
   * The backends that run only on a GPU, each with where it runs (NGC's images, from
   * runtimes/kinds.ts `lintFacts`): KIND_GPU's hint on a machine without one names it.
   */
  gpuOnly?: Readonly<Record<string, string>>;
  /** Whether this machine has a GPU; undefined skips the KIND_GPU check. */
  gpuAvailable?: boolean;
  /** How many GPUs, when known: `gpus: [n]` beyond it is an error. */
  gpuCount?: number;
  /**
   * Whether Triton runs with config auto-complete (undefined: Triton's default, on, and the
   * model-file diagnostics say it was assumed). On, a python model's auto_complete_config is run and
   * the config it completes is linted, and what Triton fills in from a model file (ONNX, OpenVINO)
   * is not an error; off, a model without config.pbtxt cannot load.
   */
  autoComplete?: boolean;
  /**
   * Runs a python model's auto_complete_config, that is its code (see auto-complete-run.ts).
   * Absent, no model code runs: a model whose config depends on it gets `auto-complete-not-run`
   * (a warning) and its config is checked as written. `up`, the reload controller and perf/tune's
   * variants pass one (Triton runs that code anyway); `lint` only with --run-model-code.
   */
  completer?: ConfigCompleter;
  /**
   * Severity of KIND_GPU on a machine without a GPU: a warning while linting (the config may be
   * meant for another machine), an error when about to serve (`up`), where Triton refuses it.
   */
  gpuMissingSeverity?: Severity;
  /**
   * Reads a python model's imports (envs/missing-imports.ts, by `ast`, never run) and says which
   * its environment lacks. `lint` passes one; `up` refuses the same imports when it stages the
   * model, in the environment it has just built.
   */
  importChecker?: (model: string, dir: string, configText: string | undefined) => Promise<Diagnostic[]>;
  /**
   * The model-file rule's limits (repo/model-files.ts); default MODEL_FILE_LIMITS, the ones staging
   * and the watcher keep to. Tests pass smaller ones to reach a limit without building a huge tree.
   */
  modelFileLimits?: ModelFileLimits;
}

/** Everything the rules need about one model whose config parsed. */
export interface ModelContext {
  name: string;
  layout: ModelLayout;
  parsed: ParsedConfig;
  options: LintOptions;
  /**
   * The platform, backend and model file Triton settles on for this config (autofill.ts): every
   * rule that depends on what runs the model reads these, not the config's literal fields.
   */
  autofill: AutofilledBackend;
}

/** Collects diagnostics for one model, resolving config paths to positions. */
export class Reporter {
  readonly diagnostics: Diagnostic[] = [];
  constructor(
    readonly model: string,
    private readonly parsed: ParsedConfig | undefined,
    private readonly defaultFile: string,
    /**
     * Where findings on parts of the config that its file does not hold are put: a config that
     * auto_complete_config completed holds what model.py added, so those point at model.py.
     */
    private readonly elsewhere?: { file: string; pos: Pos; note: string },
    /**
     * Fields of the config that code lint did not run may still set (a python model's
     * auto_complete_config): an error found on one of them is reported as a warning with `note`,
     * because Triton may load the field as that code sets it, not as the file has it.
     */
    private readonly completable?: { fields: ReadonlySet<string>; note: string },
  ) {}

  private push(
    severity: Severity,
    code: RuleCode,
    where: string | Pos | undefined,
    message: string,
    hint?: string,
    file?: string,
  ): void {
    const base = typeof where === "string" ? where.replace(/#value$/, "") : undefined;
    if (severity === "error" && this.completable && base !== undefined) {
      const field = /^[a-z_]+/.exec(base)?.[0];
      if (field && this.completable.fields.has(field)) {
        severity = "warning";
        message = `${message} ${this.completable.note}`;
      }
    }
    if (this.elsewhere && this.parsed && base !== undefined && !this.parsed.source.has(base)) {
      this.diagnostics.push({
        severity,
        file: file ?? this.elsewhere.file,
        line: this.elsewhere.pos.line,
        column: this.elsewhere.pos.column,
        message: clipLongRuns(`${message} ${this.elsewhere.note}`),
        ...(hint ? { hint: clipLongRuns(hint) } : {}),
        model: this.model,
        code,
      });
      return;
    }
    const pos: Pos =
      where === undefined
        ? { line: 1, column: 1, offset: 0 }
        : typeof where === "string"
          ? this.parsed
            ? where.endsWith("#value")
              ? this.parsed.source.valueAt(where.slice(0, -"#value".length))
              : this.parsed.source.at(where)
            : { line: 1, column: 1, offset: 0 }
          : where;
    this.diagnostics.push({
      severity,
      file: file ?? this.defaultFile,
      line: pos.line,
      column: pos.column,
      message: clipLongRuns(message),
      ...(hint ? { hint: clipLongRuns(hint) } : {}),
      model: this.model,
      code,
    });
  }

  /** `where` is a source-map path (suffix `#value` for the value rather than the field name) or a position. */
  error(code: ErrorCode, where: string | Pos | undefined, message: string, hint?: string, file?: string): void {
    this.push("error", code, where, message, hint, file);
  }

  warning(code: WarningCode, where: string | Pos | undefined, message: string, hint?: string, file?: string): void {
    this.push("warning", code, where, message, hint, file);
  }

  report(
    severity: Severity,
    code: RuleCode,
    where: string | Pos | undefined,
    message: string,
    hint?: string,
    file?: string,
  ): void {
    this.push(severity, code, where, message, hint, file);
  }

  private readonly budget = new SuggestionBudget();

  /** The candidate `word` is a plausible typo of, within this model's suggestion budget. */
  suggest(word: string, candidates: Iterable<string>): string | undefined {
    return closest(word, candidates, this.budget);
  }

  /** Whether an error with one of these codes was reported: later rules skip what it already explains. */
  hasError(...codes: RuleCode[]): boolean {
    return this.diagnostics.some((d) => d.severity === "error" && (codes as readonly string[]).includes(d.code));
  }
}

/** The proto spelling of an enum value (the generated TS enums drop shared prefixes like KIND_). */
export function enumName(schema: DescEnum, n: number): string {
  return schema.values.find((v) => v.number === n)?.name ?? String(n);
}

export const dataTypeName = (t: DataType): string => enumName(DataTypeSchema, t);

/** The [x, y] form Triton prints shapes in. */
export const shapeString = (dims: readonly (bigint | number)[]): string => `[${dims.map(String).join(",")}]`;
