import type Docker from "dockerode";
import type { Clock } from "../../clock.js";
import type { Paths } from "../../config/paths.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import type { RunState } from "../../state/run-state.js";
import type { RepositoryIndexEntry } from "../../triton/http-client.js";
import type { AttachedRun, RunDescription, StopReport, Supervision, UnloadsToWaitFor } from "../driver.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { awaitWatcherExit } from "../watcher-exit.js";
import { PodConnection } from "../clients/kubectl/connection.js";
import { podRunAlive } from "../clients/kubectl/liveness.js";
import { terminatePids } from "../clients/kubectl/delete-run.js";
import type { KubectlTools } from "../clients/kubectl/tools.js";
import { parseKindRecord, type KindRecord } from "./record.js";
import { findOurKubectls, teardownRun } from "./teardown.js";

const log = rootLog.child("kind");

/** The kind runtime's `status --json` fields. */
export interface KindStatusFields extends Record<string, unknown> {
  cluster: {
    name: string;
    context: string;
    namespace: string;
    created: boolean;
    keepCluster: boolean;
    image: string;
    gpus: number;
    nodeContainer?: string;
  };
}

/** What a recorded run and the leftover search reach kind with: the driver's Docker and kubectl, and a clock. */
export interface KindClients {
  connect: (env: NodeJS.ProcessEnv) => Docker;
  tools: (env: NodeJS.ProcessEnv) => KubectlTools;
  /** The time the stop's, the watcher's and the daemon's waits run on. */
  clock: Clock;
}

/** A recorded run's pod in its kind cluster, found again from another process (`status`, `down`, the watcher). */
export function attachKindRun(
  state: RunState,
  ctx: { paths: Paths; env: NodeJS.ProcessEnv },
  deps: KindClients,
): AttachedRun {
  const rec = parseKindRecord(state.runtimeRecord, ctx.paths.runFile);
  const tools = () => deps.tools(ctx.env);
  // Read by beforeStop, while the watcher's port-forward still reaches Triton.
  let loadedAtStop: RepositoryIndexEntry[] = [];
  return {
    state,
    alive: () => podRunAlive({ runId: state.runId, kind: rec }, tools()),
    describe: () => describeKindRun(rec),
    handsOverTo: () => false,
    async beforeStop() {
      loadedAtStop = await loadedBeforeStop(state);
    },
    stop: async (graceMs, onProgress, waitFor) =>
      stopKindRun(
        {
          rec,
          state,
          tools: tools(),
          docker: () => deps.connect({ ...ctx.env, DOCKER_HOST: rec.daemon }),
          stateDir: ctx.paths.stateDir,
          clock: deps.clock,
        },
        { loaded: loadedAtStop, graceMs, onProgress, waitFor },
      ),
    supervise: async () => superviseKindRun(rec, state, tools(), deps.clock),
  };
}

function describeKindRun(rec: KindRecord): RunDescription<KindStatusFields> {
  return {
    where: `kind cluster ${rec.cluster}`,
    goneWhat: `the Triton Deployment in kind cluster ${rec.cluster}`,
    lines: [
      [
        "cluster",
        `${rec.cluster} (context ${rec.context}, namespace ${rec.namespace}; ${rec.keepCluster ? "kept after the run" : "deleted by `down`"})`,
      ],
      ["image", `${rec.image} (gpus ${rec.gpus})`],
    ],
    json: {
      cluster: {
        name: rec.cluster,
        context: rec.context,
        namespace: rec.namespace,
        created: rec.created,
        keepCluster: rec.keepCluster,
        image: rec.image,
        gpus: rec.gpus,
        ...(rec.nodeContainer ? { nodeContainer: rec.nodeContainer } : {}),
      },
    },
  };
}

/** A recorded kind run and what its stop reaches it with. */
interface RecordedKindRun {
  rec: KindRecord;
  state: RunState;
  tools: KubectlTools;
  /** The daemon the record names, connected only once the watcher is gone. */
  docker: () => Docker;
  stateDir: string;
  clock: Clock;
}

/** What the stop was asked: the models beforeStop read, the grace time, and the unloads it waits for. */
interface KindStopRequest {
  loaded: RepositoryIndexEntry[];
  graceMs: number;
  onProgress: ((message: string) => void) | undefined;
  waitFor: UnloadsToWaitFor | undefined;
}

/**
 * `down`: its kubectl children (the watcher's, or a crashed `up`'s), then the cluster if it is not
 * kept, else the run's objects.
 */
async function stopKindRun(
  { rec, state, tools, docker, stateDir, clock }: RecordedKindRun,
  { loaded, graceMs, onProgress, waitFor }: KindStopRequest,
): Promise<StopReport> {
  await awaitWatcherExit(state.supervisorPid, clock);
  terminatePids(findOurKubectls(rec.cluster));
  const { clusterDeleted: deleted, outcome } = await teardownRun(
    tools,
    docker(),
    rec,
    state.runId,
    stateDir,
    graceMs,
    { loaded, onProgress, ...(waitFor ? { waitFor } : {}) },
    clock,
  ).catch((err: unknown) => {
    if (err instanceof UserError)
      throw new UserError(`cannot clean up the kind cluster ${rec.cluster}: ${err.message}`, {
        hint: err.hint,
        cause: err,
      });
    throw err;
  });
  return {
    what: `kind cluster ${rec.cluster}, ${deleted ? "deleted" : "kept; the run's objects removed"}`,
    staleWhat: `kind cluster ${rec.cluster}${deleted ? ", now deleted" : ""}`,
    json: { cluster: rec.cluster },
    summary: { clusterDeleted: deleted ? rec.cluster : null },
    ...(outcome ? { outcome } : {}),
  };
}

/**
 * Triton is reached through a port-forward and its log through `kubectl logs`, both handed over
 * from the foreground `up`; they run in the watcher for as long as the run lasts.
 */
async function superviseKindRun(
  rec: KindRecord,
  state: RunState,
  tools: KubectlTools,
  clock: Clock,
): Promise<Supervision> {
  const connection = new PodConnection({
    tools,
    cluster: rec.cluster,
    context: rec.context,
    namespace: rec.namespace,
    runId: state.runId,
    image: rec.image,
    ports: state.ports,
    host: state.host,
    logFile: state.logFile,
    runDir: state.runDir,
    resume: true,
    clock,
  });
  await connection.start();
  // The foreground `up`'s port-forward may still hold the ports for a moment; it is retried.
  await connection
    .forward(30_000)
    .catch((err: unknown) => log.warn("the port-forward did not start", { error: String(err) }));
  return { ended: connection.exited.then(() => undefined), stop: () => connection.stop() };
}
