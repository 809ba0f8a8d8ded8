import { ScalarType, toJson, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ModelConfigSchema, type ModelConfig } from "./gen/model_config_pb.js";

/**
 * A model configuration in Triton's JSON form: proto field names (`input`, `data_type`, `dims`),
 * enums by name, and 64-bit integers as JSON numbers, the way `GET /v2/models/{m}/config` and the
 * `config` parameter of the load API write it. Unlike the server's answer it holds only what the
 * file sets (no server-filled defaults), so it can be handed back to any Triton release's load API.
 * Fields not listed here (optimization details, sequence controls, ...) are still present at run
 * time under their proto names.
 */
export interface ModelConfigJson {
  name?: string;
  platform?: string;
  backend?: string;
  runtime?: string;
  version_policy?: {
    latest?: { num_versions?: number };
    all?: Record<string, never>;
    specific?: { versions?: number[] };
  };
  max_batch_size?: number;
  input?: ModelInputJson[];
  output?: ModelOutputJson[];
  batch_input?: Array<{ kind?: string; target_name?: string[]; data_type?: DataTypeName; source_input?: string[] }>;
  batch_output?: Array<{ target_name?: string[]; kind?: string; source_input?: string[] }>;
  optimization?: JsonObject;
  dynamic_batching?: DynamicBatchingJson;
  sequence_batching?: JsonObject;
  ensemble_scheduling?: { step?: EnsembleStepJson[]; max_inflight_responses?: number };
  instance_group?: InstanceGroupJson[];
  default_model_filename?: string;
  cc_model_filenames?: Record<string, string>;
  metric_tags?: Record<string, string>;
  parameters?: Record<string, { string_value?: string }>;
  model_warmup?: JsonObject[];
  model_operations?: { op_library_filename?: string[] };
  model_transaction_policy?: { decoupled?: boolean };
  model_repository_agents?: JsonObject;
  response_cache?: { enable?: boolean };
  model_metrics?: JsonObject;
}

export type DataTypeName =
  | "TYPE_INVALID"
  | "TYPE_BOOL"
  | "TYPE_UINT8"
  | "TYPE_UINT16"
  | "TYPE_UINT32"
  | "TYPE_UINT64"
  | "TYPE_INT8"
  | "TYPE_INT16"
  | "TYPE_INT32"
  | "TYPE_INT64"
  | "TYPE_FP16"
  | "TYPE_FP32"
  | "TYPE_FP64"
  | "TYPE_STRING"
  | "TYPE_BF16";

export interface ModelInputJson {
  name?: string;
  data_type?: DataTypeName;
  format?: "FORMAT_NONE" | "FORMAT_NHWC" | "FORMAT_NCHW";
  dims?: number[];
  reshape?: { shape?: number[] };
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface ModelOutputJson {
  name?: string;
  data_type?: DataTypeName;
  dims?: number[];
  reshape?: { shape?: number[] };
  label_filename?: string;
  is_shape_tensor?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface QueuePolicyJson {
  timeout_action?: "REJECT" | "DELAY";
  default_timeout_microseconds?: number;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

export interface DynamicBatchingJson {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number;
  preserve_ordering?: boolean;
  priority_levels?: number;
  default_priority_level?: number;
  default_queue_policy?: QueuePolicyJson;
  /** Keys are priority levels written as decimal strings (JSON object keys). */
  priority_queue_policy?: Record<string, QueuePolicyJson>;
}

export interface EnsembleStepJson {
  model_name?: string;
  model_version?: number;
  input_map?: Record<string, string>;
  output_map?: Record<string, string>;
  model_namespace?: string;
}

export interface InstanceGroupJson {
  name?: string;
  kind?: "KIND_AUTO" | "KIND_GPU" | "KIND_CPU" | "KIND_MODEL";
  count?: number;
  gpus?: number[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
  rate_limiter?: JsonObject;
  secondary_devices?: JsonObject[];
}

const INT64_TYPES = new Set<ScalarType>([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

function toNumber(v: JsonValue): JsonValue {
  if (typeof v !== "string") return v;
  const n = Number(v);
  // Beyond 2^53 a JSON number would silently lose digits; keep the exact string there.
  return Number.isSafeInteger(n) ? n : v;
}

/** Protobuf JSON writes 64-bit integers as strings; Triton rewrites them as numbers, and so do we. */
function fixInt64(desc: DescMessage, obj: JsonObject): void {
  for (const field of desc.fields) {
    const v = obj[field.name];
    if (v === undefined || v === null) continue;
    switch (field.fieldKind) {
      case "scalar":
        if (INT64_TYPES.has(field.scalar)) obj[field.name] = toNumber(v);
        break;
      case "list":
        if (!Array.isArray(v)) break;
        if (field.listKind === "scalar" && INT64_TYPES.has(field.scalar)) obj[field.name] = v.map(toNumber);
        else if (field.listKind === "message") {
          for (const item of v)
            if (item && typeof item === "object" && !Array.isArray(item)) fixInt64(field.message, item);
        }
        break;
      case "map":
        if (field.mapKind === "message" && v && typeof v === "object" && !Array.isArray(v)) {
          for (const item of Object.values(v)) {
            if (item && typeof item === "object" && !Array.isArray(item)) fixInt64(field.message, item);
          }
        }
        break;
      case "message":
        if (v && typeof v === "object" && !Array.isArray(v)) fixInt64(field.message, v);
        break;
      default:
        break;
    }
  }
}

export function toModelConfigJson(config: ModelConfig, { withDefaults = false } = {}): ModelConfigJson {
  // withDefaults: every field written out, as Triton hands a config to a backend (the python
  // backend's ModelConfig reads `input`, `output` and `max_batch_size` without checking they are there).
  const json = toJson(ModelConfigSchema, config, {
    useProtoFieldName: true,
    alwaysEmitImplicit: withDefaults,
  }) as JsonObject;
  fixInt64(ModelConfigSchema, json);
  return json as ModelConfigJson;
}
