import { describe, expect, it } from "vitest";
import { currentPod, parsePodList, podOutcome, type Pod } from "../../../../src/runtimes/clients/kubectl/pod-status.js";

const ctx = {
  cluster: "triton-dev",
  context: "kind-triton-dev",
  namespace: "triton-dev",
  image: "nvcr.io/nvidia/tritonserver:24.10-py3",
  container: "triton",
  now: Date.parse("2026-01-01T00:01:00Z"),
};

function pod(
  status: Pod["status"],
  name = "triton-inference-server-abc-1",
  created = "2026-01-01T00:00:00Z",
  extra: Partial<Pod["metadata"]> = {},
): Pod {
  return { metadata: { name, creationTimestamp: created, ...extra }, status };
}
const scheduled = [{ type: "PodScheduled", status: "True" }];
const triton = (s: Record<string, unknown>) => ({
  containerStatuses: [{ name: "triton", restartCount: 0, ...s }],
  conditions: scheduled,
  phase: "Pending",
});

describe("podOutcome: the Triton pod's state as `up` acts on it", () => {
  it("waits while there is no pod, or it is being created", () => {
    expect(podOutcome([], ctx)).toEqual({ state: "waiting", detail: "the Deployment has no pod yet" });
    expect(podOutcome([pod({ phase: "Pending", conditions: scheduled })], ctx)).toMatchObject({
      state: "waiting",
      detail: "pod scheduled; creating the container",
    });
    expect(podOutcome([pod(triton({ state: { waiting: { reason: "ContainerCreating" } } }))], ctx)).toMatchObject({
      state: "waiting",
      detail: "container ContainerCreating",
    });
  });

  it("is running once the container runs and the startup probe passed, ready or not", () => {
    expect(podOutcome([pod(triton({ state: { running: {} }, started: false }))], ctx)).toMatchObject({
      state: "waiting",
      detail: "tritonserver is loading its models (startup probe)",
    });
    expect(
      podOutcome([pod(triton({ state: { running: {} }, started: true, ready: false, restartCount: 2 }))], ctx),
    ).toEqual({ state: "running", pod: "triton-inference-server-abc-1", ready: false, restarts: 2 });
  });

  it("turns image errors into what kind load fixes", () => {
    const o = podOutcome(
      [
        pod(
          triton({
            state: {
              waiting: {
                reason: "ErrImageNeverPull",
                message: 'Container image "x" is not present with pull policy of Never',
              },
            },
          }),
        ),
      ],
      ctx,
    );
    expect(o).toMatchObject({ state: "failed", kind: "image" });
    if (o.state !== "failed") throw new Error("unreachable");
    expect(o.message).toContain("ErrImageNeverPull");
    expect(o.hint).toContain("kind load docker-image nvcr.io/nvidia/tritonserver:24.10-py3 --name triton-dev");
    expect(podOutcome([pod(triton({ state: { waiting: { reason: "ImagePullBackOff" } } }))], ctx)).toMatchObject({
      state: "failed",
      kind: "image",
    });
  });

  it("reports a crash loop with the previous container's exit and asks for its log", () => {
    const o = podOutcome(
      [
        pod(
          triton({
            restartCount: 1,
            state: { waiting: { reason: "CrashLoopBackOff" } },
            lastState: { terminated: { exitCode: 1, reason: "Error" } },
          }),
        ),
      ],
      ctx,
    );
    expect(o).toMatchObject({ state: "failed", kind: "crash-loop", logs: "previous" });
    if (o.state !== "failed") throw new Error("unreachable");
    expect(o.message).toBe(
      "tritonserver in pod triton-inference-server-abc-1 keeps exiting (exit code 1; restarted 1 time(s))",
    );
    expect(o.hint).toContain("logs triton-inference-server-abc-1 -c triton --previous");
  });

  it("tells an OOM kill apart, crash-looping or not", () => {
    expect(
      podOutcome(
        [
          pod(
            triton({
              state: { waiting: { reason: "CrashLoopBackOff" } },
              lastState: { terminated: { exitCode: 137, reason: "OOMKilled" } },
            }),
          ),
        ],
        ctx,
      ),
    ).toMatchObject({ state: "failed", kind: "oom" });
    expect(
      podOutcome([pod(triton({ state: { terminated: { exitCode: 137, reason: "OOMKilled" } } }))], ctx),
    ).toMatchObject({ state: "failed", kind: "oom" });
    expect(podOutcome([pod(triton({ state: { terminated: { exitCode: 2, reason: "Error" } } }))], ctx)).toMatchObject({
      state: "failed",
      kind: "exited",
      logs: "current",
    });
  });

  it("fails at once when resources are missing, a GPU above all, but gives a joining node time", () => {
    const unsched = (message: string, since: string) =>
      pod({
        phase: "Pending",
        conditions: [
          { type: "PodScheduled", status: "False", reason: "Unschedulable", message, lastTransitionTime: since },
        ],
      });
    const gpu = podOutcome(
      [unsched("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", "2026-01-01T00:00:59Z")],
      ctx,
    );
    expect(gpu).toMatchObject({ state: "failed", kind: "unschedulable" });
    if (gpu.state !== "failed") throw new Error("unreachable");
    expect(gpu.message).toContain("Insufficient nvidia.com/gpu");
    expect(gpu.hint).toContain("--gpus none");
    const taint = "0/2 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.";
    expect(podOutcome([unsched(taint, "2026-01-01T00:00:50Z")], ctx)).toMatchObject({ state: "waiting" });
    expect(podOutcome([unsched(taint, "2026-01-01T00:00:10Z")], ctx)).toMatchObject({
      state: "failed",
      kind: "unschedulable",
    });
  });

  it("reports configuration errors (a missing Secret) and failed pods", () => {
    expect(
      podOutcome(
        [
          pod(
            triton({ state: { waiting: { reason: "CreateContainerConfigError", message: 'secret "k" not found' } } }),
          ),
        ],
        ctx,
      ),
    ).toMatchObject({ state: "failed", kind: "config", message: expect.stringContaining('secret "k" not found') });
    expect(
      podOutcome([pod({ phase: "Failed", reason: "Evicted", message: "The node was low on resource: memory." })], ctx),
    ).toMatchObject({ state: "failed", kind: "pod-failed", message: expect.stringContaining("Evicted") });
  });

  it("looks at the newest pod that is not being deleted", () => {
    const old = pod(triton({ state: { running: {} }, started: true }), "old", "2026-01-01T00:00:00Z", {
      deletionTimestamp: "2026-01-01T00:00:30Z",
    });
    const young = pod(triton({ state: { waiting: { reason: "ContainerCreating" } } }), "new", "2026-01-01T00:00:20Z");
    const older = pod(triton({ state: { running: {} }, started: true }), "older", "2025-12-31T00:00:00Z");
    expect(currentPod([old, older, young])?.metadata.name).toBe("new");
    expect(podOutcome([old, older, young], ctx)).toMatchObject({ state: "waiting", pod: "new" });
  });

  it("reads kubectl's list and ignores what is not one", () => {
    expect(parsePodList(JSON.stringify({ kind: "List", items: [pod({ phase: "Running" })] }))).toHaveLength(1);
    expect(parsePodList("not json")).toEqual([]);
    expect(parsePodList(JSON.stringify({ items: [{ nope: 1 }] }))).toEqual([]);
  });
});
