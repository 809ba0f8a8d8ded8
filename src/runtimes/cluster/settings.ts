import path from "node:path";
import { UsageError } from "../../errors.js";
import { CONTAINER_MODELS, isDnsLabel, type ManifestOptions } from "../../k8s/manifests.js";
import { shmQuantity, type GpuRequest } from "../container-options.js";
import type { StartOptions } from "../driver.js";
import { RUN_LABEL } from "../clients/kubectl/run-label.js";

export { RUN_LABEL };

/** What the run creates, deleted by its label: namespaced, nothing else in the cluster is touched. */
export const OBJECT_KINDS = ["deployments", "services"] as const;

/**
 * The rights the runtime needs in the namespace, and nothing more (the README lists them as a
 * Role). `kubectl create` (never apply, so no patch), the poll of the Deployment and its pods,
 * `kubectl logs`, `port-forward` and `exec` (the repository sync), and the deletion by label
 * (`kubectl delete --wait` watches; the pod is force-deleted once Triton has unloaded everything).
 */
export const REQUIRED_RIGHTS: ReadonlyArray<{ verb: string; resource: string }> = [
  { verb: "create", resource: "deployments.apps" },
  { verb: "get", resource: "deployments.apps" },
  { verb: "list", resource: "deployments.apps" },
  { verb: "watch", resource: "deployments.apps" },
  { verb: "delete", resource: "deployments.apps" },
  { verb: "create", resource: "services" },
  { verb: "get", resource: "services" },
  { verb: "list", resource: "services" },
  { verb: "watch", resource: "services" },
  { verb: "delete", resource: "services" },
  { verb: "get", resource: "pods" },
  { verb: "list", resource: "pods" },
  { verb: "delete", resource: "pods" },
  { verb: "get", resource: "pods/log" },
  { verb: "create", resource: "pods/portforward" },
  { verb: "create", resource: "pods/exec" },
];

/** The run's Deployment and Service name: one per run, so two runs in one namespace never meet. */
export function objectName(runId: string): string {
  const name = `triton-dev-${runId.toLowerCase().replace(/[^a-z0-9-]/g, "-")}`.slice(0, 63).replace(/-+$/, "");
  return name;
}

export function parseNamespace(value: string): string {
  const v = value.trim();
  if (!isDnsLabel(v))
    throw new UsageError(
      `--namespace must be a Kubernetes namespace name (lowercase letters, digits and '-', at most 63); got '${value}'`,
      {
        hint: "For example --namespace ml-dev; `kubectl get namespaces` lists them.",
      },
    );
  return v;
}

/** Kubernetes hands out GPUs by count. */
export function clusterGpus(g: GpuRequest): number {
  switch (g.kind) {
    case "none":
      return 0;
    case "count":
      return g.count;
    case "all":
      throw new UsageError("--gpus all cannot be honoured by the cluster runtime: a pod asks for GPUs by count", {
        hint: "Use --gpus N (the nvidia.com/gpu the pod requests) or --gpus none.",
      });
    case "devices":
      throw new UsageError(
        `--gpus device=${g.ids.join(",")} cannot be honoured by the cluster runtime: Kubernetes hands out GPUs by count`,
        { hint: "Use --gpus N or --gpus none." },
      );
  }
}

export interface ClusterManifestInput {
  image: string;
  gpus: number;
  shmBytes: number;
}

/**
 * The renderer's options for one run: the article's Deployment in poll mode, its repository an
 * emptyDir filled by the sync (the run folder's `repository/`, `store/` and `key/`), no Namespace
 * (the user's exists) and no ServiceMonitor (its CRD is cluster-wide, and the run is short-lived).
 */
export function clusterManifestOptions(o: StartOptions, k: ClusterManifestInput): ManifestOptions {
  return {
    name: objectName(o.runId),
    image: k.image,
    gpus: k.gpus,
    pollSecs: o.pollSecs,
    // Explicit mode would ask Triton to load before the sync has copied the edit; poll mode lets
    // Triton find it once it is there.
    modelControlMode: "poll",
    modelSource: { kind: "sync", repositorySubdir: path.relative(o.runDir, o.repository).split(path.sep).join("/") },
    shmSize: shmQuantity(k.shmBytes),
    repositoryKey: {
      header: o.repositoryKey.header,
      keyDir: path.posix.join(CONTAINER_MODELS, path.relative(o.runDir, o.repositoryKey.dir).split(path.sep).join("/")),
    },
    serviceMonitor: false,
    labels: { [RUN_LABEL]: o.runId },
    logInfo: true,
    exitTimeoutSecs: 10,
  };
}
