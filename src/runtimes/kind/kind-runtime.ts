import fsp from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { endpointsFor } from "../../net/url.js";
import type { KindRecord } from "./record.js";
import { ReadinessAbortedError, type WaitStrategy } from "../../triton/readiness.js";
import { podServing } from "../clients/kubectl/pod-readiness.js";
import { daemonAddress, daemonFacts, NVIDIA_FIX, requireDaemon } from "../clients/container/client.js";
import { ensureImage, type PullUpdate } from "../clients/container/image.js";
import type { GpuRequest } from "../container-options.js";
import { imageBackends } from "../clients/container/image-backends.js";
import type { Ports, ReadinessInput, ReloadMode, ServerHandle, StartOptions, StopOutcome } from "../driver.js";
import {
  allocatableGpus,
  clusterAccessError,
  deleteCluster,
  inspectOurCluster,
  labelKeep,
  listClusters,
  managedNodes,
  workerContainer,
  type ClusterFacts,
} from "./cluster.js";
import { PodConnection, PodError } from "../clients/kubectl/connection.js";
import {
  KIND_CONFIG_FILES,
  nodeGpuSetupScript,
  readKindManifest,
  renderClusterConfig,
  WORKER_MOUNT,
} from "./kind-config.js";
import { renderManifests, toYaml, type K8sObject } from "../../k8s/manifests.js";
import {
  contextOf,
  CREATE_WAIT,
  kindGpus,
  manifestOptions,
  NAMESPACE,
  OBJECT_KINDS,
  RUN_LABEL,
  SERVICE_MONITOR_CRD,
} from "./settings.js";
import { deleteRunObjects } from "../clients/kubectl/delete-run.js";
import { runsIn, teardownRun } from "./teardown.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { KubectlTools, lastLines, ToolCommandError } from "../clients/kubectl/tools.js";

const log = rootLog.child("kind");

/** What `up --runtime kind` asks for beyond what every runtime gets. */
export interface KindRequest {
  cluster: string;
  /** Leave the cluster in place when the run ends (the next `up` then starts in seconds). */
  keepCluster: boolean;
  /** The node image of a cluster this run creates (`kind create cluster --image`); kind's default when absent. */
  nodeImage?: string;
  image: string;
  gpus: GpuRequest | "auto";
  shmBytes: number;
}

export interface KindPlanInput extends KindRequest {
  stateDir: string;
  ports: Ports;
  host: string;
  reload: ReloadMode;
}

/** What planning found, before anything was created. */
export interface KindPlan {
  input: KindPlanInput;
  cluster: string;
  context: string;
  /** The cluster exists (and is ours); otherwise start() creates it. */
  existing?: ClusterFacts;
  /** GPUs per pod: a count, or every GPU the node offers. */
  gpus: number | "all";
  daemon: string;
  /** The backends found in the image, where its name does not tell them (clients/container/image-backends.ts). */
  imageBackends?: string[];
}

export type KindStep = "cluster" | "gpu" | "image" | "apply" | "pod" | "forward" | "cleanup";

export interface KindProgress {
  step: KindStep;
  message: string;
}

export interface KindDeps {
  tools?: KubectlTools;
  /** kind-config/ to read (tests); default: the installation's. */
  configDir?: string;
  /** How long the device plugin may take to advertise the GPUs. */
  gpuWaitMs?: number;
  /** Each step of a start, as it happens. */
  onProgress?: (p: KindProgress) => void;
  /** Each line Triton writes, as it is copied into the log file. */
  onLogLine?: (line: string) => void;
  /** The time the GPU wait, the pod's poll and deadlines and the deletions' waits run on (../../clock.ts). */
  clock?: Clock;
}

export interface KindStarted {
  handle: ServerHandle;
  record: KindRecord;
  /** The pod running, the port-forward listening, Triton live through it (pod-readiness.ts). */
  readiness: (o: ReadinessInput) => WaitStrategy;
}

export class KindStartError extends UserError {
  override name = "KindStartError";
}

/**
 * Triton in a local kind cluster: the article's Deployment (poll mode, probes, GPU limits) and
 * Service, applied from the same renderer as `triton-dev manifests`, with the run's staging
 * repository reaching the pod through the worker node's mount of the state folder, and
 * port-forwarded to this machine.
 */
