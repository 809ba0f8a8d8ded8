import type { RuntimeFacts } from "../facts.js";
import { backendHome, DEFAULT_IMAGE, NGC_BACKENDS } from "../ngc-images.js";

// kinds.ts re-exports the image table from here for lint, `up` and `manifests`.
export { DEFAULT_IMAGE, BACKEND_HOMES, backendHome, backendsOfImage, imageOfFlavour } from "../ngc-images.js";
export type { BackendHome, ImageFlavour } from "../ngc-images.js";

/** Triton in a container of the NGC image (or a compatible one). */
export const dockerFacts: RuntimeFacts = {
  backends: NGC_BACKENDS,
  imageDecides: true,
  missingBackend: (backend, image) => {
    const { where, image: ref } = backendHome(backend, image);
    return {
      message: `backend '${backend}' is not in the docker runtime's image ${image ?? DEFAULT_IMAGE}; ${where}`,
      hint: `Serve it with that image: \`triton-dev up --runtime docker --image ${ref}\`.`,
    };
  },

  flags: ["image", "gpus", "shmSize", "monitoring"],
  flagSpecs: {
    image: { usage: "--image <ref>", help: `the Triton image (default ${DEFAULT_IMAGE})` },
    gpus: {
      usage: "--gpus <which>",
      help: "all, a count, device=0,1 (docker) or none (default: all when Docker has the NVIDIA runtime; cluster: none)",
    },
    shmSize: { usage: "--shm-size <size>", help: "/dev/shm for the python backend (default 1g)" },
    monitoring: { usage: "--monitoring", help: "Prometheus and Grafana beside Triton, with the article's dashboard" },
  },
  // The container's mounts (settings.ts CONTAINER_REPOSITORY and CONTAINER_STORE).
  stagingSeenAs: { repository: "/models", store: "/store" },
  auto: "probe",
};
