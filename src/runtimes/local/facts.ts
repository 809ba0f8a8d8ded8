import { backendHome } from "../docker/facts.js";
import type { RuntimeFacts } from "../facts.js";

/**
 * Backends the local runtime serves through an adapter in Triton's python backend (their runtime
 * library in the model's environment): the one place that says which. Every other backend of
 * docker/facts.ts BACKEND_HOMES is named with the runtime and image that have it.
 */
export const LOCAL_ADAPTER_BACKENDS: readonly string[] = [];

const servedHere = (): string =>
  LOCAL_ADAPTER_BACKENDS.length
    ? `python models, ensembles and, through adapters, ${LOCAL_ADAPTER_BACKENDS.join(", ")} models`
    : "python models and ensembles";

/** The nvidia-pytriton wheel: tritonserver 2.51 with the python backend, run as a process here. */
export const localFacts: RuntimeFacts = {
  backends: ["python", ...LOCAL_ADAPTER_BACKENDS],
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
