import { createHash } from "node:crypto";
import path from "node:path";
import { BugError, UsageError } from "../../errors.js";
import { shmQuantity, type GpuRequest } from "../container-options.js";
import type { StartOptions } from "../driver.js";
import { MANAGED_NODE_LABEL } from "./kind-config.js";
import { CONTAINER_MODELS, type ManifestOptions } from "../../k8s/manifests.js";

import { DEFAULT_CLUSTER } from "./facts.js";
import { RUN_LABEL } from "../clients/kubectl/run-label.js";

export { DEFAULT_CLUSTER };
export { RUN_LABEL, runSelector } from "../clients/kubectl/run-label.js";
export { shmQuantity };
/** Every object of ours lives here, so a kept cluster's other namespaces are never touched. */
export const NAMESPACE = "triton-dev";

/** Node labels (kind-config/ puts the first on the worker; we add the others after creation). */
export const NODE_LABEL = {
  /** The node is ours: a cluster without it on any node is never used or removed. */
  managed: Object.keys(MANAGED_NODE_LABEL)[0] as keyof typeof MANAGED_NODE_LABEL,
  /** "true": `--keep-cluster` asked for it to outlive runs; `down` then leaves it alone. */
  keep: "triton-dev.io/keep-cluster",
} as const;
/** On every object we apply: what `stop` and `down` delete by. */
/** What kind puts on its node containers (docker labels). */
export const KIND_CLUSTER_LABEL = "io.x-k8s.kind.cluster";
export const KIND_ROLE_LABEL = "io.x-k8s.kind.role";

/** Object kinds we apply besides the Namespace, which is shared and goes with the cluster. */
export const OBJECT_KINDS = ["deployments", "services", "secrets"] as const;
export const SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com";

/** How long `kind create cluster` may wait for the control plane. */
export const CREATE_WAIT = "120s";

export function contextOf(cluster: string): string {
  return `kind-${cluster}`;
}

/** kind's own rule for cluster names (it becomes part of container and context names). */
export function parseClusterName(value: string): string {
  const v = value.trim();
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v) || v.length > 50) {
    throw new UsageError(
      `--cluster must be a kind cluster name (lowercase letters, digits and '-', at most 50); got '${value}'`,
      {
        hint: `For example --cluster ${DEFAULT_CLUSTER} (the default) or --cluster triton-dev-gpu.`,
      },
    );
  }
  return v;
}

/**
 * `--node-image`: the node image of every node of a cluster this run creates (kind's own default
 * when absent). A reference as `docker` takes it: no spaces, no empty name.
 */
export function parseNodeImage(value: string): string {
  const v = value.trim();
  if (!v || /\s/.test(v) || !/^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/.test(v)) {
    throw new UsageError(`--node-image must be an image reference; got '${value}'`, {
      hint: "For example --node-image kindest/node:v1.34.0 (an image the Docker daemon has or can pull).",
    });
  }
  return v;
}

/**
 * kind asks for GPUs per pod as a count of `nvidia.com/gpu`: `all` becomes every GPU the node
 * offers (known once the device plugin reports them); device ids have no meaning there.
 */
export function kindGpus(g: GpuRequest): number | "all" {
  switch (g.kind) {
    case "none":
      return 0;
    case "all":
      return "all";
    case "count":
      return g.count;
    case "devices":
      throw new UsageError(
        `--gpus device=${g.ids.join(",")} cannot be honoured by the kind runtime: Kubernetes hands out GPUs by count`,
        {
          hint: "Use --gpus all, --gpus N or --gpus none with --runtime kind.",
        },
      );
  }
}

/**
 * Where a host path under the state folder appears inside the worker node (and so to a
 * hostPath volume): the node mounts the state folder at `workerMount`.
 */
export function nodePath(stateDir: string, hostPath: string, workerMount: string): string {
  const rel = path.relative(path.resolve(stateDir), path.resolve(hostPath));
  if (rel.startsWith("..") || path.isAbsolute(rel)) {
    throw new BugError(`${hostPath} is not inside the state folder ${stateDir}, which is all the kind node sees`);
  }
  return path.posix.join(workerMount, ...rel.split(path.sep));
}

/** A label value naming the state folder a cluster serves (label values allow no slashes). */
export function stateLabel(stateDir: string): string {
  return createHash("sha256").update(path.resolve(stateDir)).digest("hex").slice(0, 16);
}

export interface KindManifestInput {
  image: string;
  gpus: number;
  shmBytes: number;
  serviceMonitor: boolean;
  stateDir: string;
  workerMount: string;
}

/** The renderer's options for one run on kind: the run folder from the node, our labels and key. */
export function manifestOptions(o: StartOptions, k: KindManifestInput): ManifestOptions {
  return {
    namespace: NAMESPACE,
    image: k.image,
    gpus: k.gpus,
    ...(k.gpus > 0 ? { runtimeClassName: "nvidia" } : {}),
    pollSecs: o.pollSecs,
    modelControlMode: o.reload,
    // The run folder, not just repository/: the staged models are relative symlinks into the
    // sibling store/, which must resolve inside the pod too.
    modelSource: {
      kind: "hostPath",
      path: nodePath(k.stateDir, o.runDir, k.workerMount),
      repositorySubdir: path.relative(o.runDir, o.repository).split(path.sep).join("/"),
    },
    shmSize: shmQuantity(k.shmBytes),
    // The run folder is mounted at CONTAINER_MODELS, its key folder with it.
    repositoryKey: {
      header: o.repositoryKey.header,
      keyDir: path.posix.join(CONTAINER_MODELS, path.relative(o.runDir, o.repositoryKey.dir).split(path.sep).join("/")),
    },
    serviceMonitor: k.serviceMonitor,
    labels: { [RUN_LABEL]: o.runId },
    // The image was put into the node with `kind load`; the node never pulls (the NGC image is
    // many gigabytes and needs a login), so a missing image is a clear ErrImageNeverPull.
    imagePullPolicy: "Never",
    nodeSelector: { ...MANAGED_NODE_LABEL },
    // Poll mode's outcomes (loaded, failed) are read from the log at info level.
    logInfo: true,
    // Inside Kubernetes' 30 s termination grace: models unload, stubs end, then the pod goes.
    exitTimeoutSecs: 10,
  };
}
