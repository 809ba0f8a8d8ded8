import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { isOurProcess } from "../../state/process.js";
import { requireFreePorts } from "../../net/ports.js";
import type { RunState } from "../../state/run-state.js";
import type { RepositoryIndexEntry } from "../../triton/http-client.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { connectDocker, requireDaemon } from "../clients/container/client.js";
import { pullEvent } from "../clients/container/pull-event.js";
import { shmHinter, shmStartHint } from "../shm-hints.js";
import { DEFAULT_SHM_BYTES, parseGpus, parseSize, type GpuRequest } from "../container-options.js";
import { DEFAULT_IMAGE } from "../ngc-images.js";
import type { AttachedRun, Leftovers, PlannedRun, RunDescription, RuntimeDriver } from "../driver.js";
import { deliverRunFolder } from "../delivery.js";
import { kindFacts } from "./facts.js";
import { listClusters } from "./cluster.js";
import { PodConnection } from "../clients/kubectl/connection.js";
import { KindRuntime } from "./kind-runtime.js";
import { podRunAlive } from "../clients/kubectl/liveness.js";
import { parseKindRecord } from "./record.js";
import { DEFAULT_CLUSTER, parseClusterName, parseNodeImage } from "./settings.js";
import { terminatePids } from "../clients/kubectl/delete-run.js";
import { findOurKubectls, removeLeftovers, teardownRun } from "./teardown.js";
import { KubectlTools } from "../clients/kubectl/tools.js";

const log = rootLog.child("kind");

export interface KindOptions {
  cluster: string;
  /** The cluster outlives the run (`--keep-cluster`). */
  keepCluster: boolean;
  /** The node image of a cluster this run creates (`--node-image`); kind's default when absent. */
  nodeImage?: string;
  image: string;
  gpus: GpuRequest | "auto";
  shmBytes: number;
}

export interface KindDriverDeps {
  connect?: (env: NodeJS.ProcessEnv) => Docker;
  tools?: (env: NodeJS.ProcessEnv) => KubectlTools;
  /** kind-config/ to read (tests); default: the installation's. */
  configDir?: string;
  /** The time the run's polls, deadlines and stop waits run on (../../clock.ts). */
  clock?: Clock;
}

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

/**
 * Triton in a local kind cluster: the article's Deployment and Service, applied from the same
 * renderer as `triton-dev manifests`, port-forwarded to this machine.
 */
