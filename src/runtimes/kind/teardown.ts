import path from "node:path";
import type Docker from "dockerode";
import type { Clock } from "../../clock.js";
import { log as rootLog } from "../../log/logger.js";
import { findProcesses } from "../../state/process.js";
import { versionsToUnload } from "../../triton/log-lines.js";
import type { StopOutcome } from "../driver.js";
import { deleteRunObjects, terminatePids, whichToWaitFor, type UnloadWatch } from "../clients/kubectl/delete-run.js";
import { ToolMissingError, type KubectlTools } from "../clients/kubectl/tools.js";
import type { KindRecord } from "./record.js";
import { deleteCluster, inspectOurCluster, listClusters, workerContainer, sameDir } from "./cluster.js";
import { contextOf, NAMESPACE, OBJECT_KINDS, RUN_LABEL, runSelector } from "./settings.js";

const log = rootLog.child("kind:teardown");

/**
 * End a run in its cluster: the cluster is deleted unless it is kept (then only the run's
 * objects go). A cluster that no longer exists, or is no longer ours, is left as it is.
 */
export async function teardownRun(
  tools: KubectlTools,
  docker: Docker,
  rec: KindRecord,
  runId: string,
  stateDir: string,
  graceMs = 15_000,
  watch?: UnloadWatch,
  clock?: Clock,
): Promise<{ clusterDeleted: boolean; outcome?: StopOutcome }> {
  const clusters = await listClusters(tools);
  if (!clusters.includes(rec.cluster)) return { clusterDeleted: false };
  // Checked again: a cluster of that name may have been replaced by one that is not ours.
  const facts = await inspectOurCluster(tools, docker, rec.cluster, stateDir);
  const objects = {
    context: rec.context,
    namespace: rec.namespace,
    selector: runSelector(runId),
    kinds: rec.kinds,
    graceMs,
    ...(clock ? { clock } : {}),
  };
  if (!rec.keepCluster && !facts.keep) {
    // Deleting the cluster ends Triton without its unloads: a model whose unload runs the user's
    // code (finalize) has its run's objects deleted first, which waits for that unload.
    const loaded = versionsToUnload(watch?.loaded ?? []);
    const waits = watch?.waitFor && loaded.length ? await whichToWaitFor(watch.waitFor, loaded) : [];
    const outcome = waits?.length !== 0 ? await deleteRunObjects(tools, objects, watch) : undefined;
    await deleteCluster(tools, rec.cluster);
    return { clusterDeleted: true, ...(outcome ? { outcome } : {}) };
  }
  return { clusterDeleted: false, outcome: await deleteRunObjects(tools, objects, watch) };
}

/** kubectl port-forward / logs processes of ours for a cluster (a crashed `up` or supervisor left them). */
export function findOurKubectls(cluster: string, procRoot = "/proc"): number[] {
  const ctx = `--context=${contextOf(cluster)}`;
  return findProcesses((argv) => {
    const i = argv.findIndex((a) => path.basename(a) === "kubectl");
    if (i < 0) return false;
    const args = argv.slice(i + 1);
    return (
      args.includes(ctx) &&
      args.includes(`--namespace=${NAMESPACE}`) &&
      (args.includes("port-forward") || args.includes("logs"))
    );
  }, procRoot).filter((pid) => pid !== process.pid);
}

/** The run ids our objects in a cluster's namespace carry. */
export async function runsIn(tools: KubectlTools, context: string): Promise<string[]> {
  const out = await tools.kubectl(
    context,
    [`--namespace=${NAMESPACE}`, "get", OBJECT_KINDS.join(","), `--selector=${RUN_LABEL}`, "--output=json"],
    { timeoutMs: 30_000 },
  );
  const items = (JSON.parse(out) as { items?: Array<{ metadata?: { labels?: Record<string, string> } }> }).items ?? [];
  return [...new Set(items.map((i) => i.metadata?.labels?.[RUN_LABEL]).filter((v): v is string => !!v))];
}

export interface Leftovers {
  /** Clusters of this state folder that no run uses and nobody asked to keep: deleted. */
  clusters: string[];
  /** Runs whose objects were still in a kept cluster: deleted. */
  runs: string[];
  /** Our kubectl processes found for those clusters: stopped. */
  processes: number[];
}

/**
 * What crashed runs of this state folder left in kind: clusters we created and did not keep,
 * and objects of runs that are over. Only clusters whose nodes carry our label and mount this
 * state folder are looked at. Skipped quietly when kind is not installed.
 */
export async function removeLeftovers(
  tools: KubectlTools,
  docker: Docker,
  stateDir: string,
  graceMs = 15_000,
): Promise<Leftovers> {
  const out: Leftovers = { clusters: [], runs: [], processes: [] };
  let clusters: string[];
  try {
    clusters = await listClusters(tools);
  } catch (err) {
    if (!(err instanceof ToolMissingError)) log.debug("kind get clusters failed", { error: String(err) });
    return out;
  }
  for (const cluster of clusters) {
    try {
      const worker = await workerContainer(docker, cluster);
      if (!worker?.stateDir || !sameDir(worker.stateDir, stateDir)) continue;
      const facts = await inspectOurCluster(tools, docker, cluster, stateDir);
      const pids = findOurKubectls(cluster);
      terminatePids(pids);
      out.processes.push(...pids);
      if (!facts.keep) {
        await deleteCluster(tools, cluster);
        out.clusters.push(cluster);
        continue;
      }
      for (const runId of await runsIn(tools, facts.context)) {
        await deleteRunObjects(tools, {
          context: facts.context,
          namespace: NAMESPACE,
          selector: runSelector(runId),
          kinds: OBJECT_KINDS,
          graceMs,
        });
        out.runs.push(runId);
      }
    } catch (err) {
      // Not ours, or it does not answer: nothing of it is touched.
      log.debug("left a kind cluster alone", { cluster, error: String(err) });
    }
  }
  return out;
}
