import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import type { Paths } from "../config/paths.js";
import { log as rootLog } from "../log/logger.js";
import type { EditSummary } from "../reload/events.js";
import { type Diagnostic, formatDiagnostic } from "../repo/diagnostics.js";
import { CONFIG_FILE } from "../repo/layout.js";
import { followRunEvents } from "../session/run-events.js";
import { isDriverEvent } from "../events/driver-event.js";
import type { SessionEvent } from "../session/events.js";
import { editsFile, readRunState, type RunState } from "../state/run-state.js";
import { userPathsOf } from "../state/staged-paths.js";

const log = rootLog.child("lsp");

/**
 * What the running `triton-dev up` said about each model of the repository it serves: Triton's
 * reason for a model it could not load, or `up`'s refusal of an edit. Read from the run's state
 * (run.json, edits.json, and a detached run's events.jsonl), the files `status` and an attached
 * dashboard read: no second server, no request to Triton.
 */
export interface Verdict {
  model: string;
  outcome: "failed" | "refused" | "skipped";
  reason: string;
  /** A refusal's findings (lint's, on the saved files). */
  diagnostics?: Diagnostic[];
}

export interface RunVerdicts {
  /** The repository the run serves (its real path). */
  modelsDir: string;
  /** `http://host:port` of the run, for the message. */
  server: string;
  verdicts: Map<string, Verdict>;
}

export interface VerdictWatchOptions {
  paths: Paths;
  /** Called when the verdicts change; undefined: no run serves anything now. */
  onChange: (v: RunVerdicts | undefined) => void;
  intervalMs?: number;
  /** The time the run's state and events are polled on (../clock.ts). */
  clock?: Clock;
}

/** Follows the current run's state until stopped; safe to stop twice. */
export class VerdictWatch {
  private timer: unknown;
  private runId: string | undefined;
  private state: RunState | undefined;
  private stopEvents: (() => void) | undefined;
  /** From the run's `ready` event: models Triton could not load at the start. */
  private atStart = new Map<string, string>();
  private exited = false;
  private editsStamp = "";
  private edits: EditSummary[] = [];
  private lastSent = "";
  private busy = false;

  private readonly clock: Clock;

  constructor(private readonly o: VerdictWatchOptions) {
    this.clock = o.clock ?? REAL_CLOCK;
  }

  start(): void {
    const tick = async () => {
      if (this.busy) return;
      this.busy = true;
      try {
        await this.poll();
      } catch (err) {
        log.debug("run state not read", { error: String(err) });
      } finally {
        this.busy = false;
      }
    };
    void tick();
    this.timer = this.clock.setInterval(() => void tick(), this.o.intervalMs ?? 500, { unref: true });
  }

  stop(): void {
    if (this.timer) this.clock.clearInterval(this.timer);
    this.timer = undefined;
    this.stopEvents?.();
    this.stopEvents = undefined;
  }

  private async poll(): Promise<void> {
    let state: RunState | undefined;
    try {
      state = await readRunState(this.o.paths);
    } catch {
      state = undefined;
    }
    if (state?.runId !== this.runId) {
      this.stopEvents?.();
      this.stopEvents = undefined;
      this.atStart = new Map();
      this.exited = false;
      this.edits = [];
      this.editsStamp = "";
      this.runId = state?.runId;
      this.state = state;
      if (state?.detached)
        this.stopEvents = followRunEvents(state, (e) => this.onEvent(e), this.o.intervalMs ?? 500, this.clock);
    }
    if (state) {
      const file = editsFile(state);
      const st = await fsp.stat(file).catch(() => undefined);
      const stamp = st ? `${st.size}:${st.mtimeMs}` : "";
      if (stamp !== this.editsStamp) {
        this.editsStamp = stamp;
        try {
          this.edits = st ? (JSON.parse(await fsp.readFile(file, "utf8")) as EditSummary[]) : [];
        } catch {
          // Written atomically, so a parse error is a file of another version: keep what was read.
        }
      }
    }
    this.send();
  }

  private onEvent(e: SessionEvent): void {
    if (isDriverEvent(e)) return;
    if (e.type === "ready") {
      for (const m of e.models) if (m.state === "UNAVAILABLE" && m.reason) this.atStart.set(m.name, m.reason);
    } else if (e.type === "server-exited" || e.type === "stopped") {
      this.exited = true;
    }
    this.send();
  }

