import fs from "node:fs";
import { Command } from "commander";
import { resolvePaths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { stopRun } from "../session/down.js";
import { collectStatus } from "../session/status.js";
import { followFile, tailLines } from "../state/log-file.js";
import { currentRun, runAlive } from "../session/current-run.js";
import { parsePositiveInt } from "./options.js";
import { formatDuration, table, type CliContext } from "./output.js";

export function registerRunCommands(program: Command, ctx: CliContext): void {
  const { output, env } = ctx;
  program
    .command("down")
    .description("Stop the Triton that `up` started (also cleans up after a crashed run).")
    .option("--json", "print the result as JSON", false)
    .action(async (flags: { json: boolean }) => {
      const paths = resolvePaths(env);
      const r = await stopRun(paths, undefined, env);
      if (flags.json) {
        const { stopped, stale } = r;
        output.out(
          JSON.stringify({
            stopped: stopped ? { pid: stopped.state.pid, runId: stopped.state.runId, ...stopped.report.json } : null,
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
      if (r.stale)
        output.out(`removed the record of a run whose server (${r.stale.report.staleWhat}) was already gone`);
      for (const line of r.leftoverLines) output.out(line);
      if (!r.stopped && !r.stale && r.leftoverLines.length === 0)
        output.out("nothing is running: no triton-dev server to stop");
    });

  program
    .command("status")
    .description("Show the running server: runtime, endpoints, and each model's version, state and reason.")
    .option("--json", "print as JSON", false)
    .action(async (flags: { json: boolean }) => {
      const paths = resolvePaths(env);
      const s = await collectStatus(paths, undefined, env);
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
      output.out(`reload    ${s.reload?.mode}${s.reload?.mode === "poll" ? ` every ${s.reload.pollSecs} s` : ""}`);
      output.out(`HTTP      ${s.endpoints?.http}\ngRPC      ${s.endpoints?.grpc}\nmetrics   ${s.endpoints?.metrics}`);
      if (s.monitoring) output.out(`Prometheus ${s.monitoring.prometheus}\nGrafana   ${s.monitoring.grafana}`);
      if (s.problem) {
        output.out(`problem   ${s.problem}`);
        ctx.exitCode = 1;
        return;
      }
      output.out(`ready     ${s.serverReady ? "yes" : "no (some model is not READY)"}`);
      const rows = [
        ["MODEL", "VERSION", "STATE", "REASON"],
        ...(s.models ?? []).map((m) => [m.name, m.version ?? "-", m.state, m.reason ?? ""]),
      ];
      output.out(table(rows));
      if (s.edits?.length) {
        output.out("\nlast edits:");
        output.out(
          table([
            ["MODEL", "OUTCOME", "AFTER SAVE", "SAVED AT", "DETAIL"],
            ...s.edits.map((e) => [
              e.model,
              e.outcome,
              `${(e.latencyMs / 1000).toFixed(2)} s`,
              e.savedAt,
              e.reason ?? e.diagnostics?.[0]?.message ?? "",
            ]),
          ]),
        );
      }
    });

  program
    .command("logs")
    .description("Print Triton's log for the current (or last) run.")
    .option("-f, --follow", "keep printing new lines until the server stops or Ctrl-C", false)
    .option("-n, --lines <n>", "how many recent lines to print first", parsePositiveInt("--lines"), 200)
    .action(async (flags: { follow: boolean; lines: number }) => {
      const paths = resolvePaths(env);
      const run = await currentRun(paths, env);
      if (!run) {
        throw new UserError("nothing is running, so there is no log to show", {
          hint: "Start Triton with `triton-dev up`.",
        });
      }
      const file = run.state.logFile;
      for (const l of await tailLines(file, flags.lines, 4 * 1024 * 1024)) output.out(l);
      if (!flags.follow) return;
      const size = fs.existsSync(file) ? fs.statSync(file).size : 0;
      await new Promise<void>((resolve) => {
        const stopFollow = followFile(file, size, (l) => output.out(l));
        const finish = () => {
          stopFollow();
          clearInterval(check);
          process.off("SIGINT", finish);
          resolve();
        };
        const check = setInterval(() => {
          void runAlive(paths, run.state, env).then((alive) => {
            if (alive) return;
            clearInterval(check);
            output.out("(the server stopped)");
            setTimeout(finish, 400);
          });
        }, 1000);
        process.on("SIGINT", finish);
      });
    });
}
