import { backendHome, DEFAULT_IMAGE, NGC_BACKENDS } from "../ngc-images.js";
import type { RuntimeFacts } from "../facts.js";

/** Triton in a Kubernetes cluster the user already has (`--context`). */
export const clusterFacts: RuntimeFacts = {
  backends: NGC_BACKENDS,
  imageDecides: true,
  missingBackend: (backend, image) => {
    const { where, image: ref } = backendHome(backend, image);
    return {
      message: `backend '${backend}' is not in the cluster runtime's image ${image ?? DEFAULT_IMAGE}; ${where}`,
      hint: `Serve it with that image: \`triton-dev up --runtime cluster --context <context> --image ${ref}\`.`,
    };
  },
  flags: ["image", "gpus", "shmSize", "context", "namespace"],
  flagSpecs: {
    context: { usage: "--context <name>", help: "the kubeconfig context of the cluster to run Triton in (required)" },
    namespace: {
      usage: "--namespace <ns>",
      help: "the namespace to create the run's Deployment and Service in (default: the context's, else default)",
    },
  },
  // The run folder's copy in the pod's volume, at /models (sync.ts).
  stagingSeenAs: { repository: "/models/repository", store: "/models/store" },
};
