import type { KindRecord } from "./record.js";
import { runSelector } from "./settings.js";
import { KindTools } from "./tools.js";

export interface KindRunRef {
  runId: string;
  /** Where its objects are (the cluster runtime's record has the same two fields). */
  kind?: Pick<KindRecord, "context" | "namespace"> | undefined;
}

/**
 * Whether the run's Deployment still exists in its cluster (Triton itself runs in the pod, so
 * no local process tells). A cluster that does not answer counts as not running; `down`
 * cleans up either way.
 */
export async function kindRunAlive(
  ref: KindRunRef,
  tools: KindTools = new KindTools(),
  timeoutMs = 5_000,
): Promise<boolean> {
  if (!ref.kind) return false;
  try {
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
  } catch {
    return false;
  }
}
