import type { Diagnostic } from "../repo/diagnostics.js";
import type { EditPhase } from "../reload/events.js";
import type { ScrapeState } from "../metrics/scraper.js";
import type { UnsizedInput } from "../perf/inputs.js";
import type { PerfReport } from "../perf/run.js";
import type { TuneReport } from "../tune/run.js";
import { isDriverEvent, type DriverEvent } from "../events/driver-event.js";
import type { Endpoints, RuntimeKind } from "../runtimes/driver.js";
import type { SessionEvent } from "../session/events.js";
import type { ModelState, RepositoryIndexEntry } from "../triton/http-client.js";
import type { RunReadiness } from "../triton/run-readiness.js";
import { duration, perSec, sparkline, uptime, usAsMs } from "./format.js";

/** What `GET /v2/models/{m}/config` says about batching and instances, in a line's worth. */
export interface ConfigSummary {
  platform: string;
  maxBatchSize: number;
  dynamicBatching: boolean;
  preferred: number[];
  queueDelayUs: number;
  priorityLevels: number;
  /** "4×CPU", "1×GPU + 2×CPU"; empty for ensembles. */
  instances: string;
  /** Ensembles: the composing models, in step order. */
  steps: string[];
}

export interface ModelRow {
  name: string;
  /** Triton's repository index, or ours where Triton has no word for it. */
  state: ModelState | "NOT LOADED" | "SKIPPED" | "STAGED";
  version?: string;
  reason?: string;
  /** Served through the python backend running its backend's library: how (`adapted` events). */
  servedAs?: string;
  config?: ConfigSummary;
  /** The version the config was read for, so a reload reads it again. */
  configFor?: string;
  /** The model's latest edit, as the timeline shows it. */
  lastEdit?: { id: number; phase: EditPhase; at: number; latencyMs: number };
  /** The last edit that loaded: when, and the save-to-ready latency. */
  lastReload?: { at: number; latencyMs: number; version?: string };
  /**
   * Its load failed with nothing earlier to serve: not served until a fix is saved. Triton forgets
   * it (or briefly lists the placeholder that makes it forget), so the index has no say on the row.
   */
  withdrawn?: boolean;
}

export interface TimelineEntry {
  id: number;
  model: string;
  savedAt: number;
  /** The latest phase reached. */
  phase: EditPhase;
  latencyMs: number;
  phases: Array<{ phase: EditPhase; sinceSavedMs: number }>;
  version?: string;
  reason?: string;
  diagnostics?: Diagnostic[];
}

export type ServerPhase = "starting" | "running" | "stopping" | "stopped" | "exited";

export interface ServerInfo {
  phase: ServerPhase;
  runtime?: RuntimeKind;
  pid?: number;
  endpoints?: Endpoints;
  logFile?: string;
  modelsDir?: string;
  reload?: "poll" | "explicit";
  /** ms since epoch when Triton was launched. */
  startedAt?: number;
  live?: boolean;
  /** The run is ready (triton/run-readiness.ts): the same answer as `status` and Triton's /v2/health/ready. */
  ready?: boolean;
  /** What readiness waits for, when not ready. */
  waitingFor?: string[];
  /** Models listed but not served (refused, skipped, failed): not counted by `ready`. */
  notServed?: string[];
  tritonVersion?: string;
  /** Names of the GPUs this machine has (nvidia-smi), or their count when names are unknown. */
  gpuNames: string[];
  gpuCount?: number;
  /** The latest progress line while the server starts, or why it stopped. */
  message?: string;
  /** Docker runtime: the container serving, and the monitoring stack beside it. */
  container?: string;
  monitoring?: { prometheus: string; grafana: string };
}

export interface PerfState {
  status: "idle" | "running" | "done" | "failed";
  model?: string;
  /** What the quick check runs, for the panel's title. */
  plan?: string;
  progress: string[];
  report?: PerfReport;
  error?: string;
  /** The inputs the last run could not size: the shapes prompt asks for them. */
  needsShapes?: UnsizedInput[];
  startedAt?: number;
  finishedAt?: number;
}

/** A `t` tune of the selected model: its progress, then the ranked candidates and the winner. */
export interface TuneState {
  status: "idle" | "running" | "done" | "failed";
  model?: string;
  plan?: string;
  progress: string[];
  report?: TuneReport;
  error?: string;
  startedAt?: number;
  finishedAt?: number;
}

export type View = "overview" | "logs" | "metrics" | "perf" | "tune" | "details";

export interface ShapesPrompt {
  model: string;
  text: string;
  /** Why the text was refused, shown until the next key. */
  error?: string;
}

