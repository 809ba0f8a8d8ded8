import { formatDiagnostic } from "../repo/diagnostics.js";
import { countModels, modelCountLine } from "../triton/run-readiness.js";
import { isDriverEvent } from "../events/driver-event.js";
import type { SessionEvent } from "../session/events.js";

/** Where the CLI writes. Passed in so tests can capture output without touching process streams. */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** What every command gets: where to write, the environment, and the exit code it sets. */
export interface CliContext {
  output: Output;
  env: NodeJS.ProcessEnv;
  exitCode: number;
  /**
   * The file this CLI runs from (dist/cli/main.js, or the single-file bundle under whatever name it
   * has), which `up --detach` starts again as the run's watcher; absent when the CLI was imported
   * rather than run (then dist's main.js).
   */
  entry?: string;
}

// A reader that goes away (`triton-dev status | head`) must not crash a command halfway, which
// could leave a half-started server behind: later writes to a closed pipe are dropped.
let stdoutClosed = false;
let stderrClosed = false;
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") stdoutClosed = true;
  else throw err;
});
process.stderr.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") stderrClosed = true;
  else throw err;
});

export const processOutput: Output = {
  out: (t) => void (stdoutClosed || process.stdout.write(t.endsWith("\n") ? t : t + "\n")),
  err: (t) => void (stderrClosed || process.stderr.write(t.endsWith("\n") ? t : t + "\n")),
};

const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length));

/** Plain lines for a terminal without the dashboard, a pipe or CI. */
export function formatEvent(e: SessionEvent): string | undefined {
  // A runtime's own events say how they read.
  if (isDriverEvent(e)) return e.reads.line;
  switch (e.type) {
    case "runtime":
      return `runtime: ${e.runtime} (auto: ${e.why})`;
    case "lint": {
      const head = e.staged ? `${e.model}: lint warnings (staged anyway)` : `${e.model}: not loaded, lint found errors`;
      return [head, ...e.diagnostics.map((d) => "  " + formatDiagnostic(d).replace(/\n/g, "\n  "))].join("\n");
    }
    case "skipped":
      return `${e.model}: skipped, ${e.reason}${e.diagnostics[0] ? ` (${formatDiagnostic(e.diagnostics[0]).split("\n")[0]})` : ""}`;
    case "watching":
      return `watching ${e.modelsDir} (${e.mode} mode): saved edits are validated, staged and reloaded`;
    case "edit":
      return formatEdit(e);
    case "staged":
      return `staged ${e.models.length} model(s): ${e.models.join(", ")}`;
    case "starting":
      return `starting tritonserver (${e.runtime} runtime${e.pid !== undefined ? `, pid ${e.pid}` : ""}); log: ${e.logFile}`;
    case "ready": {
      const notServed: Array<{ name: string; state: string; reason: string; version?: string }> = (
        e.notServed ?? []
      ).map((n) => ({
        name: n.model,
        state: n.why === "skipped" ? "SKIPPED" : "REFUSED",
        reason: n.reason,
      }));
      // Reasons are in the table below; the head line counts every model of the repository.
      const count = modelCountLine(countModels([...e.models, ...notServed]), false);
      const lines = [
        e.attached
          ? `Triton has been up for ${formatDuration(Math.round(e.elapsedMs / 1000))}: ${count}`
          : `Triton is up in ${(e.elapsedMs / 1000).toFixed(1)} s: ${count}`,
      ];
      lines.push(
        `  HTTP    http://${e.endpoints.http}`,
        `  gRPC    ${e.endpoints.grpc}`,
        `  metrics http://${e.endpoints.metrics}/metrics`,
      );
      const w = Math.max(5, ...e.models.map((m) => m.name.length), ...notServed.map((m) => m.name.length));
      for (const m of [...e.models, ...notServed])
        lines.push(
          `  ${pad(m.name, w)}  v${m.version ?? "-"}  ${pad(m.state ?? "UNKNOWN", 11)}${m.reason ? ` ${m.reason}` : ""}`,
        );
      return lines.join("\n");
    }
    case "server-exited":
      return `tritonserver exited (${e.signal ?? `code ${e.code}`}); last log lines:\n  ${e.lastLines.join("\n  ")}`;
    case "progress":
      return `${e.runtime}: ${e.message}`;
    case "adapted":
      return `${e.model}: ${e.servedAs}`;
    case "hint":
      return `hint: ${e.message}`;
    case "stopping":
      return `stopping Triton (${e.reason})`;
    case "stopped":
      return "stopped; nothing left running";
  }
}

export function printEvents(output: Output, json: boolean): (e: SessionEvent) => void {
  return (e) => {
    if (json) {
      output.out(JSON.stringify({ time: new Date().toISOString(), ...e }));
      return;
    }
    const line = formatEvent(e);
    if (line) output.out(line);
  };
}

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : pad(c, widths[i]!))).join("  ")).join("\n");
}

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function formatEdit(e: Extract<SessionEvent, { type: "edit" }>): string | undefined {
  const head = `edit #${e.id} ${e.model}:`;
  switch (e.phase) {
    case "saved":
    case "validated":
    case "staged":
      return undefined;
    case "environment":
      return `${head} ${e.reason ?? "building its environment"} (the last good version serves meanwhile)`;
    case "loading":
      return `${head} valid, staged, loading`;
    case "refused":
      return [
        `${head} refused (${e.diagnostics?.length ?? 0} error(s)); ${e.reason ?? ""}`,
        ...(e.diagnostics ?? []).map((d) => "  " + formatDiagnostic(d).replace(/\n/g, "\n  ")),
      ].join("\n");
    case "unchanged":
      return `${head} saved with no change; nothing to reload`;
    case "ready":
      return `${head} READY${e.version ? ` (version ${e.version})` : ""} ${secs(e.sinceSavedMs)} after the save`;
    case "failed":
      return `${head} failed to load: ${e.reason ?? "unknown reason"}`;
    case "removed":
      return `${head} folder deleted${e.reason ? ` (${e.reason})` : "; unloading"}`;
    case "unloaded":
      return `${head} unloaded ${secs(e.sinceSavedMs)} after the delete`;
  }
}

export function formatDuration(sec: number): string {
  if (sec < 60) return `${sec}s`;
  if (sec < 3600) return `${Math.floor(sec / 60)}m${String(sec % 60).padStart(2, "0")}s`;
  return `${Math.floor(sec / 3600)}h${String(Math.floor((sec % 3600) / 60)).padStart(2, "0")}m`;
}
