/**
 * CONTRACT (owned by the manifests work; the kind runtime consumes it). Implementation pending.
 * Renders the article's Kubernetes Deployment (poll-mode model control, probes, GPU limits) and
 * what goes with it, for `triton-dev manifests` (a real cluster) and the kind runtime.
 */

/** Where the pod's /models comes from. */
export type ModelSource =
  /** A directory on the node (kind: the host's staging repository mounted into the node). */
  | { kind: "hostPath"; path: string }
  /** A PersistentVolumeClaim the user provides (a real cluster). */
  | { kind: "pvc"; claimName: string; subPath?: string }
  /** The article's git-sync sidecar. */
  | { kind: "git"; repo: string; branch: string; subdir?: string; periodSecs: number };

export interface ManifestOptions {
  /** Deployment and Service name; default "triton-inference-server" (the article's). */
  name?: string;
  /** When set, every namespaced object carries it and a Namespace object is rendered first. */
  namespace?: string;
  image: string;
  /** 0: no nvidia.com/gpu limit. */
  gpus: number;
  /** "nvidia" on kind with GPUs (the RuntimeClass kind-config/ installs). */
  runtimeClassName?: string;
  pollSecs: number;
  modelSource: ModelSource;
  /** requests = limits, as in the article; omitted keys are not rendered. */
  resources?: { cpu?: string; memory?: string };
  /** Size of the memory-backed emptyDir mounted at /dev/shm (python backend); e.g. "1Gi". */
  shmSize: string;
  /**
   * Restrict Triton's model-repository API to a key kept in a Secret (exposed to the container
   * as an env var and expanded in args). `value` given: the Secret is rendered too; otherwise the
   * user creates it.
   */
  repositoryKey?: { header: string; secretName: string; value?: string };
  serviceMonitor: boolean;
  /** Added to every object's metadata.labels (e.g. the run id). */
  labels?: Record<string, string>;
  imagePullPolicy?: "IfNotPresent" | "Always" | "Never";
  /** Extra tritonserver flags appended after ours. */
  extraArgs?: string[];
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

export const DEFAULT_NAME = "triton-inference-server";
/** The label selecting Triton's pods (the article's). */
export const APP_LABEL = { app: "triton" } as const;
export const MANAGED_BY = { "app.kubernetes.io/managed-by": "triton-dev" } as const;

export function renderManifests(_o: ManifestOptions): K8sObject[] {
  throw new Error("not implemented yet");
}

/** Multi-document YAML, `---` between objects. */
export function toYaml(_objects: K8sObject[]): string {
  throw new Error("not implemented yet");
}
