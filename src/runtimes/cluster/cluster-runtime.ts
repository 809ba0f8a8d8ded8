import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { renderManifests, toYaml } from "../../k8s/manifests.js";
import { log as rootLog } from "../../log/logger.js";
import { endpointsFor } from "../../net/url.js";
import { loadedBeforeStop } from "../loaded-at-stop.js";
import { ReadinessAbortedError, type WaitStrategy } from "../../triton/readiness.js";
import { podServing } from "../clients/kubectl/pod-readiness.js";
import type { GpuRequest } from "../container-options.js";
import type { Ports, ReadinessInput, ServerHandle, StartOptions, StopOutcome } from "../driver.js";
import { PodConnection, PodError } from "../clients/kubectl/connection.js";
import { deleteRunObjects } from "../clients/kubectl/delete-run.js";
import { KubectlTools, lastLines, ToolCommandError } from "../clients/kubectl/tools.js";
import type { ClusterRecord } from "./record.js";
import {
  clusterGpus,
  clusterManifestOptions,
  objectName,
  OBJECT_KINDS,
  REQUIRED_RIGHTS,
  RUN_LABEL,
} from "./settings.js";
import { RepositorySync, syncPod } from "./sync.js";

const log = rootLog.child("cluster");

export interface ClusterRequest {
  context: string;
  /** Undefined: the context's own namespace, else `default`. */
  namespace: string | undefined;
  image: string;
  gpus: GpuRequest;
  shmBytes: number;
}

export interface ClusterPlanInput extends ClusterRequest {
  ports: Ports;
  host: string;
}

export interface ClusterPlan {
  input: ClusterPlanInput;
  context: string;
  namespace: string;
  gpus: number;
}

export type ClusterStep = "check" | "apply" | "pod" | "sync" | "forward" | "cleanup";

export interface ClusterDeps {
  tools?: KubectlTools;
  onProgress?: (p: { step: ClusterStep; message: string }) => void;
  onLogLine?: (line: string) => void;
  /** The time the pod's poll and deadlines, the sync's settle window and deletions' waits run on (../../clock.ts). */
  clock?: Clock;
}

export class ClusterStartError extends UserError {
  override name = "ClusterStartError";
}

/** kubectl's refusal for lack of rights, as what to do. */
function forbidden(err: unknown, context: string, namespace: string): UserError | undefined {
  if (!(err instanceof ToolCommandError) || !/\bforbidden\b/i.test(err.stderr)) return undefined;
  return new UserError(`the cluster of context ${context} refused: ${lastLines(err.stderr, 2)}`, {
    hint: `triton-dev needs the rights the README lists ("The cluster runtime") in namespace ${namespace}; ask the cluster's admin for that Role, or use another --namespace.`,
    cause: err,
  });
}

/**
 * Triton in a Kubernetes cluster the user already has (`--runtime cluster --context NAME`): the
 * article's Deployment (poll mode, probes, GPU limits) and a Service, created in an existing
 * namespace with the fewest rights, the run folder copied into the pod's volume through the
 * API's exec stream (no hostPath: the node is not this machine), port-forwarded here.
 */
