import type { ManifestOptions } from "../../../src/k8s/manifests.js";

/** The article's setup: one GPU, poll every 30 s, models from a claim, a ServiceMonitor. */
export const BASE: ManifestOptions = {
  image: "nvcr.io/nvidia/tritonserver:24.10-py3",
  gpus: 1,
  pollSecs: 30,
  modelSource: { kind: "pvc", claimName: "triton-models" },
  shmSize: "1Gi",
  serviceMonitor: true,
};
