import path from "node:path";
import { autofillBackendFields } from "../autofill.js";
import { ENSEMBLE_PLATFORM } from "../backends.js";
import { scanModel } from "../layout.js";
import { type ParsedConfig, parseModelConfig } from "../parse.js";
import { Reporter } from "../rules/reporter.js";
import { type ModelIOReport, checkModelIO } from "./compare.js";

/** A model whose config names a backend, as Triton settles it, with what its backend completes. */
export interface BackendCompletion {
  /** The backend Triton runs it with (autofill.ts). */
  backend: string;
  /** The file each version folder holds for it: `default_model_filename`, else the backend's default. */
  modelFile: string;
  parsed: ParsedConfig;
  /** The config as the backend completes it from its model file; absent when none was read. */
  report?: ModelIOReport;
}

const DEFAULT_FILES: Record<string, string> = {
  onnxruntime: "model.onnx",
  openvino: "model.xml",
  pytorch: "model.pt",
};

/**
 * The config of the model folder `dir` as the onnxruntime or openvino backend completes it from
 * its model file, by the same rules lint judges it with (model-io/compare.ts checkModelIO): what
 * the local runtime's adapter (reload/backend-adapter.ts) stages for the python backend. `name` is
 * the model's own name (`dir` may be a snapshot named otherwise). Undefined when the config cannot
 * be parsed, is an ensemble's, or Triton cannot tell its backend.
 */
export async function backendCompletion(
  dir: string,
  name: string,
  autoComplete: boolean,
): Promise<BackendCompletion | undefined> {
  const layout = await scanModel(path.dirname(dir), path.basename(dir));
  // A folder without config.pbtxt is completed from its files, as Triton does with auto-complete on.
  if (layout.configText === undefined && (layout.configReadError || !autoComplete)) return undefined;
  const { parsed } = parseModelConfig(layout.configText ?? "", layout.configFile, { model: name });
  if (!parsed || parsed.config.platform === ENSEMBLE_PLATFORM) return undefined;
  const autofill = autofillBackendFields(name, parsed.config, layout);
  if (autofill.undetermined || !autofill.backend) return undefined;
  const report = await checkModelIO(
    { name, layout, parsed, options: { autoComplete }, autofill },
    new Reporter(name, parsed, layout.configFile),
  );
  return {
    backend: autofill.backend,
    modelFile: autofill.defaultModelFilename || DEFAULT_FILES[autofill.backend] || "",
    parsed,
    ...(report ? { report } : {}),
  };
}
