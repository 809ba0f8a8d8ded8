import fs from "node:fs";
import path from "node:path";
import type Docker from "dockerode";
import { z } from "zod";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { WORKER_MOUNT } from "./kind-config.js";
import { contextOf, KIND_CLUSTER_LABEL, KIND_ROLE_LABEL, NODE_LABEL } from "./settings.js";
import { ToolCommandError, type KubectlTools } from "../clients/kubectl/tools.js";

const log = rootLog.child("kind:cluster");

const nodeSchema = z.object({
  metadata: z.object({ name: z.string(), labels: z.record(z.string(), z.string()).optional() }),
  status: z.object({ allocatable: z.record(z.string(), z.string()).optional() }).optional(),
});
const nodeListSchema = z.object({ items: z.array(nodeSchema) });
export type KubeNode = z.infer<typeof nodeSchema>;

/** The clusters kind knows (`kind get clusters`; "No kind clusters found." goes to stderr). */
export async function listClusters(tools: KubectlTools): Promise<string[]> {
  const out = await tools.kind(["get", "clusters"], { timeoutMs: 30_000 });
  return out
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !/^No kind clusters found/.test(l));
}

/** kubectl's answer when the cluster's context is missing or its API server is down, as what to do. */
export function clusterAccessError(err: unknown, cluster: string): UserError | undefined {
  if (!(err instanceof ToolCommandError)) return undefined;
  const ctx = contextOf(cluster);
  if (/context .* does not exist|no context exists/i.test(err.stderr)) {
    return new UserError(`kind lists a cluster ${cluster}, but kubectl has no context ${ctx} for it`, {
      hint: `Write it into your kubeconfig with \`kind export kubeconfig --name ${cluster}\`, then run again.`,
      cause: err,
    });
  }
  if (
    /connection (to the server .*)?(was )?refused|Unable to connect to the server|i\/o timeout|no route to host/i.test(
      err.stderr,
    )
  ) {
    return new UserError(`the kind cluster ${cluster} does not answer (${err.stderr.trim().split("\n").pop()})`, {
      hint: `Its node containers may be stopped (\`docker ps -a --filter label=${KIND_CLUSTER_LABEL}=${cluster}\`; \`docker start\` them), or delete it with \`kind delete cluster --name ${cluster}\` and run again.`,
      cause: err,
    });
  }
  return undefined;
}

/** The nodes carrying our label (empty: the cluster is not ours). */
export async function managedNodes(tools: KubectlTools, cluster: string): Promise<KubeNode[]> {
  try {
    const out = await tools.kubectl(
      contextOf(cluster),
      ["get", "nodes", `--selector=${NODE_LABEL.managed}=true`, "--output=json"],
      { timeoutMs: 30_000 },
    );
    return nodeListSchema.parse(JSON.parse(out)).items;
  } catch (err) {
    throw clusterAccessError(err, cluster) ?? err;
  }
}

/** GPUs the device plugin advertises on our nodes. */
export function allocatableGpus(nodes: KubeNode[]): number {
  return nodes.reduce((n, node) => n + (Number(node.status?.allocatable?.["nvidia.com/gpu"] ?? 0) || 0), 0);
}

export interface NodeContainer {
  name: string;
  /** Host folder the node mounts at WORKER_MOUNT (the state folder it serves). */
  stateDir?: string;
  running: boolean;
}

/** The cluster's worker node container (kind's own labels) and the state folder it mounts. */
export async function workerContainer(docker: Docker, cluster: string): Promise<NodeContainer | undefined> {
  const list = await docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${KIND_CLUSTER_LABEL}=${cluster}`] }),
  } as Docker.ContainerListOptions);
  const nodes = list.filter((c) => c.Labels?.[KIND_CLUSTER_LABEL] === cluster);
  const withMount =
    nodes.find((c) => c.Mounts?.some((m) => m.Destination === WORKER_MOUNT)) ??
    nodes.find((c) => c.Labels?.[KIND_ROLE_LABEL] === "worker");
  if (!withMount) return undefined;
  const mount = withMount.Mounts?.find((m) => m.Destination === WORKER_MOUNT);
  return {
    name: (withMount.Names[0] ?? withMount.Id).replace(/^\//, ""),
    ...(mount?.Source ? { stateDir: mount.Source } : {}),
    running: withMount.State === "running",
  };
}

export function sameDir(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}

export interface ClusterFacts {
  name: string;
  context: string;
  nodes: KubeNode[];
  worker?: NodeContainer;
  /** Its nodes say it outlives runs (`--keep-cluster` when it was created or used). */
  keep: boolean;
}

/** An existing cluster, checked to be ours; throws a UserError naming the fix when it is not. */
export async function inspectOurCluster(
  tools: KubectlTools,
  docker: Docker,
  cluster: string,
  stateDir: string,
): Promise<ClusterFacts> {
  const nodes = await managedNodes(tools, cluster);
  if (nodes.length === 0) {
    throw new UserError(
      `a kind cluster named ${cluster} exists and was not created by triton-dev (no node carries the label ${NODE_LABEL.managed}=true); it is left alone`,
      {
        hint: `Choose another cluster name with \`--cluster NAME\`, or delete that cluster yourself (\`kind delete cluster --name ${cluster}\`) if it is not needed.`,
      },
    );
  }
  const worker = await workerContainer(docker, cluster);
  if (worker?.stateDir && !sameDir(worker.stateDir, stateDir)) {
    throw new UserError(
      `the kind cluster ${cluster} serves the triton-dev state folder ${worker.stateDir}, not this one (${stateDir}): its node cannot see this run's models`,
      {
        hint: `Use another cluster with \`--cluster NAME\`, or run with TRITON_DEV_STATE_DIR=${worker.stateDir}.`,
      },
    );
  }
  if (!worker?.stateDir) {
    log.warn("could not find the state folder the cluster's worker mounts", { cluster });
  }
  return {
    name: cluster,
    context: contextOf(cluster),
    nodes,
    ...(worker ? { worker } : {}),
    keep: nodes.some((n) => n.metadata.labels?.[NODE_LABEL.keep] === "true"),
  };
}

/** Marks our nodes as kept (or not) for later runs and `down`. */
export async function labelKeep(tools: KubectlTools, cluster: string, keep: boolean): Promise<void> {
  await tools.kubectl(
    contextOf(cluster),
    ["label", "nodes", `--selector=${NODE_LABEL.managed}=true`, `${NODE_LABEL.keep}=${keep}`, "--overwrite"],
    { timeoutMs: 30_000 },
  );
}

export async function deleteCluster(tools: KubectlTools, cluster: string): Promise<void> {
  await tools.kind(["delete", "cluster", `--name=${cluster}`], { timeoutMs: 120_000 });
}