export interface UiState {
  view: View;
  help: boolean;
  selected?: string;
  /** Typing a filter: keys go to it until enter or esc. */
  filtering?: "models" | "logs";
  modelFilter: string;
  logFilter: string;
  /** Lines scrolled up from the end of the log. */
  logScroll: number;
  /** Typing input shapes for a perf check of `model`: keys go to it until enter or esc. */
  prompt?: ShapesPrompt;
  /** Shapes given at the prompt, by model, for the rest of this run; `p` sends them. */
  shapes: Record<string, Record<string, number[]>>;
  /** A short message for the status line ("reloading offset"). */
  notice?: { text: string; at: number; level: "info" | "error" };
}

export interface LogLine {
  /** "triton" for Triton's log, "tool" for this program's own diagnostics. */
  source: "triton" | "tool";
  text: string;
  level: "I" | "W" | "E" | "F" | "-";
}

export interface DashboardState {
  /** The clock the panels read (uptime, ages); advanced by a controller. */
  now: number;
  server: ServerInfo;
  models: ModelRow[];
  timeline: TimelineEntry[];
  metrics?: ScrapeState;
  perf: PerfState;
  tune: TuneState;
  logs: LogLine[];
  ui: UiState;
  /** Set when the dashboard may stop the server on quit (not for a run started with --detach). */
  ownsServer: boolean;
}

export const MAX_TIMELINE = 100;
export const MAX_LOG_LINES = 2000;

export function initialState(o: { now: number; ownsServer?: boolean }): DashboardState {
  return {
    now: o.now,
    server: { phase: "starting", gpuNames: [] },
    models: [],
    timeline: [],
    perf: { status: "idle", progress: [] },
    tune: { status: "idle", progress: [] },
    logs: [],
    ui: { view: "overview", help: false, modelFilter: "", logFilter: "", logScroll: 0, shapes: {} },
    ownsServer: o.ownsServer ?? true,
  };
}

const byName = (a: ModelRow, b: ModelRow) => a.name.localeCompare(b.name);

function upsertModel(s: DashboardState, name: string, f: (m: ModelRow) => ModelRow): DashboardState {
  const i = s.models.findIndex((m) => m.name === name);
  const models = [...s.models];
  if (i >= 0) models[i] = f(models[i]!);
  else models.push(f({ name, state: "UNKNOWN" }));
  models.sort(byName);
  return { ...s, models };
}

/** Triton's index is the truth about state and version; what only we know (refusals) is kept. */
export function applyIndex(s: DashboardState, index: readonly RepositoryIndexEntry[]): DashboardState {
  const seen = new Map<string, RepositoryIndexEntry>();
  // Several versions can be listed; the one serving (READY) wins, then the newest.
  for (const e of index) {
    const prev = seen.get(e.name);
    if (
      !prev ||
      (e.state === "READY" && prev.state !== "READY") ||
      (e.state === prev.state && Number(e.version ?? 0) > Number(prev.version ?? 0))
    )
      seen.set(e.name, e);
  }
  const models: ModelRow[] = [];
  for (const m of s.models) {
    const e = seen.get(m.name);
    if (m.withdrawn) {
      seen.delete(m.name);
      models.push(m);
    } else if (e) {
      models.push({
        ...m,
        state: e.state ?? "UNKNOWN",
        ...(e.version ? { version: e.version } : {}),
        ...(e.reason ? { reason: e.reason } : { reason: undefined }),
      });
      seen.delete(m.name);
    } else if (m.state === "SKIPPED" || m.lastEdit?.phase === "refused" || m.lastEdit?.phase === "loading") {
      models.push(m);
    } else if (m.state !== "STAGED" || s.server.phase === "running") {
      // Gone from Triton's repository (folder deleted) or never loaded.
      if (m.lastEdit?.phase !== "unloaded" && m.lastEdit?.phase !== "removed")
        models.push({ ...m, state: "NOT LOADED", version: undefined });
    } else models.push(m);
  }
  for (const e of seen.values())
    models.push({
      name: e.name,
      state: e.state ?? "UNKNOWN",
      ...(e.version ? { version: e.version } : {}),
      ...(e.reason ? { reason: e.reason } : {}),
    });
  models.sort(byName);
  return sameModels(s.models, models) ? s : { ...s, models };
}

function sameModels(a: readonly ModelRow[], b: readonly ModelRow[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (m, i) =>
        m.name === b[i]!.name &&
        m.state === b[i]!.state &&
        m.version === b[i]!.version &&
        m.reason === b[i]!.reason &&
        m.withdrawn === b[i]!.withdrawn,
    )
  );
}

