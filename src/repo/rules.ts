import fs from "node:fs";
import path from "node:path";
import {
  BACKENDS,
  ENSEMBLE_PLATFORM,
  FIELDS_AFTER_2_51,
  PLATFORMS,
  TYPED_BACKENDS,
  defaultModelFile,
} from "./backends.js";
import { AUTOFILL_FILE_NAMES, type AutofilledBackend } from "./autofill.js";
import { type Diagnostic, type Severity, clipLongRuns } from "./diagnostics.js";
import type { DescEnum } from "@bufbuild/protobuf";
import {
  DataType,
  DataTypeSchema,
  ModelInput_Format,
  ModelInput_FormatSchema,
  ModelInstanceGroup_KindSchema,
  ModelSequenceBatching_Control_KindSchema,
  ModelInstanceGroup_Kind,
  ModelQueuePolicy_TimeoutAction,
  ModelSequenceBatching_Control_Kind,
  type ModelConfig,
  type ModelInput,
  type ModelOutput,
  type ModelQueuePolicy,
} from "./gen/model_config_pb.js";
import type { ConfigCompleter } from "./auto-complete-run.js";
import { CONFIG_FILE, readUserText, type ModelLayout, type VersionDir } from "./layout.js";
import { modelNameProblem, servableName, shownName } from "./model-name.js";
import type { ParsedConfig } from "./parse.js";
import { SuggestionBudget, closest, quoteList } from "./suggest.js";
import type { Pos } from "./textproto.js";
import { RUNTIME_FACTS, type RuntimeKind } from "../runtimes/kinds.js";

export interface LintOptions {
  /** The runtime that will serve the repository; enables the backend-availability check. */
  runtime?: RuntimeKind;
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
    code: string,
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
  error(code: string, where: string | Pos | undefined, message: string, hint?: string, file?: string): void {
    this.push("error", code, where, message, hint, file);
  }

  warning(code: string, where: string | Pos | undefined, message: string, hint?: string, file?: string): void {
    this.push("warning", code, where, message, hint, file);
  }

