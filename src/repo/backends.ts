/**
 * What Triton knows about platforms, backends and their model files (core's constants.h and
 * AutoCompleteBackendFields). Which backends each of our runtimes has is in runtimes/kinds.ts.
 */

export const ENSEMBLE_PLATFORM = "ensemble";

/** Platform -> the backend that serves it and the file a version directory must hold. */
export const PLATFORMS: Record<string, { backend: string; file: string; fileIsDir?: boolean }> = {
  tensorrt_plan: { backend: "tensorrt", file: "model.plan" },
  onnxruntime_onnx: { backend: "onnxruntime", file: "model.onnx" },
  pytorch_libtorch: { backend: "pytorch", file: "model.pt" },
  tensorflow_savedmodel: { backend: "tensorflow", file: "model.savedmodel", fileIsDir: true },
  tensorflow_graphdef: { backend: "tensorflow", file: "model.graphdef" },
};

/** Backend -> its default model file, where Triton or the backend has one. */
export const BACKENDS: Record<string, { file?: string; fileIsDir?: boolean }> = {
  python: { file: "model.py" },
  onnxruntime: { file: "model.onnx" },
  tensorrt: { file: "model.plan" },
  pytorch: { file: "model.pt" },
  tensorflow: {},
  openvino: { file: "model.xml" },
  // These take their model from parameters or their own layout.
  fil: {},
  dali: {},
  vllm: {},
  tensorrtllm: {},
  identity: {},
  repeat: {},
  square: {},
};

/** Backends whose platform/backend pair Triton checks (GetBackendType): the rest accept any platform. */
export const TYPED_BACKENDS = new Set(["tensorrt", "onnxruntime", "pytorch", "tensorflow"]);

/** Config fields added after Triton 2.51 (source-map paths with indices and keys removed). */
export const FIELDS_AFTER_2_51 = ["model_metrics", "ensemble_scheduling.max_inflight_responses"] as const;

/**
 * The backend Triton would use for a config, mirroring AutoCompleteBackendFields as far as it can
 * be told without the version directory: an explicit backend, else the platform's.
 */
export function effectiveBackend(platform: string, backend: string): string | undefined {
  if (backend) return backend;
  return PLATFORMS[platform]?.backend;
}

/** The file each version directory must hold, or undefined when the backend decides. */
export function defaultModelFile(
  platform: string,
  backend: string,
  defaultModelFilename: string,
): { file: string; isDir?: boolean } | undefined {
  if (defaultModelFilename) return { file: defaultModelFilename };
  const p = PLATFORMS[platform];
  if (p) return { file: p.file, ...(p.fileIsDir ? { isDir: true } : {}) };
  const b = BACKENDS[backend];
  if (b?.file) return { file: b.file, ...(b.fileIsDir ? { isDir: true } : {}) };
  return undefined;
}
