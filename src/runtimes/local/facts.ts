import type { RuntimeFacts } from "../facts.js";

/** The nvidia-pytriton wheel: tritonserver 2.51 with the python backend only, run as a process here. */
export const localFacts: RuntimeFacts = {
  backends: ["python"],
  tritonVersion: "2.51",
  missingBackend: (backend) => ({
    message: `backend '${backend}' is not in the local runtime, which has only the python backend and ensembles`,
    hint: "Serve with --runtime docker (the NGC image has the standard backends), or wrap the model in a python backend model.",
  }),
  backendLibraries: { python: ["libtriton_python.so"] },
  flags: [],
  sharesHostShm: true,
  buildsEnvironments: true,
  // Nothing to download, nothing to run beside it: what `auto` falls back to.
  auto: "fallback",
};
