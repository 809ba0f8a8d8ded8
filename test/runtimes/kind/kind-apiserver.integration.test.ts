/**
 * The kind runtime's cluster-side steps against a real Kubernetes API (test/fixtures/k8s-control-plane:
 * etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.34.3 built from source) and the
 * real kubectl built with it, instead of the emulator's object store: `KindRuntime.start` and its readiness on a
 * cluster that exists (applying the Namespace, Deployment and Service with their labels, waiting for
 * the pod and reporting why it cannot start from the status fields the API really has, undoing
 * what it applied), `plan` refusing a cluster that is not ours, a kept cluster's finished runs
 * removed, and `down`'s teardown.
 *
 * Stand-ins, at the outermost edge only: the `kind` CLI (a script here: it lists the cluster and
 * records `load docker-image` and `delete cluster`; creating a kind cluster needs the kindest/node
 * image, which cannot be pulled here), and the kubelet (no container can run in a pod here): a
 * Node object, and what a kubelet writes through the API, pod status and the confirmation that a
 * deleted pod's containers stopped (the harness's `kubeletFor`).
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toYaml, renderManifests } from "../../../src/k8s/manifests.js";
import { PodError } from "../../../src/runtimes/clients/kubectl/connection.js";
import { WORKER_MOUNT } from "../../../src/runtimes/kind/kind-config.js";
import { KindRuntime, type KindPlan, type KindProgress } from "../../../src/runtimes/kind/kind-runtime.js";
import type { KindRecord } from "../../../src/runtimes/kind/record.js";
import { manifestOptions, NAMESPACE, OBJECT_KINDS, RUN_LABEL } from "../../../src/runtimes/kind/settings.js";
import { runsIn, teardownRun } from "../../../src/runtimes/kind/teardown.js";
import { KubectlTools } from "../../../src/runtimes/clients/kubectl/tools.js";
import type { StartOptions } from "../../../src/runtimes/driver.js";
import { UserError } from "../../../src/errors.js";
import { waitFor } from "../../../src/triton/readiness.js";
import { dockerAvailability } from "../../fixtures/docker/harness.js";
import {
  buildControlPlane,
  controlPlaneAvailability,
  startControlPlane,
  type ControlPlane,
  type PodJson,
} from "../../fixtures/k8s-control-plane/harness.js";
import { freePorts } from "../../helpers/cli.js";

const go = controlPlaneAvailability();
const docker = await dockerAvailability();
const skip = !go.ok ? go.reason : !docker.ok ? docker.reason : "";
const title = `the kind runtime's cluster-side steps on a real API server${skip ? ` (skipped: ${skip})` : ""}`;

const IMAGE = "triton-dev-test/tritonserver:not-loaded";

/** The `kind` CLI's part: the cluster is listed; what would change nodes is recorded. */
const KIND_STANDIN = `#!/bin/sh
case "$1 $2" in
  "version ") echo "kind v0.33.0 go1.26 linux/amd64 (stand-in)" ;;
  "get clusters") cat "$KIND_STANDIN_CLUSTERS" ;;
  "load docker-image"|"delete cluster") echo "$*" >>"$KIND_STANDIN_LOG" ;;
  *) echo "ERROR: unknown command \\"$*\\" for \\"kind\\" (stand-in)" >&2; exit 1 ;;
esac
`;

