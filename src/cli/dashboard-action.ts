import { REAL_CLOCK, type Clock } from "../clock.js";
import { resolvePaths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { EventBus } from "../events/bus.js";
import type { SessionEvent } from "../session/events.js";
import { followRunEvents, requestReload } from "../session/run-events.js";
import { urlHost } from "../net/url.js";
import { clientForRun } from "../triton/http-client.js";
import { servedModels } from "../reload/stage.js";
import { userPathsOf } from "../state/staged-paths.js";
import { endpointsOf } from "../session/status.js";
import { recordedRun } from "../session/measured-run.js";
import { currentRun, runAlive } from "../session/current-run.js";
import type { RunState } from "../state/run-state.js";
import { loadDashboard } from "../ui/load-dashboard.js";
import { shouldOpenDashboard } from "../ui/mode.js";
import { printEvents, type CliContext } from "./output.js";

export interface DashboardFlags {
  ui: boolean;
  json: boolean;
}

/** `triton-dev dashboard`, loaded when the command runs. */
export async function dashboardAction(
  flags: DashboardFlags,
  ctx: CliContext,
  clock: Clock = REAL_CLOCK,
): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  const run = await currentRun(paths, env);
  if (!run)
    throw new UserError("nothing is running: there is no triton-dev server to show", {
      hint: "Start one with `triton-dev up --detach` (or `triton-dev up`, which opens the dashboard itself).",
    });
  if (!run.alive) {
    throw new UserError(`the recorded run (${run.state.runtime} runtime, pid ${run.state.pid}) is no longer running`, {
      hint: "`triton-dev down` cleans up after it; `triton-dev up --detach` starts a new one.",
    });
  }
  const state = run.state;
  const bus = new EventBus<SessionEvent>();
  const openUi = shouldOpenDashboard(
    { ui: flags.ui, json: flags.json, detach: false },
    env,
    process.stdout,
    process.stdin,
  );
  const dashboard = openUi
    ? (await loadDashboard())({
        bus,
        env,
        clock,
        ownsServer: false,
        runPerf: async (o, deps) =>
          (await import("../perf/run.js")).runPerf(o, {
            ...deps,
            run: recordedRun(deps.env),
          }),
        runTune: async (o, deps) =>
          (await import("../tune/run.js")).runTune(o, { ...deps, run: recordedRun(deps.env) }),
      })
    : undefined;
  if (!dashboard) bus.on(printEvents(output, flags.json));

  // What `up` told its own dashboard while it started, rebuilt from the run's record.
  bus.emit({
    type: "starting",
    runtime: state.runtime,
    pid: state.pid > 0 ? state.pid : undefined,
    logFile: state.logFile,
  });
  for (const event of run.run.describe().startEvents ?? []) bus.emit(event);
  const userPaths = userPathsOf(state);
  const models = (
    await clientForRun(state)
      .repositoryIndex()
      .catch(() => [])
  ).map((m) => (m.reason ? { ...m, reason: userPaths(m.reason) } : m));
  const urls = endpointsOf(state);
  const h = urlHost(state.host);
  const endpoints = {
    http: `${h}:${state.ports.http}`,
    grpc: `${h}:${state.ports.grpc}`,
    metrics: `${h}:${state.ports.metrics}`,
  };
  bus.emit({
    type: "ready",
    endpoints,
    models,
    elapsedMs: Math.max(0, Date.now() - Date.parse(state.startedAt)),
    attached: true,
  });

  // A detached run's supervisor records every event (the edit timeline above all); a
  // foreground `up` keeps its own in its terminal.
  const stopEvents = state.detached ? followRunEvents(state, (e) => bus.emit(e), undefined, clock) : undefined;
  if (!state.detached) {
    // A detached run's supervisor records these; a foreground one's only in run.json.
    for (const n of state.notServed ?? []) {
      bus.emit(
        n.why === "skipped"
          ? { type: "skipped", model: n.model, reason: n.reason, diagnostics: [] }
          : { type: "lint", model: n.model, diagnostics: [], staged: false },
      );
    }
  }
  if (!state.detached && !flags.json) {
    const note = "this run's edit timeline is shown by the `up` that started it; here: models, metrics, logs and perf";
    if (dashboard) bus.emit({ type: "hint", message: note });
    else output.out(note);
  }

  dashboard?.attach({
    baseUrl: urls.http,
    repositoryKey: state.repositoryKey,
    metricsUrl: urls.metrics,
    ...(state.detached ? { reload: (model: string) => void reloadDetached(state, model, bus) } : {}),
    userPaths,
    served: () => servedModels(state.runDir),
  });

  await new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clock.clearInterval(timer);
      process.off("SIGINT", finish);
      process.off("SIGTERM", finish);
      resolve();
    };
    process.on("SIGINT", finish);
    process.on("SIGTERM", finish);
    void dashboard?.quitRequested.then(finish);
    // The server stopped (`down` from another shell, or a crash): nothing left to show.
    const timer = clock.setInterval(() => {
      void runAlive(paths, state, env).then((alive) => {
        if (alive || done) return;
        bus.emit({ type: "server-exited", code: null, signal: null, lastLines: [] });
        finish();
      });
    }, 1000);
  });
  stopEvents?.();
  await dashboard?.close();
}

async function reloadDetached(state: RunState, model: string, bus: EventBus<SessionEvent>): Promise<void> {
  try {
    await requestReload(state, model);
  } catch (err) {
    bus.emit({ type: "hint", message: err instanceof UserError ? `${err.message}. ${err.hint ?? ""}` : String(err) });
  }
}