export class ClusterRuntime {
  readonly tools: KubectlTools;

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly deps: ClusterDeps = {},
  ) {
    this.tools = deps.tools ?? new KubectlTools(undefined, env);
  }

  get clock(): Clock {
    return this.deps.clock ?? REAL_CLOCK;
  }

  private progress(step: ClusterStep, message: string): void {
    log.info(message, { step });
    this.deps.onProgress?.({ step, message });
  }

  /** kubectl, the context, the namespace and every right needed there, before anything is created. */
  async plan(input: ClusterPlanInput): Promise<ClusterPlan> {
    const gpus = clusterGpus(input.gpus);
    await this.tools.run("kubectl", ["version", "--client", "--output=json"], { timeoutMs: 15_000 });
    const contexts = (
      await this.tools.run("kubectl", ["config", "get-contexts", "--output=name"], { timeoutMs: 15_000 })
    )
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
    if (!contexts.includes(input.context)) {
      throw new UserError(`kubectl has no context ${input.context}`, {
        hint: contexts.length
          ? `Its contexts: ${contexts.join(", ")} (\`kubectl config get-contexts\`).`
          : "Your kubeconfig has no context at all; KUBECONFIG or ~/.kube/config must name the cluster.",
      });
    }
    const namespace =
      input.namespace ??
      ((
        await this.tools
          .run(
            "kubectl",
            ["config", "view", "--minify", `--context=${input.context}`, "--output=jsonpath={..namespace}"],
            { timeoutMs: 15_000 },
          )
          .catch(() => "")
      ).trim() ||
        "default");
    this.progress("check", `checking the rights of context ${input.context} in namespace ${namespace}`);
    const missing: string[] = [];
    await Promise.all(
      REQUIRED_RIGHTS.map(async (r) => {
        try {
          // `can-i create pods/exec` would ask about a pod named exec: a subresource is a flag.
          const [resource, subresource] = r.resource.split("/");
          await this.tools.kubectl(
            input.context,
            [
              "auth",
              "can-i",
              r.verb,
              resource!,
              ...(subresource ? [`--subresource=${subresource}`] : []),
              `--namespace=${namespace}`,
              "--quiet",
            ],
            {
              timeoutMs: 30_000,
            },
          );
        } catch (err) {
          // can-i exits 1 for "no"; anything with a message on stderr is the cluster not answering.
          if (err instanceof ToolCommandError && err.toolExitCode === 1 && !err.stderr.trim()) {
            missing.push(`${r.verb} ${r.resource}`);
            return;
          }
          throw new UserError(
            `the cluster of context ${input.context} does not answer: ${err instanceof ToolCommandError ? lastLines(err.stderr, 2) : (err as Error).message}`,
            { hint: `\`kubectl --context ${input.context} cluster-info\` shows what is wrong.`, cause: err },
          );
        }
      }),
    );
    if (missing.length) {
      throw new UserError(
        `context ${input.context} lacks rights triton-dev needs in namespace ${namespace}: ${missing.sort().join(", ")}`,
        {
          hint: `Ask the cluster's admin for the Role the README lists ("The cluster runtime") bound to you in ${namespace}, or use a namespace where you have it (--namespace).`,
        },
      );
    }
    return { input, context: input.context, namespace, gpus };
  }

  /**
   * Creates the run's Deployment and Service and starts copying the models in; the run's
   * readiness then waits for the pod and port-forwards to it.
   */
  async start(
    plan: ClusterPlan,
    o: StartOptions,
  ): Promise<{ handle: ServerHandle; record: ClusterRecord; readiness: (o: ReadinessInput) => WaitStrategy }> {
    const { input, context, namespace } = plan;
    const objects = renderManifests(
      clusterManifestOptions(o, { image: input.image, gpus: plan.gpus, shmBytes: input.shmBytes }),
    );
    const record: ClusterRecord = {
      context,
      namespace,
      name: objectName(o.runId),
      image: input.image,
      gpus: plan.gpus,
      kinds: [...OBJECT_KINDS],
    };
    let created = false;
    let connection: PodConnection | undefined;
    let sync: RepositorySync | undefined;
    try {
      this.progress(
        "apply",
        `creating ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(", ")} in namespace ${namespace} (context ${context})`,
      );
      created = true;
      await this.tools
        .kubectl(context, [`--namespace=${namespace}`, "create", "--filename=-"], {
          input: toYaml(objects),
          timeoutMs: 120_000,
        })
        .catch((err: unknown) => {
          if (err instanceof ToolCommandError && /namespaces? "[^"]*" not found/.test(err.stderr))
            throw new UserError(`namespace ${namespace} does not exist in the cluster of context ${context}`, {
              hint: `Create it (\`kubectl --context ${context} create namespace ${namespace}\`) or choose one with --namespace; triton-dev creates nothing outside a namespace.`,
              cause: err,
            });
          throw (
            forbidden(err, context, namespace) ??
            new ClusterStartError(
              `the cluster refused the Triton objects: ${err instanceof ToolCommandError ? lastLines(err.stderr, 4) : (err as Error).message}`,
              { hint: "`triton-dev manifests` renders the same kind of objects for a look.", cause: err },
            )
          );
        });
      const conn = new PodConnection({
        tools: this.tools,
        cluster: context,
        context,
        namespace,
        runId: o.runId,
        image: input.image,
        ports: o.ports,
        host: o.host,
        logFile: o.logFile,
        runDir: o.runDir,
        resume: false,
        runtime: "cluster",
        ...(this.deps.onLogLine ? { onLogLine: this.deps.onLogLine } : {}),
        clock: this.clock,
      });
      connection = conn;
      const s = this.repositorySync(conn, context, namespace, o.runDir);
      sync = s;
      await conn.start();
      this.progress("pod", "waiting for the Triton pod to start");
      const copied = followPods(conn, s);
      // Later pods (a replaced one) get their copy the same way; a failure then is only logged.
      copied.catch((err: unknown) => log.warn("a copy into the pod failed", { error: String(err) }));
      const readiness = ({ client }: ReadinessInput) =>
        podServing({
          connection: conn,
          client,
          where: `context ${context}`,
          host: o.host,
          ports: o.ports,
          progress: (step, message) => this.progress(step, message),
          failure: (err) => podStartError(err, context, o.logFile),
          // A copy that cannot be made ends the wait: Triton would wait for it forever.
          blocker: copied,
          onRunning: () => s.watch(),
          podHint: `\`kubectl --context ${context} -n ${namespace} describe pods -l app=triton\` shows the pod's events.`,
        });
      const undoing = () => this.progress("cleanup", `deleting this run's objects from namespace ${namespace}`);
      return { handle: clusterHandle(this.tools, conn, s, record, o, this.clock, undoing), record, readiness };
    } catch (err) {
      sync?.stop();
      await connection?.stop().catch(() => {});
      if (created) {
        this.progress("cleanup", `deleting this run's objects from namespace ${namespace}`);
        await deleteRunObjects(this.tools, {
          context,
          namespace,
          selector: `${RUN_LABEL}=${o.runId}`,
          kinds: OBJECT_KINDS,
          graceMs: 15_000,
          clock: this.clock,
        }).catch((e: unknown) => log.warn("could not clean up after the failed start", { error: String(e) }));
      }
      throw err;
    }
  }

  repositorySync(conn: PodConnection, context: string, namespace: string, runDir: string): RepositorySync {
    return new RepositorySync({
      tools: this.tools,
      clock: this.clock,
      context,
      namespace,
      runDir,
      pod: () => {
        const s = conn.latest();
        return s?.ok ? syncPod(s.pods) : undefined;
      },
      onSynced: (x) =>
        this.progress(
          "sync",
          x.full
            ? `copied the staged models into pod ${x.pod} (${x.snapshots.length} snapshot(s), ${(x.ms / 1000).toFixed(1)} s)`
            : `copied ${x.snapshots.length} new snapshot(s) into pod ${x.pod} (${(x.ms / 1000).toFixed(1)} s)`,
        ),
    });
  }
}

