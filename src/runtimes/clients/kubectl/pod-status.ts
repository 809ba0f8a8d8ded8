import { z } from "zod";

/**
 * What `kubectl get pods -o json` says about Triton's pod, reduced to what `up` acts on: still
 * starting, running, or failed in a way that waiting will not fix, with what to do about it.
 * Pure: the runtime fetches the JSON and the logs.
 */

const containerState = z
  .object({
    waiting: z.object({ reason: z.string().optional(), message: z.string().optional() }).optional(),
    running: z.object({ startedAt: z.string().optional() }).optional(),
    terminated: z
      .object({
        exitCode: z.number().optional(),
        signal: z.number().optional(),
        reason: z.string().optional(),
        message: z.string().optional(),
      })
      .optional(),
  })
  .optional();

const containerStatus = z.object({
  name: z.string(),
  ready: z.boolean().optional(),
  started: z.boolean().optional(),
  restartCount: z.number().optional(),
  state: containerState,
  lastState: containerState,
});

const condition = z.object({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().nullish(),
});

export const podSchema = z.object({
  metadata: z.object({
    name: z.string(),
    creationTimestamp: z.string().optional(),
    deletionTimestamp: z.string().nullish(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  status: z
    .object({
      phase: z.string().optional(),
      reason: z.string().optional(),
      message: z.string().optional(),
      conditions: z.array(condition).optional(),
      containerStatuses: z.array(containerStatus).optional(),
    })
    .optional(),
});
export type Pod = z.infer<typeof podSchema>;
export type ContainerStatus = z.infer<typeof containerStatus>;

export const podListSchema = z.object({ items: z.array(podSchema) });

/** The `kubectl get pods -o json` output, or an empty list when it is not one. */
export function parsePodList(json: string): Pod[] {
  try {
    const parsed = podListSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data.items : [];
  } catch {
    return [];
  }
}

export type FailureKind = "image" | "crash-loop" | "oom" | "unschedulable" | "config" | "exited" | "pod-failed";

export type PodOutcome =
  | { state: "waiting"; pod?: string; detail: string }
  | { state: "running"; pod: string; ready: boolean; restarts: number }
  | {
      state: "failed";
      kind: FailureKind;
      pod: string;
      message: string;
      hint: string;
      /** Which container log explains it: the crashed one (`previous`) or the current one. */
      logs?: "previous" | "current";
    };

export interface OutcomeContext {
  cluster: string;
  context: string;
  namespace: string;
  image: string;
  container: string;
  now: number;
  /**
   * Whose cluster: kind's own (images are loaded into its node, the pod runs on the node we
   * labelled), or one the user has (`--runtime cluster`: its nodes pull images themselves).
   */
  runtime?: "kind" | "cluster";
  /** How long a pod may stay unschedulable for a reason other than missing resources (a node still joining). */
  unschedulableGraceMs?: number;
}

/** The pod a Deployment's rollout is about: the newest one not being deleted. */
export function currentPod(pods: Pod[]): Pod | undefined {
  return pods
    .filter((p) => !p.metadata.deletionTimestamp)
    .sort(
      (a, b) => Date.parse(b.metadata.creationTimestamp ?? "") - Date.parse(a.metadata.creationTimestamp ?? "") || 0,
    )[0];
}

const IMAGE_REASONS = new Set(["ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"]);
const CONFIG_REASONS = new Set([
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
  "PreCreateHookError",
  "PostStartHookError",
]);

export function podOutcome(pods: Pod[], c: OutcomeContext): PodOutcome {
  const pod = currentPod(pods);
  if (!pod) return { state: "waiting", detail: "the Deployment has no pod yet" };
  const name = pod.metadata.name;
  const describe = `kubectl --context ${c.context} -n ${c.namespace} describe pod ${name}`;
  const status = pod.status ?? {};
  if (status.phase === "Failed") {
    return {
      state: "failed",
      kind: "pod-failed",
      pod: name,
      message: `the Triton pod ${name} failed${status.reason ? ` (${status.reason})` : ""}${status.message ? `: ${status.message}` : ""}`,
      hint: `\`${describe}\` shows its events; an evicted pod means the node ran short of memory or disk.`,
    };
  }
  const scheduled = status.conditions?.find((x) => x.type === "PodScheduled");
  if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
    const msg = scheduled.message ?? "no node fits";
    const since = scheduled.lastTransitionTime ? Date.parse(scheduled.lastTransitionTime) : NaN;
    const insufficient = /Insufficient /.test(msg);
    const grace = c.unschedulableGraceMs ?? 20_000;
    // A node of a new cluster can still be joining (not-ready taint): only missing resources,
    // or a wait past the grace, is final.
    if (insufficient || (Number.isFinite(since) && c.now - since >= grace)) {
      const gpu = /nvidia\.com\/gpu/.test(msg);
      return {
        state: "failed",
        kind: "unschedulable",
        pod: name,
        message: `Kubernetes cannot place the Triton pod in cluster ${c.cluster}: ${msg}`,
        hint: gpu
          ? `No node offers a free GPU (nvidia.com/gpu): the NVIDIA device plugin is not running there, or another pod holds the GPU. Check \`kubectl --context ${c.context} -n kube-system get pods\` and the node's allocatable GPUs (\`kubectl --context ${c.context} describe nodes\`), or start with --gpus none.`
          : c.runtime === "cluster"
            ? `\`${describe}\` shows the scheduler's reasons; \`kubectl --context ${c.context} get nodes\` the nodes there are.`
            : /Insufficient (cpu|memory)/.test(msg)
              ? `The node has less CPU or memory free than the pod requests; free some up, or recreate the cluster (\`kind delete cluster --name ${c.cluster}\`) so nothing else runs there.`
              : `\`${describe}\` shows the scheduler's reasons; the Triton pod runs only on the node labelled triton-dev.io/managed=true.`,
      };
    }
    return { state: "waiting", pod: name, detail: `waiting for a node: ${msg}` };
  }
  const cs = status.containerStatuses?.find((x) => x.name === c.container);
  if (!cs)
    return {
      state: "waiting",
      pod: name,
      detail:
        scheduled?.status === "True" ? "pod scheduled; creating the container" : `pod ${status.phase ?? "Pending"}`,
    };
  const restarts = cs.restartCount ?? 0;
  const waiting = cs.state?.waiting;
  const last = cs.lastState?.terminated;
  if (waiting?.reason && IMAGE_REASONS.has(waiting.reason)) {
    return {
      state: "failed",
      kind: "image",
      pod: name,
      message: `the ${c.runtime === "cluster" ? "cluster's" : "kind"} node cannot run the image ${c.image} (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""})`,
      hint:
        waiting.reason === "InvalidImageName"
          ? "Check the image reference given with --image."
          : c.runtime === "cluster"
            ? `The cluster's nodes pull the image themselves: check the reference given with --image, and that they may pull it (a private registry such as nvcr.io needs an imagePullSecret on the namespace's default ServiceAccount).`
            : `The image is put into the node with \`kind load docker-image ${c.image} --name ${c.cluster}\`, never pulled there; run that yourself to see why it is missing, then \`triton-dev up --runtime kind\` again.`,
    };
  }
  if (waiting?.reason === "CrashLoopBackOff" || (cs.state?.terminated && !cs.state.running)) {
    const t = waiting?.reason === "CrashLoopBackOff" ? last : cs.state?.terminated;
    if (t?.reason === "OOMKilled") return oom(name, describe);
    const exit = t ? (t.signal ? `signal ${t.signal}` : `exit code ${t.exitCode ?? "?"}`) : "an unknown exit";
    return {
      state: "failed",
      kind: waiting?.reason === "CrashLoopBackOff" ? "crash-loop" : "exited",
      pod: name,
      message: `tritonserver in pod ${name} keeps exiting (${exit}${t?.reason && t.reason !== "Error" ? `, ${t.reason}` : ""}; restarted ${restarts} time(s))`,
      hint: `Its last log lines say why; \`kubectl --context ${c.context} -n ${c.namespace} logs ${name} -c ${c.container} --previous\` has the rest. A model that crashes the server must be fixed in your model repository; an image that cannot start needs another --image.`,
      logs: waiting?.reason === "CrashLoopBackOff" ? "previous" : "current",
    };
  }
  if (waiting?.reason && CONFIG_REASONS.has(waiting.reason)) {
    return {
      state: "failed",
      kind: "config",
      pod: name,
      message: `Kubernetes cannot start Triton's container (${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""})`,
      hint: `\`${describe}\` shows the events.`,
    };
  }
  if (cs.state?.running) {
    if (cs.started === false)
      return { state: "waiting", pod: name, detail: "tritonserver is loading its models (startup probe)" };
    return { state: "running", pod: name, ready: cs.ready === true, restarts };
  }
  return {
    state: "waiting",
    pod: name,
    detail: waiting?.reason
      ? `container ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}`
      : `pod ${status.phase ?? "Pending"}`,
  };
}

function oom(pod: string, describe: string): PodOutcome {
  return {
    state: "failed",
    kind: "oom",
    pod,
    message: `tritonserver in pod ${pod} was killed for using more memory than it may (OOMKilled)`,
    hint: `Load fewer or smaller models (or fewer instances), or give the kind node more memory; \`${describe}\` shows the limits.`,
    logs: "previous",
  };
}
