import path from "node:path";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UsageError, UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { requireFreePorts } from "../../net/ports.js";
import { isOurProcess, findProcesses } from "../../state/process.js";
import type { RunState } from "../../state/run-state.js";
import type { RepositoryIndexEntry } from "../../triton/http-client.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { shmHinter, shmStartHint } from "../shm-hints.js";
import { DEFAULT_SHM_BYTES, parseGpus, parseSize, type GpuRequest } from "../container-options.js";
import { DEFAULT_IMAGE } from "../ngc-images.js";
import type { AttachedRun, Leftovers, PlannedRun, RunDescription, RuntimeDriver } from "../driver.js";
import { deliverRunFolder } from "../delivery.js";
import { clusterFacts } from "./facts.js";
import { PodConnection } from "../clients/kubectl/connection.js";
import { podRunAlive } from "../clients/kubectl/liveness.js";
import { deleteRunObjects, terminatePids } from "../clients/kubectl/delete-run.js";
import { KubectlTools } from "../clients/kubectl/tools.js";
import { ClusterRuntime, followPods } from "./cluster-runtime.js";
import { parseClusterRecord } from "./record.js";
import { clusterGpus, parseNamespace, RUN_LABEL } from "./settings.js";

const log = rootLog.child("cluster");

export interface ClusterOptions {
  context: string;
  namespace: string | undefined;
  image: string;
  gpus: GpuRequest;
  shmBytes: number;
}

export interface ClusterDriverDeps {
  tools?: (env: NodeJS.ProcessEnv) => KubectlTools;
  /** The time the run's polls, deadlines and stop waits run on (../../clock.ts). */
  clock?: Clock;
}

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

/**
 * Triton in a Kubernetes cluster the user already has, reached through a kubeconfig context:
 * the article's Deployment and a Service in an existing namespace, the models copied in through
 * the API's exec stream, port-forwarded here.
 */
export function createClusterDriver(deps: ClusterDriverDeps = {}): RuntimeDriver<ClusterOptions> {
  const toolsFor = deps.tools ?? ((env: NodeJS.ProcessEnv) => new KubectlTools(undefined, env));
  const clock = deps.clock ?? REAL_CLOCK;
  return {
    kind: "cluster",
    options(flags) {
      if (!flags.context?.trim())
        throw new UsageError("--runtime cluster needs --context NAME: the kubeconfig context of the cluster to use", {
          hint: "`kubectl config get-contexts` lists yours; triton-dev never uses the current context by default.",
        });
      const gpus: GpuRequest = flags.gpus ? parseGpus(flags.gpus) : { kind: "none" };
      clusterGpus(gpus);
      return {
        context: flags.context.trim(),
        namespace: flags.namespace !== undefined ? parseNamespace(flags.namespace) : undefined,
        image: flags.image ?? DEFAULT_IMAGE,
        gpus,
        shmBytes: flags.shmSize ? parseSize(flags.shmSize) : DEFAULT_SHM_BYTES,
      };
    },
    async plan(input, options, ctx): Promise<PlannedRun> {
      if (input.reload === "explicit")
        throw new UsageError("--runtime cluster serves in poll mode only (--reload poll)", {
          hint: "The models reach the pod by a copy after each save; explicit mode would ask Triton to load before the copy is there.",
        });
      const rt = new ClusterRuntime(ctx.env, {
        tools: toolsFor(ctx.env),
        clock,
        onProgress: (p) => ctx.emit({ type: "progress", runtime: "cluster", step: p.step, message: p.message }),
        onLogLine: shmHinter(options.shmBytes, (message) => ctx.emit({ type: "hint", message })),
      });
      const plan = await rt.plan({
        ...options,
        ports: input.ports,
        host: input.host,
      });
      await requireFreePorts(input.ports, input.host);
      return {
        gpus: plan.gpus,
        gpuSkipReason: "it needs a GPU (KIND_GPU) and the pod asks for none (--gpus N asks for N)",
        canDisableAutoComplete: false,
        // Start copies the run folder into the pod's volume (sync.ts), and the sidecar keeps copying it.
        deliver: (folder) => deliverRunFolder(folder, ctx, clusterFacts.stagingSeenAs),
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
      const rec = parseClusterRecord(state.runtimeRecord, ctx.paths.runFile);
      const tools = () => toolsFor(ctx.env);
      let loadedAtStop: RepositoryIndexEntry[] = [];
      return {
        state,
        alive: () => podRunAlive({ runId: state.runId, kind: rec }, tools()),
        describe: (): RunDescription<ClusterStatusFields> => ({
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
        }),
        handsOverTo: () => false,
        async beforeStop() {
          loadedAtStop = await loadedBeforeStop(state, 1000);
        },
        async stop(graceMs, onProgress) {
          const deadline = clock.now() + 5_000;
          while (
            state.supervisorPid !== undefined &&
            isOurProcess(state.supervisorPid, process.execPath) &&
            clock.now() < deadline
          )
            await clock.sleep(100);
          terminatePids(ourKubectls(rec.context, rec.namespace));
          await deleteRunObjects(
            tools(),
            {
              context: rec.context,
              namespace: rec.namespace,
              selector: `${RUN_LABEL}=${state.runId}`,
              kinds: rec.kinds,
              graceMs,
              clock,
            },
            { loaded: loadedAtStop, ...(onProgress ? { onProgress } : {}) },
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
        },
        async supervise() {
          const rt = new ClusterRuntime(ctx.env, { tools: tools(), clock });
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
          followPods(connection, sync).catch((err: unknown) =>
            log.warn("a copy into the pod failed", { error: String(err) }),
          );
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
        },
      };
    },
    // A crashed run's objects are found through its record (`down` stops the recorded run);
    // nothing else in the user's cluster is looked at.
    cleanup(): Promise<Leftovers> {
      return Promise.resolve({ json: {}, lines: [] });
    },
  };
}

export const clusterDriver = createClusterDriver();

/** The entry registry.ts loads for this runtime (`./cluster/driver.js`'s `driver`). */
export { clusterDriver as driver };
