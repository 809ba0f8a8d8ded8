import { UsageError } from "../errors.js";
import { RUNTIME_FLAG_NAMES, type RuntimeFlags } from "../runtimes/facts.js";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { resolvePaths, type Paths } from "../config/paths.js";
import { EventBus } from "../events/bus.js";
import type { UpOptions } from "../session/session.js";
import { createRunOwner, type RunOwner } from "../session/run-owner.js";
import type { SessionEvent } from "../session/events.js";
import { recordSupervisor, spawnSupervisor, waitForSupervisor } from "../session/supervisor.js";
import { currentRun, watcherOf } from "../session/current-run.js";
import { readinessOf } from "../session/status.js";
import { recordedRun } from "../session/measured-run.js";
import type { RunState } from "../state/run-state.js";
import { userPathsOf } from "../state/staged-paths.js";
import { servedModels } from "../reload/stage.js";
import type { ExplainedIndexEntry } from "../reload/load-reasons.js";
import { countModels, modelCountLine, type CountedModel } from "../triton/run-readiness.js";

import { formatEvent, printEvents, type CliContext } from "./output.js";
import { shouldOpenDashboard } from "../ui/mode.js";
import type { Dashboard } from "../ui/dashboard.js";
import { loadDashboard } from "../ui/load-dashboard.js";
import { urlHost } from "../net/url.js";

/**
 * The running CLI's own file, so that the watcher of a detached run is the same program: main.ts
 * says which (dist/cli/main.js, or the single-file bundle under any name, which has no main.js
 * beside it); a CLI imported rather than run (a test) is dist's main.js.
 */
function cliPath(ctx: Pick<CliContext, "entry">): string {
  return ctx.entry ?? fileURLToPath(new URL("./main.js", import.meta.url));
}

/** `up`'s flags: its own, and the runtimes' (runtimes/kinds.ts runtimeFlagOptions), which the chosen driver parses. */
export interface UpFlags extends RuntimeFlags {
  runtime: UpOptions["runtime"];
  models: string;
  reload: UpOptions["reload"];
  pollSecs: number;
  httpPort: number;
  grpcPort: number;
  metricsPort: number;
  host: string;
  detach: boolean;
  /** With --detach: exit 1 unless every model of the repository is READY (failed, refused and skipped ones count). */
  requireReady?: boolean;
  ui: boolean;
  json: boolean;
  timeout: number;
}

/**
 * `up --detach` again for a detached run of the same folder whose watcher died (Triton serving,
 * deaf to edits): the watcher is started again instead of refusing the second `up`.
 */
async function restartedWatcher(flags: UpFlags, paths: Paths, ctx: CliContext): Promise<boolean> {
  if (!flags.detach) return false;
  const run = await currentRun(paths, ctx.env).catch(() => undefined);
  const s = run?.state;
  if (!run?.alive || !s?.detached || s.modelsDir !== path.resolve(flags.models)) return false;
  if (watcherOf(s)?.alive) return false;
  const pid = spawnSupervisor(s, cliPath(ctx), ctx.env);
  await recordSupervisor(paths, s, pid);
  if (!(await waitForSupervisor(s, pid))) {
    ctx.output.err(`the run's watcher did not start again; see ${path.join(s.runDir, "supervisor.log")}.`);
    ctx.exitCode = 1;
    return true;
  }
  ctx.output.out(
    `hot reload for the running Triton (${run.run.describe().where}) had stopped; its watcher runs again (pid ${pid}) and picks up your saves`,
  );
  return true;
}

/**
 * What a detached `up` leaves behind, once its watcher has settled the first loads: ready or not
 * (the exit code, the same answer as `status` and Triton's /v2/health/ready), and each model it
 * does not serve with the reason. Exported for its unit test.
 */