export function applyConfig(
  s: DashboardState,
  name: string,
  version: string | undefined,
  config: ConfigSummary,
): DashboardState {
  return upsertModel(s, name, (m) => ({ ...m, config, ...(version ? { configFor: version } : {}) }));
}

function applyEdit(s: DashboardState, e: Extract<SessionEvent, { type: "edit" }>): DashboardState {
  const savedAt = e.at - e.sinceSavedMs;
  const i = s.timeline.findIndex((t) => t.id === e.id);
  const prev = i >= 0 ? s.timeline[i] : undefined;
  // "saved" and "validated" alone are noise in the timeline; an edit shows from its outcome or load on.
  const entry: TimelineEntry = {
    id: e.id,
    model: e.model,
    savedAt,
    phase: e.phase,
    latencyMs: e.sinceSavedMs,
    phases: [...(prev?.phases ?? []), { phase: e.phase, sinceSavedMs: e.sinceSavedMs }],
    ...((e.version ?? prev?.version) ? { version: e.version ?? prev?.version } : {}),
    ...((e.reason ?? prev?.reason) ? { reason: e.reason ?? prev?.reason } : {}),
    ...((e.diagnostics ?? prev?.diagnostics) ? { diagnostics: e.diagnostics ?? prev?.diagnostics } : {}),
  };
  const timeline =
    i >= 0 ? s.timeline.map((t, j) => (j === i ? entry : t)) : [entry, ...s.timeline].slice(0, MAX_TIMELINE);
  const next = { ...s, timeline };
  return upsertModel(next, e.model, (m) => {
    const row: ModelRow = { ...m, lastEdit: { id: e.id, phase: e.phase, at: e.at, latencyMs: e.sinceSavedMs } };
    switch (e.phase) {
      case "loading":
        return { ...row, state: m.state === "UNKNOWN" || m.state === "NOT LOADED" ? "LOADING" : m.state };
      case "ready":
        return {
          ...row,
          state: "READY",
          reason: undefined,
          withdrawn: false,
          ...(e.version ? { version: e.version } : {}),
          lastReload: { at: e.at, latencyMs: e.sinceSavedMs, ...(e.version ? { version: e.version } : {}) },
        };
      case "refused":
        return m.state === "UNKNOWN" || m.state === "STAGED" ? { ...row, state: "NOT LOADED" } : row;
      case "failed":
        // Nothing earlier serves: the row shows why until a fix loads (Triton no longer lists it).
        return e.withdrawn
          ? {
              ...row,
              state: "UNAVAILABLE",
              version: undefined,
              withdrawn: true,
              ...(e.reason ? { reason: e.reason } : {}),
            }
          : row;
      case "removed":
      case "unloaded":
        return { ...row, state: "NOT LOADED", version: undefined, withdrawn: false };
      default:
        return row;
    }
  });
}

/** A runtime's own event: its status line and what it says of the server (container, monitoring). */
function applyDriverEvent(s: DashboardState, e: DriverEvent): DashboardState {
  const server = { ...s.server, ...(e.reads.status !== undefined ? { message: e.reads.status } : {}) };
  if (e.server?.container !== undefined) server.container = e.server.container;
  if (e.server?.monitoring) server.monitoring = { ...e.server.monitoring };
  return { ...s, server };
}