export class KindRuntime {
  readonly tools: KubectlTools;

  constructor(
    readonly docker: Docker,
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly deps: KindDeps = {},
  ) {
    this.tools = deps.tools ?? new KubectlTools(undefined, env);
  }

  get clock(): Clock {
    return this.deps.clock ?? REAL_CLOCK;
  }

  private progress(step: KindStep, message: string): void {
    log.info(message, { step });
    this.deps.onProgress?.({ step, message });
  }

  /** The tools, the daemon, and Docker's NVIDIA runtime when GPUs are wanted. */
  async preflight(gpus: GpuRequest | "auto"): Promise<number | "all"> {
    await this.tools.kind(["version"], { timeoutMs: 15_000 });
    await this.tools.run("kubectl", ["version", "--client", "--output=json"], { timeoutMs: 15_000 });
    await requireDaemon(this.docker, this.env, undefined, this.clock);
    const facts = await daemonFacts(this.docker);
    if (gpus === "auto") return facts.nvidia ? "all" : 0;
    const want = kindGpus(gpus);
    if (want !== 0 && !facts.nvidia) {
      throw new UserError(
        `GPUs were requested (--gpus) for the kind cluster, but the Docker daemon has no NVIDIA runtime (its runtimes: ${facts.runtimes.join(", ") || "none"})`,
        {
          hint: `${NVIDIA_FIX} For kind the NVIDIA runtime must also be Docker's default and pass GPUs by volume mounts: \`sudo nvidia-ctk runtime configure --runtime=docker --set-as-default --cdi.enabled\`, \`sudo nvidia-ctk config --set accept-nvidia-visible-devices-as-volume-mounts=true --in-place\`, then restart Docker.`,
        },
      );
    }
    return want;
  }

  /**
   * Everything that can fail before anything is created: tools, daemon, an existing cluster's ownership, the image
   * (pulled with progress).
   */
  async plan(input: KindPlanInput, onPull?: (u: PullUpdate) => void): Promise<KindPlan> {
    let gpus = await this.preflight(input.gpus);
    const cluster = input.cluster;
    const clusters = await listClusters(this.tools);
    let existing: ClusterFacts | undefined;
    if (clusters.includes(cluster)) {
      existing = await inspectOurCluster(this.tools, this.docker, cluster, input.stateDir);
      if (gpus !== 0 && input.gpus === "auto" && allocatableGpus(existing.nodes) === 0) {
        // Not asked for: the cluster at hand decides (it was created without GPUs).
        gpus = 0;
      } else if (gpus !== 0 && allocatableGpus(existing.nodes) === 0) {
        throw new UserError(
          `GPUs were requested, but the kind cluster ${cluster} offers none (it was created without GPUs, or its device plugin is not running)`,
          {
            hint: `Delete it (\`kind delete cluster --name ${cluster}\`) so that \`up --runtime kind --gpus all\` creates it with GPU passthrough, or use another --cluster, or --gpus none.`,
          },
        );
      }
    }
    const { id } = await ensureImage(this.docker, input.image, { ...(onPull ? { onProgress: onPull } : {}) });
    // The image kind loads into its nodes is this daemon's: its backends are looked for here.
    const found = await imageBackends(this.docker, input.image, id, undefined, this.clock);
    return {
      input,
      cluster,
      context: contextOf(cluster),
      gpus,
      daemon: daemonAddress(this.env),
      ...(found ? { imageBackends: found } : {}),
      ...(existing ? { existing } : {}),
    };
  }

