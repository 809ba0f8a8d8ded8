import { backendHome, DEFAULT_IMAGE, NGC_BACKENDS } from "../ngc-images.js";
import type { RuntimeFacts } from "../facts.js";

/** `--cluster`'s default: one cluster per machine user, reused by every project when kept. */
export const DEFAULT_CLUSTER = "triton-dev";

/** Triton in a local kind cluster (its nodes are Docker containers). */
export const kindFacts: RuntimeFacts = {
  backends: NGC_BACKENDS,
  imageDecides: true,
  missingBackend: (backend, image) => {
    const { where, image: ref } = backendHome(backend, image);
    return {
      message: `backend '${backend}' is not in the kind runtime's image ${image ?? DEFAULT_IMAGE}; ${where}`,
      hint: `Serve it with that image: \`triton-dev up --runtime kind --image ${ref}\`.`,
    };
  },
  flags: ["image", "gpus", "shmSize", "cluster", "keepCluster", "nodeImage"],
  flagSpecs: {
    cluster: { usage: "--cluster <name>", help: `the kind cluster to create or use (default ${DEFAULT_CLUSTER})` },
    keepCluster: {
      usage: "--keep-cluster",
      help: "keep the cluster when the run ends (the next `up` then starts in seconds)",
    },
    nodeImage: {
      usage: "--node-image <image>",
      help: "the kind node image of a cluster this run creates (`kind create cluster --image`; default kind's own)",
    },
  },
  // The pod mounts the whole run folder at /models (settings.ts manifestOptions).
  stagingSeenAs: { repository: "/models/repository", store: "/models/store" },
};
