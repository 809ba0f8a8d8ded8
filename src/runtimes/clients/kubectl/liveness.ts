import { runSelector } from "./run-label.js";
import type { KubectlClient } from "./kubectl-client.js";
import { KubectlTools, ToolCommandError } from "./tools.js";

export interface KindRunRef {
  runId: string;
  /** Where its objects are (the kind and cluster runtimes' records both have these two fields). */
  kind?: { context: string; namespace: string } | undefined;
}

/** How long a second ask may take when the first one ran out of time. */
const SLOW_CLUSTER_MS = 30_000;

/**
 * Whether the run's Deployment still exists in its cluster (Triton itself runs in the pod, so
 * no local process tells). A cluster that does not answer counts as not running; `down`
 * cleans up either way. A kubectl that ran out of time is asked once more with more time: on a
 * busy machine a live run taken for dead would have `down` drop its record instead of stopping it.
 */
export async function podRunAlive(
  ref: KindRunRef,
  tools: KubectlClient = new KubectlTools(),
  timeoutMs = 5_000,
): Promise<boolean> {
  if (!ref.kind) return false;
  try {
    return await deploymentListed(ref, tools, timeoutMs);
  } catch (err) {
    if (!(err instanceof ToolCommandError && err.timedOut) || timeoutMs >= SLOW_CLUSTER_MS) return false;
    return deploymentListed(ref, tools, SLOW_CLUSTER_MS).catch(() => false);
  }
}

async function deploymentListed(ref: KindRunRef, tools: KubectlClient, timeoutMs: number): Promise<boolean> {
  if (!ref.kind) return false;
  const out = await tools.kubectl(
    ref.kind.context,
    [
      `--namespace=${ref.kind.namespace}`,
      "get",
      "deployments",
      `--selector=${runSelector(ref.runId)}`,
      "--output=name",
    ],
    { timeoutMs },
  );
  return out.trim().length > 0;
}