  /**
   * Creates (or reuses) the cluster `plan()` settled on and applies the Deployment; the run's
   * readiness then waits for its pod and port-forwards to it.
   */
  async start(plan: KindPlan, o: StartOptions): Promise<KindStarted> {
    const { input, cluster, context } = plan;
    const created = !plan.existing;
    const keep = input.keepCluster || !!plan.existing?.keep;
    let connection: PodConnection | undefined;
    let applied = false;
    const kinds: string[] = [...OBJECT_KINDS];
    let nodeContainer = plan.existing?.worker?.name;
    try {
      if (created) {
        await this.createCluster(plan, o.runDir);
        nodeContainer = (await workerContainer(this.docker, cluster))?.name;
      } else {
        this.progress(
          "cluster",
          `using the kind cluster ${cluster}${plan.existing?.keep ? " (kept from an earlier run)" : ""}`,
        );
        // A kept cluster is used by one run at a time: what is still there is left over.
        for (const runId of await runsIn(this.tools, context).catch(() => [] as string[])) {
          this.progress("cleanup", `removing the objects a finished run (${runId}) left in ${cluster}`);
          await deleteRunObjects(this.tools, {
            context,
            namespace: NAMESPACE,
            selector: `${RUN_LABEL}=${runId}`,
            kinds: OBJECT_KINDS,
            graceMs: 15_000,
            clock: this.clock,
          });
        }
      }
      if (created || (input.keepCluster && !plan.existing?.keep)) await labelKeep(this.tools, cluster, keep);
      let gpus = plan.gpus === "all" ? 0 : plan.gpus;
      if (plan.gpus !== 0) gpus = await this.setupGpus(plan, created, nodeContainer);
      this.progress("image", `loading ${input.image} into the cluster's node (kind load docker-image)`);
      await this.tools
        .kind(["load", "docker-image", input.image, `--name=${cluster}`], { timeoutMs: 600_000 })
        .catch((err: unknown) => {
          throw new KindStartError(
            `could not load ${input.image} into the kind cluster ${cluster}: ${err instanceof ToolCommandError ? lastLines(err.stderr, 4) : (err as Error).message}`,
            {
              hint: `Run \`kind load docker-image ${input.image} --name ${cluster}\` yourself to see why; the node needs free disk space for the image.`,
              cause: err,
            },
          );
        });
      const serviceMonitor = await this.hasServiceMonitorCrd(context);
      if (serviceMonitor) kinds.push("servicemonitors");
      const objects = renderManifests(
        manifestOptions(o, {
          image: input.image,
          gpus,
          shmBytes: input.shmBytes,
          serviceMonitor,
          stateDir: input.stateDir,
          workerMount: WORKER_MOUNT,
        }),
      );
      this.progress("apply", `applying ${describeObjects(objects)} in namespace ${NAMESPACE}`);
      applied = true;
      await this.apply(plan.cluster, context, objects);
      const record: KindRecord = {
        cluster,
        context,
        namespace: NAMESPACE,
        created,
        keepCluster: keep,
        ...(nodeContainer ? { nodeContainer } : {}),
        image: input.image,
        gpus,
        kinds,
        daemon: plan.daemon,
      };
      connection = new PodConnection({
        tools: this.tools,
        cluster,
        context,
        namespace: NAMESPACE,
        runId: o.runId,
        image: input.image,
        ports: o.ports,
        host: o.host,
        logFile: o.logFile,
        runDir: o.runDir,
        resume: false,
        ...(this.deps.onLogLine ? { onLogLine: this.deps.onLogLine } : {}),
        clock: this.clock,
      });
      await connection.start();
      this.progress("pod", "waiting for the Triton pod to start");
      const conn = connection;
      // Stopped before the pod served (a failed or interrupted readiness wait): what a failed start undoes.
      const undo = () => this.undo({ cluster, context, created, keep, applied: true, kinds, runId: o.runId });
      const handle = kindHandle(this, conn, record, o, input.stateDir, undo);
      const readiness = ({ client }: ReadinessInput) =>
        podServing({
          connection: conn,
          client,
          where: `kind cluster ${cluster}`,
          host: o.host,
          ports: o.ports,
          progress: (step, message) => this.progress(step, message),
          failure: (err) => podStartError(err, cluster, o.logFile),
          podHint: `\`kubectl --context ${context} -n ${NAMESPACE} describe pods -l app=triton\` shows the pod's events.`,
        });
      return { handle, record, readiness };
    } catch (err) {
      await connection?.stop().catch(() => {});
      await this.undo({ cluster, context, created, keep, applied, kinds, runId: o.runId }).catch((e: unknown) =>
        log.warn("could not clean up after the failed start", { error: String(e) }),
      );
      throw err;
    }
  }

