import { NGC_BACKENDS } from "../docker/facts.js";
import type { RuntimeFacts } from "../facts.js";

/** Triton in a Kubernetes cluster the user already has (`--context`). */
export const clusterFacts: RuntimeFacts = {
  backends: NGC_BACKENDS,
  missingBackend: (backend) => ({
    message: `backend '${backend}' is not in the cluster runtime's Triton image`,
    hint: "Use an image that contains this backend.",
  }),
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
