import type { ModelLayout } from "./layout.js";

/**
 * The platform, backend and model file Triton settles on for a config before it validates it:
 * core's AutoCompleteBackendFields (model_config_utils.cc), which runs whether config
 * auto-complete is on or off (measured on tritonserver 2.51: a config naming no backend beside
 * 1/model.py loads with --disable-auto-complete-config). Every rule that depends on what runs the
 * model reads this, never the config's literal `platform`/`backend`: `backend: "tensorrt"` has
 * platform tensorrt_plan, and so has a config naming neither beside 1/model.plan.
 *
 * Triton looks into one folder only, the first sub-folder of the model in byte order (a std::set
 * of names: "10" before "9", "0old" before "1"), whether or not it is a version, and tries, in
 * this order: TensorFlow (model.savedmodel as a folder, then model.graphdef as a file, which wins
 * when both are there), TensorRT (model.plan, a file), ONNX Runtime (model.onnx, a file or a
 * folder), OpenVINO (model.xml), PyTorch (model.pt, a file), Python (model.py). A name given in
 * default_model_filename or platform picks the backend without looking. When nothing is named at
 * all and no file matches, the backend is the model's own name after its first '.' ("m.identity"
 * is served by backend "identity" from model.identity); a name without a '.' is Triton's "Could
 * not determine backend".
 */

export interface AutofilledBackend {
  /** The platform after autofill ("" when none: openvino, python and custom backends set none). */
  platform: string;
  /** The backend after autofill; "" when Triton can tell none (then `undetermined` or an unknown platform says why). */
  backend: string;
  /** The model file Triton hands the backend; "" when none is known. */
  defaultModelFilename: string;
  /** Where the backend came from when the config names neither platform nor backend: "1/model.plan", ... */
  inferredFrom?: string;
  /**
   * Triton cannot tell what runs the model. "name": nothing is named, no model file matches and
   * the model's name has no '.' ("Could not determine backend for model ..."); "file":
   * default_model_filename names a file no backend is known by, and nothing else is named
   * ("unexpected platform type ''"), as for a model name ending in its only '.'.
   */
  undetermined?: "name" | "file";
}

export const TF_SAVEDMODEL = { platform: "tensorflow_savedmodel", file: "model.savedmodel" } as const;
export const TF_GRAPHDEF = { platform: "tensorflow_graphdef", file: "model.graphdef" } as const;

/** The backends autofill knows by their model file, in the order it tries them after TensorFlow. */
const BY_FILE: ReadonlyArray<{ backend: string; platform?: string; file: string; fileOnly?: boolean }> = [
  { backend: "tensorrt", platform: "tensorrt_plan", file: "model.plan", fileOnly: true },
  { backend: "onnxruntime", platform: "onnxruntime_onnx", file: "model.onnx" },
  { backend: "openvino", file: "model.xml" },
  { backend: "pytorch", platform: "pytorch_libtorch", file: "model.pt", fileOnly: true },
  { backend: "python", file: "model.py" },
];

/** The model files autofill recognises, as `folder/file` examples for messages. */
export const AUTOFILL_FILE_NAMES: readonly string[] = [
  TF_SAVEDMODEL.file,
  TF_GRAPHDEF.file,
  ...BY_FILE.map((s) => s.file),
];

export interface BackendFields {
  platform: string;
  backend: string;
  defaultModelFilename: string;
}

export function autofillBackendFields(
  name: string,
  config: BackendFields,
  layout: Pick<ModelLayout, "firstSubdir">,
): AutofilledBackend {
  let { platform, backend, defaultModelFilename: file } = config;
  const first = layout.firstSubdir;
  const isDir = (f: string) => first?.entries.get(f)?.isDir === true;
  const isFile = (f: string) => first?.entries.get(f)?.isDir === false;
  const named = !config.platform && !config.backend;
  let from: string | undefined;
  const fromFile = (f: string) => `${first!.name}/${f}`;
  const fromName = () => `default_model_filename '${file}'`;
  const result = (): AutofilledBackend => ({
    platform,
    backend,
    defaultModelFilename: file,
    ...(named && backend && from ? { inferredFrom: from } : {}),
  });

  if (!platform && (!backend || backend === "tensorflow")) {
    if (file === TF_SAVEDMODEL.file || file === TF_GRAPHDEF.file) {
      platform = file === TF_SAVEDMODEL.file ? TF_SAVEDMODEL.platform : TF_GRAPHDEF.platform;
      from = fromName();
    } else if (!file && first) {
      if (isDir(TF_SAVEDMODEL.file)) {
        platform = TF_SAVEDMODEL.platform;
        from = fromFile(TF_SAVEDMODEL.file);
      }
      if (isFile(TF_GRAPHDEF.file)) {
        platform = TF_GRAPHDEF.platform;
        from = fromFile(TF_GRAPHDEF.file);
      }
    }
  }
  if (platform === TF_SAVEDMODEL.platform || platform === TF_GRAPHDEF.platform) {
    backend ||= "tensorflow";
    file ||= platform === TF_SAVEDMODEL.platform ? TF_SAVEDMODEL.file : TF_GRAPHDEF.file;
    return result();
  }

  for (const step of BY_FILE) {
    if (!backend) {
      if ((step.platform && platform === step.platform) || file === step.file) {
        backend = step.backend;
        if (file === step.file) from = fromName();
      } else if (!platform && !file && first && (step.fileOnly ? isFile(step.file) : first.entries.has(step.file))) {
        backend = step.backend;
        from = fromFile(step.file);
      }
    }
    if (backend === step.backend) {
      if (step.platform) platform ||= step.platform;
      file ||= step.file;
      return result();
    }
  }

  if (!backend && !platform && !file) {
    const dot = name.indexOf(".");
    if (dot < 0) return { platform, backend, defaultModelFilename: file, undetermined: "name" };
    backend = name.slice(dot + 1);
    file = `model.${backend}`;
    from = `the model's name '${name}' (the part after its first '.')`;
  }
  if (!backend && !platform) return { platform, backend, defaultModelFilename: file, undetermined: "file" };
  return result();
}