  private async createCluster(plan: KindPlan, runDir: string): Promise<void> {
    const { cluster, input } = plan;
    const config = path.join(runDir, "kind-cluster.yaml");
    await fsp.writeFile(
      config,
      renderClusterConfig({
        name: cluster,
        stateDir: input.stateDir,
        gpu: plan.gpus !== 0,
        ...(input.nodeImage ? { nodeImage: input.nodeImage } : {}),
        ...(this.deps.configDir ? { configDir: this.deps.configDir } : {}),
      }),
    );
    this.progress("cluster", `creating the kind cluster ${cluster} (a minute or two the first time)`);
    const started = Date.now();
    try {
      await this.tools.kind(["create", "cluster", `--name=${cluster}`, `--config=${config}`, `--wait=${CREATE_WAIT}`], {
        timeoutMs: 600_000,
        onStderrLine: (line) => {
          const l = line
            .replace(/[^\x20-\x7e]+/g, " ")
            .replace(/\s+/g, " ")
            .trim();
          if (l) this.progress("cluster", l);
        },
      });
    } catch (err) {
      throw new KindStartError(
        `kind could not create the cluster ${cluster}: ${err instanceof ToolCommandError ? lastLines(err.stderr, 6) : (err as Error).message}`,
        {
          hint: `The rendered configuration is ${config}; \`kind create cluster --name ${cluster} --config ${config}\` shows the whole story. kind needs Docker with enough memory and disk for a node image.`,
          cause: err,
        },
      );
    }
    this.progress("cluster", `created the kind cluster ${cluster} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  /** nvkind's steps: the toolkit in the node, the RuntimeClass and device plugin, then the node's GPUs counted. */
  private async setupGpus(plan: KindPlan, created: boolean, nodeContainer: string | undefined): Promise<number> {
    const { cluster, context } = plan;
    if (created) {
      if (!nodeContainer)
        throw new KindStartError(`the kind cluster ${cluster} has no worker node container to set up for GPUs`, {
          hint: "Delete it with `kind delete cluster --name " + cluster + "` and run again.",
        });
      this.progress("gpu", `setting up the NVIDIA container toolkit in node ${nodeContainer}`);
      await this.tools
        .docker(["exec", "-i", nodeContainer, "bash", "-s"], {
          inputFile: nodeGpuSetupScript(this.deps.configDir),
          timeoutMs: 600_000,
          onStderrLine: (l) => this.progress("gpu", l),
        })
        .catch((err: unknown) => {
          throw new KindStartError(
            `the GPU setup of node ${nodeContainer} failed: ${err instanceof ToolCommandError ? lastLines(err.stderr, 4) : (err as Error).message}`,
            {
              hint: `Its own hint is above; run \`docker exec -i ${nodeContainer} bash -s < ${nodeGpuSetupScript(this.deps.configDir)}\` to retry by hand.`,
              cause: err,
            },
          );
        });
      this.progress("gpu", "installing the nvidia RuntimeClass and the NVIDIA device plugin");
      await this.apply(plan.cluster, context, [
        ...readKindManifest(KIND_CONFIG_FILES.runtimeClass, this.deps.configDir),
        ...readKindManifest(KIND_CONFIG_FILES.devicePlugin, this.deps.configDir),
      ]);
    }
    const waitMs = this.deps.gpuWaitMs ?? 180_000;
    const deadline = this.clock.now() + waitMs;
    for (;;) {
      const n = allocatableGpus(await managedNodes(this.tools, cluster));
      if (n > 0) {
        const want = plan.gpus === "all" ? n : plan.gpus;
        if (want > n) {
          throw new KindStartError(`--gpus ${want} asks for more GPUs than the kind node offers (${n})`, {
            hint: `Use --gpus ${n} or --gpus all.`,
          });
        }
        this.progress("gpu", `the node offers ${n} GPU(s); Triton gets ${want}`);
        return want;
      }
      if (this.clock.now() > deadline) {
        throw new KindStartError(
          `the NVIDIA device plugin advertised no GPU on the kind node within ${Math.round(waitMs / 1000)} s`,
          {
            hint: `Look at its log: \`kubectl --context ${context} -n kube-system logs -l app.kubernetes.io/name=nvidia-device-plugin\`. The host must pass GPUs into the node (cluster-gpu.yaml's /dev/null mount with accept-nvidia-visible-devices-as-volume-mounts=true).`,
          },
        );
      }
      await this.clock.sleep(2_000);
    }
  }

  private async hasServiceMonitorCrd(context: string): Promise<boolean> {
    const out = await this.tools
      .kubectl(
        context,
        ["get", "customresourcedefinitions", SERVICE_MONITOR_CRD, "--ignore-not-found", "--output=name"],
        { timeoutMs: 30_000 },
      )
      .catch(() => "");
    return out.trim().length > 0;
  }

  private async apply(cluster: string, context: string, objects: K8sObject[]): Promise<void> {
    try {
      await this.tools.kubectl(context, ["apply", "--filename=-"], { input: toYaml(objects), timeoutMs: 120_000 });
    } catch (err) {
      const access = clusterAccessError(err, cluster);
      if (access) throw access;
      throw new KindStartError(
        `kubectl apply refused the Triton objects: ${err instanceof ToolCommandError ? lastLines(err.stderr, 4) : (err as Error).message}`,
        {
          hint: "`triton-dev manifests` renders the same objects for a look.",
          cause: err,
        },
      );
    }
  }

  /** After a failed start: the objects (or the cluster, if this run created it) go again. */
  private async undo(s: {
    cluster: string;
    context: string;
    created: boolean;
    keep: boolean;
    applied: boolean;
    kinds: string[];
    runId: string;
  }): Promise<void> {
    if (s.created && !s.keep) {
      this.progress("cleanup", `deleting the kind cluster ${s.cluster} this run created`);
      await deleteCluster(this.tools, s.cluster);
      return;
    }
    if (s.applied) {
      this.progress("cleanup", `deleting this run's objects from ${s.cluster}`);
      await deleteRunObjects(this.tools, {
        context: s.context,
        namespace: NAMESPACE,
        selector: `${RUN_LABEL}=${s.runId}`,
        kinds: s.kinds,
        graceMs: 15_000,
        clock: this.clock,
      });
    }
  }
}

