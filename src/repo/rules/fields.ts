/**
 * Lint rules, area `fields`: fields Triton takes apart from the rest: fields newer than the
 * runtime's Triton, model metrics, and keys given twice in a map.
 */
import { FIELDS_AFTER_2_51 } from "../backends.js";
import type { ModelContext, Reporter } from "./reporter.js";
import { seenAsModel, codes, type ModelRule, type RuleArea } from "./rule.js";

export const FIELDS_CODES = codes({
  "field-newer-than-runtime": {
    severity: "error",
    description: "a field newer than the runtime's Triton (2.51), which rejects the config",
  },
  "metrics-identifier": { severity: "error", description: "a model_metrics control without metric_identifier" },
  "metrics-histogram": { severity: "error", description: "a model_metrics control without histogram_options" },
  "map-duplicate-key": { severity: "warning", description: "a key given twice in a map field; only the last is kept" },
});

declare module "./codes.js" {
  interface CodeTables {
    fields: typeof FIELDS_CODES;
  }
}

/**
 * A runtime pinned to Triton 2.51 (the local one) rejects these outright, so the config cannot
 * load there: an error. Where the image decides the release, nothing is known to reject them.
 */
function checkNewerFields(ctx: ModelContext, r: Reporter): void {
  const runtime = ctx.options.server?.runtime;
  const version = ctx.options.server?.tritonVersion;
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

export const NEWER_FIELDS_RULE: ModelRule = {
  name: "fields newer than the runtime",
  applies: seenAsModel,
  check: checkNewerFields,
};
export const MODEL_METRICS_RULE: ModelRule = { name: "model metrics", applies: seenAsModel, check: checkModelMetrics };
export const DUPLICATE_KEYS_RULE: ModelRule = { name: "map keys", applies: seenAsModel, check: checkDuplicateKeys };

export const FIELDS: RuleArea<typeof FIELDS_CODES> = {
  area: "fields",
  codes: FIELDS_CODES,
  rules: [NEWER_FIELDS_RULE, MODEL_METRICS_RULE, DUPLICATE_KEYS_RULE],
};
