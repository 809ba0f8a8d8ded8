/**
 * The cases of "lint agrees with Triton": models that a real tritonserver (2.51, the local
 * runtime's) refuses or loads, with what lint must say about each. agreement.test.ts checks lint's
 * verdicts on them; agreement.integration.test.ts checks that Triton agrees.
 */
import fs from "node:fs";
import path from "node:path";
import { scaffoldPythonModel } from "../../src/repo/init.js";
import { type LintResult, lintRepository } from "../../src/repo/lint.js";
import {
  ECHO_ONNX,
  ARTICLE_FIXTURES,
  ECHO_IO,
  ECHO_MODEL_PY,
  SAMPLE_MODELS,
  pythonConfig,
  tempRepo,
  writeFiles,
} from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

export interface Case {
  model: string;
  files: Record<string, string | Uint8Array>;
  /**
   * The finding by which lint says the model will not load (an error, or a warning that this
   * machine or runtime lacks something), or "accepted": no error, counted as loading, and Triton
   * loads it.
   */
  lint: string;
  /** What Triton says, found in its index reason or its log; absent for accepted cases. */
  triton?: string;
  /** Not served: Triton 2.51 never finishes loading it, which would stall the whole run. */
  notServed?: string;
  /** Where lint's finding points, relative to the model folder (AUTO_COMPLETE_CASES; default 1/model.py). */
  at?: string;
}