function describeObjects(objects: K8sObject[]): string {
  return objects.map((x) => `${x.kind}/${x.metadata.name}`).join(", ");
}

/** The rollout's failure as the user reads it. */
function podStartError(err: unknown, cluster: string, logFile: string): unknown {
  if (err instanceof ReadinessAbortedError && err.cause instanceof PodError) return err.cause;
  if (err instanceof ReadinessAbortedError)
    return new KindStartError(`the Triton pod in ${cluster} did not start: ${err.message}`, {
      hint: `The full log is ${logFile}.`,
      cause: err,
    });
  return err;
}

function kindHandle(
  rt: KindRuntime,
  connection: PodConnection,
  record: KindRecord,
  o: StartOptions,
  stateDir: string,
  undo: () => Promise<void>,
): ServerHandle {
  let stopping: Promise<StopOutcome | undefined> | undefined;
  return {
    // kubectl port-forward: Triton itself runs inside the pod, on the node's container runtime.
    get pid() {
      return connection.pid;
    },
    endpoints: endpointsFor(o.host, o.ports),
    exited: connection.exited,
    release: () => connection.release(),
    stop: (graceMs = 15_000, onProgress, waitFor) => {
      stopping ??= (async () => {
        if (!connection.listening) {
          // Nothing was served (the pod never ran, or the port-forward never listened): a failed start.
          await connection.stop().catch(() => {});
          await undo().catch((err: unknown) =>
            log.warn("could not clean up after the failed start", { error: String(err) }),
          );
          return undefined;
        }
        // Read while the port-forward still reaches Triton: the teardown follows their unloads.
        const loaded = await loadedBeforeStop(o);
        await connection.stop();
        const torn = await teardownRun(
          rt.tools,
          rt.docker,
          record,
          o.runId,
          stateDir,
          graceMs,
          { loaded, onProgress, ...(waitFor ? { waitFor } : {}) },
          rt.clock,
        ).catch((err: unknown) => {
          log.warn("could not clean up the kind run", { error: err instanceof Error ? err.message : String(err) });
          return undefined;
        });
        return torn?.outcome;
      })();
      return stopping;
    },
  };
}
