/**
 * The runtimes this build knows, and the facts about each that need no runtime code loaded: lint
 * reads them to judge a repository for a runtime, the CLI to describe flags. Kept free of imports
 * so that any room may use it; everything else about a runtime lives behind its driver.
 */

export const RUNTIME_KINDS = ["local", "docker", "kind", "cluster"] as const;

/** The docker and kind runtimes' image: Triton 2.51, the same release as the local runtime's nvidia-pytriton 0.7.0. */
export const DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3";
/** `--cluster`'s default: one cluster per machine user, reused by every project when kept. */
export const DEFAULT_CLUSTER = "triton-dev";
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

/** `up`'s flags that only some runtimes take (the runtime's driver parses them). */
export interface RuntimeFlags {
  image?: string | undefined;
  gpus?: string | undefined;
  shmSize?: string | undefined;
  monitoring?: boolean | undefined;
  cluster?: string | undefined;
  keepCluster?: boolean | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

export const RUNTIME_FLAG_NAMES: Record<keyof RuntimeFlags, string> = {
  image: "--image",
  gpus: "--gpus",
  shmSize: "--shm-size",
  monitoring: "--monitoring",
  cluster: "--cluster",
  keepCluster: "--keep-cluster",
  context: "--context",
  namespace: "--namespace",
};

/** The NGC `-py3` image's backends (docker and kind run it). */
const NGC_BACKENDS = [
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

export interface RuntimeFacts {
  /** Backends it can load besides ensembles. */
  backends: readonly string[];
  /** The Triton release it always runs; undefined when the image decides. */
  tritonVersion?: string;
  /** What a user reads when a model's backend is not there, and what to do about it. */
  missingBackend: (backend: string) => { message: string; hint: string };
  /**
   * The libraries each backend's folder holds, where the runtime fixes them (a model's `runtime`
   * field must name one of its backend's); absent where the image decides.
   */
  backendLibraries?: Readonly<Record<string, readonly string[]>>;
  /** `up`'s flags it takes. */
  flags: readonly (keyof RuntimeFlags)[];
  /**
   * Where its Triton sees the run's staging repository and snapshot store, when not at their
   * paths on this machine (a container's mounts): Triton's messages name these paths.
   */
  stagingSeenAs?: { repository: string; store: string };
  /** Its Triton opens this machine's /dev/shm (no container between), so perf's shared memory regions reach it. */
  sharesHostShm?: true;
  /** A python model's requirements.txt gets an environment built for it (envs/); elsewhere the image's Python. */
  buildsEnvironments?: true;
}

export const RUNTIME_FACTS: Record<RuntimeKind, RuntimeFacts> = {
  // The nvidia-pytriton wheel: tritonserver 2.51 with the python backend only.
  local: {
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
  },
  docker: {
    backends: NGC_BACKENDS,
    missingBackend: (backend) => ({
      message: `backend '${backend}' is not in the docker runtime's Triton image`,
      hint: "Use an image that contains this backend.",
    }),
    flags: ["image", "gpus", "shmSize", "monitoring"],
    // The container's mounts (docker/settings.ts CONTAINER_REPOSITORY and CONTAINER_STORE).
    stagingSeenAs: { repository: "/models", store: "/store" },
  },
  kind: {
    backends: NGC_BACKENDS,
    missingBackend: (backend) => ({
      message: `backend '${backend}' is not in the kind runtime's Triton image`,
      hint: "Use an image that contains this backend.",
    }),
    flags: ["image", "gpus", "shmSize", "cluster", "keepCluster"],
    // The pod mounts the whole run folder at /models (kind/settings.ts manifestOptions).
    stagingSeenAs: { repository: "/models/repository", store: "/models/store" },
  },
  cluster: {
    backends: NGC_BACKENDS,
    missingBackend: (backend) => ({
      message: `backend '${backend}' is not in the cluster runtime's Triton image`,
      hint: "Use an image that contains this backend.",
    }),
    flags: ["image", "gpus", "shmSize", "context", "namespace"],
    // The run folder's copy in the pod's volume, at /models (cluster/sync.ts).
    stagingSeenAs: { repository: "/models/repository", store: "/models/store" },
  },
};

/** Which runtimes take a flag, for messages like "--cluster only applies to the kind runtime". */
export function runtimesTaking(flag: keyof RuntimeFlags): RuntimeKind[] {
  return RUNTIME_KINDS.filter((k) => RUNTIME_FACTS[k].flags.includes(flag));
}