export async function reportDetached(
  state: RunState,
  models: ExplainedIndexEntry[],
  ctx: CliContext,
  json: boolean,
  requireReady = false,
): Promise<void> {
  const { output } = ctx;
  // What the read failed on is said: "does not answer" alone left a failed detached start unexplained.
  const { readiness } = await readinessOf(state).catch((err: unknown) => ({
    readiness: {
      ready: false,
      waitingFor: [`Triton does not answer (${err instanceof Error ? err.message : String(err)})`],
    },
  }));
  const failed = [...new Set(models.filter((m) => m.state !== "READY").map((m) => m.name))].filter(
    (n) => !models.some((m) => m.name === n && m.state === "READY"),
  );
  for (const name of failed) {
    const entry = models.find((m) => m.name === name && m.reason);
    const why = entry?.reason ?? "Triton gave no reason";
    // An ensemble kept out by its step loads once the step does; other models once a fix is saved.
    const next = entry?.heldBySteps ? "it loads once that step loads" : "saving a fix loads it";
    output.err(`${name}: not served, it failed to load: ${why}; ${next}`);
  }
  // Skipped GPU models are expected on a machine without one: said once, on stdout, as `up` found them.
  for (const n of state.notServed ?? [])
    if (n.why === "refused") output.err(`${n.model}: not served, refused: ${n.reason}; saving a fix loads it`);
  // Models of the repository that are not served, said in one line: failed (UNAVAILABLE) and
  // refused ones always; skipped ones (a GPU-only model without a GPU, said on stdout as `up`
  // found them, and expected on such a machine) only when --require-ready counts them.
  const problems = [
    ...failed.map((n) => `${n} (UNAVAILABLE: failed to load)`),
    ...(state.notServed ?? []).filter((n) => n.why === "refused").map((n) => `${n.model} (refused)`),
  ];
  const skippedModels = (state.notServed ?? [])
    .filter((n) => n.why === "skipped")
    .map((n) => `${n.model} (skipped: ${n.reason})`);
  const notReady = requireReady ? [...problems, ...skippedModels] : problems;
  if (notReady.length)
    output.err(
      `${notReady.length} model(s) of ${state.modelsDir} not READY: ${notReady.join(", ")}` +
        (requireReady ? "" : "; Triton serves the others (pass --require-ready to make this an error)"),
    );
  if (!readiness.ready) {
    output.err(
      `not ready: ${readiness.waitingFor.join("; ")}. Triton keeps running; see \`triton-dev status\`, stop it with \`triton-dev down\`.`,
    );
    ctx.exitCode = 1;
  } else if (requireReady && notReady.length) {
    output.err(
      "not ready (--require-ready): every model of the repository must be READY. Triton keeps running and serves the others; fix and save (hot reload loads it), or stop it with `triton-dev down`.",
    );
    ctx.exitCode = 1;
  } else if (!json) {
    output.out(readyLine(models, state));
    output.out("running in the background: `triton-dev status`, `triton-dev logs -f`, `triton-dev down`");
  }
}

/** A model `up` did not stage, as the ready line counts it. */
export function notServedCounted(n: NonNullable<RunState["notServed"]>[number]): CountedModel {
  return { name: n.model, state: n.why === "skipped" ? "SKIPPED" : "REFUSED", reason: n.reason };
}

/**
 * Exactly what is READY and what is not: "ready:" only when every model of the repository is;
 * otherwise how many are, and each other one with its reason.
 */
export function readyLine(models: readonly CountedModel[], state: Pick<RunState, "notServed">): string {
  const count = countModels([...models, ...(state.notServed ?? []).map(notServedCounted)]);
  const line = modelCountLine(count);
  if (!count.notReady.length) return `ready: ${line}`;
  return count.ready.length ? `partly ready: ${line}` : `nothing READY: ${line}`;
}

