/**
 * The config auto-complete step: a python model's auto_complete_config run for lint
 * (completeConfig, through LintOptions.completer), or said not run (notRun), and its outcome as
 * the config to lint and the findings of the run (completionResult).
 */
import path from "node:path";
import { create, fromJson } from "@bufbuild/protobuf";
import type { CompletionOutcome } from "../auto-complete-run.js";
import { autofillBackendFields } from "../autofill.js";
import type { Diagnostic } from "../diagnostics.js";
import { type ModelConfig, ModelConfigSchema } from "../gen/model_config_pb.js";
import { type ModelLayout, readUserText } from "../layout.js";
import { toModelConfigJson } from "../model-config.js";
import { type ParsedConfig, SourceMap } from "../parse.js";
import { type ErrorCode, type LintOptions, type WarningCode, versionsToLoad } from "../rules.js";
import type { Pos } from "../textproto.js";

/** The result of running a model's auto_complete_config for lint. */
export interface Completion {
  /** The completed config, to lint instead of the file's; absent when completion failed or did not run. */
  parsed?: ParsedConfig;
  /** Where findings on what the completion added point (model.py, at the function). */
  elsewhere?: { file: string; pos: Pos; note: string };
  diagnostics: Diagnostic[];
  notes: string[];
  /** The model file whose auto_complete_config was not run because no model code may run (`notRun`). */
  notRun?: string;
}

/**
 * With auto-complete on, Triton has the python backend call the model's auto_complete_config on
 * the config it has so far (its own completion: the name, the backend from 1/model.py), then
 * loads what that returns. Undefined when that does nothing: auto-complete off, not a python
 * model, or a model file that never names auto_complete_config (checked by reading it, so a
 * save of an ordinary model spawns nothing).
 */
export async function completeConfig(
  layout: ModelLayout,
  parsed: ParsedConfig | undefined,
  options: LintOptions,
): Promise<Completion | undefined> {
  if (options.autoComplete === false || layout.versions.length === 0) return undefined;
  const base: ModelConfig = parsed ? parsed.config : create(ModelConfigSchema);
  if (base.platform === "ensemble" || base.schedulingChoice.case === "ensembleScheduling") return undefined;
  const af = autofillBackendFields(layout.name, base, layout);
  if (af.backend !== "python") return undefined;
  const version = versionsToLoad(base, layout).load[0];
  const v = layout.versions.find((x) => x.version === version);
  const fileName = af.defaultModelFilename;
  // A file the python backend refuses by its name never gets as far as auto_complete_config.
  if (!v || !fileName.endsWith(".py") || v.entries.get(fileName)?.isDir !== false) return undefined;
  const file = path.join(v.dir, fileName);
  const read = await readUserText(file);
  if (!("text" in read) || !/\bauto_complete_config\b/.test(read.text)) return undefined;
  const lines = read.text.split("\n");
  const defLine = lines.findIndex((l) => /^\s*def\s+auto_complete_config\b/.test(l));
  const at = defLine >= 0 ? defLine : lines.findIndex((l) => /\bauto_complete_config\b/.test(l));
  const pos = { line: at + 1, column: Math.max(1, (lines[at] ?? "").search(/\S/) + 1), offset: 0 };
  const rel = path.relative(layout.dir, file);

  // Completing the config means importing the model's code: only a caller that runs it anyway
  // (`up`, the reload controller) or a user who asked (`lint --run-model-code`) gives a completer.
  if (!options.completer) return notRun(layout, file, rel, pos);
  const input = { ...toModelConfigJson(base, { withDefaults: true }) } as Record<string, unknown>;
  input.name = layout.name;
  if (!base.platform && !base.backend) input.backend = "python";
  const outcome = await options.completer.complete({ model: layout.name, dir: layout.dir, file, config: input });
  // The machine cannot wall it in: not run, said as a warning with what to do.
  if (outcome.outcome === "refused") return notRun(layout, file, rel, pos, outcome);
  return completionResult(outcome, layout, parsed, file, rel, pos);
}

/**
 * The fields a python model's auto_complete_config can set through the backend's ModelConfig
 * (set_max_batch_size, add_input, add_output, set_dynamic_batching,
 * set_model_transaction_policy): without running it, what the file says of them may not be
 * what Triton loads.
 */
export const COMPLETABLE_FIELDS: ReadonlySet<string> = new Set([
  "max_batch_size",
  "input",
  "output",
  "dynamic_batching",
  "model_transaction_policy",
]);

