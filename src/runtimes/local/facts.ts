import type { RuntimeFacts } from "../facts.js";

/** The nvidia-pytriton wheel: tritonserver 2.51 with the python backend only, run as a process here. */
export const localFacts: RuntimeFacts = {
  // onnxruntime, openvino and pytorch (TorchScript) through the python backend running their own runtime library
  // (reload/adapters/): the C++ backends are not in the wheel.
  backends: ["python", "onnxruntime", "openvino", "pytorch"],
  adaptedBackends: {
    onnxruntime: { library: "ONNX Runtime", requirement: "onnxruntime==1.20.1", module: "onnxruntime" },
    openvino: { library: "OpenVINO", requirement: "openvino==2024.4.0", module: "openvino" },
    // torch is not installed for the model (hundreds of MB, and the CUDA build is the user's
    // choice): it comes from the model's requirements.txt or `setup --with-site-packages`.
    pytorch: { library: "PyTorch", requirement: "", module: "torch" },
  },
  tritonVersion: "2.51",
  missingBackend: (backend) => ({
    message: `backend '${backend}' is not in the local runtime, which has the python backend, ensembles, and onnxruntime, openvino and pytorch models served through the python backend`,
    hint: "Serve with --runtime docker (the NGC image has the standard backends), or wrap the model in a python backend model.",
  }),
  backendLibraries: { python: ["libtriton_python.so"] },
  flags: [],
  sharesHostShm: true,
  buildsEnvironments: true,
  // Nothing to download, nothing to run beside it: what `auto` falls back to.
  auto: "fallback",
};