  private send(): void {
    const v = this.current();
    const key = JSON.stringify(v ? { ...v, verdicts: [...v.verdicts.values()] } : null);
    if (key === this.lastSent) return;
    this.lastSent = key;
    this.o.onChange(v);
  }

  private current(): RunVerdicts | undefined {
    const s = this.state;
    if (!s || this.exited) return undefined;
    const readable = userPathsOf(s);
    const verdicts = new Map<string, Verdict>();
    for (const [model, reason] of this.atStart)
      verdicts.set(model, { model, outcome: "failed", reason: readable(reason) });
    for (const n of s.notServed ?? [])
      if (n.why === "skipped") verdicts.set(n.model, { model: n.model, outcome: "skipped", reason: n.reason });
    // A later edit's outcome replaces what was said at the start.
    for (const e of this.edits) {
      verdicts.delete(e.model);
      if (e.outcome === "failed")
        verdicts.set(e.model, { model: e.model, outcome: "failed", reason: readable(e.reason ?? "no reason given") });
      else if (e.outcome === "refused")
        verdicts.set(e.model, {
          model: e.model,
          outcome: "refused",
          reason: e.reason ?? "",
          ...(e.diagnostics ? { diagnostics: e.diagnostics } : {}),
        });
    }
    return { modelsDir: s.modelsDir, server: `http://${s.host}:${s.ports.http}`, verdicts };
  }
}

/** A verdict as findings on the user's files: a python traceback's line in model.py, else config.pbtxt. */
export function verdictDiagnostics(
  v: Verdict,
  modelDir: string,
  server: string,
  configText: string | undefined,
): Diagnostic[] {
  const configFile = path.join(modelDir, CONFIG_FILE);
  const base = { model: v.model, severity: "error" as const };
  if (v.outcome === "skipped") {
    return [
      {
        ...base,
        severity: "warning",
        file: configFile,
        line: 1,
        column: 1,
        message: `the running server (${server}) does not serve '${v.model}': ${v.reason}`,
        code: "triton-skipped",
      },
    ];
  }
  if (v.outcome === "refused") {
    const first = v.diagnostics?.find((d) => d.severity === "error");
    return [
      {
        ...base,
        severity: "warning",
        file: first?.file ?? configFile,
        line: first?.line ?? 1,
        column: first?.column ?? 1,
        message: `\`triton-dev up\` refused the last save of '${v.model}', so the server (${server}) keeps serving the last good version: ${first ? formatDiagnostic(first, path.dirname(modelDir)).split("\n")[0] : v.reason}`,
        hint: "Fix the error and save: the fix is loaded then.",
        code: "triton-refused",
      },
    ];
  }
  const message = `Triton (${server}) could not load '${v.model}': ${v.reason}`;
  const hint = "Fix it and save: the running server loads the fix, and this clears when it loads.";
  // A traceback names the model's python file with a line: `<dir>/1/model.py(12): initialize`.
  const frames = [...v.reason.matchAll(/(\/[^\s()"']+\.py)\((\d+)\)/g)];
  const own = frames.find((f) => f[1]!.startsWith(modelDir + path.sep));
  if (own) {
    // On the line that raised, and on the config too: an editor of config.pbtxt alone (Neovim
    // shows an open buffer's findings only) still learns that the model did not load, and where.
    const at = `${path.relative(modelDir, own[1]!)}:${own[2]}`;
    return [
      { ...base, file: own[1]!, line: Number(own[2]), column: 1, message, hint, code: "triton-load-failed" },
      {
        ...base,
        file: configFile,
        line: 1,
        column: 1,
        message: `${message.split(" At: ")[0]} (raised at ${at})`,
        hint,
        code: "triton-load-failed",
      },
    ];
  }
  // Otherwise on the config, at the first name the reason quotes that the config holds.
  let line = 1;
  let column = 1;
  if (configText) {
    for (const q of v.reason.matchAll(/'([^'\s]{1,200})'/g)) {
      if (q[1] === v.model) continue;
      const at = configText.search(new RegExp(`["']${q[1]!.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}["']`));
      if (at >= 0) {
        const before = configText.slice(0, at);
        line = before.split("\n").length;
        column = at - before.lastIndexOf("\n");
        break;
      }
    }
  }
  return [{ ...base, file: configFile, line, column, message, hint, code: "triton-load-failed" }];
}
