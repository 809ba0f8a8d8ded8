/**
 * NVIDIA's tritonserver images (NGC): the default image, each flavour's backends and the one table
 * of backend homes. Every runtime's facts word a missing backend from it (the docker, kind and
 * cluster runtimes run these images; the local runtime names them for what it lacks), so it lives
 * beside the runtimes, not in one of them. Import-free, as the facts that read it.
 */

/**
 * The docker, kind and cluster runtimes' image: Triton 2.51, the same release as the local
 * runtime's nvidia-pytriton 0.7.0.
 */
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

/**
 * NGC's tritonserver image flavours, the tag's part after the release (`24.10-py3`): the default
 * `py3` has the standard backends; vLLM and TensorRT-LLM come only in their own flavours, each
 * with the python backend beside it (vllm_backend's README, Triton's compatibility matrix).
 */
export const IMAGE_FLAVOURS = {
  py3: NGC_BACKENDS,
  "vllm-python-py3": ["python", "vllm"],
  "trtllm-python-py3": ["python", "tensorrtllm"],
} as const satisfies Record<string, readonly string[]>;

export type ImageFlavour = keyof typeof IMAGE_FLAVOURS;

/** Where a backend runs: the image flavour that has it, whether it needs a GPU, what it serves. */
export interface BackendHome {
  flavour: ImageFlavour;
  /** It cannot run without a GPU (TensorRT engines, vLLM, TensorRT-LLM). */
  gpu: boolean;
  /** What its models are, for messages ("TensorRT engines"). */
  what: string;
}

/**
 * The one table of backend homes: lint, `up`, `status` and `manifests` read it. Which of them the
 * local runtime serves is its facts' `backends` (local/facts.ts); every other one is named with
 * the runtime and image that have it.
 */
export const BACKEND_HOMES: Readonly<Record<string, BackendHome>> = {
  python: { flavour: "py3", gpu: false, what: "python models" },
  onnxruntime: { flavour: "py3", gpu: false, what: "ONNX models" },
  openvino: { flavour: "py3", gpu: false, what: "OpenVINO models" },
  pytorch: { flavour: "py3", gpu: false, what: "TorchScript models" },
  tensorflow: { flavour: "py3", gpu: false, what: "TensorFlow models" },
  tensorrt: { flavour: "py3", gpu: true, what: "TensorRT engines" },
  fil: { flavour: "py3", gpu: false, what: "forest models (FIL)" },
  dali: { flavour: "py3", gpu: false, what: "DALI pipelines" },
  identity: { flavour: "py3", gpu: false, what: "identity test models" },
  repeat: { flavour: "py3", gpu: false, what: "repeat test models" },
  square: { flavour: "py3", gpu: false, what: "square test models" },
  vllm: { flavour: "vllm-python-py3", gpu: true, what: "vLLM models" },
  tensorrtllm: { flavour: "trtllm-python-py3", gpu: true, what: "TensorRT-LLM models" },
};

/** The NGC image of a flavour, at the release of `base` (an NGC tritonserver tag) or of the default image. */
export function imageOfFlavour(flavour: ImageFlavour, base: string = DEFAULT_IMAGE): string {
  const release = /^(?:nvcr\.io\/)?nvidia\/tritonserver:(\d{2}\.\d{2})-/.exec(base)?.[1] ?? "24.10";
  return `nvcr.io/nvidia/tritonserver:${release}-${flavour}`;
}

/** The backends an image has, when it is an NGC tritonserver flavour; undefined for any other image. */
export function backendsOfImage(image: string): readonly string[] | undefined {
  const m = /^(?:nvcr\.io\/)?nvidia\/tritonserver:\d{2}\.\d{2}-(.+)$/.exec(image);
  if (!m) return undefined;
  return (IMAGE_FLAVOURS as Record<string, readonly string[]>)[m[1]!];
}

/**
 * Where `backend` runs, for a runtime that lacks it (`image`: the image it runs, where that
 * decides): the clause after "backend 'x' is not in ...", and the image that has it.
 */
export function backendHome(
  backend: string,
  image?: string,
): { where: string; image: string; home: BackendHome | undefined } {
  const home = BACKEND_HOMES[backend];
  if (!home)
    return {
      where:
        "it is no backend of NGC's tritonserver images: it runs only in an image built with it, passed as --image to the docker or kind runtime",
      image: "<an image with this backend>",
      home,
    };
  const ref = imageOfFlavour(home.flavour, image);
  const gpu = home.gpu ? ", on a machine with an NVIDIA GPU" : "";
  const defaultLacks = home.flavour === "py3" ? "" : ` (the default ${DEFAULT_IMAGE} has no ${backend} backend)`;
  return {
    where: `${home.what} run in the docker or kind runtime with the image ${ref}${defaultLacks}${gpu}`,
    image: ref,
    home,
  };
}