/**
 * Gives every pod the Deployment runs its first copy, as soon as its sync container runs. Resolves
 * when the connection stops; rejects when a first copy fails (Triton would wait for it forever).
 */
export async function followPods(conn: PodConnection, sync: RepositorySync): Promise<void> {
  for (;;) {
    if (sync.needsFullCopy()) await sync.sync();
    const snap = await conn.nextSnapshot();
    if (!snap) return;
  }
}

function podStartError(err: unknown, context: string, logFile: string): unknown {
  if (err instanceof ReadinessAbortedError && err.cause instanceof PodError) return err.cause;
  if (err instanceof ReadinessAbortedError)
    return new ClusterStartError(`the Triton pod in context ${context} did not start: ${err.message}`, {
      hint: `The full log is ${logFile}.`,
      cause: err,
    });
  return err;
}

function clusterHandle(
  tools: KubectlTools,
  connection: PodConnection,
  sync: RepositorySync,
  record: ClusterRecord,
  o: StartOptions,
  clock: Clock,
  /** Said before a stop that ends a start which never served (a failed or interrupted readiness wait). */
  onUndo: () => void,
): ServerHandle {
  // The run's objects are deleted with their grace period; a cluster that is not ours gets no
  // early end (its pods' force deletion is the user's call), so there is no outcome to report.
  let stopping: Promise<StopOutcome | undefined> | undefined;
  return {
    get pid() {
      return connection.pid;
    },
    endpoints: endpointsFor(o.host, o.ports),
    exited: connection.exited,
    release: () => {
      sync.stop();
      connection.release();
    },
    stop: (graceMs = 15_000, onProgress) => {
      stopping ??= (async () => {
        // Triton is asked only where the port-forward reached it (a failed start never listened).
        const loaded = connection.listening ? await loadedBeforeStop(o, 1000) : [];
        if (!connection.listening) onUndo();
        sync.stop();
        await connection.stop();
        await deleteRunObjects(
          tools,
          {
            context: record.context,
            namespace: record.namespace,
            selector: `${RUN_LABEL}=${o.runId}`,
            kinds: record.kinds,
            graceMs,
            clock,
          },
          { loaded, ...(onProgress ? { onProgress } : {}) },
        ).catch((err: unknown) =>
          log.warn("could not delete the run's objects", { error: err instanceof Error ? err.message : String(err) }),
        );
        return undefined;
      })();
      return stopping;
    },
  };
}
