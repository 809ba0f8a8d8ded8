import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UsageError } from "../../errors.js";
import { requireFreePorts } from "../../net/ports.js";
import { shmHinter, shmStartHint } from "../shm-hints.js";
import { DEFAULT_SHM_BYTES, parseGpus, parseSize, type GpuRequest } from "../container-options.js";
import { DEFAULT_IMAGE } from "../ngc-images.js";
import type { DriverContext, Leftovers, PlanInput, PlannedRun, RuntimeDriver, RuntimeFlags } from "../driver.js";
import { deliverRunFolder } from "../delivery.js";
import { clusterFacts } from "./facts.js";
import { KubectlTools } from "../clients/kubectl/tools.js";
import { ClusterRuntime } from "./cluster-runtime.js";
import { clusterGpus, parseNamespace } from "./settings.js";
import { attachClusterRun, type ClusterClients } from "./attach.js";

export { ourKubectls, type ClusterStatusFields } from "./attach.js";

export interface ClusterOptions {
  context: string;
  namespace: string | undefined;
  image: string;
  gpus: GpuRequest;
  shmBytes: number;
}

export interface ClusterDriverDeps {
  tools?: (env: NodeJS.ProcessEnv) => KubectlTools;
  /**
   * The time the run's polls, deadlines and stop waits run on (../../clock.ts);
   * a call's `DriverContext.clock` (the session's) comes first.
   */
  clock?: Clock;
}

/**
 * Triton in a Kubernetes cluster the user already has, reached through a kubeconfig context:
 * the article's Deployment and a Service in an existing namespace, the models copied in through
 * the API's exec stream, port-forwarded here.
 */
export function createClusterDriver(deps: ClusterDriverDeps = {}): RuntimeDriver<ClusterOptions> {
  const toolsFor = deps.tools ?? ((env: NodeJS.ProcessEnv) => new KubectlTools(undefined, env));
  // A call's waits run on its context's clock (the session's), else the driver's own.
  const clockOf = (ctx: { clock?: Clock }) => ctx.clock ?? deps.clock ?? REAL_CLOCK;
  return {
    kind: "cluster",
    options: clusterOptions,
    plan: async (input, options, ctx) => planClusterRun(input, options, ctx, { tools: toolsFor, clock: clockOf(ctx) }),
    attach: (state, ctx) => attachClusterRun(state, ctx, { tools: toolsFor, clock: clockOf(ctx) }),
    // A crashed run's objects are found through its record (`down` stops the recorded run);
    // nothing else in the user's cluster is looked at.
    cleanup(): Promise<Leftovers> {
      return Promise.resolve({ json: {}, lines: [] });
    },
  };
}

/** The flags of `up --runtime cluster`: a context is required, never the current one by default. */
function clusterOptions(flags: RuntimeFlags): ClusterOptions {
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
}

/** The context, the rights, the namespace and the ports this machine forwards: before anything is created. */
async function planClusterRun(
  input: PlanInput,
  options: ClusterOptions,
  ctx: DriverContext,
  clients: ClusterClients,
): Promise<PlannedRun> {
  if (input.reload === "explicit")
    throw new UsageError("--runtime cluster serves in poll mode only (--reload poll)", {
      hint: "The models reach the pod by a copy after each save; explicit mode would ask Triton to load before the copy is there.",
    });
  const rt = new ClusterRuntime(ctx.env, {
    tools: clients.tools(ctx.env),
    clock: clients.clock,
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
      return { handle: started.handle, executable: "kubectl", record: started.record, readiness: started.readiness };
    },
    startHint: (logFile) => shmStartHint(logFile, options.shmBytes),
  };
}

export const clusterDriver = createClusterDriver();

/** The entry registry.ts loads for this runtime (`./cluster/driver.js`'s `driver`). */
export { clusterDriver as driver };