export function applySessionEvent(s: DashboardState, e: SessionEvent): DashboardState {
  if (isDriverEvent(e)) return applyDriverEvent(s, e);
  switch (e.type) {
    case "runtime":
      return { ...s, server: { ...s.server, runtime: e.runtime, message: `${e.runtime} runtime: ${e.why}` } };
    case "progress":
      return { ...s, server: { ...s.server, message: `${e.runtime}: ${e.message}` } };
    case "hint":
      return applyLogLines(
        { ...s, ui: { ...s.ui, notice: { text: `hint: ${e.message}`, at: s.now, level: "error" } } },
        [{ source: "tool", level: "-", text: `hint: ${e.message}` }],
      );
    case "lint":
      return e.staged ? s : upsertModel(s, e.model, (m) => ({ ...m, state: "NOT LOADED" }));
    case "skipped":
      return upsertModel(s, e.model, (m) => ({ ...m, state: "SKIPPED", reason: e.reason }));
    case "adapted":
      return upsertModel(s, e.model, (m) => ({ ...m, servedAs: e.servedAs }));
    case "staged": {
      let next = s;
      for (const name of e.models)
        next = upsertModel(next, name, (m) => (m.state === "UNKNOWN" ? { ...m, state: "STAGED" } : m));
      return next;
    }
    case "starting":
      return {
        ...s,
        server: {
          ...s.server,
          phase: "starting",
          runtime: e.runtime,
          ...(e.pid !== undefined ? { pid: e.pid } : {}),
          logFile: e.logFile,
          startedAt: s.now,
          message: "waiting for Triton to answer",
        },
      };
    case "ready": {
      const next = {
        ...s,
        server: {
          ...s.server,
          phase: "running" as const,
          endpoints: e.endpoints,
          startedAt: s.now - e.elapsedMs,
          live: true,
          message: undefined,
        },
      };
      return applyIndex(next, e.models);
    }
    case "watching":
      return { ...s, server: { ...s.server, modelsDir: e.modelsDir, reload: e.mode } };
    case "edit":
      return applyEdit(s, e);
    case "server-exited":
      return {
        ...s,
        server: {
          ...s.server,
          phase: "exited",
          live: false,
          ready: false,
          message: `tritonserver exited (${e.signal ?? `code ${e.code}`})${e.lastLines.length ? `: ${e.lastLines[e.lastLines.length - 1]}` : ""}`,
        },
      };
    case "stopping":
      return { ...s, server: { ...s.server, phase: "stopping", message: `stopping (${e.reason})` } };
    case "stopped":
      return {
        ...s,
        server: { ...s.server, phase: "stopped", live: false, ready: false, message: "stopped; nothing left running" },
      };
    default:
      return s;
  }
}

export function applyHealth(s: DashboardState, h: { live: boolean; ready: boolean }): DashboardState {
  if (s.server.live === h.live && s.server.ready === h.ready) return s;
  return { ...s, server: { ...s.server, ...h } };
}

/**
 * The run's readiness (runReadiness over what it serves) and the models it lists but does not
 * serve: the dashboard's "ready" is the same answer as `status`'s.
 */
export function applyReadiness(s: DashboardState, r: RunReadiness, served: readonly string[]): DashboardState {
  const notServed = s.models.filter((m) => !served.includes(m.name)).map((m) => m.name);
  const same =
    s.server.ready === r.ready &&
    (s.server.waitingFor ?? []).join("\n") === r.waitingFor.join("\n") &&
    (s.server.notServed ?? []).join("\n") === notServed.join("\n");
  return same ? s : { ...s, server: { ...s.server, ready: r.ready, waitingFor: r.waitingFor, notServed } };
}

/**
 * What the dashboard takes as served when the staging repository cannot be read: every row Triton
 * was given and still has (not skipped, refused, withdrawn or deleted).
 */
export function servedRows(s: DashboardState): string[] {
  return s.models.filter((m) => !m.withdrawn && m.state !== "SKIPPED" && m.state !== "NOT LOADED").map((m) => m.name);
}

export function applyLogLines(s: DashboardState, lines: readonly LogLine[]): DashboardState {
  if (lines.length === 0) return s;
  const logs =
    s.logs.length + lines.length > MAX_LOG_LINES ? [...s.logs, ...lines].slice(-MAX_LOG_LINES) : [...s.logs, ...lines];
  // A reader scrolled back keeps looking at the same lines while new ones arrive.
  const logScroll = s.ui.logScroll > 0 ? Math.min(s.ui.logScroll + lines.length, logs.length) : 0;
  return { ...s, logs, ui: logScroll === s.ui.logScroll ? s.ui : { ...s.ui, logScroll } };
}

const TRITON_LINE = /^([IWEF])\d{4} (\d{2}:\d{2}:\d{2})\.\d+ +\d+ [\w.]+:\d+\] ?(.*)$/;

/** Triton's glog prefix shortened to the time, for a narrow panel. */
export function tritonLogLine(raw: string): LogLine {
  const m = TRITON_LINE.exec(raw);
  if (!m) return { source: "triton", text: raw, level: "-" };
  return { source: "triton", text: `${m[2]} ${m[3]!.replace(/^"(.*)"$/, "$1")}`, level: m[1] as LogLine["level"] };
}

/** The models the list shows: those matching the filter. */
export function visibleModels(s: DashboardState): ModelRow[] {
  const f = s.ui.modelFilter.toLowerCase();
  return f ? s.models.filter((m) => m.name.toLowerCase().includes(f)) : s.models;
}

export function visibleLogs(s: DashboardState): LogLine[] {
  const f = s.ui.logFilter.toLowerCase();
  return f ? s.logs.filter((l) => l.text.toLowerCase().includes(f)) : s.logs;
}

/** The selected model, falling back to the first visible one. */
export function selectedModel(s: DashboardState): ModelRow | undefined {
  const vis = visibleModels(s);
  return vis.find((m) => m.name === s.ui.selected) ?? vis[0];
}