  report(
    severity: Severity,
    code: string,
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
  hasError(...codes: string[]): boolean {
    return this.diagnostics.some((d) => d.severity === "error" && codes.includes(d.code));
  }
}

/** The proto spelling of an enum value (the generated TS enums drop shared prefixes like KIND_). */
export function enumName(schema: DescEnum, n: number): string {
  return schema.values.find((v) => v.number === n)?.name ?? String(n);
}
export const dataTypeName = (t: DataType): string => enumName(DataTypeSchema, t);
const kindName = (k: ModelInstanceGroup_Kind): string => enumName(ModelInstanceGroup_KindSchema, k);

/** The [x, y] form Triton prints shapes in. */
export const shapeString = (dims: readonly (bigint | number)[]): string => `[${dims.map(String).join(",")}]`;

/** Element count of a shape; -1 when any dimension is variable. */
function elementCount(dims: readonly bigint[]): bigint {
  let n = 1n;
  for (const d of dims) {
    if (d === -1n) return -1n;
    n *= d;
  }
  return n;
}

/** Products of the runs between variable dimensions: [2,4,-1,6] -> [8, 6]. */
function segmentCounts(dims: readonly bigint[]): bigint[] {
  const out: bigint[] = [];
  let cur = 1n;
  for (const d of dims) {
    if (d === -1n) {
      out.push(cur);
      cur = 1n;
    } else cur *= d;
  }
  out.push(cur);
  return out;
}

// ---------------------------------------------------------------------------------------------

/** Rules on one model's own config and folder (core's ValidateModelConfig and friends). */
export async function checkModel(ctx: ModelContext, r: Reporter): Promise<void> {
  const c = ctx.parsed.config;
  checkName(ctx, r);
  checkPlatformBackend(ctx, r);
  // Triton stops at this one (it cannot tell what runs the model), so every further check would
  // only report what follows from it: tensors "missing" from an ensemble it does not see as one.
  if (r.hasError("ensemble-platform")) return;
  if (c.maxBatchSize < 0) {
    r.error(
      "max-batch-size-negative",
      "max_batch_size#value",
      `max_batch_size is ${c.maxBatchSize}; it must be 0 or more`,
      "Use 0 for a model that does not batch, or the largest batch the model accepts.",
    );
  }
  checkIOs(ctx, r);
  checkBatchIO(ctx, r);
  checkDynamicBatching(ctx, r);
  checkSequenceBatching(ctx, r);
  if (c.modelTransactionPolicy?.decoupled && c.responseCache?.enable) {
    r.error(
      "response-cache-decoupled",
      "response_cache",
      "the response cache does not support decoupled models",
      "Remove response_cache or set decoupled: false.",
    );
  }
  checkNewerFields(ctx, r);
  checkModelMetrics(ctx, r);
  if (c.platform !== ENSEMBLE_PLATFORM && c.schedulingChoice.case !== "ensembleScheduling") {
    checkInstanceGroups(ctx, r);
  }
  checkDuplicateKeys(ctx, r);
  checkRuntimeField(ctx, r);
  checkStubCommandLine(ctx, r);
  checkExecutionEnv(ctx, r);
  await checkVersions(ctx, r);
}

/**
 * `runtime` names the library Triton loads instead of libtriton_<backend>.so. Triton 2.51 (core's
 * TritonModel::GetBackendLibraryProperties) joins it to each of the version folder, the model
 * folder and the backend's folder (`<backend-directory>/<backend>`) in turn, a leading `/` or
 * not (JoinPath appends the name as it is), and takes the first path that exists (a folder
 * counts); it then refuses the model when that path, made canonical, does not begin with the
 * folder it was found in ("backend library name '...' escapes backend directory '...'"), a string
 * prefix, not a path one. Found nowhere, it is refused too ("unable to find backend library").
 * `runtime: "model.py"` (a backend written in Python) has it look for libtriton_python.so instead.
 *
 * Triton reads the staged copy of the model folder, which holds what the user's folder holds and
 * nothing around it, so a path that leaves the model folder on the way is not found there. In the
 * backend's folder, a path that leads out of it is refused whether or not it meets a file; what
 * the folder holds is known only where the runtime fixes it (RUNTIME_FACTS.backendLibraries),
 * and there a library found nowhere is an error as well.
 */
function checkRuntimeField(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const lib = c.runtime;
  if (!lib || c.platform === ENSEMBLE_PLATFORM) return;
  const backend = ctx.autofill.backend;
  if (!backend || lib === "model.py") return;
  const { load } = versionsToLoad(c, ctx.layout);
  const model = ctx.layout.dir;
  const rel = (p: string) => path.relative(path.dirname(model), p) || ".";
  const fix = `Name the library by its file name alone (for the ${backend} backend, libtriton_${backend}.so, or one the model folder holds), or delete the runtime line.`;
  // Each version Triton loads searches its own folder first; the first one that settles it is reported.
  for (const dir of [...load.map((v) => path.join(model, String(v))), model]) {
    const found = resolveInModel(dir, lib, model);
    if (found === undefined) continue;
    if (!found.startsWith(dir)) {
      r.error(
        "runtime-escapes",
        "runtime#value",
        `runtime '${lib}' leads from ${rel(dir)} to ${rel(found)}, out of the folder Triton found it in, so Triton refuses the model ("backend library name '${lib}' escapes backend directory '${rel(dir)}'")`,
        fix,
      );
    }
    return;
  }
  const folder = `<backend-directory>/${backend}`;
  const inBackend = path.posix.normalize(path.posix.join(folder, lib.replace(/^\/+/, "")));
  if (!inBackend.startsWith(folder)) {
    r.error(
      "runtime-escapes",
      "runtime#value",
      `runtime '${lib}' is in neither the version folder nor the model folder, and from the ${backend} backend's folder it leads out of it (to ${inBackend}), so Triton refuses the model ("escapes backend directory" where something is there, "unable to find backend library" where nothing is)`,
      fix,
    );
    return;
  }
  const runtime = ctx.options.runtime;
  const known = runtime ? RUNTIME_FACTS[runtime].backendLibraries?.[backend] : undefined;
  if (!known || known.some((k) => inBackend === `${folder}/${k}`)) return;
  r.error(
    "runtime-missing",
    "runtime#value",
    `runtime '${lib}' is in none of the folders Triton looks in: the version folder, the model folder, or the ${backend} backend's folder of the ${runtime} runtime, which holds ${quoteList(known, "and")}`,
    `Delete the runtime line (the ${backend} backend uses ${known[0]}), or put the library in the model folder.`,
  );
}

/**
 * Where `name` joined to `dir` leads as the system resolves it (each folder on the way must exist
 * before a `..` steps back out of it), or undefined when nothing is there or the way leaves the
 * model folder, which the staged copy Triton reads has nothing around.
 */
function resolveInModel(dir: string, name: string, model: string): string | undefined {
  const inside = (p: string) => p === model || p.startsWith(model + path.sep);
  let cur = dir;
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  for (const [i, part] of parts.entries()) {
    cur = part === ".." ? path.dirname(cur) : path.join(cur, part);
    if (!inside(cur)) return undefined;
    const st = fs.statSync(cur, { throwIfNoEntry: false });
    if (!st || (i < parts.length - 1 && !st.isDirectory())) return undefined;
  }
  return cur;
}

const MODEL_DIRECTORY_VAR = "$$TRITON_MODEL_DIRECTORY";

/** A python model's EXECUTION_ENV_PATH as the backend reads it: `$$TRITON_MODEL_DIRECTORY` is the model's folder. */
function executionEnv(ctx: ModelContext): { value: string; inModel: boolean; resolved: string } | undefined {
  if (ctx.autofill.backend !== "python") return undefined;
  const value = ctx.parsed.config.parameters["EXECUTION_ENV_PATH"]?.stringValue;
  if (!value) return undefined;
  const inModel = value.startsWith(MODEL_DIRECTORY_VAR);
  return {
    value,
    inModel,
    resolved: inModel ? path.join(ctx.layout.dir, value.slice(MODEL_DIRECTORY_VAR.length)) : value,
  };
}

/**
 * The python backend's EXECUTION_ENV_PATH (a conda-pack tar.gz or an unpacked environment) with
 * `$$TRITON_MODEL_DIRECTORY` replaced by the model's folder: a path that does not exist fails the
 * load (measured on 2.51: "Failed to get the canonical path for <path>"). Inside the model folder
 * it is known on every runtime; an absolute path elsewhere only where Triton runs on this machine.
 */
function checkExecutionEnv(ctx: ModelContext, r: Reporter): void {
  const env = executionEnv(ctx);
  if (!env) return;
  const { value, inModel, resolved } = env;
  const at = "parameters{EXECUTION_ENV_PATH}.string_value#value";
  if (!inModel && !path.isAbsolute(value)) {
    r.warning(
      "execution-env-relative",
      at,
      `EXECUTION_ENV_PATH '${value}' is relative, so it depends on the folder tritonserver was started in`,
      `Write it as "${MODEL_DIRECTORY_VAR}/${value.replace(/^\.\//, "")}" (the model's folder) or as an absolute path.`,
    );
    return;
  }
  // An absolute path is this machine's only where Triton sees this machine's files (no container's mounts between).
  const runtime = ctx.options.runtime;
  if (!inModel && (!runtime || RUNTIME_FACTS[runtime].stagingSeenAs)) return;
  if (fs.existsSync(resolved)) return;
  r.error(
    "execution-env-missing",
    at,
    `EXECUTION_ENV_PATH '${value}' names ${resolved}, which does not exist: the python backend fails the load ("Failed to get the canonical path")`,
    inModel
      ? `Put the environment there (a conda-pack .tar.gz or an unpacked environment folder), or delete the parameter and list the model's packages in ${path.join(ctx.layout.dir, "requirements.txt")}, from which triton-dev builds its environment.`
      : "Point it at an existing conda-pack .tar.gz or environment folder, or delete the parameter and list the model's packages in requirements.txt beside config.pbtxt.",
  );
}

/** What may stand unquoted in the python backend's `bash -c` command line (see model-name.ts). */
const STUB_WORD = /^[A-Za-z0-9_.-]+$/;

/**
 * Besides the model's folder (checked by lint for every model), the python backend puts an
 * instance group's name (in each instance's name) and default_model_filename (in the model
 * file's path) unquoted on the `bash -c` command line that starts each stub: a space splits it
 * and the stub never starts, `$(...)` runs.
 */
function checkStubCommandLine(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (ctx.autofill.backend !== "python") return;
  const why =
    "the python backend starts each instance's process through bash with it unquoted on the command line, so the process never starts (or part of it runs as a command)";
  c.instanceGroup.forEach((g, i) => {
    if (!g.name || STUB_WORD.test(g.name)) return;
    r.error(
      "instance-group-name-unsafe",
      `instance_group[${i}].name#value`,
      `instance group name '${shownName(g.name)}' cannot be used: ${why}`,
      `Use only letters, digits, '_', '-' and '.' (for example "${servableName(g.name)}"), or leave the name out.`,
    );
  });
  const file = c.defaultModelFilename;
  if (file && !file.split("/").every((seg) => STUB_WORD.test(seg))) {
    r.error(
      "model-filename-unsafe",
      "default_model_filename#value",
      `default_model_filename '${shownName(file)}' cannot be used: ${why}`,
      `Name the file with letters, digits, '_', '-' and '.' only (for example "${file
        .split("/")
        .map((seg) => servableName(seg))
        .join("/")}"), or leave default_model_filename out to use model.py.`,
    );
  }
}

function checkName(ctx: ModelContext, r: Reporter): void {
  const declared = ctx.parsed.config.name;
  if (declared && declared !== ctx.name) {
    r.error(
      "name-mismatch",
      "name#value",
      `model name '${declared}' does not match its directory '${ctx.name}'`,
      modelNameProblem(declared)
        ? `Write name: "${ctx.name}" (or delete the name line).`
        : `Write name: "${ctx.name}" (or delete the name line), or rename the directory to '${declared}'.`,
    );
  }
}

function checkPlatformBackend(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const { platform, backend } = c;
  const isEnsembleScheduling = c.schedulingChoice.case === "ensembleScheduling";
  const knownPlatforms = [...Object.keys(PLATFORMS), ENSEMBLE_PLATFORM];
  const knownBackends = Object.keys(BACKENDS);

  if (platform === ENSEMBLE_PLATFORM) {
    if (backend) {
      r.error(
        "ensemble-backend",
        "backend#value",
        `an ensemble has no backend, but backend is '${backend}'`,
        'Delete the backend line: platform: "ensemble" is all an ensemble needs.',
      );
    }
    if (!isEnsembleScheduling) {
      r.error(
        "ensemble-no-scheduling",
        "platform#value",
        "platform is 'ensemble' but there is no ensemble_scheduling",
        "Add ensemble_scheduling { step [ ... ] }, or set the platform or backend that runs this model.",
      );
    }
    return;
  }
  if (isEnsembleScheduling) {
    r.error(
      "ensemble-platform",
      "ensemble_scheduling",
      platform
        ? `ensemble_scheduling needs platform 'ensemble', but platform is '${platform}'`
        : 'ensemble_scheduling without platform: "ensemble": Triton cannot tell what runs this model ("Could not determine backend")',
      (backend ? 'Write platform: "ensemble" and delete the backend line.' : 'Add platform: "ensemble".') +
        (c.input.length === 0 || c.output.length === 0
          ? " An ensemble also declares the input and output tensors its steps read and write (input [ ... ], output [ ... ]), and needs a version folder (an empty 1/)."
          : ""),
    );
    return;
  }

  if (!platform && !backend) {
    const af = ctx.autofill;
    if (af.undetermined) {
      const { message, hint } = undeterminedBackend(ctx.name, ctx.layout, af, c.defaultModelFilename);
      r.error("backend-missing", c.defaultModelFilename ? "default_model_filename#value" : undefined, message, hint);
      return;
    }
    const byName = af.inferredFrom?.startsWith("the model's name");
    r.warning(
      "backend-inferred",
      undefined,
      `no platform or backend: Triton infers backend '${af.backend}' from ${af.inferredFrom}${byName ? `, and hands it ${af.defaultModelFilename}` : ""}`,
      byName
        ? `Write backend: "${af.backend}" if that is meant; otherwise write the backend that runs the model (backend: "python" for model.py).`
        : `Write backend: "${af.backend}" so the model does not depend on which files are present.`,
    );
    checkTypedPair(ctx, r);
    return;
  }

  if (platform && !PLATFORMS[platform]) {
    if (!backend) {
      const asBackend = PLATFORMS[`${platform}_onnx`]
        ? `${platform}_onnx`
        : Object.entries(PLATFORMS).find(([, v]) => v.backend === platform)?.[0];
      const hint = asBackend
        ? `'${platform}' is a backend name: write platform: "${asBackend}" or backend: "${platform}".`
        : knownBackends.includes(platform)
          ? `'${platform}' is a backend name: write backend: "${platform}" instead of platform.`
          : (() => {
              const near = closest(platform, knownPlatforms);
              return near
                ? `Did you mean platform: "${near}"?`
                : `Known platforms are ${quoteList(knownPlatforms)}; other runtimes are chosen with backend.`;
            })();
      r.error("platform-unknown", "platform#value", `unknown platform '${platform}'`, hint);
      return;
    }
    if (TYPED_BACKENDS.has(backend)) {
      r.error(
        "platform-backend-mismatch",
        "platform#value",
        `platform '${platform}' does not go with backend '${backend}'`,
        `Delete the platform line: backend '${backend}' sets it.`,
      );
      return;
    }
  }

  if (
    platform &&
    PLATFORMS[platform] &&
    backend &&
    TYPED_BACKENDS.has(backend) &&
    PLATFORMS[platform]!.backend !== backend
  ) {
    r.error(
      "platform-backend-mismatch",
      "backend#value",
      `platform '${platform}' is served by backend '${PLATFORMS[platform]!.backend}', not '${backend}'`,
      `Write backend: "${PLATFORMS[platform]!.backend}", or delete one of the two lines.`,
    );
    return;
  }

  if (backend && !BACKENDS[backend]) {
    const near = closest(backend, knownBackends);
    if (near) {
      r.error("backend-unknown", "backend#value", `unknown backend '${backend}'`, `Did you mean backend: "${near}"?`);
      return;
    }
    if (!ctx.options.runtime) {
      r.warning(
        "backend-custom",
        "backend#value",
        `backend '${backend}' is not one Triton ships`,
        `Triton loads it from <backend-directory>/${backend}/libtriton_${backend}.so; make sure that exists.`,
      );
    }
  }

  if (backend === "tensorflow" && !ctx.autofill.platform) {
    r.error(
      "platform-missing",
      "backend#value",
      "backend 'tensorflow' needs a platform, and Triton finds none to take from the first sub-folder (a model.savedmodel folder or a model.graphdef file)",
      'Write platform: "tensorflow_savedmodel" or "tensorflow_graphdef".',
    );
  }
}

/**
 * A backend whose platform Triton checks (GetBackendType) that autofill leaves without it: a
 * model named "m.onnxruntime" beside no model.onnx gets backend onnxruntime and no platform,
 * which Triton refuses as a pair.
 */
function checkTypedPair(ctx: ModelContext, r: Reporter): void {
  const { platform, backend } = ctx.autofill;
  if (!TYPED_BACKENDS.has(backend) || PLATFORMS[platform]?.backend === backend) return;
  const own = Object.entries(PLATFORMS).find(([, v]) => v.backend === backend)?.[0];
  r.error(
    "platform-backend-mismatch",
    undefined,
    `Triton takes backend '${backend}' from ${ctx.autofill.inferredFrom ?? "the config"} but no platform for it, and refuses the pair ("unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}")`,
    own ? `Write platform: "${own}".` : "Write the platform and backend that run the model.",
  );
}

/** Triton's "Could not determine backend" (or "unexpected platform type ''"), with what to do. */
export function undeterminedBackend(
  name: string,
  layout: ModelLayout,
  af: AutofilledBackend,
  defaultModelFilename: string,
): { message: string; hint: string } {
  const first = layout.firstSubdir;
  const rel = (f: string) => `${name}/${first?.name ?? "1"}/${f}`;
  if (af.undetermined === "file") {
    const message = defaultModelFilename
      ? `default_model_filename '${defaultModelFilename}' is not a name Triton knows a backend by, and the config names neither platform nor backend, so Triton cannot tell what runs the model ("unexpected platform type ''")`
      : `the model's name '${name}' ends in its only '.', which names no backend, and the config names neither platform nor backend ("unexpected platform type ''")`;
    const hint = defaultModelFilename.endsWith(".py")
      ? 'Add backend: "python".'
      : 'Add the backend that runs it (backend: "python", platform: "onnxruntime_onnx", ...).';
    return { message, hint };
  }
  const where = first
    ? `its first sub-folder '${first.name}' holds no model file Triton recognises`
    : "it has no sub-folder holding a model file";
  return {
    message: `the config sets neither platform nor backend, ${where}, and its name '${name}' is not of the form <name>.<backend>, so Triton cannot tell what runs it ("Could not determine backend for model '${name}'")`,
    hint: `Add backend: "python" for a Python model (${rel("model.py")}), or the platform/backend that runs it (e.g. platform: "onnxruntime_onnx"); or put the model file in ${name}/${first?.name ?? "1"}/ under the name its backend looks for (${AUTOFILL_FILE_NAMES.join(", ")}).`,
  };
}

/**
 * Files at the top of a model folder that look like model files (python code, or a name a backend
 * loads): Triton reads model files only inside numbered version folders, so these are never read.
 */
export function topLevelModelFiles(layout: ModelLayout): string[] {
  const known = new Set([...AUTOFILL_FILE_NAMES, "model.bin"]);
  return layout.topFiles.filter((f) => f.endsWith(".py") || known.has(f));
}

/** Version folders holding a config.pbtxt, which Triton never reads (it reads only the model folder's). */
export function versionConfigs(layout: ModelLayout): VersionDir[] {
  return layout.versions.filter((v) => v.entries.has(CONFIG_FILE) && !v.entries.get(CONFIG_FILE)!.isDir);
}

/**
 * Whether the TensorRT backend completes this config from its plan before core checks it:
 * tensorrt_backend's ModelState::Create runs AutoCompleteConfig when auto-complete is on and the
 * model has a KIND_GPU instance group (core makes an absent group or KIND_AUTO one on a GPU
 * machine, and the backend loads on nothing else), and its FixIO fills a listed tensor's missing
 * data_type and dims from the engine. Lint cannot read plans, so it leaves those to Triton.
 */
export function tensorRtCompletes(ctx: ModelContext): boolean {
  const c = ctx.parsed.config;
  return (
    ctx.autofill.backend === "tensorrt" &&
    ctx.options.autoComplete !== false &&
    (c.instanceGroup.length === 0 ||
      c.instanceGroup.some((g) => g.kind === ModelInstanceGroup_Kind.GPU || g.kind === ModelInstanceGroup_Kind.AUTO))
  );
}

function checkIOs(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  // Triton checks the platform autofill leaves: backend "tensorrt", or 1/model.plan, make it tensorrt_plan.
  const platform = ctx.autofill.platform;
  const fromPlan = tensorRtCompletes(ctx);
  const check = (io: ModelInput | ModelOutput, i: number, kind: "input" | "output"): void => {
    const p = `${kind}[${i}]`;
    const label = io.name ? `${kind} '${io.name}'` : `${kind} ${i + 1}`;
    if (!io.name) {
      r.error("io-name-missing", p, `${kind} ${i + 1} has no name`, `Add name: "..." inside this ${kind}.`);
    }
    // What the plan gives a named tensor is Triton's to fill in (see model-io/compare.ts's warning).
    const filled = fromPlan && io.name !== "";
    if (io.dataType === DataType.TYPE_INVALID && !filled) {
      r.error(
        "io-data-type-missing",
        p,
        `${label} has no data_type`,
        "Add data_type, e.g. data_type: TYPE_FP32 (TYPE_STRING for text).",
      );
    }
    if (io.dims.length === 0 && !filled) {
      r.error(
        "io-dims-missing",
        p,
        `${label} has no dims`,
        c.maxBatchSize > 0
          ? "Add dims: [ ... ] without the batch dimension, e.g. dims: [ 1 ] for one value per batch item."
          : "Add dims: [ ... ], e.g. dims: [ -1 ] for a variable-length vector.",
      );
    }
    io.dims.forEach((d, j) => {
      if (d < 1n && d !== -1n) {
        r.error(
          "dims-invalid",
          `${p}.dims[${j}]#value`,
          `dimension ${j} of ${label} is ${d}: a dimension must be >= 1, or -1 for a variable size`,
          d === 0n
            ? "Use -1 for a dimension whose size varies, or its actual size."
            : "Use -1 for a variable-size dimension.",
        );
      }
    });
    if (io.reshape) {
      const shape = io.reshape.shape;
      if (shape.length === 0 && c.maxBatchSize === 0) {
        r.error(
          "reshape-empty",
          `${p}.reshape`,
          `${label} has an empty reshape, which a non-batching model cannot use`,
          "Scalars need batching: set max_batch_size > 0, or give reshape a shape.",
        );
      }
      shape.forEach((d, j) => {
        if (d < 1n && d !== -1n) {
          r.error(
            "reshape-invalid",
            `${p}.reshape.shape[${j}]#value`,
            `reshape dimension ${j} of ${label} is ${d}: it must be >= 1, or -1`,
            "Use -1 for a variable-size dimension.",
          );
        }
      });
      const valid = io.dims.every((d) => d >= 1n || d === -1n) && shape.every((d) => d >= 1n || d === -1n);
      if (valid && io.dims.length > 0) {
        const a = elementCount(io.dims);
        const b = elementCount(shape);
        const hint = `dims ${shapeString(io.dims)} and reshape ${shapeString(shape)} must hold the same number of elements.`;
        if (a !== b && !(b === 0n && a === 1n) && !(shape.length === 0 && a === 1n)) {
          r.error(
            "reshape-count",
            `${p}.reshape`,
            `reshape of ${label} changes the element count (${a === -1n ? "variable" : a} -> ${b === -1n ? "variable" : b})`,
            hint,
          );
        } else if (a === -1n) {
          const sa = segmentCounts(io.dims);
          const sb = segmentCounts(shape);
          if (sa.length !== sb.length) {
            r.error(
              "reshape-count",
              `${p}.reshape`,
              `reshape of ${label} has a different number of variable dimensions than its dims`,
              hint,
            );
          } else if (sa.some((x, k) => x !== sb[k])) {
            r.error(
              "reshape-count",
              `${p}.reshape`,
              `reshape of ${label} changes the element count between variable dimensions`,
              `${hint} Between -1 dimensions the products must match.`,
            );
          }
        }
      }
    }
    if (kind === "input") {
      const inp = io as ModelInput;
      if ((inp.format === ModelInput_Format.NHWC || inp.format === ModelInput_Format.NCHW) && inp.dims.length !== 3) {
        r.error(
          "io-format-dims",
          `${p}.format`,
          `${label} has format ${enumName(ModelInput_FormatSchema, inp.format)}, which needs exactly 3 dims`,
          "Give dims as [C, H, W] or [H, W, C] without the batch dimension, or drop format.",
        );
      }
    }
    if (io.isShapeTensor && platform !== "tensorrt_plan") {
      r.error(
        "shape-tensor-platform",
        `${p}.is_shape_tensor`,
        `${label} is a shape tensor, which only TensorRT models support`,
        "Delete is_shape_tensor.",
      );
    }
    if (io.isNonLinearFormatIo) {
      if (platform !== "tensorrt_plan") {
        r.error(
          "non-linear-io-platform",
          `${p}.is_non_linear_format_io`,
          `${label} uses non-linear IO format, which only TensorRT models support`,
          "Delete is_non_linear_format_io.",
        );
      } else if (io.dims.length !== 3) {
        r.error(
          "non-linear-io-dims",
          `${p}.is_non_linear_format_io`,
          `${label} uses non-linear IO format, which needs 3 dims`,
          "Give exactly 3 dims.",
        );
      }
    }
  };
  c.input.forEach((io, i) => check(io, i, "input"));
  c.output.forEach((io, i) => check(io, i, "output"));

  for (const kind of ["input", "output"] as const) {
    const seen = new Map<string, number>();
    (kind === "input" ? c.input : c.output).forEach((io, i) => {
      if (!io.name) return;
      const first = seen.get(io.name);
      if (first === undefined) {
        seen.set(io.name, i);
        return;
      }
      const at = ctx.parsed.source.at(`${kind}[${first}]`);
      // Triton 2.51 loads such a model; clients then see one tensor where two were meant.
      r.warning(
        "io-duplicate",
        `${kind}[${i}].name#value`,
        `${kind} '${io.name}' is declared twice (first at ${at.line}:${at.column})`,
        `Rename or remove one of the two ${kind}s.`,
      );
    });
  }
}

function checkBatchIO(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const inputs = new Set(c.input.map((i) => i.name));
  const outputs = new Set(c.output.map((o) => o.name));
  const inputNames = [...inputs].filter(Boolean);
  const outputNames = [...outputs].filter(Boolean);
  c.batchInput.forEach((b, i) => {
    const p = `batch_input[${i}]`;
    if (b.sourceInput.length !== 1) {
      r.error(
        "batch-input-source",
        p,
        `batch_input ${i + 1} needs exactly 1 source_input, has ${b.sourceInput.length}`,
        "Name the one input it is derived from in source_input.",
      );
    }
    if (b.dataType !== DataType.TYPE_INT32 && b.dataType !== DataType.TYPE_FP32) {
      r.error(
        "batch-input-type",
        p,
        `batch_input ${i + 1} has data_type ${dataTypeName(b.dataType)}; it must be TYPE_INT32 or TYPE_FP32`,
        "Set data_type: TYPE_INT32 or TYPE_FP32.",
      );
    }
    b.sourceInput.forEach((s, j) => {
      if (!inputs.has(s))
        r.error(
          "batch-input-unknown-source",
          `${p}.source_input[${j}]#value`,
          `batch_input source '${s}' is not an input of this model`,
          hintFor(r, s, inputNames, "input"),
        );
    });
  });
  c.batchOutput.forEach((b, i) => {
    const p = `batch_output[${i}]`;
    if (b.sourceInput.length !== 1) {
      r.error(
        "batch-output-source",
        p,
        `batch_output ${i + 1} needs exactly 1 source_input, has ${b.sourceInput.length}`,
        "Name the one input its shape follows in source_input.",
      );
    }
    b.sourceInput.forEach((s, j) => {
      if (!inputs.has(s))
        r.error(
          "batch-output-unknown-source",
          `${p}.source_input[${j}]#value`,
          `batch_output source '${s}' is not an input of this model`,
          hintFor(r, s, inputNames, "input"),
        );
    });
    const seen = new Set<string>();
    b.targetName.forEach((t, j) => {
      if (!outputs.has(t))
        r.error(
          "batch-output-unknown-target",
          `${p}.target_name[${j}]#value`,
          `batch_output target '${t}' is not an output of this model`,
          hintFor(r, t, outputNames, "output"),
        );
      else if (seen.has(t))
        r.error(
          "batch-output-duplicate-target",
          `${p}.target_name[${j}]#value`,
          `batch_output target '${t}' is listed twice`,
          "List each target once.",
        );
      seen.add(t);
    });
  });
}

function hintFor(r: Reporter, name: string, names: readonly string[], what: string): string {
  const near = r.suggest(name, names);
  if (near) return `Did you mean '${near}'?`;
  if (names.length === 0) return `This model declares no ${what}s.`;
  return names.length <= 8 ? `The ${what}s are ${quoteList(names)}.` : `Check the ${what} names.`;
}

function isDelay(p: ModelQueuePolicy | undefined): boolean {
  return !!p && p.timeoutAction === ModelQueuePolicy_TimeoutAction.DELAY && p.defaultTimeoutMicroseconds !== 0n;
}

/**
 * Preferred batch sizes against max_batch_size. A negative max_batch_size is already an error of
 * its own, and no size can be compared with it, so only the sign of each size is checked then.
 */
function checkPreferredSizes(sizes: readonly number[], mbs: number, pathOf: (i: number) => string, r: Reporter): void {
  sizes.forEach((size, i) => {
    const where = pathOf(i);
    if (size <= 0) {
      r.error(
        "preferred-batch-size-positive",
        where,
        `preferred batch size ${size} must be positive`,
        mbs > 0 ? `Use sizes from 1 to ${mbs}.` : "Use sizes from 1 to max_batch_size.",
      );
    } else if (mbs >= 0 && size > mbs) {
      r.error(
        "preferred-batch-size-too-large",
        where,
        `preferred batch size ${size} is larger than max_batch_size ${mbs}`,
        mbs === 0
          ? "The model does not batch (max_batch_size 0): raise max_batch_size or drop preferred_batch_size."
          : `Use sizes up to ${mbs}, or raise max_batch_size.`,
      );
    }
  });
}

function checkDynamicBatching(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (c.schedulingChoice.case !== "dynamicBatching") return;
  const db = c.schedulingChoice.value;
  const mbs = c.maxBatchSize;
  checkPreferredSizes(db.preferredBatchSize, mbs, (i) => `dynamic_batching.preferred_batch_size[${i}]#value`, r);

  const levels = db.priorityLevels;
  if (levels !== 0n) {
    if (db.defaultPriorityLevel === 0n || db.defaultPriorityLevel > levels) {
      r.error(
        "default-priority-out-of-range",
        db.defaultPriorityLevel === 0n
          ? "dynamic_batching.priority_levels"
          : "dynamic_batching.default_priority_level#value",
        db.defaultPriorityLevel === 0n
          ? `priority_levels is ${levels} but default_priority_level is not set`
          : `default_priority_level ${db.defaultPriorityLevel} is outside 1..${levels}`,
        `Set default_priority_level to a level from 1 to ${levels} (1 is the highest priority).`,
      );
    }
    for (const key of Object.keys(db.priorityQueuePolicy)) {
      const k = BigInt(key);
      if (k === 0n || k > levels) {
        r.error(
          "priority-policy-out-of-range",
          `dynamic_batching.priority_queue_policy{${key}}.key#value`,
          `priority_queue_policy for level ${key} is outside 1..${levels}`,
          `Use a level from 1 to ${levels}, or raise priority_levels.`,
        );
      }
    }
  } else {
    if (db.defaultPriorityLevel !== 0n) {
      r.warning(
        "priority-ignored",
        "dynamic_batching.default_priority_level",
        "default_priority_level has no effect without priority_levels",
        "Set priority_levels, or delete default_priority_level.",
      );
    }
    if (Object.keys(db.priorityQueuePolicy).length > 0) {
      r.warning(
        "priority-ignored",
        "dynamic_batching.priority_queue_policy",
        "priority_queue_policy has no effect without priority_levels",
        "Set priority_levels, or delete priority_queue_policy.",
      );
    }
  }

  if (db.preserveOrdering) {
    if (levels > 1n) {
      r.error(
        "preserve-ordering-priorities",
        "dynamic_batching.preserve_ordering",
        `preserve_ordering allows one priority level, but priority_levels is ${levels}`,
        "Drop preserve_ordering, or use a single priority level.",
      );
    }
    if (isDelay(db.defaultQueuePolicy)) {
      r.error(
        "preserve-ordering-delay",
        "dynamic_batching.default_queue_policy.timeout_action#value",
        "preserve_ordering cannot be combined with timeout_action DELAY",
        "Use timeout_action: REJECT, or drop preserve_ordering.",
      );
    }
    for (const [key, p] of Object.entries(db.priorityQueuePolicy)) {
      if (isDelay(p)) {
        r.error(
          "preserve-ordering-delay",
          `dynamic_batching.priority_queue_policy{${key}}.timeout_action#value`,
          "preserve_ordering cannot be combined with timeout_action DELAY",
          "Use timeout_action: REJECT, or drop preserve_ordering.",
        );
      }
    }
  }
  if (mbs === 0 && db.preferredBatchSize.length === 0 && levels === 0n && !db.defaultQueuePolicy) {
    r.warning(
      "dynamic-batching-no-batch",
      "dynamic_batching",
      "dynamic_batching cannot form batches when max_batch_size is 0",
      "Set max_batch_size to the largest batch the model accepts.",
    );
  }
}

function checkSequenceBatching(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (c.schedulingChoice.case !== "sequenceBatching") return;
  const sb = c.schedulingChoice.value;
  if (c.responseCache?.enable) {
    r.error(
      "response-cache-sequence",
      "response_cache",
      "the response cache does not support sequence batching",
      "Remove response_cache, or use dynamic_batching.",
    );
  }
  const K = ModelSequenceBatching_Control_Kind;
  const names = new Set<string>();
  const seenKinds = new Set<number>();
  sb.controlInput.forEach((ci, i) => {
    const p = `sequence_batching.control_input[${i}]`;
    if (!ci.name)
      r.error(
        "sequence-control-name",
        p,
        "a sequence control input has no name",
        'Add name: "...": the model input that receives the control.',
      );
    else if (names.has(ci.name))
      r.error(
        "sequence-control-duplicate",
        `${p}.name#value`,
        `control tensor '${ci.name}' is used for more than one control`,
        "Give each control its own input.",
      );
    names.add(ci.name);
    ci.control.forEach((ctl, j) => {
      const cp = `${p}.control[${j}]`;
      const kindLabel = enumName(ModelSequenceBatching_Control_KindSchema, ctl.kind);
      if (seenKinds.has(ctl.kind))
        r.error(
          "sequence-control-kind-twice",
          cp,
          `${kindLabel} is given more than once`,
          "Keep one control of each kind.",
        );
      seenKinds.add(ctl.kind);
      const lists = [ctl.int32FalseTrue.length, ctl.fp32FalseTrue.length, ctl.boolFalseTrue.length];
      const nonEmpty = lists.filter((n) => n > 0);
      if (ctl.kind === K.CONTROL_SEQUENCE_CORRID) {
        if (nonEmpty.length > 0)
          r.error(
            "sequence-control-values",
            cp,
            `${kindLabel} takes a data_type, not false/true values`,
            "Delete int32_false_true / fp32_false_true / bool_false_true here.",
          );
        const ok = [
          DataType.TYPE_UINT64,
          DataType.TYPE_INT64,
          DataType.TYPE_UINT32,
          DataType.TYPE_INT32,
          DataType.TYPE_STRING,
        ];
        if (!ok.includes(ctl.dataType))
          r.error(
            "sequence-corrid-type",
            cp,
            `${kindLabel} has data_type ${dataTypeName(ctl.dataType)}`,
            "Use TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING.",
          );
      } else if (nonEmpty.length === 0) {
        r.error(
          "sequence-control-values",
          cp,
          `${kindLabel} needs int32_false_true, fp32_false_true or bool_false_true`,
          "Add e.g. int32_false_true: [ 0, 1 ].",
        );
      } else if (nonEmpty.length > 1) {
        r.error(
          "sequence-control-values",
          cp,
          `${kindLabel} gives more than one of int32_false_true, fp32_false_true and bool_false_true`,
          "Keep one of them.",
        );
      } else if (nonEmpty[0] !== 2) {
        r.error(
          "sequence-control-values",
          cp,
          `${kindLabel} false/true values need exactly 2 entries, has ${nonEmpty[0]}`,
          "Write the false value then the true value, e.g. [ 0, 1 ].",
        );
      }
    });
  });
  if (sb.strategyChoice.case === "oldest") {
    checkPreferredSizes(
      sb.strategyChoice.value.preferredBatchSize,
      c.maxBatchSize,
      (i) => `sequence_batching.oldest.preferred_batch_size[${i}]#value`,
      r,
    );
  }
  if (sb.strategyChoice.case === "direct") {
    const u = sb.strategyChoice.value.minimumSlotUtilization;
    if (u < 0 || u > 1)
      r.error(
        "sequence-slot-utilization",
        "sequence_batching.direct.minimum_slot_utilization#value",
        `minimum_slot_utilization ${u} is outside 0..1`,
        "Use a fraction between 0 and 1.",
      );
  }
}

/**
 * A runtime pinned to Triton 2.51 (the local one) rejects these outright, so the config cannot
 * load there: an error. Where the image decides the release, nothing is known to reject them.
 */
function checkNewerFields(ctx: ModelContext, r: Reporter): void {
  const runtime = ctx.options.runtime;
  const version = runtime ? RUNTIME_FACTS[runtime].tritonVersion : undefined;
  if (!runtime || version !== "2.51") return;
  for (const f of FIELDS_AFTER_2_51) {
    if (ctx.parsed.source.has(f)) {
      r.error(
        "field-newer-than-runtime",
        f,
        `'${f.split(".").pop()}' is newer than Triton ${version}, which the ${runtime} runtime runs; it will reject this config`,
        "Remove it, or serve with a newer Triton (--runtime docker with a recent image).",
      );
    }
  }
}

function checkModelMetrics(ctx: ModelContext, r: Reporter): void {
  const mm = ctx.parsed.config.modelMetrics;
  if (!mm) return;
  mm.metricControl.forEach((m, i) => {
    const p = `model_metrics.metric_control[${i}]`;
    if (!m.metricIdentifier)
      r.error(
        "metrics-identifier",
        p,
        "metric control has no metric_identifier",
        'Add metric_identifier { family: "..." }.',
      );
    else if (!m.metricIdentifier.family)
      r.error(
        "metrics-identifier",
        `${p}.metric_identifier`,
        "metric identifier has an empty family",
        'Name the metric family, e.g. family: "nv_inference_first_response_histogram_ms".',
      );
    if (m.metricOptions.case !== "histogramOptions")
      r.error(
        "metrics-histogram",
        p,
        "metric control has no histogram_options",
        "Add histogram_options { buckets: [ ... ] }.",
      );
    else if (m.metricOptions.value.buckets.length === 0)
      r.error(
        "metrics-histogram",
        `${p}.histogram_options`,
        "histogram_options has no buckets",
        "List the bucket boundaries in ascending order.",
      );
  });
}

function checkInstanceGroups(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const { gpuAvailable, gpuCount } = ctx.options;
  c.instanceGroup.forEach((g, i) => {
    const p = `instance_group[${i}]`;
    const label = g.name ? `instance group '${g.name}'` : `instance group ${i + 1}`;
    // No machine has GPU -1, so it needs no count to be wrong (Triton checks ids against the GPUs
    // it finds, and finds none with a negative id).
    const negative = g.kind === ModelInstanceGroup_Kind.GPU ? g.gpus.findIndex((id) => id < 0) : -1;
    if (negative >= 0) {
      r.error(
        "gpu-id-invalid",
        `${p}.gpus[${negative}]#value`,
        `${label} names GPU ${g.gpus[negative]}, and GPU ids start at 0`,
        "List GPU ids from 0 (nvidia-smi -L shows them), or drop gpus to use all of them.",
      );
    } else if (g.kind === ModelInstanceGroup_Kind.GPU) {
      if (gpuAvailable === false) {
        r.report(
          ctx.options.gpuMissingSeverity ?? "warning",
          "gpu-unavailable",
          `${p}.kind#value`,
          `${label} asks for KIND_GPU, but this machine has no GPU`,
          "Use kind: KIND_CPU to run here, or KIND_AUTO to use a GPU wherever there is one.",
        );
      } else if (gpuCount !== undefined) {
        g.gpus.forEach((id, j) => {
          if (id < 0 || id >= gpuCount) {
            r.error(
              "gpu-id-invalid",
              `${p}.gpus[${j}]#value`,
              `${label} names GPU ${id}, but this machine has ${gpuCount} GPU${gpuCount === 1 ? "" : "s"} (0..${gpuCount - 1})`,
              "List GPU ids that exist, or drop gpus to use all of them.",
            );
          }
        });
      }
    } else if (
      (g.kind === ModelInstanceGroup_Kind.CPU || g.kind === ModelInstanceGroup_Kind.MODEL) &&
      g.gpus.length > 0
    ) {
      r.error(
        "instance-gpus-not-gpu-kind",
        `${p}.gpus`,
        `${label} has kind ${kindName(g.kind)} but lists GPUs`,
        `Delete gpus, or use kind: KIND_GPU.`,
      );
    } else if (g.kind === ModelInstanceGroup_Kind.AUTO && g.gpus.length > 0 && gpuAvailable === false) {
      // Without a GPU Triton turns KIND_AUTO into KIND_CPU, which may not list GPUs.
      r.report(
        ctx.options.gpuMissingSeverity ?? "warning",
        "gpu-unavailable",
        `${p}.gpus`,
        `${label} lists GPUs, but this machine has none: Triton makes it KIND_CPU and then refuses the GPU list`,
        "Drop gpus (KIND_AUTO then uses every GPU wherever there are some), or use kind: KIND_CPU.",
      );
    }
    if (g.count < 0) {
      r.warning(
        "instance-count-negative",
        `${p}.count#value`,
        `${label} has count ${g.count}; Triton uses the default (1) instead`,
        "Use a count of 1 or more.",
      );
    }
    if (g.profile.length > 0 && ctx.autofill.platform !== "tensorrt_plan") {
      r.error(
        "instance-profile-platform",
        `${p}.profile`,
        `${label} sets profile, which only TensorRT models support`,
        "Delete profile.",
      );
    }
  });
}

function checkDuplicateKeys(ctx: ModelContext, r: Reporter): void {
  for (const d of ctx.parsed.source.duplicateKeys) {
    if (/^ensemble_scheduling\.step\[\d+\]\.(input|output)_map\{/.test(d.path)) continue; // ensemble.ts explains these
    r.warning(
      "map-duplicate-key",
      d.second,
      `key '${d.key}' is given twice in this map (first at ${d.first.line}:${d.first.column}); only the last is kept`,
      "Keep one entry per key.",
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Version folders and model files

/** The versions Triton will load under the config's version policy (core's VersionsToLoad). */
export function versionsToLoad(
  config: ModelConfig,
  layout: ModelLayout,
): { load: number[]; missingSpecific: number[] } {
  const existing = layout.versions.map((v) => v.version).sort((a, b) => b - a);
  const vp = config.versionPolicy?.policyChoice;
  if (vp?.case === "specific") {
    const wanted = vp.value.versions.map(Number);
    return {
      load: wanted.filter((v) => existing.includes(v)),
      missingSpecific: wanted.filter((v) => !existing.includes(v)),
    };
  }
  if (vp?.case === "all") return { load: existing, missingSpecific: [] };
  const n = vp?.case === "latest" ? Math.max(1, vp.value.numVersions) : 1;
  return { load: existing.slice(0, n), missingSpecific: [] };
}

/** Errors that leave the backend unknown, so the model-file and runtime checks have nothing to go on. */
export const BACKEND_ERRORS = [
  "platform-unknown",
  "platform-backend-mismatch",
  "backend-unknown",
  "backend-missing",
  "platform-missing",
  "ensemble-platform",
];

async function checkVersions(ctx: ModelContext, r: Reporter): Promise<void> {
  const { layout, parsed } = ctx;
  const c = parsed.config;
  const rel = (p: string) => path.relative(path.dirname(layout.dir), p);
  const env = executionEnv(ctx);
  for (const d of layout.ignoredDirs) {
    // The folder EXECUTION_ENV_PATH names is the model's environment, not a misnamed version.
    const dir = path.join(layout.dir, d);
    if (env?.inModel && (env.resolved === dir || env.resolved.startsWith(dir + path.sep))) continue;
    const why = /^0\d+$/.test(d) ? "has a leading zero" : "is not a number";
    const fix = /^0\d+$/.test(d)
      ? `Rename it to '${String(Number(d))}'.`
      : "Version folders are named 1, 2, ...; move other files into a version folder.";
    r.warning(
      "version-dir-ignored",
      undefined,
      `folder '${d}' ${why}, so Triton ignores it as a version`,
      fix,
      path.join(layout.dir, d),
    );
  }
  const isEnsemble = c.platform === ENSEMBLE_PLATFORM;
  for (const v of versionConfigs(layout)) {
    r.warning(
      "config-in-version-folder",
      { line: 1, column: 1, offset: 0 },
      `${rel(path.join(v.dir, CONFIG_FILE))} is never read: Triton reads one config for every version, ${rel(layout.configFile)}`,
      `Move what it sets into ${rel(layout.configFile)} and delete it (a version folder holds only the model files).`,
      path.join(v.dir, CONFIG_FILE),
    );
  }
  if (layout.versions.length === 0) {
    const stray = topLevelModelFiles(layout);
    const v1 = path.join(layout.dir, "1");
    r.error(
      "version-missing",
      undefined,
      stray.length > 0
        ? `model '${ctx.name}' has no version folder: ${stray.join(", ")} at the top of the folder is never read, Triton loads model files only from numbered version folders ("at least one version must be available")`
        : `model '${ctx.name}' has no version folder`,
      isEnsemble
        ? `An ensemble still needs an (empty) version folder: create ${rel(v1)}/.`
        : stray.length > 0
          ? `Move ${stray.length === 1 ? "it" : "them"} into ${rel(v1)}/ (${rel(path.join(v1, stray[0]!))}); ${rel(layout.configFile)} stays where it is.`
          : `Create ${rel(v1)}/ holding the model file.`,
    );
    return;
  }
  const { load, missingSpecific } = versionsToLoad(c, layout);
  for (const v of missingSpecific) {
    r.warning(
      "version-specific-missing",
      "version_policy",
      `version_policy names version ${v}, which has no folder`,
      `Create ${rel(path.join(layout.dir, String(v)))}/ or remove ${v} from versions.`,
    );
  }
  if (load.length === 0) {
    r.error(
      "version-none-selected",
      "version_policy",
      "no version folder matches the version_policy",
      "Make the policy name an existing version folder.",
    );
    return;
  }
  if (isEnsemble || r.hasError(...BACKEND_ERRORS)) return;
  const af = ctx.autofill;
  const backend = af.backend;
  const known = defaultModelFile(af.platform, backend, c.defaultModelFilename);
  if (!known) return;
  // The file autofill hands the backend: a model named "m.python" gets model.python.
  const file = c.defaultModelFilename || af.defaultModelFilename || known.file;
  const want = file === known.file ? known : { file };
  const where = c.defaultModelFilename
    ? "default_model_filename#value"
    : c.backend
      ? "backend#value"
      : c.platform
        ? "platform#value"
        : undefined;
  if (backend === "python" && !want.file.endsWith(".py")) {
    const problem = pythonFileNameProblem(want.file, c.defaultModelFilename ? undefined : af.inferredFrom);
    r.error("python-model-filename", where, problem.message, problem.hint);
    return;
  }
  for (const version of load) {
    const v = layout.versions.find((x) => x.version === version)!;
    const entry = v.entries.get(want.file);
    const hasCc = Object.values(c.ccModelFilenames).some((f) => v.entries.has(f));
    if (!entry && !hasCc) {
      r.error(
        "model-file-missing",
        where,
        `version ${version} has no ${want.file} (${rel(path.join(v.dir, want.file))})`,
        backend === "python"
          ? `Put the model code in ${rel(path.join(v.dir, want.file))} (class TritonPythonModel).`
          : `Put the ${backend || c.platform} model file there, or set default_model_filename.`,
      );
      continue;
    }
    if (entry && want.isDir && !entry.isDir) {
      r.error(
        "model-file-kind",
        where,
        `${rel(path.join(v.dir, want.file))} must be a directory`,
        "A SavedModel is a folder; export it with tf.saved_model.save.",
      );
    }
    if (backend === "python" && entry && !entry.isDir) await checkPythonModel(path.join(v.dir, want.file), r);
  }
}

/**
 * The python backend imports its model file only when the name ends in '.py' (measured on 2.51:
 * "Model name must end with '.py'"); autofill hands a model named "m.python" model.python.
 */
export function pythonFileNameProblem(file: string, inferredFrom?: string): { message: string; hint: string } {
  const byName = inferredFrom?.startsWith("the model's name");
  return {
    message: `the python backend loads only a file whose name ends in .py, and Triton hands it ${file}${byName ? `, taking backend 'python' and that file from ${inferredFrom}` : ""} (Triton: "Model name must end with '.py'. Model name is "${file}".")`,
    hint: byName
      ? 'Write backend: "python" in config.pbtxt (the python backend then loads model.py), or rename the model folder without the dot.'
      : "Set default_model_filename to a name ending in .py, or delete it to use model.py.",
  };
}

async function checkPythonModel(file: string, r: Reporter): Promise<void> {
  const read = await readUserText(file);
  if (!("text" in read)) return;
  const text = read.text;
  if (!/\bclass\s+TritonPythonModel\b|^TritonPythonModel\s*=/m.test(text)) {
    r.error(
      "python-model-class",
      { line: 1, column: 1, offset: 0 },
      "model.py defines no class TritonPythonModel",
      "The python backend loads class TritonPythonModel with an execute(self, requests) method.",
      file,
    );
    return;
  }
  if (!/^\s+(async\s+)?def\s+execute\s*\(/m.test(text)) {
    r.warning(
      "python-model-execute",
      { line: 1, column: 1, offset: 0 },
      "TritonPythonModel has no execute method",
      "Define execute(self, requests) returning one response per request.",
      file,
    );
  }
}

/** The warning for a model whose backend the chosen runtime lacks; returns that backend. */
export function checkRuntimeBackend(ctx: ModelContext, r: Reporter): string | undefined {
  const runtime = ctx.options.runtime;
  if (!runtime || r.hasError(...BACKEND_ERRORS)) return undefined;
  const c = ctx.parsed.config;
  if (c.platform === ENSEMBLE_PLATFORM) return undefined;
  const backend = ctx.autofill.backend;
  const facts = RUNTIME_FACTS[runtime];
  if (!backend || facts.backends.includes(backend)) return undefined;
  const where = c.backend ? "backend#value" : c.platform ? "platform#value" : undefined;
  const { message, hint } = facts.missingBackend(backend);
  r.warning("backend-unavailable", where, message, hint);
  return backend;
}
