import { resolvePaths } from "../config/paths.js";
import { stopRun } from "../session/down.js";
import type { CliContext } from "./output.js";

/** `triton-dev down`, loaded when the command runs. */
export async function downAction(flags: { json: boolean }, ctx: CliContext): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  // What a stop that takes a while waits for, on stderr so that --json stays one object.
  const r = await stopRun(paths, undefined, env, (message) => output.err(message));
  if (flags.json) {
    const { stopped, stale } = r;
    output.out(
      JSON.stringify({
        stopped: stopped
          ? {
              pid: stopped.state.pid,
              runId: stopped.state.runId,
              ...stopped.report.json,
              ...(stopped.report.outcome ? { stop: stopped.report.outcome } : {}),
            }
          : null,
        stale: stale ? { pid: stale.state.pid } : null,
        clusterDeleted: null,
        ...(stopped ?? stale)?.report.summary,
        ...r.leftovers,
      }),
    );
    return;
  }
  if (r.stopped) {
    const s = r.stopped.state;
    output.out(`stopped Triton (${r.stopped.report.what}, ${s.runtime} runtime, http ${s.host}:${s.ports.http})`);
  }
  if (r.stale) output.out(`removed the record of a run whose server (${r.stale.report.staleWhat}) was already gone`);
  for (const line of r.leftoverLines) output.out(line);
  if (!r.stopped && !r.stale && r.leftoverLines.length === 0)
    output.out("nothing is running: no triton-dev server to stop");
}