/** Summarise a model config (Triton's JSON, proto field names) into what the models list shows. */
export function summariseConfig(c: Record<string, unknown>): ConfigSummary {
  const num = (x: unknown) => (typeof x === "number" ? x : typeof x === "string" && x !== "" ? Number(x) : 0);
  const db = c.dynamic_batching as Record<string, unknown> | undefined;
  const groups = (c.instance_group as Array<Record<string, unknown>> | undefined) ?? [];
  const steps = ((c.ensemble_scheduling as { step?: Array<{ model_name?: string }> } | undefined)?.step ?? []).map(
    (s) => s.model_name ?? "?",
  );
  const platform = String(c.platform || c.backend || "");
  const instances =
    platform === "ensemble"
      ? ""
      : groups.map((g) => `${num(g.count) || 1}×${String(g.kind ?? "KIND_AUTO").replace(/^KIND_/, "")}`).join(" + ");
  return {
    platform,
    maxBatchSize: num(c.max_batch_size),
    dynamicBatching: db !== undefined && db !== null,
    preferred: ((db?.preferred_batch_size as unknown[]) ?? []).map(num),
    queueDelayUs: num(db?.max_queue_delay_microseconds),
    priorityLevels: num(db?.priority_levels),
    instances,
    steps,
  };
}

/** A column's worth: "dynamic ≤256 [8,16,32,64] 5 ms", "max 128, no dynamic", "ensemble, 2 steps". */
export function batchingText(c: ConfigSummary): string {
  if (c.platform === "ensemble") return `ensemble, ${c.steps.length} step${c.steps.length === 1 ? "" : "s"}`;
  if (c.maxBatchSize === 0) return "no batching";
  if (!c.dynamicBatching) return `max ${c.maxBatchSize}, no dynamic`;
  const parts = [`dynamic ≤${c.maxBatchSize}`];
  if (c.preferred.length) parts.push(`[${c.preferred.join(",")}]`);
  if (c.queueDelayUs > 0) parts.push(c.queueDelayUs >= 1000 ? `${c.queueDelayUs / 1000} ms` : `${c.queueDelayUs} µs`);
  if (c.priorityLevels > 0) parts.push(`${c.priorityLevels} prio`);
  return parts.join(" ");
}

/** How long a notice stays on the status line. */
export const NOTICE_MS = 8000;

/**
 * Everything on screen that depends on the clock, at time `t`. The clock controller moves `now`
 * only when this changes, so an idle dashboard does not redraw every second.
 */
export function clockKey(s: DashboardState, t: number): string {
  const up = s.server.startedAt !== undefined ? uptime(t - s.server.startedAt) : "";
  const notice = s.ui.notice !== undefined && t - s.ui.notice.at < NOTICE_MS;
  const perf = s.perf.status === "running" && s.perf.startedAt !== undefined ? duration(t - s.perf.startedAt) : "";
  return `${up}|${notice}|${perf}`;
}

/** A sparkline with its idle lead-in dropped: an all-idle history reads the same however long it is. */
const activity = (values: readonly number[], max?: number) => sparkline(values, 160, max).replace(/^[ ▁]+/, "");

/**
 * What the metrics panels would show of a scrape, as a string: a scrape that changes nothing
 * visible (an idle server, scraped every 2 s) is not worth a frame. A history that only grew
 * by idle points does not count; the dashboard draws that growth at a slower pace.
 */
export function metricsFingerprint(m: ScrapeState): string {
  const v = m.view;
  const models = v.models.map((x) =>
    [
      x.model,
      perSec(x.requestsPerSec),
      perSec(x.inferencesPerSec),
      perSec(x.failuresPerSec),
      usAsMs(x.queueAvgUs),
      usAsMs(x.queueP99Us),
      usAsMs(x.computeInferAvgUs),
      usAsMs(x.requestAvgUs),
      x.avgBatch?.toFixed(1),
      x.pending,
      activity(x.throughputSeries),
      activity(x.queueSeries),
    ].join(" "),
  );
  const gpus = v.gpus.map((g) =>
    [
      g.uuid,
      Math.round(g.utilization * 100),
      Math.round(g.memoryUsedBytes / 2 ** 26),
      g.powerWatts?.toFixed(0),
      activity(g.utilizationSeries, 1),
    ].join(" "),
  );
  const mem = v.cpu ? (v.cpu.memoryUsedBytes / 2 ** 30).toFixed(1) : "";
  return JSON.stringify([m.error ?? "", v.summaries, models, gpus, mem]);
}
