import { backendHome } from "../ngc-images.js";
import type { AdaptedBackend, RuntimeFacts } from "../facts.js";

/**
 * Backends the local runtime serves through an adapter in Triton's python backend (their runtime
 * library in the model's environment): the one place that says which. Every other backend of
 * ngc-images.ts BACKEND_HOMES is named with the runtime and image that have it.
 */
export const LOCAL_ADAPTED: Readonly<Record<string, AdaptedBackend>> = {
  onnxruntime: { library: "ONNX Runtime", requirement: "onnxruntime==1.20.1", module: "onnxruntime" },
  openvino: { library: "OpenVINO", requirement: "openvino==2024.4.0", module: "openvino" },
  // torch is not installed for the model (hundreds of MB, and the CUDA build is the user's
  // choice): it comes from the model's requirements.txt or `setup --with-site-packages`.
  pytorch: { library: "PyTorch", requirement: "", module: "torch" },
};

export const LOCAL_ADAPTER_BACKENDS: readonly string[] = Object.keys(LOCAL_ADAPTED);

const servedHere = (): string =>
  LOCAL_ADAPTER_BACKENDS.length
    ? `python models, ensembles and, through adapters, ${LOCAL_ADAPTER_BACKENDS.join(", ")} models`
    : "python models and ensembles";

/** The nvidia-pytriton wheel: tritonserver 2.51 with the python backend, run as a process here. */
export const localFacts: RuntimeFacts = {
  backends: ["python", ...LOCAL_ADAPTER_BACKENDS],
  adaptedBackends: LOCAL_ADAPTED,
  tritonVersion: "2.51",
  missingBackend: (backend) => {
    const { where, image, home } = backendHome(backend);
    const flag = home && home.flavour !== "py3" ? ` --image ${image}` : "";
    return {
      message: `backend '${backend}' is not in the local runtime, which serves ${servedHere()}; ${where}`,
      hint: `Serve it there: \`triton-dev up --runtime docker${flag}\` (or --runtime kind${flag ? " with the same --image" : ""}); locally, only a python model doing the same work can stand in for it.`,
    };
  },
  backendLibraries: { python: ["libtriton_python.so"] },
  flags: [],
  sharesHostShm: true,
  buildsEnvironments: true,
  // Nothing to download, nothing to run beside it: what `auto` falls back to.
  auto: "fallback",
};
