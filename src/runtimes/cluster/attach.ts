import path from "node:path";
import type { Clock } from "../../clock.js";
import type { Paths } from "../../config/paths.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { findProcesses } from "../../state/process.js";
import type { RunState } from "../../state/run-state.js";
import type { RepositoryIndexEntry } from "../../triton/http-client.js";
import type { AttachedRun, RunDescription, StopReport, Supervision } from "../driver.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { awaitWatcherExit } from "../watcher-exit.js";
import { PodConnection } from "../clients/kubectl/connection.js";
import { podRunAlive } from "../clients/kubectl/liveness.js";
import { deleteRunObjects, terminatePids } from "../clients/kubectl/delete-run.js";
import type { KubectlTools } from "../clients/kubectl/tools.js";
import { ClusterRuntime, followPods } from "./cluster-runtime.js";
import { parseClusterRecord, type ClusterRecord } from "./record.js";
import { RUN_LABEL } from "./settings.js";

const log = rootLog.child("cluster");

/** Our kubectl port-forward / logs / exec processes for one run's context and namespace. */
export function ourKubectls(context: string, namespace: string, procRoot = "/proc"): number[] {
  return findProcesses((argv) => {
    const i = argv.findIndex((a) => path.basename(a) === "kubectl");
    if (i < 0) return false;
    const args = argv.slice(i + 1);
    return (
      args.includes(`--context=${context}`) &&
      args.includes(`--namespace=${namespace}`) &&
      (args.includes("port-forward") || args.includes("logs") || args.includes("exec"))
    );
  }, procRoot).filter((pid) => pid !== process.pid);
}

/** The cluster runtime's `status --json` fields. */
export interface ClusterStatusFields extends Record<string, unknown> {
  kubernetes: { context: string; namespace: string; name: string; image: string; gpus: number };
}

/** What a recorded run reaches the user's cluster with: the driver's kubectl, and a clock. */
export interface ClusterClients {
  tools: (env: NodeJS.ProcessEnv) => KubectlTools;
  /** The time the stop's and the watcher's waits run on. */
  clock: Clock;
}

/** A recorded run's pod in the user's cluster, found again from another process (`status`, `down`, the watcher). */
export function attachClusterRun(
  state: RunState,
  ctx: { paths: Paths; env: NodeJS.ProcessEnv },
  clients: ClusterClients,
): AttachedRun {
  const rec = parseClusterRecord(state.runtimeRecord, ctx.paths.runFile);
  const tools = () => clients.tools(ctx.env);
  let loadedAtStop: RepositoryIndexEntry[] = [];
  return {
    state,
    alive: () => podRunAlive({ runId: state.runId, kind: rec }, tools()),
    describe: () => describeClusterRun(rec),
    handsOverTo: () => false,
    async beforeStop() {
      loadedAtStop = await loadedBeforeStop(state, 1000);
    },
    stop: async (graceMs, onProgress) =>
      stopClusterRun(rec, state, tools, clients.clock, { loaded: loadedAtStop, graceMs, onProgress }),
    supervise: async () => superviseClusterRun(rec, state, ctx.env, tools, clients.clock),
  };
}

function describeClusterRun(rec: ClusterRecord): RunDescription<ClusterStatusFields> {
  return {
    where: `context ${rec.context}`,
    goneWhat: `the Triton Deployment ${rec.name} in namespace ${rec.namespace} (context ${rec.context})`,
    lines: [
      ["cluster", `context ${rec.context}, namespace ${rec.namespace}; Deployment and Service ${rec.name}`],
      ["image", `${rec.image} (gpus ${rec.gpus})`],
    ],
    json: {
      kubernetes: {
        context: rec.context,
        namespace: rec.namespace,
        name: rec.name,
        image: rec.image,
        gpus: rec.gpus,
      },
    },
  };
}

/** `down`: the watcher given a moment, our kubectl children ended, then the run's objects deleted. */
async function stopClusterRun(
  rec: ClusterRecord,
  state: RunState,
  tools: () => KubectlTools,
  clock: Clock,
  stop: { loaded: RepositoryIndexEntry[]; graceMs: number; onProgress: ((message: string) => void) | undefined },
): Promise<StopReport> {
  await awaitWatcherExit(state.supervisorPid, clock);
  terminatePids(ourKubectls(rec.context, rec.namespace));
  await deleteRunObjects(
    tools(),
    {
      context: rec.context,
      namespace: rec.namespace,
      selector: `${RUN_LABEL}=${state.runId}`,
      kinds: rec.kinds,
      graceMs: stop.graceMs,
      clock,
    },
    { loaded: stop.loaded, ...(stop.onProgress ? { onProgress: stop.onProgress } : {}) },
  ).catch((err: unknown) => {
    if (err instanceof UserError)
      throw new UserError(`cannot remove the run's objects from context ${rec.context}: ${err.message}`, {
        hint: err.hint,
        cause: err,
      });
    throw err;
  });
  return {
    what: `context ${rec.context}, namespace ${rec.namespace}; Deployment and Service ${rec.name} deleted`,
    staleWhat: `context ${rec.context}; its objects deleted`,
    json: { context: rec.context, namespace: rec.namespace, name: rec.name },
  };
}

/**
 * The port-forward, the pod's log and the copies into its volume, handed over from the
 * foreground `up`; they run in the watcher for as long as the run lasts.
 */
async function superviseClusterRun(
  rec: ClusterRecord,
  state: RunState,
  env: NodeJS.ProcessEnv,
  tools: () => KubectlTools,
  clock: Clock,
): Promise<Supervision> {
  const rt = new ClusterRuntime(env, { tools: tools(), clock });
  const connection = new PodConnection({
    tools: tools(),
    cluster: rec.context,
    context: rec.context,
    namespace: rec.namespace,
    runId: state.runId,
    image: rec.image,
    ports: state.ports,
    host: state.host,
    logFile: state.logFile,
    runDir: state.runDir,
    resume: true,
    runtime: "cluster",
    clock,
  });
  const sync = rt.repositorySync(connection, rec.context, rec.namespace, state.runDir);
  await connection.start();
  // The pod is copied to once more (this watcher cannot know what `up` sent), then after each publish.
  sync.watch();
  followPods(connection, sync).catch((err: unknown) => log.warn("a copy into the pod failed", { error: String(err) }));
  await connection
    .forward(30_000)
    .catch((err: unknown) => log.warn("the port-forward did not start", { error: String(err) }));
  return {
    ended: connection.exited.then(() => undefined),
    stop: async () => {
      sync.stop();
      await connection.stop();
    },
  };
}
