import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import type { Paths } from "../../config/paths.js";
import { requireFreePorts } from "../../net/ports.js";
import { connectDocker, requireDaemon } from "../clients/container/client.js";
import { pullEvent } from "../clients/container/pull-event.js";
import { shmHinter, shmStartHint } from "../shm-hints.js";
import { DEFAULT_SHM_BYTES, parseGpus, parseSize, type GpuRequest } from "../container-options.js";
import { DEFAULT_IMAGE } from "../ngc-images.js";
import type { DriverContext, Leftovers, PlanInput, PlannedRun, RuntimeDriver } from "../driver.js";
import { deliverRunFolder } from "../delivery.js";
import { kindFacts } from "./facts.js";
import { listClusters } from "./cluster.js";
import { KindRuntime } from "./kind-runtime.js";
import { DEFAULT_CLUSTER, parseClusterName, parseNodeImage } from "./settings.js";
import { removeLeftovers } from "./teardown.js";
import { KubectlTools } from "../clients/kubectl/tools.js";
import { attachKindRun, type KindClients } from "./attach.js";

export type { KindStatusFields } from "./attach.js";

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
  /**
   * The time the run's polls, deadlines and stop waits run on (../../clock.ts);
   * a call's `DriverContext.clock` (the session's) comes first.
   */
  clock?: Clock;
}

/**
 * Triton in a local kind cluster: the article's Deployment and Service, applied from the same
 * renderer as `triton-dev manifests`, port-forwarded to this machine.
 */
export function createKindDriver(deps: KindDriverDeps = {}): RuntimeDriver<KindOptions> {
  const connect = deps.connect ?? connectDocker;
  const toolsFor = deps.tools ?? ((env: NodeJS.ProcessEnv) => new KubectlTools(undefined, env));
  // A call's waits run on its context's clock (the session's), else the driver's own.
  const clockOf = (ctx: { clock?: Clock }) => ctx.clock ?? deps.clock ?? REAL_CLOCK;
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
    plan: async (input, options, ctx) =>
      planKindRun(input, options, ctx, { connect, tools: toolsFor, clock: clockOf(ctx) }, deps.configDir),
    attach: (state, ctx) => attachKindRun(state, ctx, { connect, tools: toolsFor, clock: clockOf(ctx) }),
    doctor: async (ctx) => (await import("./doctor.js")).kindChecks(ctx.env),
    cleanup: async (graceMs, ctx) =>
      removeKindLeftovers(graceMs, ctx, { connect, tools: toolsFor, clock: clockOf(ctx) }),
  };
}

/** The cluster, the image and its nodes, the GPUs and the ports this machine forwards: before anything is created. */
async function planKindRun(
  input: PlanInput,
  options: KindOptions,
  ctx: DriverContext,
  clients: KindClients,
  configDir: string | undefined,
): Promise<PlannedRun> {
  const rt = new KindRuntime(clients.connect(ctx.env), ctx.env, {
    tools: clients.tools(ctx.env),
    ...(configDir ? { configDir } : {}),
    clock: clients.clock,
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
      return { handle: started.handle, executable: "kubectl", record: started.record, readiness: started.readiness };
    },
    startHint: (logFile) => shmStartHint(logFile, options.shmBytes),
  };
}

/**
 * `down`: the clusters, kubectl processes and kept clusters' run objects that crashed runs of
 * this state folder left; quiet without kind or a daemon.
 */
async function removeKindLeftovers(
  graceMs: number,
  ctx: { paths: Paths; env: NodeJS.ProcessEnv },
  clients: KindClients,
): Promise<Leftovers> {
  const none: Leftovers = { json: { orphanClusters: [], orphanKindRuns: [], orphanKubectls: [] }, lines: [] };
  const tools = clients.tools(ctx.env);
  // Without kind (most runs of the other runtimes) there is nothing to look for.
  if ((await listClusters(tools).catch(() => [])).length === 0) return none;
  const docker = clients.connect(ctx.env);
  try {
    await requireDaemon(docker, ctx.env, 1_500, clients.clock);
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
    lines.push(`removed the objects of ${r.runs.length} finished run(s) from kept kind clusters: ${r.runs.join(", ")}`);
  return { json: { orphanClusters: r.clusters, orphanKindRuns: r.runs, orphanKubectls: r.processes }, lines };
}

export const kindDriver = createKindDriver();

/** The entry registry.ts loads for this runtime (`./kind/driver.js`'s `driver`). */
export { kindDriver as driver };
