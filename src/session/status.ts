import type { Paths } from "../config/paths.js";
import { editsFile, type RunState } from "../state/run-state.js";
import type { RepositoryIndexEntry, TritonHttpClient } from "../triton/http-client.js";
import fsp from "node:fs/promises";
import path from "node:path";
import { refusalSummary } from "../repo/diagnostics.js";
import type { EditSummary } from "../reload/events.js";
import { explainIndex, stepsNotAvailable, tritonLogLines } from "../reload/load-reasons.js";
import { servedAs, servedModels } from "../reload/stage.js";
import { urlHost } from "../net/url.js";
import { userPathsOf } from "../state/staged-paths.js";
import { clientForRun } from "../triton/http-client.js";
import { countModels, READY_MEANS, runReadiness, type ModelCount, type RunReadiness } from "../triton/run-readiness.js";
import { currentRun, watcherOf, type Watcher } from "./current-run.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";

export interface StatusModel {
  name: string;
  version?: string;
  state: string;
  reason?: string;
  /** Whether triton-dev serves it; refused, skipped and withdrawn models are listed but not served. */
  served: boolean;
  /** Served by Triton but not loaded by triton-dev (see foreignModels). */
  foreign?: boolean;
  /** How it is served when not by its own backend ("served through ONNX Runtime 1.20 in the python backend ..."). */
  servedAs?: string;
}

/** The run's readiness (triton/run-readiness.ts), as status shows it. */
export interface StatusReadiness extends RunReadiness {
  /** What "ready" means, in words. */
  means: string;
  /** Models of the repository triton-dev does not serve (refused, skipped, failed): not counted. */
  notServed: string[];
  /** Every model of the repository: which are READY, which are not and why (the line status prints). */
  count: ModelCount;
}

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
  /** readiness.ready: the run is ready (see READY_MEANS); kept under this name for scripts. */
  serverReady?: boolean;
  readiness?: StatusReadiness;
  models?: StatusModel[];
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
  /** Prometheus and Grafana of `up --monitoring`. */
  monitoring?: { prometheus: string; grafana: string };
  /**
   * The process that acts on edits (hot reload): the foreground `up`, or a detached run's watcher.
   * Not alive: saves are not picked up until the run is started again.
   */
  watcher?: Watcher;
  /** Set when the record was stale (the server is gone) or Triton did not answer. */
  problem?: string;
  /**
   * The runtime's own fields (its driver's RunDescription.json, typed there: docker's `container`,
   * kind's `cluster`, the cluster runtime's `kubernetes`); this file names none of them.
   */
  [runtimeField: string]: unknown;
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
  runtimes: Runtimes = RUNTIMES,
): Promise<StatusReport> {
  const run = await currentRun(paths, env, runtimes);
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
  try {
    const [served, edits, through] = await Promise.all([servedModels(s.runDir), readEdits(s), servedAs(s.runDir)]);
    const { readiness, index } = await readinessOf(s, served);
    let models: StatusModel[] = (
      await explainIndex(index, {
        staged: served,
        logLines: await tritonLogLines(s.logFile),
        userPaths: userPathsOf(s),
        // An ensemble names the step that keeps it out (one withdrawn, refused or failing).
        fallback: stepsNotAvailable(
          (model) => fsp.readFile(path.join(s.repository, model, "config.pbtxt"), "utf8").catch(() => undefined),
          (step) => !served.includes(step) || !index.some((m) => m.name === step && m.state === "READY"),
        ),
      })
    ).map((e) => ({
      name: e.name,
      ...(e.version ? { version: e.version } : {}),
      state: e.state ?? "UNKNOWN",
      ...(e.reason ? { reason: e.reason } : {}),
      served: served.includes(e.name),
      ...(through.has(e.name) ? { servedAs: through.get(e.name)! } : {}),
    }));
    // A model whose load failed with nothing earlier to serve is withdrawn from the served
    // repository (so poll mode stops retrying it) and forgotten by Triton, which then no longer
    // lists it, or briefly lists the placeholder that made it forget: its last edit says why.
    for (const e of edits) {
      if (!e.withdrawn || e.outcome !== "failed") continue;
      models = [
        ...models.filter((x) => x.name !== e.model),
        { name: e.model, state: "UNAVAILABLE", ...(e.reason ? { reason: e.reason } : {}), served: false },
      ];
    }
    // A model not served whose last save was refused (withdrawn after a failed load, or refused
    // at `up`, then saved with errors) stays listed with the refusal until a good save loads it.
    for (const e of edits) {
      if (e.outcome !== "refused" || served.includes(e.model) || models.some((x) => x.name === e.model)) continue;
      // One `up` did not stage keeps the kind `up` gave it (below).
      if ((s.notServed ?? []).some((n) => n.model === e.model)) continue;
      models.push({
        name: e.model,
        // No error refused it: a backend or GPU this server lacks, as `up` skips such a model.
        state: (e.diagnostics ?? []).some((d) => d.severity === "error") ? "REFUSED" : "SKIPPED",
        reason: refusedWhy(e, s.modelsDir) ?? e.reason ?? "lint refused it",
        served: false,
      });
    }
    // Models `up` did not stage, until an edit of theirs says more.
    for (const n of s.notServed ?? []) {
      if (models.some((m) => m.name === n.model) || edits.some((e) => e.model === n.model && e.outcome !== "refused"))
        continue;
      const edit = edits.find((e) => e.model === n.model);
      models.push({
        name: n.model,
        state: n.why === "skipped" ? "SKIPPED" : "REFUSED",
        reason: (n.why === "refused" && edit ? refusedWhy(edit, s.modelsDir) : undefined) ?? n.reason,
        served: false,
      });
    }
    // A model loaded with its own files (the load request's `file:` overrides) lives in a
    // folder of Triton's and is missing from the repository index; the statistics list it.
    const stats = await clientForRun(s)
      .modelStatistics()
      .catch(() => ({ model_stats: [] }));
    for (const st of stats.model_stats) {
      const name = String(st.name ?? "");
      if (name && !models.some((m) => m.name === name))
        models.push({ name, ...(st.version ? { version: String(st.version) } : {}), state: "READY", served: false });
    }
    const foreign = foreignModels(s, served, models, edits);
    for (const m of models) if (foreign.includes(m.name)) m.foreign = true;
    models.sort((a, b) => a.name.localeCompare(b.name));
    const notServed = [...new Set(models.filter((m) => !m.served && !m.foreign).map((m) => m.name))];
    return {
      ...base,
      serverReady: readiness.ready,
      readiness: { ...readiness, means: READY_MEANS, notServed, count: countModels(models.filter((m) => !m.foreign)) },
      models,
      ...(foreign.length ? { foreignModels: foreign } : {}),
      ...(edits.length ? { edits } : {}),
    };
  } catch (err) {
    return { ...base, problem: `Triton did not answer: ${(err as Error).message}` };
  }
}