const TWO_IN = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
const TWO_OUT = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
const FIXED4 = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;
const DECOUPLED = "model_transaction_policy { decoupled: true }\n";
const ENS_IO = `input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;

function py(
  model: string,
  config: string,
  versions: Record<string, string | null> = { "1": ECHO_MODEL_PY },
): Record<string, string> {
  const files: Record<string, string> = { [`${model}/config.pbtxt`]: config };
  for (const [v, code] of Object.entries(versions))
    files[code === null ? `${model}/${v}/` : `${model}/${v}/model.py`] = code ?? "";
  return files;
}
const io = (model: string, body: string, mbs = 8) => py(model, pythonConfig(model, body, mbs));
const extra = (model: string, more: string) => py(model, pythonConfig(model) + more);

/** A sequence_batching block with START, END and CORRID controls, one part changed where asked. */
function sequenceBatching(o: { start?: string; endKind?: string; corrid?: string } = {}): string {
  const start = o.start ?? " int32_false_true: [ 0, 1 ]";
  return `sequence_batching {
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START${start} } ] },
    { name: "END" control [ { kind: ${o.endKind ?? "CONTROL_SEQUENCE_END"} int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: ${o.corrid ?? "TYPE_UINT64"} } ] }
  ]
}
`;
}

function step(
  model: string,
  ins: Record<string, string>,
  outs: Record<string, string>,
  version = "model_version: -1 ",
): string {
  const maps = (kind: string, m: Record<string, string>) =>
    Object.entries(m)
      .map(([k, v]) => `${kind} { key: "${k}" value: "${v}" }`)
      .join(" ");
  return `  step { model_name: "${model}" ${version}${maps("input_map", ins)} ${maps("output_map", outs)} }\n`;
}
function ens(
  model: string,
  steps: string,
  { mbs = 8, ios = ENS_IO, more = "", versionDir = true } = {},
): Record<string, string> {
  return {
    [`${model}/config.pbtxt`]: `name: "${model}"\nplatform: "ensemble"\nmax_batch_size: ${mbs}\n${ios}${more}ensemble_scheduling {\n${steps}}\n`,
    ...(versionDir ? { [`${model}/1/`]: "" } : {}),
  };
}
const echoStep = step("ok_python", { INPUT0: "IN" }, { OUTPUT0: "OUT" });

/** A model folder of the sample repository (models/), files as they are. */
function sample(model: string): Record<string, string | Uint8Array> {
  const files: Record<string, string | Uint8Array> = {};
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(SAMPLE_MODELS, rel), { withFileTypes: true })) {
      if (e.name === "__pycache__") continue;
      const r = path.join(rel, e.name);
      if (e.isDirectory()) {
        files[`${r}/`] = "";
        walk(r);
      } else files[r] = fs.readFileSync(path.join(SAMPLE_MODELS, r));
    }
  };
  walk(model);
  return files;
}

/**
 * One of the article's configs (test/repo/fixtures/article), verbatim but for model names: its own
 * becomes `model`, and the models it runs get an `article_` prefix, so that the article's configs
 * live beside the sample models of the same names (and its three resnet50_fp16 variants beside
 * each other).
 */
function article(fixture: string, model: string, more: Record<string, string> = {}): Record<string, string> {
  const text = fs
    .readFileSync(path.join(ARTICLE_FIXTURES, fixture), "utf8")
    .replace(/^name: "[^"]*"/m, `name: "${model}"`)
    .replace(/model_name: "([^"]*)"/g, 'model_name: "article_$1"');
  return { [`${model}/config.pbtxt`]: text, [`${model}/1/`]: "", ...more };
}

/** Strings (as UTF-8) and raw bytes, joined: for files that are not valid UTF-8. */
const bytes = (...parts: Array<string | number[]>): Uint8Array =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : Buffer.from(p))));

/** Models the ensembles below compose; they load. */
const BASE: Case[] = [
  { model: "ok_python", files: py("ok_python", pythonConfig("ok_python")), lint: "accepted" },
  { model: "two_in", files: io("two_in", TWO_IN), lint: "accepted" },
  { model: "two_out", files: io("two_out", TWO_OUT), lint: "accepted" },
  { model: "fixed4", files: io("fixed4", FIXED4), lint: "accepted" },
];

export const CASES: Case[] = [
  ...BASE,
  // config.pbtxt that Triton's text parser refuses
  {
    model: "unknown_field",
    files: io("unknown_field", ECHO_IO.replace("dims", "dim")),
    lint: "config-unknown-field",
    triton: 'has no field named "dim"',
  },
  {
    model: "bad_enum",
    files: io("bad_enum", ECHO_IO.replace("TYPE_FP32", "TYPE_FLOAT32")),
    lint: "config-enum",
    triton: 'Unknown enumeration value of "TYPE_FLOAT32"',
  },
  {
    model: "syntax_unclosed",
    files: extra("syntax_unclosed", "dynamic_batching {\n"),
    lint: "config-syntax",
    triton: "failed to read text proto",
  },
  {
    model: "dup_field",
    files: extra("dup_field", "max_batch_size: 4\n"),
    lint: "config-duplicate-field",
    triton: 'Non-repeated field "max_batch_size" is specified multiple times',
  },
  {
    model: "oneof_twice",
    files: extra("oneof_twice", "dynamic_batching { }\nsequence_batching { }\n"),
    lint: "config-oneof",
    triton: 'another member of oneof "scheduling_choice"',
  },
  {
    model: "string_for_int",
    files: py("string_for_int", pythonConfig("string_for_int").replace("max_batch_size: 8", 'max_batch_size: "8"')),
    lint: "config-schema",
    triton: 'Expected integer, got: "8"',
  },
  {
    model: "model_metrics_field",
    files: extra(
      "model_metrics_field",
      'model_metrics { metric_control [ { metric_identifier { family: "f" } histogram_options { buckets: [ 1 ] } } ] }\n',
    ),
    lint: "field-newer-than-runtime",
    triton: 'has no field named "model_metrics"',
  },
  // ValidateModelConfig
  {
    model: "name_mismatch",
    files: py("name_mismatch", pythonConfig("other")),
    lint: "name-mismatch",
    triton: "directory name must equal model name",
  },
  {
    model: "platform_onnxruntime",
    files: py(
      "platform_onnxruntime",
      `name: "platform_onnxruntime"\nplatform: "onnxruntime"\nmax_batch_size: 8\n${ECHO_IO}`,
    ),
    lint: "platform-unknown",
    triton: "unexpected platform type 'onnxruntime'",
  },
  {
    model: "platform_backend_mismatch",
    files: py(
      "platform_backend_mismatch",
      `name: "platform_backend_mismatch"\nplatform: "tensorrt_plan"\nbackend: "onnxruntime"\n${ECHO_IO}`,
    ),
    lint: "platform-backend-mismatch",
    triton: "unexpected 'platform' and 'backend' pair",
  },
  {
    model: "backend_typo",
    files: py("backend_typo", pythonConfig("backend_typo").replace('"python"', '"pyton"')),
    lint: "backend-unknown",
    triton: "unable to find backend library for backend 'pyton'",
  },
  {
    model: "negative_mbs",
    files: io("negative_mbs", ECHO_IO, -1),
    lint: "max-batch-size-negative",
    triton: "'max_batch_size' must be non-negative",
  },
  {
    model: "preferred_too_large",
    files: extra("preferred_too_large", "dynamic_batching { preferred_batch_size: [ 16 ] }\n"),
    lint: "preferred-batch-size-too-large",
    triton: "dynamic batching preferred size must be <= max batch size",
  },
  {
    model: "default_priority_out",
    files: extra("default_priority_out", "dynamic_batching { priority_levels: 2 default_priority_level: 3 }\n"),
    lint: "default-priority-out-of-range",
    triton: "default priority level must be in range [1, 2]",
  },
  {
    model: "pq_policy_key_out",
    files: extra(
      "pq_policy_key_out",
      "dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 5 value { max_queue_size: 4 } } }\n",
    ),
    lint: "priority-policy-out-of-range",
    triton: "priority queue policy must have priority level in range [1, 2]",
  },
  {
    model: "preserve_ordering_levels",
    files: extra(
      "preserve_ordering_levels",
      "dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 }\n",
    ),
    lint: "preserve-ordering-priorities",
    triton: "Only one priority level is allowed when 'preserve_ordering' is true",
  },
  {
    model: "preserve_ordering_delay",
    files: extra(
      "preserve_ordering_delay",
      "dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 } }\n",
    ),
    lint: "preserve-ordering-delay",
    triton: "Queue policy can not have DELAY as timeout action",
  },
  // Inputs and outputs (checked at load)
  {
    model: "dims_zero",
    files: io("dims_zero", ECHO_IO.replace("[ -1 ]", "[ 0 ]")),
    lint: "dims-invalid",
    triton: "dimension must be integer >= 1, or -1",
  },
  {
    model: "missing_data_type",
    files: io("missing_data_type", ECHO_IO.replace("data_type: TYPE_FP32 ", "")),
    lint: "io-data-type-missing",
    triton: "must specify 'data_type'",
  },
  {
    model: "missing_dims",
    files: io("missing_dims", ECHO_IO.replace("dims: [ -1 ] ", "")),
    lint: "io-dims-missing",
    triton: "must specify 'dims'",
  },
  {
    model: "reshape_count",
    files: io("reshape_count", ECHO_IO.replace("dims: [ -1 ]", "dims: [ 4 ] reshape { shape: [ 3 ] }")),
    lint: "reshape-count",
    triton: "has different size for dims and reshape",
  },
  {
    model: "reshape_wild_bad",
    files: io(
      "reshape_wild_bad",
      ECHO_IO.replace("dims: [ -1 ]", "dims: [ 2, 4, -1, 6 ] reshape { shape: [ 4, -1, 2, 6 ] }"),
    ),
    lint: "reshape-count",
    triton: "has different size for dims and reshape",
  },
  {
    model: "batch_input_bad_source",
    files: extra(
      "batch_input_bad_source",
      'batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_INT32 source_input: "NOPE" } ]\n',
    ),
    lint: "batch-input-unknown-source",
    triton: "unknown source input name 'NOPE'",
  },
  // Instance groups on this GPU-less machine, linted as `up` would (GPU problems are errors there)
  {
    model: "kind_gpu",
    files: extra("kind_gpu", "instance_group [ { kind: KIND_GPU count: 1 } ]\n"),
    lint: "gpu-unavailable",
    triton: "has kind KIND_GPU but no GPUs are available",
  },
  {
    model: "kind_auto_gpus",
    files: extra("kind_auto_gpus", "instance_group [ { kind: KIND_AUTO gpus: [ 0 ] } ]\n"),
    lint: "gpu-unavailable",
    triton: "has kind KIND_CPU but specifies one or more GPUs",
  },
  {
    model: "kind_cpu_gpus",
    files: extra("kind_cpu_gpus", "instance_group [ { kind: KIND_CPU count: 1 gpus: [ 0 ] } ]\n"),
    lint: "instance-gpus-not-gpu-kind",
    triton: "has kind KIND_CPU but specifies one or more GPUs",
  },
  // Version folders and model files
  {
    model: "leading_zero_version",
    files: py("leading_zero_version", pythonConfig("leading_zero_version"), { "01": ECHO_MODEL_PY }),
    lint: "version-missing",
    triton: "at least one version must be available",
  },
  {
    model: "no_class",
    files: py("no_class", pythonConfig("no_class"), {
      "1": "class Model:\n    def execute(self, requests):\n        return []\n",
    }),
    lint: "python-model-class",
    triton: "has no attribute 'TritonPythonModel'",
  },
  {
    model: "missing_model_py",
    files: py("missing_model_py", pythonConfig("missing_model_py"), { "1": null }),
    lint: "model-file-missing",
    notServed: "Triton 2.51's python backend waits forever for the stub",
  },
  // Ensembles: the graph (checked when the config is read)
  {
    model: "ens_instance_group",
    files: ens("ens_instance_group", echoStep, { more: "instance_group [ { kind: KIND_CPU } ]\n" }),
    lint: "ensemble-instance-group",
    triton: "instance group should not be specified for ensemble",
  },
  {
    model: "ens_unused_input",
    files: ens("ens_unused_input", echoStep, {
      ios: ENS_IO.replace("] }", '] }, { name: "EXTRA" data_type: TYPE_FP32 dims: [ -1 ] }'),
    }),
    lint: "ensemble-input-unused",
    triton: "ensemble input 'EXTRA' for ensemble ens_unused_input' is not used",
  },
  {
    model: "ens_output_not_written",
    files: ens("ens_output_not_written", echoStep, {
      ios: ENS_IO.replace("dims: [ -1 ] } ]\n", "dims: [ -1 ] } ]\n").replace(
        '{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }',
        '{ name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "OUT2" data_type: TYPE_FP32 dims: [ -1 ] }',
      ),
    }),
    lint: "ensemble-output-not-written",
    triton: "ensemble output 'OUT2'",
  },
  {
    model: "ens_not_produced",
    files: ens("ens_not_produced", step("two_in", { INPUT0: "IN", INPUT1: "ghost" }, { OUTPUT0: "OUT" })),
    lint: "ensemble-tensor-not-produced",
    triton: "at least one of its depending tensors, 'ghost', is not connected",
  },
  {
    model: "ens_unused_tensor",
    files: ens("ens_unused_tensor", step("two_out", { INPUT0: "IN" }, { OUTPUT0: "OUT", OUTPUT1: "spare" })),
    lint: "ensemble-tensor-unused",
    triton: "ensemble tensor 'spare' is unused",
  },
  {
    model: "ens_written_twice",
    files: ens("ens_written_twice", echoStep + echoStep),
    lint: "ensemble-tensor-written-twice",
    triton: "can appear in an output map only once",
  },
  {
    model: "ens_tensor_cycle",
    files: ens(
      "ens_tensor_cycle",
      step("ok_python", { INPUT0: "b" }, { OUTPUT0: "a" }) +
        step("two_in", { INPUT0: "a", INPUT1: "IN" }, { OUTPUT0: "b" }) +
        echoStep,
    ),
    lint: "ensemble-tensor-cycle",
    triton: "ensemble tensor 'b' is unused",
  },
  {
    model: "ens_no_version_dir",
    files: ens("ens_no_version_dir", echoStep, { versionDir: false }),
    lint: "version-missing",
    triton: "at least one version must be available",
  },
  // Ensembles against the models they run (checked at load)
  {
    model: "ens_missing_model",
    files: ens("ens_missing_model", step("nope", { INPUT0: "IN" }, { OUTPUT0: "OUT" })),
    lint: "ensemble-model-missing",
    triton: "contains models that are not available or ambiguous: nope",
  },
  {
    model: "ens_no_model_version",
    files: ens("ens_no_model_version", step("ok_python", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "")),
    lint: "ensemble-model-version",
    triton: "whose required version 0 is not loaded",
  },
  {
    model: "ens_mbs",
    files: ens("ens_mbs", echoStep, { mbs: 16 }),
    lint: "ensemble-max-batch-size",
    triton: "allows maximum batch size 16, but it contains model ok_python",
  },
  {
    model: "ens_unknown_input_key",
    files: ens("ens_unknown_input_key", step("ok_python", { INPUTX: "IN" }, { OUTPUT0: "OUT" })),
    lint: "ensemble-unknown-input",
    triton: "is mapping to non-existing input INPUTX",
  },
  {
    model: "ens_unmapped_input",
    files: ens("ens_unmapped_input", step("two_in", { INPUT0: "IN" }, { OUTPUT0: "OUT" })),
    lint: "ensemble-input-not-mapped",
    triton: "input INPUT1 in model two_in is not mapped",
  },
  {
    model: "ens_type_mismatch",
    files: ens("ens_type_mismatch", echoStep, { ios: ENS_IO.replace("TYPE_FP32", "TYPE_INT32") }),
    lint: "ensemble-type-mismatch",
    triton: "inconsistent data type: TYPE_INT32",
  },
  {
    model: "ens_shape_mismatch",
    files: ens("ens_shape_mismatch", step("fixed4", { INPUT0: "IN" }, { OUTPUT0: "OUT" }), {
      ios: ENS_IO.replace("[ -1 ]", "[ 3 ]").replace("[ -1 ]", "[ 4 ]"),
    }),
    lint: "ensemble-shape-mismatch",
    triton: "inconsistent shape: [-1,3]",
  },
  {
    model: "ens_cycle_a",
    files: ens("ens_cycle_a", step("ens_cycle_b", { IN: "IN" }, { OUT: "OUT" })),
    lint: "ensemble-cycle",
    triton: "circular dependency between ensembles",
  },
  {
    model: "ens_cycle_b",
    files: ens("ens_cycle_b", step("ens_cycle_a", { IN: "IN" }, { OUT: "OUT" })),
    lint: "ensemble-cycle",
    triton: "circular dependency between ensembles",
  },
  {
    model: "ens_no_steps",
    files: ens("ens_no_steps", ""),
    lint: "ensemble-no-steps",
    triton: "must specify 'step' for ensemble 'ens_no_steps'",
  },
  {
    model: "ens_optimization",
    files: ens("ens_optimization", echoStep, { more: "optimization { priority: PRIORITY_MAX }\n" }),
    lint: "ensemble-optimization",
    triton: "optimization should not be specified for ensemble 'ens_optimization'",
  },
  {
    model: "ens_warmup",
    files: ens("ens_warmup", echoStep, {
      more: 'model_warmup [ { name: "w" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]\n',
    }),
    lint: "ensemble-warmup",
    triton: "model_warmup can not be specified for ensemble 'ens_warmup'",
  },
  // Model files of backends the local runtime lacks: lint warns (the config may be meant for docker), and counts them
  // as not loading here
  {
    model: "plan_local",
    files: {
      "plan_local/config.pbtxt": `name: "plan_local"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n${ECHO_IO}`,
      "plan_local/1/model.plan": "not an engine",
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorrt'",
  },
  {
    model: "pytorch_no_file",
    files: {
      "pytorch_no_file/config.pbtxt": `name: "pytorch_no_file"\nbackend: "pytorch"\nmax_batch_size: 8\n${ECHO_IO}`,
      "pytorch_no_file/1/": "",
    },
    lint: "model-file-missing",
    triton: "unable to find backend library for backend 'pytorch'",
  },
  {
    model: "ens_runs_plan",
    files: ens("ens_runs_plan", step("plan_local", { INPUT0: "IN" }, { OUTPUT0: "OUT" })),
    lint: "ensemble-model-unavailable",
    triton: "depends on 'plan_local' which has no loaded version",
  },
  // Bytes that are not UTF-8: Triton's reader refuses them outside strings and comments
  {
    model: "utf8_bare",
    files: {
      "utf8_bare/config.pbtxt": bytes(pythonConfig("utf8_bare"), [0xff, 0x0a]),
      "utf8_bare/1/model.py": ECHO_MODEL_PY,
    },
    lint: "config-syntax",
    triton: "failed to read text proto",
  },
  {
    model: "utf8_in_string",
    files: {
      "utf8_in_string/config.pbtxt": bytes(
        pythonConfig("utf8_in_string"),
        'parameters { key: "k" value { string_value: "a',
        [0xff, 0xc3],
        'b" } }\n',
      ),
      "utf8_in_string/1/model.py": ECHO_MODEL_PY,
    },
    lint: "accepted",
  },
  {
    model: "utf8_in_comment",
    files: {
      "utf8_in_comment/config.pbtxt": bytes("# caf", [0xe9, 0x20, 0xff], "\n", pythonConfig("utf8_in_comment")),
      "utf8_in_comment/1/model.py": ECHO_MODEL_PY,
    },
    lint: "accepted",
  },
  // The sample repository (models/): the article's patterns as runnable models
  { model: "bert_tokenizer", files: sample("bert_tokenizer"), lint: "accepted" },
  { model: "image_classifier", files: sample("image_classifier"), lint: "accepted" },
  { model: "sentiment_classifier", files: sample("sentiment_classifier"), lint: "accepted" },
  { model: "sentiment_pipeline", files: sample("sentiment_pipeline"), lint: "accepted" },
  {
    model: "resnet50_fp16",
    files: sample("resnet50_fp16"),
    lint: "gpu-unavailable",
    triton: "specifies invalid or unsupported gpu id 0",
  },
  // The article's own configs, as its text writes them ("# ... input/output ..." elisions included)
  {
    model: "article_resnet50_naive",
    files: article("resnet50_fp16-naive.pbtxt", "article_resnet50_naive", {
      "article_resnet50_naive/1/model.plan": "plan",
    }),
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorrt'",
  },
  {
    model: "article_resnet50_batching",
    files: article("resnet50_fp16-dynamic-batching.pbtxt", "article_resnet50_batching", {
      "article_resnet50_batching/1/model.plan": "plan",
    }),
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorrt'",
  },
  {
    model: "article_resnet50_instances",
    files: article("resnet50_fp16-instances.pbtxt", "article_resnet50_instances"),
    lint: "backend-missing",
    triton: "Could not determine backend for model 'article_resnet50_instances'",
  },
  {
    model: "article_bert_large",
    files: article("bert_large.pbtxt", "article_bert_large"),
    lint: "platform-unknown",
    triton: "unexpected platform type 'onnxruntime'",
  },
  {
    model: "article_bert_tokenizer",
    files: article("bert_tokenizer.pbtxt", "article_bert_tokenizer", {
      "article_bert_tokenizer/1/model.py": ECHO_MODEL_PY,
    }),
    lint: "accepted",
  },
  {
    model: "article_sentiment_pipeline",
    files: article("sentiment_pipeline.pbtxt", "article_sentiment_pipeline"),
    lint: "ensemble-model-invalid",
    triton: "contains models that are not available or ambiguous: article_bert_large",
  },
  {
    model: "article_queue_policy",
    files: py(
      "article_queue_policy",
      pythonConfig("article_queue_policy", ECHO_IO, 64) +
        fs.readFileSync(path.join(ARTICLE_FIXTURES, "queue-policy-snippet.pbtxt"), "utf8"),
    ),
    lint: "accepted",
  },
  // Layouts users write. Measured on tritonserver 2.51 in explicit mode, as this harness runs it
  // (--disable-auto-complete-config) and with auto-complete on, as `up` starts it for a model without config.pbtxt;
  // the message below is this harness's, the other one is in the comment.
  {
    // Auto-complete on: READY, but with a config completed from model.py (no inputs or outputs), not the user's.
    model: "layout_config_in_version",
    files: {
      "layout_config_in_version/1/config.pbtxt": pythonConfig("layout_config_in_version"),
      "layout_config_in_version/1/model.py": ECHO_MODEL_PY,
    },
    lint: "config-in-version-folder",
    triton: "layout_config_in_version/config.pbtxt: No such file or directory",
  },
  {
    // Auto-complete on: READY with version 2 and a completed config, neither version's own.
    model: "layout_version_configs",
    files: {
      "layout_version_configs/1/config.pbtxt": pythonConfig("layout_version_configs", ECHO_IO, 1),
      "layout_version_configs/1/model.py": ECHO_MODEL_PY,
      "layout_version_configs/2/config.pbtxt": pythonConfig("layout_version_configs", ECHO_IO, 2),
      "layout_version_configs/2/model.py": ECHO_MODEL_PY,
    },
    lint: "config-in-version-folder",
    triton: "layout_version_configs/config.pbtxt: No such file or directory",
  },
  {
    // Auto-complete on: "Could not determine backend for model 'layout_py_only'" (it looks for 1/model.py).
    model: "layout_py_only",
    files: { "layout_py_only/model.py": ECHO_MODEL_PY, "layout_py_only/utils.py": "X = 1\n" },
    lint: "version-missing",
    triton: "layout_py_only/config.pbtxt: No such file or directory",
  },
  {
    model: "layout_py_top_level",
    files: {
      "layout_py_top_level/config.pbtxt": pythonConfig("layout_py_top_level"),
      "layout_py_top_level/model.py": ECHO_MODEL_PY,
    },
    lint: "version-missing",
    triton: "at least one version must be available under the version policy of model 'layout_py_top_level'",
  },
  {
    // Measured: the versions are counted before the backend is looked for, so the local runtime's missing
    // onnxruntime backend does not change the answer (docker's image, which has it, gives the same by that order).
    model: "layout_onnx_top_level",
    files: {
      "layout_onnx_top_level/config.pbtxt": `name: "layout_onnx_top_level"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ECHO_IO}`,
      "layout_onnx_top_level/model.onnx": "onnx",
    },
    lint: "version-missing",
    triton: "at least one version must be available under the version policy of model 'layout_onnx_top_level'",
  },
  {
    // Auto-complete on (as `up` starts it for this model): "unable to find backend library for backend
    // 'onnxruntime'", measured. With the onnxruntime backend (docker) Triton's documented autofill would take the
    // backend from 1/model.onnx and have the backend complete the config from the file; not run here (no
    // onnxruntime backend locally), so lint only says the local runtime cannot load it.
    model: "layout_onnx_no_config",
    files: { "layout_onnx_no_config/1/model.onnx": "onnx" },
    lint: "config-missing",
    triton: "layout_onnx_no_config/config.pbtxt: No such file or directory",
  },
  {
    // Auto-complete on: the same message.
    model: "ens_scheduling_only",
    files: {
      "ens_scheduling_only/config.pbtxt": `name: "ens_scheduling_only"\nensemble_scheduling {\n${echoStep}}\n`,
    },
    lint: "ensemble-platform",
    triton: "Could not determine backend for model 'ens_scheduling_only'",
  },
  {
    // A config.pbtxt in a version folder beside the model's own is ignored: Triton serves the top one.
    model: "layout_version_config_ignored",
    files: {
      "layout_version_config_ignored/config.pbtxt": pythonConfig("layout_version_config_ignored"),
      "layout_version_config_ignored/1/config.pbtxt": pythonConfig("layout_version_config_ignored", ECHO_IO, 1),
      "layout_version_config_ignored/1/model.py": ECHO_MODEL_PY,
    },
    lint: "accepted",
  },
  // The runtime field, GPU ids, ensembles fed from decoupled models
  {
    model: "runtime_missing",
    files: py("runtime_missing", pythonConfig("runtime_missing") + 'runtime: "libtriton_nope.so"\n'),
    lint: "runtime-missing",
    triton: "unable to find backend library 'libtriton_nope.so' for model 'runtime_missing'",
  },
  {
    // The python backend's own environment setting, naming a file the model folder does not hold.
    model: "execution_env_missing",
    files: py(
      "execution_env_missing",
      pythonConfig("execution_env_missing") +
        'parameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "$$TRITON_MODEL_DIRECTORY/python-3-11.tar.gz" } }\n',
    ),
    lint: "execution-env-missing",
    triton: "Failed to get the canonical path for",
  },
  {
    model: "runtime_escapes",
    files: py("runtime_escapes", pythonConfig("runtime_escapes") + 'runtime: "../python/libtriton_python.so"\n'),
    // Measured: Triton 2.51 takes the '..' as it comes and finds the library in the backend's folder, inside it.
    lint: "accepted",
  },
  {
    // Found from the version folder (1/../libtriton_python.so is the model folder's), which it leads out of.
    model: "runtime_escapes_version",
    files: {
      ...py("runtime_escapes_version", pythonConfig("runtime_escapes_version") + 'runtime: "../libtriton_python.so"\n'),
      "runtime_escapes_version/libtriton_python.so": "not a library: Triton refuses before it opens it",
    },
    lint: "runtime-escapes",
    triton: "backend library name '../libtriton_python.so' escapes backend directory",
  },
  {
    // In neither model folder (1/../python does not exist); from the backend's folder it leads to its parent.
    model: "runtime_escapes_backend",
    files: py("runtime_escapes_backend", pythonConfig("runtime_escapes_backend") + 'runtime: "../python/.."\n'),
    lint: "runtime-escapes",
    triton: "backend library name '../python/..' escapes backend directory",
  },
  {
    model: "runtime_ok",
    files: py("runtime_ok", pythonConfig("runtime_ok") + 'runtime: "libtriton_python.so"\n'),
    lint: "accepted",
  },
  {
    model: "gpu_minus_one",
    files: extra("gpu_minus_one", "instance_group [ { kind: KIND_GPU gpus: [ -1 ] } ]\n"),
    lint: "gpu-id-invalid",
    triton: "specifies invalid or unsupported gpu id -1",
  },
  { model: "dec_a", files: extra("dec_a", DECOUPLED), lint: "accepted" },
  { model: "dec_b", files: extra("dec_b", DECOUPLED), lint: "accepted" },
  {
    model: "ens_decoupled_mix",
    files: ens(
      "ens_decoupled_mix",
      step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "t_a" }) +
        step("dec_b", { INPUT0: "IN" }, { OUTPUT0: "t_b" }) +
        step("two_in", { INPUT0: "t_a", INPUT1: "t_b" }, { OUTPUT0: "OUT" }),
    ),
    lint: "ensemble-decoupled-origins",
    triton: "receives inputs originated from different decoupled models",
  },
  {
    // The origin carries through a step that is not decoupled itself.
    model: "ens_decoupled_mix_deep",
    files: ens(
      "ens_decoupled_mix_deep",
      step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "t_a" }) +
        step("ok_python", { INPUT0: "t_a" }, { OUTPUT0: "t_a2" }) +
        step("dec_b", { INPUT0: "IN" }, { OUTPUT0: "t_b" }) +
        step("two_in", { INPUT0: "t_a2", INPUT1: "t_b" }, { OUTPUT0: "OUT" }),
    ),
    lint: "ensemble-decoupled-origins",
    triton: "receives inputs originated from different decoupled models",
  },
  {
    // Measured: the ensemble's own input counts as an origin of its own.
    model: "ens_decoupled_and_request",
    files: ens(
      "ens_decoupled_and_request",
      step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "t_a" }) +
        step("two_in", { INPUT0: "t_a", INPUT1: "IN" }, { OUTPUT0: "OUT" }),
    ),
    lint: "ensemble-decoupled-origins",
    triton: "receives inputs originated from different decoupled models",
  },
  {
    // Two steps of one decoupled model are two origins: each step's responses arrive on their own.
    model: "ens_decoupled_same_twice",
    files: ens(
      "ens_decoupled_same_twice",
      step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "t_a" }) +
        step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "t_b" }) +
        step("two_in", { INPUT0: "t_a", INPUT1: "t_b" }, { OUTPUT0: "OUT" }),
    ),
    lint: "ensemble-decoupled-origins",
    triton:
      "in ensemble ens_decoupled_same_twice, step of model 'ens_decoupled_same_twice' receives inputs originated from different decoupled models",
  },
  {
    // The ensemble's outputs are held to the same rule, under the ensemble's own name.
    model: "ens_decoupled_outputs",
    files: ens(
      "ens_decoupled_outputs",
      step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "OUT" }) + step("dec_b", { INPUT0: "IN" }, { OUTPUT0: "OUT2" }),
      {
        ios: `${ENS_IO}output [ { name: "OUT2" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`,
      },
    ),
    lint: "ensemble-decoupled-origins",
    triton:
      "in ensemble ens_decoupled_outputs, step of model 'ens_decoupled_outputs' receives inputs originated from different decoupled models",
  },
  {
    // An ensemble with a decoupled step is decoupled itself to the ensembles that run it.
    model: "ens_inner_decoupled",
    files: ens("ens_inner_decoupled", step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "OUT" })),
    lint: "accepted",
  },
  {
    model: "ens_outer_of_decoupled",
    files: ens(
      "ens_outer_of_decoupled",
      step("ens_inner_decoupled", { IN: "IN" }, { OUT: "t_a" }) +
        step("two_in", { INPUT0: "t_a", INPUT1: "IN" }, { OUTPUT0: "OUT" }),
    ),
    lint: "ensemble-decoupled-origins",
    triton:
      "in ensemble ens_outer_of_decoupled, step of model 'ens_outer_of_decoupled' receives inputs originated from different decoupled models",
  },
  {
    model: "ens_decoupled_one",
    files: ens(
      "ens_decoupled_one",
      step("dec_a", { INPUT0: "IN" }, { OUTPUT0: "t_a" }) +
        step("ok_python", { INPUT0: "t_a" }, { OUTPUT0: "t_b" }) +
        step("two_in", { INPUT0: "t_a", INPUT1: "t_b" }, { OUTPUT0: "OUT" }),
    ),
    lint: "accepted",
  },
  // What runs a model whose config names neither platform nor backend (core's AutoCompleteBackendFields, which
  // runs with auto-complete off too): the first sub-folder's files, default_model_filename, then the model's name
  {
    // model.plan, model.pt and model.graphdef as folders and model.savedmodel as a file are passed over: python.
    model: "autofill_wrong_kinds",
    files: {
      "autofill_wrong_kinds/config.pbtxt": `name: "autofill_wrong_kinds"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_wrong_kinds/1/model.py": ECHO_MODEL_PY,
      "autofill_wrong_kinds/1/model.plan/": "",
      "autofill_wrong_kinds/1/model.pt/": "",
      "autofill_wrong_kinds/1/model.graphdef/": "",
      "autofill_wrong_kinds/1/model.savedmodel": "not a folder",
    },
    lint: "accepted",
  },
  {
    // TensorFlow is tried first: a model.savedmodel folder beside model.py makes it a TensorFlow model.
    model: "autofill_savedmodel",
    files: {
      "autofill_savedmodel/config.pbtxt": `name: "autofill_savedmodel"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_savedmodel/1/model.py": ECHO_MODEL_PY,
      "autofill_savedmodel/1/model.savedmodel/saved_model.pb": "pb",
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorflow'",
  },
  {
    model: "autofill_graphdef",
    files: {
      "autofill_graphdef/config.pbtxt": `name: "autofill_graphdef"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_graphdef/1/model.py": ECHO_MODEL_PY,
      "autofill_graphdef/1/model.graphdef": "graphdef",
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorflow'",
  },
  {
    // The platform Triton infers from 1/model.plan is tensorrt_plan, which may set profile.
    model: "autofill_plan_profile",
    files: {
      "autofill_plan_profile/config.pbtxt": `name: "autofill_plan_profile"\nmax_batch_size: 8\n${ECHO_IO}instance_group [ { kind: KIND_CPU profile: [ "0" ] } ]\n`,
      "autofill_plan_profile/1/model.plan": "plan",
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorrt'",
  },
  {
    // backend "tensorrt" alone: Triton fills in platform tensorrt_plan, and the profile is allowed.
    model: "backend_tensorrt_profile",
    files: {
      "backend_tensorrt_profile/config.pbtxt": `name: "backend_tensorrt_profile"\nbackend: "tensorrt"\nmax_batch_size: 8\n${ECHO_IO}instance_group [ { kind: KIND_CPU profile: [ "0" ] } ]\n`,
      "backend_tensorrt_profile/1/model.plan": "plan",
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorrt'",
  },
  {
    model: "autofill_python_profile",
    files: {
      "autofill_python_profile/config.pbtxt": `name: "autofill_python_profile"\nmax_batch_size: 8\n${ECHO_IO}instance_group [ { kind: KIND_CPU profile: [ "0" ] } ]\n`,
      "autofill_python_profile/1/model.py": ECHO_MODEL_PY,
    },
    lint: "instance-profile-platform",
    triton: "specifies profile field which is only supported for TensorRT models",
  },
  {
    // Measured with auto-complete off, as this harness runs; with it on, Triton asks the missing onnxruntime
    // backend to complete the config first and answers that it is not there.
    model: "autofill_onnx_shape_tensor",
    files: {
      "autofill_onnx_shape_tensor/config.pbtxt": `name: "autofill_onnx_shape_tensor"\nmax_batch_size: 8\n${ECHO_IO.replace("dims: [ -1 ] }", "dims: [ -1 ] is_shape_tensor: true }")}`,
      "autofill_onnx_shape_tensor/1/model.onnx": ECHO_ONNX,
    },
    lint: "shape-tensor-platform",
    triton: "shape tensors are only supported for TensorRT platform",
  },
  {
    // Triton looks into the first sub-folder in byte order, version or not: 0old/ before 1/.
    model: "autofill_first_folder",
    files: {
      "autofill_first_folder/config.pbtxt": `name: "autofill_first_folder"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_first_folder/0old/model.onnx": ECHO_ONNX,
      "autofill_first_folder/1/model.py": ECHO_MODEL_PY,
    },
    lint: "model-file-missing",
    triton: "unable to find backend library for backend 'onnxruntime'",
  },
  {
    model: "autofill_dmf_plan",
    files: {
      "autofill_dmf_plan/config.pbtxt": `name: "autofill_dmf_plan"\ndefault_model_filename: "model.plan"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_dmf_plan/1/model.plan": "plan",
      "autofill_dmf_plan/1/model.py": ECHO_MODEL_PY,
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'tensorrt'",
  },
  {
    // A default_model_filename no backend is known by, and nothing else named: Triton is left with no backend.
    model: "autofill_dmf_other",
    files: {
      "autofill_dmf_other/config.pbtxt": `name: "autofill_dmf_other"\ndefault_model_filename: "other.py"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_dmf_other/1/other.py": ECHO_MODEL_PY,
      "autofill_dmf_other/1/model.py": ECHO_MODEL_PY,
    },
    lint: "backend-missing",
    triton: "unexpected platform type '' for autofill_dmf_other",
  },
  {
    model: "autofill_nothing",
    files: {
      "autofill_nothing/config.pbtxt": `name: "autofill_nothing"\nmax_batch_size: 8\n${ECHO_IO}`,
      "autofill_nothing/1/weights.bin": "w",
    },
    lint: "backend-missing",
    triton:
      "Could not determine backend for model 'autofill_nothing' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'",
  },
  {
    // The model's name after its first '.' is the backend, and model.<backend> its file.
    model: "named.identity",
    files: {
      "named.identity/config.pbtxt": `name: "named.identity"\nmax_batch_size: 8\n${ECHO_IO}`,
      "named.identity/1/": "",
    },
    lint: "backend-unavailable",
    triton: "unable to find backend library for backend 'identity'",
  },
  {
    model: "named.python",
    files: {
      "named.python/config.pbtxt": `name: "named.python"\nmax_batch_size: 8\n${ECHO_IO}`,
      "named.python/1/model.python": ECHO_MODEL_PY,
    },
    lint: "python-model-filename",
    triton: "Model name must end with '.py'. Model name is \"model.python\"",
  },
  {
    model: "tensorflow_no_platform",
    files: {
      "tensorflow_no_platform/config.pbtxt": `name: "tensorflow_no_platform"\nbackend: "tensorflow"\nmax_batch_size: 8\n${ECHO_IO}`,
      "tensorflow_no_platform/1/model.py": ECHO_MODEL_PY,
    },
    lint: "platform-missing",
    triton: "unexpected 'platform' and 'backend' pair, got:, tensorflow",
  },
  // Accepted by Triton, so lint reports at most warnings
  { model: "ens_ok", files: ens("ens_ok", echoStep), lint: "accepted" },
  {
    model: "ens_version1",
    files: ens("ens_version1", step("ok_python", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "model_version: 1 ")),
    lint: "accepted",
  },
  { model: "ens_mbs0", files: ens("ens_mbs0", echoStep, { mbs: 0 }), lint: "accepted" },
  {
    model: "ens_dup_key",
    files: ens(
      "ens_dup_key",
      '  step { model_name: "two_in" model_version: -1 input_map { key: "INPUT0" value: "IN" } input_map { key: "INPUT1" value: "IN" } input_map { key: "INPUT1" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } }\n',
    ),
    lint: "accepted",
  },
  {
    model: "ens_overwrite_input",
    files: ens(
      "ens_overwrite_input",
      step("ok_python", { INPUT0: "IN" }, { OUTPUT0: "tmp" }) +
        step("ok_python", { INPUT0: "tmp" }, { OUTPUT0: "OUT" }) +
        step("ok_python", { INPUT0: "OUT" }, { OUTPUT0: "IN" }),
    ),
    lint: "accepted",
  },
  {
    model: "no_backend_autodetect",
    files: py("no_backend_autodetect", `name: "no_backend_autodetect"\nmax_batch_size: 8\n${ECHO_IO}`),
    lint: "accepted",
  },
  {
    model: "duplicate_input",
    files: io(
      "duplicate_input",
      ECHO_IO.replace("] } ]", '] }, { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]'),
    ),
    lint: "accepted",
  },
  {
    model: "platform_foo_python",
    files: py(
      "platform_foo_python",
      pythonConfig("platform_foo_python").replace('backend: "python"', 'platform: "foo"\nbackend: "python"'),
    ),
    lint: "accepted",
  },
  { model: "empty_name", files: py("empty_name", pythonConfig("x").replace('name: "x"\n', "")), lint: "accepted" },
  {
    model: "extra_version_dir",
    files: py("extra_version_dir", pythonConfig("extra_version_dir"), { "1": ECHO_MODEL_PY, abc: null }),
    lint: "accepted",
  },
  {
    model: "priority_without_levels",
    files: extra("priority_without_levels", "dynamic_batching { default_priority_level: 5 }\n"),
    lint: "accepted",
  },
  {
    model: "specific_missing",
    files: extra("specific_missing", "version_policy { specific { versions: [ 1, 3 ] } }\n"),
    lint: "accepted",
  },
  {
    model: "db_mbs0",
    files: py("db_mbs0", `${pythonConfig("db_mbs0", ECHO_IO, 0)}dynamic_batching { }\n`),
    lint: "accepted",
  },
  {
    model: "reshape_wild_ok",
    files: io(
      "reshape_wild_ok",
      ECHO_IO.replace("dims: [ -1 ]", "dims: [ 2, 4, -1, 6 ] reshape { shape: [ 8, -1, 1, 6 ] }"),
    ),
    lint: "accepted",
  },
  {
    model: "no_execute",
    files: py("no_execute", pythonConfig("no_execute"), {
      "1": "class TritonPythonModel:\n    def initialize(self, args):\n        pass\n",
    }),
    lint: "accepted",
  },
  // Stateful models: the control inputs of a sequence_batching block, as the stateful examples write them.
  { model: "sequence_ok", files: extra("sequence_ok", sequenceBatching()), lint: "accepted" },
  {
    model: "sequence_corrid_fp32",
    files: extra("sequence_corrid_fp32", sequenceBatching({ corrid: "TYPE_FP32" })),
    lint: "sequence-corrid-type",
    triton: "unexpected data type for control CONTROL_SEQUENCE_CORRID",
  },
  {
    model: "sequence_start_no_values",
    files: extra("sequence_start_no_values", sequenceBatching({ start: "" })),
    lint: "sequence-control-values",
    triton: "must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START",
  },
  {
    model: "sequence_start_twice",
    files: extra("sequence_start_twice", sequenceBatching({ endKind: "CONTROL_SEQUENCE_START" })),
    lint: "sequence-control-kind-twice",
    triton: "specifies multiple CONTROL_SEQUENCE_START tensors",
  },
];

/** The scaffold of `triton-dev init`, added by caseRepository through the real code. */
export const SCAFFOLD = "scaffolded";

/**
 * Every case in a fresh repository (removeTempRepos removes it), with the scaffold of
 * `triton-dev init`, linted as `up` on this GPU-less machine with the local runtime would check.
 */
export async function caseRepository(): Promise<{ repo: string; lint: LintResult }> {
  const repo = await tempRepo();
  for (const c of CASES) await writeFiles(repo, c.files);
  await scaffoldPythonModel(repo, SCAFFOLD);
  // As the harness runs Triton: auto-complete off (none of these models completes its config).
  const lint = await lintRepository(repo, {
    ...lintFacts("local"),
    gpuAvailable: false,
    gpuMissingSeverity: "error",
    autoComplete: false,
  });
  return { repo, lint };
}

/** An auto_complete_config body (indented for the class) in a model.py that otherwise echoes. */
function completing(body: string, header = ""): string {
  return `${header}import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
${body}

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())]) for r in requests]
`;
}
const ADDS_ECHO_IO = `        auto_complete_model_config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]})
        auto_complete_model_config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]})
        auto_complete_model_config.set_max_batch_size(8)
        return auto_complete_model_config`;

/**
 * Python models whose auto_complete_config Triton runs: served by a tritonserver with config
 * auto-complete on (as `up` starts it for them) and linted with it on, so lint runs each one's
 * auto_complete_config in the managed environment. Their lint side needs that environment, so
 * both sides are checked in agreement.integration.test.ts.
 */
export const AUTO_COMPLETE_CASES: Case[] = [
  {
    // No config.pbtxt: Triton takes the backend from 1/model.py and the rest from the function.
    model: "ac_no_config",
    files: { "ac_no_config/1/model.py": completing(ADDS_ECHO_IO) },
    lint: "accepted",
  },
  {
    // The file names no tensors; the function adds them, so the config Triton loads has them.
    model: "ac_with_config",
    files: {
      "ac_with_config/config.pbtxt": 'backend: "python"\n',
      "ac_with_config/1/model.py": completing(ADDS_ECHO_IO),
    },
    lint: "accepted",
  },
  {
    model: "ac_raises",
    files: { "ac_raises/1/model.py": completing('        raise ValueError("no shapes for this model")') },
    lint: "auto-complete-raised",
    triton: "no shapes for this model",
  },
  {
    // The backend's own ModelConfig refuses an input that contradicts the file's.
    model: "ac_conflict",
    files: {
      "ac_conflict/config.pbtxt": pythonConfig("ac_conflict"),
      "ac_conflict/1/model.py": completing(
        ADDS_ECHO_IO.replace('"TYPE_FP32", "dims": [-1]})\n', '"TYPE_INT32", "dims": [-1]})\n'),
      ),
    },
    lint: "auto-complete-raised",
    triton: "configuration expects datatype TYPE_FP32 for input 'INPUT0', model provides TYPE_INT32",
  },
  {
    model: "ac_import_fails",
    files: { "ac_import_fails/1/model.py": completing(ADDS_ECHO_IO, "import no_such_module_here\n") },
    lint: "auto-complete-raised",
    triton: "No module named 'no_such_module_here'",
  },
  {
    model: "ac_returns_none",
    files: { "ac_returns_none/1/model.py": completing("        return None") },
    lint: "auto-complete-invalid",
    triton: "must return a valid pb.ModelConfig object",
  },
  {
    model: "ac_bad_type",
    files: {
      "ac_bad_type/1/model.py": completing(
        ADDS_ECHO_IO.replace('"TYPE_FP32", "dims": [-1]})\n', '"TYPE_FLOAT", "dims": [-1]})\n'),
      ),
    },
    // Triton's words for a completed config it cannot read.
    lint: "auto-complete-invalid",
    triton: "model configuration is not provided for model 'ac_bad_type'",
  },
  {
    // Only the completed config has the error: lint points at model.py.
    model: "ac_completed_error",
    files: { "ac_completed_error/1/model.py": completing(ADDS_ECHO_IO.replace('"dims": [-1]})\n', '"dims": [0]})\n')) },
    lint: "dims-invalid",
    triton: "dimension must be integer >= 1, or -1",
  },
  {
    // No config.pbtxt and a name with a '.': Triton takes backend python and model.python from the name, and the
    // python backend refuses the file before any auto_complete_config could run.
    model: "ac_named.python",
    files: { "ac_named.python/1/model.python": completing(ADDS_ECHO_IO) },
    lint: "python-model-filename",
    triton: "Model name must end with '.py'. Model name is \"model.python\"",
    at: ".",
  },
  {
    model: "ac_hangs",
    files: { "ac_hangs/1/model.py": completing("        import time\n        time.sleep(3600)", "") },
    lint: "auto-complete-timeout",
    notServed: "measured: Triton 2.51 had not answered its load after 120 s (it waits on the stub without a limit)",
  },
];

/** AUTO_COMPLETE_CASES in a fresh repository, linted with auto-complete on (the completer is the caller's). */
export async function autoCompleteRepository(
  completer?: import("../../src/repo/auto-complete-run.js").ConfigCompleter,
): Promise<{ repo: string; lint: LintResult }> {
  const repo = await tempRepo();
  for (const c of AUTO_COMPLETE_CASES) await writeFiles(repo, c.files);
  const lint = await lintRepository(repo, {
    ...lintFacts("local"),
    gpuAvailable: false,
    gpuMissingSeverity: "error",
    autoComplete: true,
    ...(completer ? { completer } : {}),
  });
  return { repo, lint };
}
