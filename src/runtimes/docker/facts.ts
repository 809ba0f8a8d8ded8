import type { RuntimeFacts } from "../facts.js";

/** The docker and kind runtimes' image: Triton 2.51, the same release as the local runtime's nvidia-pytriton 0.7.0. */
export const DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3";

/** The NGC `-py3` image's backends (the docker, kind and cluster runtimes run it). */
export const NGC_BACKENDS = [
  "python",
  "onnxruntime",
  "tensorrt",
  "pytorch",
  "tensorflow",
  "openvino",
  "fil",
  "dali",
  "identity",
  "repeat",
  "square",
] as const;

/** Triton in a container of the NGC image (or a compatible one). */
export const dockerFacts: RuntimeFacts = {
  backends: NGC_BACKENDS,
  missingBackend: (backend) => ({
    message: `backend '${backend}' is not in the docker runtime's Triton image`,
    hint: "Use an image that contains this backend.",
  }),
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
