import { resolvePaths } from "../config/paths.js";
import { stopRun } from "../session/down.js";
import type { CliContext } from "./output.js";

/** `triton-dev down`, loaded when the command runs. */
export async function downAction(flags: { json: boolean }, ctx: CliContext): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  const r = await stopRun(paths, undefined, env);
  if (flags.json) {
    output.out(
      JSON.stringify({
        stopped: r.stopped
          ? {
              pid: r.stopped.pid,
              runId: r.stopped.runId,
              ...(r.stopped.docker ? { container: r.stopped.docker.containerName } : {}),
              ...(r.stopped.kind ? { cluster: r.stopped.kind.cluster } : {}),
            }
          : null,
        stale: r.stale ? { pid: r.stale.pid } : null,
        orphans: r.orphans,
        orphanContainers: r.orphanContainers,
        clusterDeleted: r.clusterDeleted ?? null,
        orphanClusters: r.orphanClusters,
        orphanKindRuns: r.orphanKindRuns,
        orphanKubectls: r.orphanKubectls,
      }),
    );
    return;
  }
  if (r.stopped) {
    const what = r.stopped.docker
      ? `container ${r.stopped.docker.containerName}, removed`
      : r.stopped.kind
        ? `kind cluster ${r.stopped.kind.cluster}, ${r.clusterDeleted ? "deleted" : "kept; the run's objects removed"}`
        : `pid ${r.stopped.pid}`;
    output.out(
      `stopped Triton (${what}, ${r.stopped.runtime} runtime, http ${r.stopped.host}:${r.stopped.ports.http})`,
    );
  }
  if (r.stale)
    output.out(
      `removed the record of a run whose server (${r.stale.kind ? `kind cluster ${r.stale.kind.cluster}${r.clusterDeleted ? ", now deleted" : ""}` : `pid ${r.stale.pid}`}) was already gone`,
    );
  if (r.orphans.length)
    output.out(`stopped ${r.orphans.length} leftover tritonserver process(es) of ours: pid ${r.orphans.join(", ")}`);
  if (r.orphanContainers.length)
    output.out(`removed ${r.orphanContainers.length} leftover container(s) of ours: ${r.orphanContainers.join(", ")}`);
  if (r.orphanClusters.length)
    output.out(`deleted ${r.orphanClusters.length} leftover kind cluster(s) of ours: ${r.orphanClusters.join(", ")}`);
  if (r.orphanKubectls.length)
    output.out(
      `stopped ${r.orphanKubectls.length} leftover kubectl process(es) of ours: pid ${r.orphanKubectls.join(", ")}`,
    );
  if (r.orphanKindRuns.length)
    output.out(
      `removed the objects of ${r.orphanKindRuns.length} finished run(s) from kept kind clusters: ${r.orphanKindRuns.join(", ")}`,
    );
  if (
    !r.stopped &&
    !r.stale &&
    r.orphans.length === 0 &&
    r.orphanContainers.length === 0 &&
    r.orphanClusters.length === 0 &&
    r.orphanKindRuns.length === 0 &&
    r.orphanKubectls.length === 0
  )
    output.out("nothing is running: no triton-dev server to stop");
}
