import { codes, type RuleArea } from "./rule.js";

/**
 * The model file read against the config: ONNX and OpenVINO files walked on the wire, TorchScript's naming rules.
 */
export const MODEL_IO_CODES = codes({
  "model-io-count": {
    severity: "error",
    description: "the config lists more or fewer inputs than the model file has (onnxruntime, openvino)",
  },
  "model-io-missing": {
    severity: "warning",
    description: "the model file has an input or output the config does not list",
  },
  "model-io-unknown": {
    severity: "error",
    description: "the config lists an input or output the model file does not have",
  },
  "model-io-data-type": {
    severity: "error",
    description: "a data type that differs from the model file's, or one Triton cannot serve",
  },
  "model-io-dims": { severity: "error", description: "dims that differ from the model file's" },
  "model-io-batch-dim": {
    severity: "error",
    description: "max_batch_size > 0 where the model file's tensors have no batch dimension",
  },
  "model-io-empty": { severity: "warning", description: "a model file that declares no inputs or no outputs" },
  "onnx-invalid": { severity: "error", description: "an ONNX file onnxruntime cannot parse" },
  "openvino-invalid": { severity: "error", description: "an OpenVINO IR OpenVINO cannot read" },
  "onnx-external-data-missing": {
    severity: "error",
    description: "an ONNX file whose external weights file is not there",
  },
  "model-file-not-checked": {
    severity: "warning",
    description: "the config's tensors are not checked against a model file lint cannot read",
  },
  "torchscript-io-missing": {
    severity: "error",
    description: "a TorchScript model whose config lists no inputs or no outputs",
  },
  "torchscript-input-name": {
    severity: "error or warning",
    description: "a TorchScript input name that is neither forward()'s argument nor NAME__index",
  },
  "torchscript-output-name": {
    severity: "error",
    description: "a TorchScript output name not of the form NAME__index",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    "model-io": typeof MODEL_IO_CODES;
  }
}

export const MODEL_IO: RuleArea<typeof MODEL_IO_CODES> = {
  area: "model-io",
  codes: MODEL_IO_CODES,
  rules: [],
  reportedBy: "model-io/compare.ts (the model file read against the config), after the model's own rules",
};
