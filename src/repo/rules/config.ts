import { codes, type RuleArea } from "./rule.js";

/**
 * Reading config.pbtxt and completing it as Triton would: the parser's findings, and a python
 * model's auto_complete_config.
 */
export const CONFIG_CODES = codes({
  "config-syntax": { severity: "error", description: "config.pbtxt is not valid protobuf text" },
  "config-template": {
    severity: "error",
    description: "config.pbtxt is a template with ${...} placeholders still to fill (tensorrtllm_backend's)",
  },
  "config-unknown-field": {
    severity: "error",
    description: "a field ModelConfig does not have (with the closest one when it is a typo)",
  },
  "config-enum": { severity: "error", description: "a value that is not one of the field's enum values" },
  "config-oneof": { severity: "error", description: "two fields of one oneof (only one may be set)" },
  "config-duplicate-field": { severity: "error", description: "a non-repeated field given twice" },
  "config-schema": { severity: "error", description: "a value of the wrong type for its field" },
  "config-unreadable": { severity: "error", description: "config.pbtxt cannot be read" },
  "config-missing": {
    severity: "error or warning",
    description: "no config.pbtxt, where Triton needs one (auto-complete off) or cannot complete one",
  },
  "auto-complete-not-run": {
    severity: "warning",
    description:
      "the config depends on model.py's auto_complete_config, not run: not asked (--run-model-code) or not walled in here",
  },
  "auto-complete-timeout": { severity: "error", description: "auto_complete_config did not return in time" },
  "auto-complete-raised": { severity: "error", description: "importing model.py or its auto_complete_config raised" },
  "auto-complete-invalid": { severity: "error", description: "auto_complete_config returned a config Triton refuses" },
  "auto-complete-off": {
    severity: "warning",
    description: "the config relies on auto-complete, which this run's Triton has off",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    config: typeof CONFIG_CODES;
  }
}

export const CONFIG: RuleArea<typeof CONFIG_CODES> = {
  area: "config",
  codes: CONFIG_CODES,
  rules: [],
  reportedBy: "the config parser (parse.ts) and lint.ts, which reads config.pbtxt and completes it as Triton would",
};