/**
 * Whether a run is ready (triton/run-readiness.ts): what it serves (its staging repository), and
 * Triton's health and index. `status` and `up --detach` ask this; the dashboard the same function.
 */
export async function readinessOf(
  s: RunState,
  served?: string[],
  client: TritonHttpClient = clientForRun(s),
): Promise<{ readiness: RunReadiness; index: RepositoryIndexEntry[] }> {
  const [index, tritonReady, names] = await Promise.all([
    client.repositoryIndex(),
    client.isReady(),
    served ?? servedModels(s.runDir),
  ]);
  return { readiness: runReadiness({ live: true, tritonReady, served: names, index }), index };
}

/**
 * Names Triton lists that are neither in the served repository nor known to this run (a model
 * deleted, withdrawn or refused is known through its edit or the record): a load request that
 * carried its own files, which only a holder of the key can make.
 */
function foreignModels(
  s: RunState,
  served: string[],
  models: Array<{ name: string; state: string }>,
  edits: EditSummary[],
): string[] {
  const known = (n: string) =>
    served.includes(n) || edits.some((e) => e.model === n) || (s.notServed ?? []).some((x) => x.model === n);
  return [...new Set(models.filter((m) => m.state === "READY" && !known(m.name)).map((m) => m.name))].sort();
}

/**
 * Why an edit was refused: lint's errors, or, for a model no error refuses (a backend this runtime
 * lacks, a GPU it does not have), the finding that says where it runs.
 */
function refusedWhy(e: EditSummary, modelsDir: string): string | undefined {
  const ds = e.diagnostics ?? [];
  if (ds.some((d) => d.severity === "error")) return refusalSummary(ds, modelsDir);
  return ds[0]?.message;
}

async function readEdits(s: RunState): Promise<EditSummary[]> {
  try {
    return JSON.parse(await fsp.readFile(editsFile(s), "utf8")) as EditSummary[];
  } catch {
    return [];
  }
}