describe.skipIf(!!skip)(title, () => {
  const cluster = `tdr-${Math.random().toString(36).slice(2, 7)}`;
  const node = `${cluster}-worker`;
  const context = `kind-${cluster}`;
  let cp: ControlPlane;
  let tools: KubectlTools;
  let env: NodeJS.ProcessEnv;
  let stateDir = "";
  let kindLog = "";
  let n = 0;

  beforeAll(async () => {
    cp = await startControlPlane(await buildControlPlane(), { context });
    const standin = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-kind-standin-"));
    await fsp.writeFile(path.join(standin, "kind"), KIND_STANDIN, { mode: 0o755 });
    await fsp.writeFile(path.join(standin, "clusters"), `${cluster}\n`);
    kindLog = path.join(standin, "log");
    await fsp.writeFile(kindLog, "");
    env = {
      ...cp.env,
      PATH: `${standin}${path.delimiter}${cp.env.PATH}`,
      KIND_STANDIN_CLUSTERS: path.join(standin, "clusters"),
      KIND_STANDIN_LOG: kindLog,
    };
    tools = new KubectlTools(undefined, env);
    stateDir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-state-"));
    // The worker kind-config/ labels as ours, registered as its kubelet would.
    await cp.addNode(node, { "triton-dev.io/managed": "true", "kubernetes.io/hostname": node });
  }, 3_600_000);

  afterAll(async () => {
    await cp?.stop();
    if (stateDir) await fsp.rm(stateDir, { recursive: true, force: true });
  }, 60_000);

  const dockerClient = () => (docker as { docker: Docker }).docker;

  async function startOptions(runId: string): Promise<StartOptions> {
    const runDir = path.join(stateDir, "runs", runId);
    await fsp.mkdir(path.join(runDir, "repository"), { recursive: true });
    await fsp.mkdir(path.join(runDir, "key"), { recursive: true });
    return {
      runId,
      runDir,
      repository: path.join(runDir, "repository"),
      ports: await freePorts(),
      host: "127.0.0.1",
      reload: "poll",
      pollSecs: 2,
      repositoryKey: { header: "triton-dev-key", value: "k", dir: path.join(runDir, "key") },
      logFile: path.join(runDir, "triton.log"),
    };
  }

  function plan(o: { keepCluster?: boolean } = {}): KindPlan {
    return {
      input: {
        cluster,
        keepCluster: o.keepCluster ?? false,
        image: IMAGE,
        gpus: { kind: "none" },
        shmBytes: 1024 ** 3,
        stateDir,
        ports: { http: 1, grpc: 2, metrics: 3 },
        host: "127.0.0.1",
        reload: "poll",
      },
      cluster,
      context,
      existing: {
        name: cluster,
        context,
        nodes: [{ metadata: { name: node, labels: { "triton-dev.io/managed": "true" } } }],
        keep: false,
      },
      gpus: 0,
      daemon: "unix:///var/run/docker.sock",
    };
  }

  function runtime(progress: KindProgress[] = []): KindRuntime {
    return new KindRuntime(dockerClient(), env, { tools, onProgress: (p) => progress.push(p) });
  }

  /**
   * A start as `up` makes it: `start` applies the objects, then its readiness is waited for, and a
   * wait that fails ends with the handle's stop (which undoes what the start created). Resolves
   * with that failure, or throws if the run became ready.
   */
  async function startUntilFailed(rt: KindRuntime, p: KindPlan, o: StartOptions): Promise<unknown> {
    const started = await rt.start(p, o);
    const client = { isLive: async () => false, isReady: async () => false };
    try {
      await waitFor(started.readiness({ host: o.host, ports: o.ports, client }), { timeoutMs: 90_000 });
    } catch (err) {
      await started.handle.stop();
      return err;
    }
    await started.handle.stop();
    throw new Error("the run became ready");
  }

  /** Every object of one run, by its label. */
  async function runObjects(runId: string): Promise<string[]> {
    const out = await cp.ok([
      `--namespace=${NAMESPACE}`,
      "get",
      [...OBJECT_KINDS, "replicasets", "pods"].join(","),
      `--selector=${RUN_LABEL}=${runId}`,
      "--output=name",
    ]);
    return out.split("\n").filter(Boolean).sort();
  }

  const waitingFor = (reason: string, message: string) => (pod: PodJson) => ({
    phase: "Pending",
    conditions: [{ type: "PodScheduled", status: "True" }],
    containerStatuses: [
      {
        name: "triton",
        ready: false,
        restartCount: 0,
        image: pod.spec.containers[0]!.image,
        imageID: "",
        state: { waiting: { reason, message } },
      },
    ],
  });

  it("refuses a cluster of that name whose nodes are not ours, before creating anything", async () => {
    await cp.ok(["label", `node/${node}`, "triton-dev.io/managed-"]);
    try {
      const err = await runtime()
        .plan({ ...plan().input })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toBe(
        `a kind cluster named ${cluster} exists and was not created by triton-dev (no node carries the label triton-dev.io/managed=true); it is left alone`,
      );
      expect((await cp.kubectl(["get", `namespace/${NAMESPACE}`])).code).toBe(1);
      expect(fs.readFileSync(kindLog, "utf8")).toBe("");
    } finally {
      await cp.ok(["label", `node/${node}`, "triton-dev.io/managed=true"]);
    }
  }, 60_000);

  it("no node can take the pod: the scheduler's own words, and the run's objects removed again", async () => {
    await cp.ok(["cordon", node]);
    const progress: KindProgress[] = [];
    const o = await startOptions(`r${++n}`);
    try {
      const t0 = Date.now();
      const err = await startUntilFailed(runtime(progress), plan(), o);
      expect(err).toBeInstanceOf(PodError);
      expect((err as PodError).kind).toBe("unschedulable");
      expect((err as Error).message).toMatch(
        new RegExp(
          `^Kubernetes cannot place the Triton pod in cluster ${cluster}: 0/1 nodes are available: 1 node\\(s\\) were unschedulable`,
        ),
      );
      expect((err as UserError).hint).toContain("triton-dev.io/managed=true");
      console.info(`kind on a real API: unschedulable reported after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      expect(progress.map((p) => `${p.step}: ${p.message}`)).toEqual(
        expect.arrayContaining([
          `image: loading ${IMAGE} into the cluster's node (kind load docker-image)`,
          `apply: applying Namespace/triton-dev, Deployment/triton-inference-server, Service/triton-inference-server in namespace triton-dev`,
          expect.stringMatching(/^pod: waiting for a node: 0\/1 nodes are available: 1 node\(s\) were unschedulable/),
          `cleanup: deleting this run's objects from ${cluster}`,
        ]),
      );
      expect(await runObjects(o.runId)).toEqual([]);
      // The namespace is shared by the cluster's runs and stays.
      expect((await cp.kubectl(["get", `namespace/${NAMESPACE}`])).code).toBe(0);
    } finally {
      await cp.ok(["uncordon", node]);
    }
  }, 120_000);

  it("the applied objects carry the run's labels; a missing image is read from the container's waiting reason", async () => {
    const o = await startOptions(`r${++n}`);
    let seen: string[] = [];
    const labels: Record<string, Record<string, string>> = {};
    // The kubelet reports the missing image only once the test has read the objects (the start
    // then fails and removes them at once).
    let report = false;
    const kubelet = cp.kubeletFor(node, (pod) => {
      if (!report || pod.metadata.labels?.[RUN_LABEL] !== o.runId) return undefined;
      return waitingFor(
        "ErrImageNeverPull",
        `Container image "${IMAGE}" is not present with pull policy of Never`,
      )(pod);
    });
    const progress: KindProgress[] = [];
    try {
      const started = startUntilFailed(runtime(progress), plan(), o);
      // Settled later; a rejection meanwhile is not unhandled.
      started.catch(() => {});
      // While it waits: what is in the cluster, as the API has it.
      const deadline = Date.now() + 60_000;
      // Until one listing has them all: kubectl lists each kind with a request of its own, so a
      // listing made while `up` applies can miss the Deployment (listed first, not there yet) and
      // still find the ReplicaSet and pod the controllers made of it a moment later.
      const complete = () =>
        ["deployment.apps/", "service/", "pod/"].every((kind) => seen.some((s) => s.startsWith(kind)));
      while (Date.now() < deadline && !complete()) {
        seen = await runObjects(o.runId);
        await new Promise((r) => setTimeout(r, 200));
      }
      for (const what of ["deployment.apps/triton-inference-server", "service/triton-inference-server"]) {
        labels[what] = JSON.parse(
          await cp.ok([`--namespace=${NAMESPACE}`, "get", what, "--output=json"]),
        ).metadata.labels;
      }
      report = true;
      const err = await started.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PodError);
      expect((err as PodError).kind).toBe("image");
      expect((err as Error).message).toBe(
        `the kind node cannot run the image ${IMAGE} (ErrImageNeverPull: Container image "${IMAGE}" is not present with pull policy of Never)`,
      );
      expect((err as UserError).hint).toContain(`kind load docker-image ${IMAGE} --name ${cluster}`);
      expect(seen).toEqual(
        expect.arrayContaining([
          "deployment.apps/triton-inference-server",
          "service/triton-inference-server",
          expect.stringMatching(/^replicaset\.apps\/triton-inference-server-/),
          expect.stringMatching(/^pod\/triton-inference-server-/),
        ]),
      );
      for (const l of Object.values(labels))
        expect(l).toEqual({
          app: "triton",
          "app.kubernetes.io/instance": "triton-inference-server",
          "app.kubernetes.io/managed-by": "triton-dev",
          [RUN_LABEL]: o.runId,
        });
      expect(fs.readFileSync(kindLog, "utf8")).toContain(`load docker-image ${IMAGE} --name=${cluster}`);
      expect(await runObjects(o.runId)).toEqual([]);
    } finally {
      await kubelet.stop();
    }
  }, 120_000);

  it("a container that keeps exiting: CrashLoopBackOff with its exit code, as the kubelet reports it", async () => {
    const o = await startOptions(`r${++n}`);
    const kubelet = cp.kubeletFor(node, (pod) =>
      pod.metadata.labels?.[RUN_LABEL] !== o.runId
        ? undefined
        : {
            phase: "Running",
            conditions: [{ type: "PodScheduled", status: "True" }],
            containerStatuses: [
              {
                name: "triton",
                ready: false,
                restartCount: 1,
                image: pod.spec.containers[0]!.image,
                imageID: "",
                state: {
                  waiting: {
                    reason: "CrashLoopBackOff",
                    message: `back-off 10s restarting failed container=triton pod=${pod.metadata.name}`,
                  },
                },
                lastState: {
                  terminated: {
                    exitCode: 3,
                    reason: "Error",
                    startedAt: new Date(Date.now() - 2000).toISOString(),
                    finishedAt: new Date().toISOString(),
                  },
                },
              },
            ],
          },
    );
    try {
      const err = await startUntilFailed(runtime(), plan(), o);
      expect(err).toBeInstanceOf(PodError);
      expect((err as PodError).kind).toBe("crash-loop");
      expect((err as Error).message).toMatch(
        /^tritonserver in pod triton-inference-server-\S+ keeps exiting \(exit code 3; restarted 1 time\(s\)\)/,
      );
      expect(await runObjects(o.runId)).toEqual([]);
    } finally {
      await kubelet.stop();
    }
  }, 120_000);

  it("a kept cluster: a finished run's objects are removed before the next run applies its own; down removes the run's", async () => {
    // What a run that crashed left behind.
    const old = await startOptions(`r${++n}`);
    const objects = renderManifests(
      manifestOptions(old, {
        image: IMAGE,
        gpus: 0,
        shmBytes: 1024 ** 3,
        serviceMonitor: false,
        stateDir,
        workerMount: WORKER_MOUNT,
      }),
    );
    await cp.ok(["apply", "--filename=-"], { input: toYaml(objects) });
    expect(await runsIn(tools, context)).toEqual([old.runId]);

    const o = await startOptions(`r${++n}`);
    const kubelet = cp.kubeletFor(node, (pod) =>
      pod.metadata.labels?.[RUN_LABEL] === o.runId ? waitingFor("ErrImageNeverPull", "not present")(pod) : undefined,
    );
    const progress: KindProgress[] = [];
    try {
      const err = await startUntilFailed(runtime(progress), plan({ keepCluster: true }), o);
      expect(err).toBeInstanceOf(PodError);
      expect(progress.map((p) => p.message)).toContain(
        `removing the objects a finished run (${old.runId}) left in ${cluster}`,
      );
      expect(await runObjects(old.runId)).toEqual([]);
      // --keep-cluster marks the nodes, so later runs and `down` leave the cluster.
      expect(JSON.parse(await cp.ok(["get", `node/${node}`, "--output=json"])).metadata.labels).toMatchObject({
        "triton-dev.io/keep-cluster": "true",
      });

      // down on a kept cluster: the run's objects go by its label, its pod once the kubelet confirms.
      const run = await startOptions(`r${++n}`);
      await cp.ok(["apply", "--filename=-"], {
        input: toYaml(
          renderManifests(
            manifestOptions(run, {
              image: IMAGE,
              gpus: 0,
              shmBytes: 1024 ** 3,
              serviceMonitor: false,
              stateDir,
              workerMount: WORKER_MOUNT,
            }),
          ),
        ),
      });
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && !(await runObjects(run.runId)).some((x) => x.startsWith("pod/")))
        await new Promise((r) => setTimeout(r, 200));
      const record: KindRecord = {
        cluster,
        context,
        namespace: NAMESPACE,
        created: false,
        keepCluster: true,
        image: IMAGE,
        gpus: 0,
        kinds: [...OBJECT_KINDS],
        daemon: "unix:///var/run/docker.sock",
      };
      const t0 = Date.now();
      const r = await teardownRun(tools, dockerClient(), record, run.runId, stateDir, 15_000, { loaded: [] });
      console.info(`kind on a real API: down on a kept cluster took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      // The stop's outcome (how long, what it waited for) beside it.
      expect(r).toMatchObject({ clusterDeleted: false });
      expect(await runObjects(run.runId)).toEqual([]);
      expect(fs.readFileSync(kindLog, "utf8")).not.toContain("delete cluster");

      // A cluster that is not kept is deleted outright (by kind).
      await cp.ok(["label", `node/${node}`, "triton-dev.io/keep-cluster=false", "--overwrite"]);
      expect(
        await teardownRun(tools, dockerClient(), { ...record, keepCluster: false }, run.runId, stateDir),
      ).toMatchObject({
        clusterDeleted: true,
      });
      expect(fs.readFileSync(kindLog, "utf8")).toContain(`delete cluster --name=${cluster}`);
    } finally {
      await kubelet.stop();
    }
  }, 180_000);
});