/**
 * auto_complete_config not run because nobody asked for model code to run: a warning, so that a
 * repository that is fine still lints clean (exit 0) while the output says what was not checked.
 * The config is checked as written, with findings on the fields the function can set made
 * warnings (see Reporter's `completable`), since the function may set them right.
 */
function notRun(
  layout: ModelLayout,
  file: string,
  rel: string,
  pos: Pos,
  refused?: { why: string; hint?: string },
): Completion {
  return {
    diagnostics: [
      {
        severity: "warning",
        file,
        line: pos.line,
        column: pos.column,
        model: layout.name,
        code: "auto-complete-not-run" satisfies WarningCode,
        message: refused
          ? `not checked: completing this config runs ${rel} (its auto_complete_config), and ${refused.why}, so the config is checked as written`
          : `not checked: completing this config runs ${rel} (its auto_complete_config), and lint runs no model code unless asked, so the config is checked as written`,
        hint:
          refused?.hint ??
          "Pass --run-model-code to have lint run it as Triton does (a subprocess of the managed environment with a time limit, walled in: no network, only its own folder and Python to read), or trust the code first: `triton-dev up` runs it in Triton anyway.",
      },
    ],
    notes: [],
    notRun: rel,
  };
}

function completionResult(
  outcome: CompletionOutcome,
  layout: ModelLayout,
  parsed: ParsedConfig | undefined,
  file: string,
  rel: string,
  pos: Pos,
): Completion | undefined {
  const err = (code: ErrorCode, message: string, hint: string, where = pos, inFile = file): Diagnostic => ({
    severity: "error",
    file: inFile,
    line: where.line,
    column: where.column,
    message,
    hint,
    model: layout.name,
    code,
  });
  switch (outcome.outcome) {
    case "absent":
    case "refused": // handled before
      return undefined;
    case "not-run":
      return {
        diagnostics: [],
        notes: [`auto_complete_config in ${rel} not run: ${outcome.why}; the config is checked as written`],
      };
    case "timeout":
      return {
        diagnostics: [
          err(
            "auto-complete-timeout",
            `auto_complete_config in ${rel} did not return within ${outcome.seconds} s (importing ${rel} included), so Triton's load would wait on it and fail`,
            "Make auto_complete_config (and what model.py does at import) quick: no downloads, no model loading; do that in initialize().",
          ),
        ],
        notes: [],
      };
    case "import":
    case "raised": {
      const where = outcome.file && outcome.line ? { line: outcome.line, column: 1, offset: 0 } : pos;
      const inFile = outcome.file ?? file;
      return {
        diagnostics: [
          err(
            "auto-complete-raised",
            outcome.outcome === "import"
              ? `importing ${rel} to complete its config failed: ${outcome.error}`
              : `auto_complete_config in ${rel} raised ${outcome.error}`,
            "Triton refuses the model when completing its config fails: fix the error (run `python -c 'import model'` in the version folder to see it).",
            where,
            inFile,
          ),
        ],
        notes: [],
      };
    }
    case "invalid":
      return {
        diagnostics: [
          err(
            "auto-complete-invalid",
            `auto_complete_config in ${rel} returned no usable config: ${outcome.error}`,
            "Return the auto_complete_model_config it was given, after calling add_input, add_output, set_max_batch_size, ... on it.",
          ),
        ],
        notes: [],
      };
    case "completed": {
      let config: ModelConfig;
      try {
        config = fromJson(ModelConfigSchema, outcome.config as never);
      } catch (e) {
        return {
          diagnostics: [
            err(
              "auto-complete-invalid",
              `auto_complete_config in ${rel} returned a config Triton cannot read: ${e instanceof Error ? e.message : String(e)}`,
              "Give inputs and outputs as {'name': ..., 'data_type': 'TYPE_FP32', 'dims': [...]}, with Triton's type names.",
            ),
          ],
          notes: [],
        };
      }
      const completed: ParsedConfig = {
        file: parsed?.file ?? layout.configFile,
        text: parsed?.text ?? "",
        config,
        json: toModelConfigJson(config),
        source: parsed?.source ?? new SourceMap(),
      };
      return {
        parsed: completed,
        elsewhere: { file, pos, note: `(in the config auto_complete_config in ${rel} completes)` },
        diagnostics: [],
        notes: [],
      };
    }
  }
}
