import fs from "node:fs";
import { resolvePaths } from "../config/paths.js";
import type { StatusReport } from "../session/status.js";
import { formatDiagnostic } from "../repo/diagnostics.js";
import { modelCountLine } from "../triton/run-readiness.js";
import { formatDuration, table, type CliContext } from "./output.js";

/** `triton-dev status`, loaded when the command runs. */
export async function statusAction(flags: { json: boolean }, ctx: CliContext): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  // Without a run record collectStatus answers `{ running: false }` (readRunState treats an
  // unreadable record as none), so the common "nothing running" case skips loading it: the
  // record's schemas and the Triton client are only needed to read and query a run.
  const s: StatusReport = fs.existsSync(paths.runFile)
    ? await (await import("../session/status.js")).collectStatus(paths, undefined, env)
    : { running: false };
  if (flags.json) {
    output.out(JSON.stringify(s, null, 2));
    if (!s.running) ctx.exitCode = 1;
    return;
  }
  if (!s.running && !s.runtime) {
    output.out("nothing is running (start Triton with `triton-dev up`)");
    ctx.exitCode = 1;
    return;
  }
  output.out(
    `runtime   ${s.runtime} (${s.where ?? `pid ${s.pid}`}, up ${formatDuration(s.uptimeSec ?? 0)}${s.detached ? ", detached" : ""})`,
  );
  for (const [label, text] of s.details ?? []) output.out(`${label.padEnd(9)} ${text}`);
  output.out(`models    ${s.modelsDir}`);
  const w = s.watcher;
  const watched = !w ? "" : w.alive ? ` (watcher pid ${w.pid})` : ` (NOT WATCHING: its watcher, pid ${w.pid}, is gone)`;
  output.out(
    `reload    ${s.reload?.mode}${s.reload?.mode === "poll" ? ` every ${s.reload.pollSecs} s` : ""}${watched}`,
  );
  output.out(`HTTP      ${s.endpoints?.http}\ngRPC      ${s.endpoints?.grpc}\nmetrics   ${s.endpoints?.metrics}`);
  if (s.monitoring) output.out(`Prometheus ${s.monitoring.prometheus}\nGrafana   ${s.monitoring.grafana}`);
  if (s.problem) {
    output.out(`problem   ${s.problem}`);
    ctx.exitCode = 1;
    return;
  }
  if (s.running && w && !w.alive) {
    // Triton still serves, but nothing acts on saves any more: say so, and how to get it back.
    output.err(
      `warning: hot reload is not running: the ${w.detached ? "detached run's watcher" : "`up` that started this run"} (pid ${w.pid}) is gone, so saved edits are not picked up. ${w.detached ? `Run \`triton-dev up --detach --models ${s.modelsDir}\` again to start the watcher (Triton keeps serving).` : "Restart the run: `triton-dev down`, then `triton-dev up`."}`,
    );
    ctx.exitCode = 1;
  }
  const r = s.readiness;
  // Exactly what is READY and what is not (reasons in the table below).
  const count = r?.count ? modelCountLine(r.count, false) : undefined;
  const all = r?.count && r.count.notReady.length === 0;
  output.out(
    `ready     ${
      r?.ready && r.count?.ready.length === 0 && r.count.total > 0
        ? `no model is READY: ${count} (see REASON)`
        : r?.ready
          ? all
            ? `yes: ${count}`
            : `yes for the models it serves: ${count} (see REASON)`
          : `no: ${r?.waitingFor.join("; ") || "Triton does not say it is ready"}${count ? `; ${count}` : ""}`
    }`,
  );
  // Listed, not counted: each one's state and reason are in the table below.
  if (r?.notServed.length) output.out(`          not served: ${r.notServed.join(", ")} (see REASON)`);
  if (s.foreignModels?.length) {
    output.err(
      `warning: Triton serves ${s.foreignModels.join(", ")}, which triton-dev did not load (not from ${s.modelsDir}): someone with the repository key loaded it through Triton's API. It is not hot-reloaded; \`triton-dev down\` stops it with the server.`,
    );
  }
  const rows = [
    ["MODEL", "VERSION", "STATE", "REASON"],
    ...(s.models ?? []).map((m) => [
      m.name,
      m.version ?? "-",
      m.state,
      m.foreign
        ? ["not loaded by triton-dev", m.reason].filter(Boolean).join("; ")
        : [m.reason, m.servedAs].filter(Boolean).join("; "),
    ]),
  ];
  output.out(table(rows));
  if (s.edits?.length) {
    output.out("\nlast edits:");
    output.out(
      table([
        ["MODEL", "OUTCOME", "AFTER SAVE", "SAVED AT", "DETAIL"],
        ...s.edits.map((e) => [e.model, e.outcome, `${(e.latencyMs / 1000).toFixed(2)} s`, e.savedAt, editDetail(e)]),
      ]),
    );
  }
}

/** A refused edit says where first: its first diagnostic's file:line:col (`--json` has them all). */
function editDetail(e: NonNullable<StatusReport["edits"]>[number]): string {
  const first = e.diagnostics?.[0] ? formatDiagnostic(e.diagnostics[0]).split("\n")[0]! : undefined;
  if (e.outcome === "refused" && first) return e.reason ? `${first}; ${e.reason}` : first;
  return e.reason ?? first ?? "";
}