export function createKindDriver(deps: KindDriverDeps = {}): RuntimeDriver<KindOptions> {
  const connect = deps.connect ?? connectDocker;
  const toolsFor = deps.tools ?? ((env: NodeJS.ProcessEnv) => new KubectlTools(undefined, env));
  const clock = deps.clock ?? REAL_CLOCK;
  return {
    kind: "kind",
    options(flags) {
      return {
        cluster: flags.cluster ? parseClusterName(flags.cluster) : DEFAULT_CLUSTER,
        keepCluster: flags.keepCluster ?? false,
        ...(flags.nodeImage !== undefined ? { nodeImage: parseNodeImage(flags.nodeImage) } : {}),
        image: flags.image ?? DEFAULT_IMAGE,
        gpus: flags.gpus ? parseGpus(flags.gpus) : "auto",
        shmBytes: flags.shmSize ? parseSize(flags.shmSize) : DEFAULT_SHM_BYTES,
      };
    },
    async plan(input, options, ctx): Promise<PlannedRun> {
      const rt = new KindRuntime(connect(ctx.env), ctx.env, {
        tools: toolsFor(ctx.env),
        ...(deps.configDir ? { configDir: deps.configDir } : {}),
        clock,
        onProgress: (p) => ctx.emit({ type: "progress", runtime: "kind", step: p.step, message: p.message }),
        onLogLine: shmHinter(options.shmBytes, (message) => ctx.emit({ type: "hint", message })),
      });
      const plan = await rt.plan(
        {
          ...options,
          stateDir: ctx.paths.stateDir,
          ports: input.ports,
          host: input.host,
          reload: input.reload,
        },
        (p) => ctx.emit(pullEvent("kind", p)),
      );
      // kubectl port-forward listens on these, on this machine.
      await requireFreePorts(input.ports, input.host);
      return {
        gpus: plan.gpus === 0 ? 0 : undefined,
        gpuSkipReason:
          "it needs a GPU (KIND_GPU) and the kind pod gets none (--gpus none, or Docker has no NVIDIA runtime)",
        ...(plan.imageBackends ? { imageBackends: plan.imageBackends } : {}),
        canDisableAutoComplete: false,
        // The kind node mounts the run folder (hostPath) into the pod.
        deliver: (folder) => deliverRunFolder(folder, ctx, kindFacts.stagingSeenAs),
        async start(o) {
          const started = await rt.start(plan, o);
          return {
            handle: started.handle,
            executable: "kubectl",
            record: started.record,
            readiness: started.readiness,
          };
        },
        startHint: (logFile) => shmStartHint(logFile, options.shmBytes),
      };
    },
    attach(state: RunState, ctx): AttachedRun {
      const rec = parseKindRecord(state.runtimeRecord, ctx.paths.runFile);
      const tools = () => toolsFor(ctx.env);
      // Read by beforeStop, while the watcher's port-forward still reaches Triton.
      let loadedAtStop: RepositoryIndexEntry[] = [];
      return {
        state,
        alive: () => podRunAlive({ runId: state.runId, kind: rec }, tools()),
        describe: (): RunDescription<KindStatusFields> => ({
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
        }),
        handsOverTo: () => false,
        /**
         * Its kubectl children (the watcher's, or a crashed `up`'s), then the cluster if it is not kept, else the run's
         * objects.
         */
        async beforeStop() {
          loadedAtStop = await loadedBeforeStop(state);
        },
        async stop(graceMs, onProgress, waitFor) {
          // The watcher stops its port-forward and log follower on SIGTERM; it is given a moment,
          // so that nothing of the run is left when `down` returns.
          const deadline = clock.now() + 5_000;
          while (
            state.supervisorPid !== undefined &&
            isOurProcess(state.supervisorPid, process.execPath) &&
            clock.now() < deadline
          )
            await clock.sleep(100);
          terminatePids(findOurKubectls(rec.cluster));
          const { clusterDeleted: deleted, outcome } = await teardownRun(
            tools(),
            connect({ ...ctx.env, DOCKER_HOST: rec.daemon }),
            rec,
            state.runId,
            ctx.paths.stateDir,
            graceMs,
            { loaded: loadedAtStop, onProgress, ...(waitFor ? { waitFor } : {}) },
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
        },
        async supervise() {
          // Triton is reached through a port-forward and its log through `kubectl logs`, both
          // handed over from the foreground `up`; they run in the watcher for as long as the run lasts.
          const connection = new PodConnection({
            tools: tools(),
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
        },
      };
    },
    doctor: async (ctx) => (await import("./doctor.js")).kindChecks(ctx.env),
    async cleanup(graceMs, ctx): Promise<Leftovers> {
      const none: Leftovers = { json: { orphanClusters: [], orphanKindRuns: [], orphanKubectls: [] }, lines: [] };
      const tools = toolsFor(ctx.env);
      // Without kind (most runs of the other runtimes) there is nothing to look for.
      if ((await listClusters(tools).catch(() => [])).length === 0) return none;
      const docker = connect(ctx.env);
      try {
        await requireDaemon(docker, ctx.env, 1_500, clock);
      } catch {
        return none;
      }
      const r = await removeLeftovers(tools, docker, ctx.paths.stateDir, graceMs);
      const lines: string[] = [];
      if (r.clusters.length)
        lines.push(`deleted ${r.clusters.length} leftover kind cluster(s) of ours: ${r.clusters.join(", ")}`);
      if (r.processes.length)
        lines.push(`stopped ${r.processes.length} leftover kubectl process(es) of ours: pid ${r.processes.join(", ")}`);
      if (r.runs.length)
        lines.push(
          `removed the objects of ${r.runs.length} finished run(s) from kept kind clusters: ${r.runs.join(", ")}`,
        );
      return { json: { orphanClusters: r.clusters, orphanKindRuns: r.runs, orphanKubectls: r.processes }, lines };
    },
  };
}

export const kindDriver = createKindDriver();

/** The entry registry.ts loads for this runtime (`./kind/driver.js`'s `driver`). */
export { kindDriver as driver };
