import type { Paths } from "../config/paths.js";
import { editsFile, type RunState } from "../state/run-state.js";
import type { RepositoryIndexEntry } from "../triton/http-client.js";
import fsp from "node:fs/promises";
import { refusalSummary } from "../repo/diagnostics.js";
import type { EditSummary } from "../reload/events.js";
import { stagingLayout, toUserPaths } from "../reload/stage.js";
import { urlHost } from "../net/url.js";
import { clientForRun } from "../triton/http-client.js";
import { currentRun, watcherOf, type Watcher } from "./current-run.js";

export interface StatusReport {
  running: boolean;
  runtime?: string;
  pid?: number;
  runId?: string;
  startedAt?: string;
  uptimeSec?: number;
  detached?: boolean;
  modelsDir?: string;
  repository?: string;
  logFile?: string;
  reload?: { mode: string; pollSecs: number };
  endpoints?: { http: string; grpc: string; metrics: string };
  serverReady?: boolean;
  models?: Array<{ name: string; version?: string; state: string; reason?: string; foreign?: boolean }>;
  /**
   * Models Triton serves that triton-dev never staged: loaded through the repository API by
   * someone else (with the key), so not from the models folder and not hot-reloaded.
   */
  foreignModels?: string[];
  /** The last edit of each model since `up` (hot reload), with its timeline. */
  edits?: EditSummary[];
  /** Where the server runs, in the runtime's words (`pid 123`, `container NAME`, `kind cluster NAME`). */
  where?: string;
  /** The runtime's own status lines (label, text). */
  details?: Array<[string, string]>;
  /** The docker runtime's container. */
  container?: { name: string; id: string; image: string; gpus: string; shmBytes: number };
  /** The kind runtime's cluster. */
  cluster?: {
    name: string;
    context: string;
    namespace: string;
    created: boolean;
    keepCluster: boolean;
    image: string;
    gpus: number;
    nodeContainer?: string;
  };
  /** Prometheus and Grafana of `up --monitoring`. */
  monitoring?: { prometheus: string; grafana: string };
  /**
   * The process that acts on edits (hot reload): the foreground `up`, or a detached run's watcher.
   * Not alive: saves are not picked up until the run is started again.
   */
  watcher?: Watcher;
  /** Set when the record was stale (the server is gone) or Triton did not answer. */
  problem?: string;
}

export function endpointsOf(s: RunState) {
  const h = urlHost(s.host);
  return {
    http: `http://${h}:${s.ports.http}`,
    grpc: `${h}:${s.ports.grpc}`,
    metrics: `http://${h}:${s.ports.metrics}/metrics`,
  };
}

export async function collectStatus(
  paths: Paths,
  now: () => number = Date.now,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StatusReport> {
  const run = await currentRun(paths, env);
  if (!run) return { running: false };
  const s = run.state;
  const described = run.run.describe();
  const watcher = watcherOf(s);
  const base: StatusReport = {
    running: run.alive,
    runtime: s.runtime,
    pid: s.pid,
    runId: s.runId,
    startedAt: s.startedAt,
    uptimeSec: Math.round((now() - Date.parse(s.startedAt)) / 1000),
    detached: s.detached,
    modelsDir: s.modelsDir,
    repository: s.repository,
    logFile: s.logFile,
    reload: { mode: s.reload, pollSecs: s.pollSecs },
    endpoints: endpointsOf(s),
    where: described.where,
    details: described.lines,
    ...described.json,
    ...(described.monitoring ? { monitoring: described.monitoring } : {}),
    ...(watcher ? { watcher } : {}),
  };
  if (!run.alive) {
    return { ...base, problem: `${described.goneWhat} is no longer running; \`triton-dev down\` cleans up its record` };
  }
  const client = clientForRun(s);
  try {
    const [index, ready] = await Promise.all([client.repositoryIndex(), client.isReady()]);
    const edits = await readEdits(s);
    const models: NonNullable<StatusReport["models"]> = index.map((e) => toModel(e, s));
    // A model whose load failed with nothing earlier to serve is withdrawn from the served
    // repository (so poll mode stops retrying it) and Triton may no longer list it: the reason
    // is kept in its last edit.
    for (const e of edits) {
      if (!e.withdrawn || e.outcome !== "failed") continue;
      const m = models.find((x) => x.name === e.model);
      if (!m) models.push({ name: e.model, state: "UNAVAILABLE", ...(e.reason ? { reason: e.reason } : {}) });
      else if (m.state !== "READY" && e.reason) m.reason = e.reason;
    }
    // Models `up` did not stage, until an edit of theirs says more.
    for (const n of s.notServed ?? []) {
      if (models.some((m) => m.name === n.model) || edits.some((e) => e.model === n.model && e.outcome !== "refused"))
        continue;
      const edit = edits.find((e) => e.model === n.model);
      models.push({
        name: n.model,
        state: n.why === "skipped" ? "SKIPPED" : "REFUSED",
        reason: edit?.diagnostics?.length ? refusalSummary(edit.diagnostics, s.modelsDir) : n.reason,
      });
    }
    // A model loaded with its own files (the load request's `file:` overrides) lives in a
    // folder of Triton's and is missing from the repository index; the statistics list it.
    const stats = await client.modelStatistics().catch(() => ({ model_stats: [] }));
    for (const st of stats.model_stats) {
      const name = String(st.name ?? "");
      if (name && !models.some((m) => m.name === name))
        models.push({ name, ...(st.version ? { version: String(st.version) } : {}), state: "READY" });
    }
    const foreign = await foreignModels(s, models, edits);
    for (const m of models) if (foreign.includes(m.name)) m.foreign = true;
    models.sort((a, b) => a.name.localeCompare(b.name));
    return {
      ...base,
      serverReady: ready,
      models,
      ...(foreign.length ? { foreignModels: foreign } : {}),
      ...(edits.length ? { edits } : {}),
    };
  } catch (err) {
    return { ...base, problem: `Triton did not answer: ${(err as Error).message}` };
  }
}

/** Reasons name files of the staging copy (a model.py traceback); shown as the user's paths. */
function toModel(
  e: RepositoryIndexEntry,
  s: RunState,
): { name: string; version?: string; state: string; reason?: string } {
  const reason = e.reason ? toUserPaths(e.reason, stagingLayout(s.runDir), s.modelsDir) : undefined;
  return {
    name: e.name,
    ...(e.version ? { version: e.version } : {}),
    state: e.state ?? "UNKNOWN",
    ...(reason ? { reason } : {}),
  };
}

/**
 * Names Triton lists that are neither in the served repository nor known to this run (a model
 * deleted, withdrawn or refused is known through its edit or the record): a load request that
 * carried its own files, which only a holder of the key can make.
 */
async function foreignModels(
  s: RunState,
  models: Array<{ name: string; state: string }>,
  edits: EditSummary[],
): Promise<string[]> {
  const staged = new Set(await fsp.readdir(s.repository).catch(() => [] as string[]));
  const known = (n: string) =>
    staged.has(n) || edits.some((e) => e.model === n) || (s.notServed ?? []).some((x) => x.model === n);
  return [...new Set(models.filter((m) => m.state === "READY" && !known(m.name)).map((m) => m.name))].sort();
}

async function readEdits(s: RunState): Promise<EditSummary[]> {
  try {
    return JSON.parse(await fsp.readFile(editsFile(s), "utf8")) as EditSummary[];
  } catch {
    return [];
  }
}