/** `triton-dev up`, loaded when the command runs (up-command.ts defines its flags). */
export async function upAction(flags: UpFlags, ctx: CliContext): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  if (flags.requireReady && !flags.detach)
    throw new UsageError("--require-ready goes with --detach", {
      hint: "A foreground `up` shows each model's state as it goes; `up --detach --require-ready` exits 1 unless every model is READY.",
    });
  if (await restartedWatcher(flags, paths, ctx)) return;
  const bus = new EventBus<SessionEvent>();
  // The dashboard (and its React/Ink) is loaded only when it opens, so plain runs stay lean.
  const dashboard: Dashboard | undefined = shouldOpenDashboard(flags, env, process.stdout, process.stdin)
    ? (await loadDashboard())({
        bus,
        env,
        ownsServer: true,
        runPerf: async (o, deps) =>
          (await import("../perf/run.js")).runPerf(o, {
            ...deps,
            run: recordedRun(deps.env),
          }),
        runTune: async (o, deps) =>
          (await import("../tune/run.js")).runTune(o, { ...deps, run: recordedRun(deps.env) }),
      })
    : undefined;
  // The run's owner (session/run-owner.ts): every trigger that stops the run (a signal, the
  // server's exit, the dashboard's `q`) goes through its dispatch, by the run's phase.
  const owner = createRunOwner(bus);
  const screen = renderEvents(bus, owner, dashboard, output, flags.json);
  // Signals are handled from the start: a Ctrl-C while Triton starts (or its models load, which
  // can take minutes) stops the server it started, instead of leaving one nobody owns.
  owner.listen();
  // q or Ctrl-C in the dashboard (raw mode turns Ctrl-C into a key, not SIGINT).
  void dashboard?.quitRequested.then(() => owner.dispatch({ type: "dashboard-quit" }));
  const session = await owner.start(paths, upOptionsOf(flags), env).catch(async (err: unknown) => {
    await screen.close();
    throw err;
  });
  screen.started();
  if (flags.detach) {
    owner.handOver(session);
    const pid = spawnSupervisor(session.state, cliPath(ctx), env);
    await recordSupervisor(paths, session.state, pid);
    if (!(await waitForSupervisor(session.state, pid))) {
      output.err(
        `hot reload did not start for this detached run; see ${path.join(session.state.runDir, "supervisor.log")}. Triton itself is running.`,
      );
    }
    await reportDetached(session.state, session.models, ctx, flags.json, flags.requireReady);
    return;
  }
  const controller = await owner.watch(session);
  if (controller)
    dashboard?.attach({
      baseUrl: session.client.baseUrl,
      repositoryKey: session.state.repositoryKey,
      metricsUrl: `http://${urlHost(session.state.host)}:${session.state.ports.metrics}/metrics`,
      reload: (model) => owner.dispatch({ type: "reload-request", model }),
      userPaths: userPathsOf(session.state),
      served: () => servedModels(session.state.runDir),
    });
  if (!flags.json && !dashboard && !owner.stopping) output.out("serving; press Ctrl-C to stop");
  await owner.lifecycle.stopped;
  // Stopped from another shell (`down`) or crashed: a crash is this command's failure.
  if (owner.failed) ctx.exitCode = 1;
  await screen.close();
}

/** What the session is asked to start, from `up`'s flags. */
function upOptionsOf(flags: UpFlags): Omit<UpOptions, "lifecycle" | "clock"> {
  return {
    runtime: flags.runtime,
    modelsDir: path.resolve(flags.models),
    reload: flags.reload,
    pollSecs: flags.pollSecs,
    ports: { http: flags.httpPort, grpc: flags.grpcPort, metrics: flags.metricsPort },
    host: flags.host,
    detached: flags.detach,
    readyTimeoutMs: flags.timeout * 1000,
    // Each runtime's driver takes its own and refuses the others'.
    runtimeFlags: Object.fromEntries(
      (Object.keys(RUNTIME_FLAG_NAMES) as Array<keyof RuntimeFlags>).map((k) => [k, flags[k]]),
    ) as RuntimeFlags,
  };
}

/**
 * The run's events on the terminal: printed as lines, or shown by the dashboard and, once it is
 * gone, replayed: everything if the start failed, otherwise how the run ended.
 */
function renderEvents(
  bus: EventBus<SessionEvent>,
  owner: RunOwner,
  dashboard: Dashboard | undefined,
  output: CliContext["output"],
  json: boolean,
): { started(): void; close(): Promise<void> } {
  const replay: SessionEvent[] = [];
  if (!dashboard) {
    bus.on(printEvents(output, json));
    return { started: () => {}, close: async () => {} };
  }
  bus.on(
    (e) =>
      (owner.lifecycle.phase === "starting" ||
        e.type === "server-exited" ||
        e.type === "stopping" ||
        e.type === "stopped") &&
      replay.push(e),
  );
  // The dashboard leaves the screen before the run's stop says what it does.
  owner.lifecycle.beforeStop(() => dashboard.detach());
  return {
    // From here the dashboard's frame tells the story; only how the run ends is replayed.
    started: () => void (replay.length = 0),
    close: async () => {
      await dashboard.close();
      for (const e of replay) {
        const line = formatEvent(e);
        if (line) output.out(line);
      }
    },
  };
}
