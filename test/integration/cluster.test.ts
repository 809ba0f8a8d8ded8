/**
 * `up --runtime cluster` against a real Kubernetes API (test/fixtures/k8s-control-plane: etcd,
 * kube-apiserver, kube-controller-manager and kube-scheduler v1.34.3 built from source), as a
 * team's cluster is used: through a kubeconfig context whose credential is a ServiceAccount token
 * holding only the Role the README lists, in a namespace that exists. The control plane has no
 * node and no kubelet (no container can run here), so Triton never starts: what is checked is
 * what the API decides (the rights, the objects, the scheduler's reason, the deletion), with the
 * built CLI.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderManifests, toYaml } from "../../src/k8s/manifests.js";
import { isPortFree } from "../../src/net/ports.js";
import { resolvePaths } from "../../src/config/paths.js";
import { createClusterDriver, ourKubectls } from "../../src/runtimes/cluster/driver.js";
import { clusterManifestOptions, objectName, REQUIRED_RIGHTS, RUN_LABEL } from "../../src/runtimes/cluster/settings.js";
import type { RunState } from "../../src/state/run-state.js";
import {
  buildControlPlane,
  controlPlaneAvailability,
  serviceAccountWith,
  startControlPlane,
  type ControlPlane,
} from "../fixtures/k8s-control-plane/harness.js";
import { copySampleModels, freePorts, portArgs, runCli, jsonEvents, tempDir, testEnv } from "../helpers/cli.js";

const availability = controlPlaneAvailability();
const title = `up --runtime cluster against a real API server${availability.ok ? "" : ` (skipped: ${availability.reason})`}`;

const CONTEXT = "team";
const NS = "ml";
const IMAGE = "registry.example/triton:24.10";

const events = jsonEvents;

describe.skipIf(!availability.ok)(title, () => {
  let cp: ControlPlane;
  let env: NodeJS.ProcessEnv;
  let models: string;
  let ports: { http: number; grpc: number; metrics: number };

  /** A ServiceAccount in NS with `rights`, and a kubeconfig (context CONTEXT) holding its token. */
  const account = (name: string, rights: ReadonlyArray<{ verb: string; resource: string }>) =>
    serviceAccountWith(cp, NS, name, rights);

  /** What is in the namespace, as the admin sees it. */
  async function inNamespace(): Promise<string[]> {
    const out = await cp.ok([`--namespace=${NS}`, "get", "deployments,replicasets,pods,services", "--output=name"]);
    return out.split("\n").filter(Boolean).sort();
  }

  beforeAll(async () => {
    cp = await startControlPlane(await buildControlPlane(), { context: CONTEXT });
    await cp.ok(["create", "namespace", NS]);
    // Something of the team's own, which no run may touch.
    await cp.ok([`--namespace=${NS}`, "create", "deployment", "their-app", `--image=${IMAGE}`]);
    await cp.ok([`--namespace=${NS}`, "create", "service", "clusterip", "their-app", "--tcp=80:8080"]);
    const kubeconfig = await account("triton-dev", REQUIRED_RIGHTS);
    env = await testEnv({ PATH: `${cp.bin}${path.delimiter}${process.env.PATH}`, KUBECONFIG: kubeconfig });
    models = await copySampleModels();
    ports = await freePorts();
  }, 3_600_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    await cp?.stop();
  }, 60_000);

  const up = (extra: string[], e: NodeJS.ProcessEnv = env) =>
    runCli(
      [
        "up",
        "--runtime",
        "cluster",
        "--detach",
        "--json",
        "--image",
        IMAGE,
        "--models",
        models,
        ...portArgs(ports),
        ...extra,
      ],
      e,
    );

  it("refuses a context the kubeconfig does not have, naming those it has", async () => {
    const r = await up(["--context", "nope", "--namespace", NS]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("kubectl has no context nope");
    expect(r.stderr).toContain(`Its contexts: ${CONTEXT}`);
  });

  it("refuses, before creating anything, an account that lacks one of the listed rights", async () => {
    const partial = await account(
      "no-exec",
      REQUIRED_RIGHTS.filter((r) => r.resource !== "pods/exec"),
    );
    const before = await inNamespace();
    const r = await up(["--context", CONTEXT, "--namespace", NS], { ...env, KUBECONFIG: partial });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `context ${CONTEXT} lacks rights triton-dev needs in namespace ${NS}: create pods/exec\n`,
    );
    expect(r.stderr).toContain("The cluster runtime");
    expect(await inNamespace()).toEqual(before);
  }, 60_000);

  it("with exactly the listed rights: creates the run's objects, reports that no node can take the pod, and removes them again", async () => {
    const before = await inNamespace();
    const t0 = Date.now();
    const r = await up(["--context", CONTEXT, "--namespace", NS, "--timeout", "90"]);
    console.info(
      `up --runtime cluster, unschedulable reported and cleaned up in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `Kubernetes cannot place the Triton pod in cluster ${CONTEXT}: no nodes available to schedule pods`,
    );
    expect(r.stderr).toContain(`kubectl --context ${CONTEXT} get nodes`);
    const steps = events(r)
      .filter((e) => e.type === "progress" && e.runtime === "cluster")
      .map((e) => e.message as string);
    expect(steps).toEqual(
      expect.arrayContaining([
        `checking the rights of context ${CONTEXT} in namespace ${NS}`,
        expect.stringMatching(
          new RegExp(
            `^creating Deployment/triton-dev-[a-z0-9-]+, Service/triton-dev-[a-z0-9-]+ in namespace ${NS} \\(context ${CONTEXT}\\)$`,
          ),
        ),
        "waiting for the Triton pod to start",
        `deleting this run's objects from namespace ${NS}`,
      ]),
    );
    expect(await inNamespace()).toEqual(before);
    expect(before).toEqual(expect.arrayContaining(["deployment.apps/their-app", "service/their-app"]));
    expect(ourKubectls(CONTEXT, NS)).toEqual([]);
    for (const p of Object.values(ports)) expect(await isPortFree(p)).toBe(true);
    expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).running).toBe(false);
  }, 180_000);

  it("down: the recorded run's Deployment, Service and pods go, by its label, and nothing of the team's", async () => {
    const stateDir = await tempDir("cluster-state");
    const runEnv = { ...env, TRITON_DEV_STATE_DIR: stateDir };
    const paths = resolvePaths(runEnv);
    const runId = "20261204T120000-abc123";
    const runDir = path.join(stateDir, "runs", runId);
    await fsp.mkdir(runDir, { recursive: true });
    const start = {
      runId,
      runDir,
      repository: path.join(runDir, "repository"),
      ports,
      host: "127.0.0.1",
      reload: "poll" as const,
      pollSecs: 2,
      repositoryKey: { header: "triton-dev-key", value: "k", dir: path.join(runDir, "key") },
      logFile: path.join(runDir, "tritonserver.log"),
    };
    // Created as `up` creates them, with the account's own rights.
    await cp.ok([`--namespace=${NS}`, "create", "--filename=-"], {
      kubeconfig: env.KUBECONFIG!,
      input: toYaml(renderManifests(clusterManifestOptions(start, { image: IMAGE, gpus: 0, shmBytes: 1024 ** 3 }))),
    });
    const name = objectName(runId);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !(await inNamespace()).some((x) => x.startsWith(`pod/${name}-`)))
      await new Promise((r) => setTimeout(r, 200));
    const state: RunState = {
      version: 1,
      runId,
      runtime: "cluster",
      pid: 0,
      executable: "kubectl",
      detached: true,
      startedAt: new Date().toISOString(),
      modelsDir: models,
      runDir,
      repository: start.repository,
      logFile: start.logFile,
      host: "127.0.0.1",
      ports,
      reload: "poll",
      pollSecs: 2,
      repositoryKey: { header: "triton-dev-key", value: "k" },
      runtimeRecord: {
        context: CONTEXT,
        namespace: NS,
        name,
        image: IMAGE,
        gpus: 0,
        kinds: ["deployments", "services"],
      },
    };
    const run = createClusterDriver().attach(state, { paths, env: runEnv });
    expect(await run.alive()).toBe(true);
    expect(run.describe().json).toEqual({
      kubernetes: { context: CONTEXT, namespace: NS, name, image: IMAGE, gpus: 0 },
    });
    const report = await run.stop(15_000);
    expect(report.what).toBe(`context ${CONTEXT}, namespace ${NS}; Deployment and Service ${name} deleted`);
    const left = await inNamespace();
    expect(left.filter((x) => x.includes(name))).toEqual([]);
    expect(left).toEqual(expect.arrayContaining(["deployment.apps/their-app", "service/their-app"]));
    expect(
      (await cp.ok([`--namespace=${NS}`, "get", "all", `--selector=${RUN_LABEL}=${runId}`, "--output=name"])).trim(),
    ).toBe("");
    expect(await run.alive()).toBe(false);
    // Safe twice.
    await run.stop(15_000);
  }, 120_000);
  it("the listed rights let kubectl exec into the sync container, port-forward and follow the log (what stops them here is the missing kubelet)", async () => {
    const runId = "20261204T130000-def456";
    const stateDir = await tempDir("cluster-state");
    const runDir = path.join(stateDir, "runs", runId);
    const start = {
      runId,
      runDir,
      repository: path.join(runDir, "repository"),
      ports,
      host: "127.0.0.1",
      reload: "poll" as const,
      pollSecs: 2,
      repositoryKey: { header: "triton-dev-key", value: "k", dir: path.join(runDir, "key") },
      logFile: path.join(runDir, "tritonserver.log"),
    };
    const asAccount = { kubeconfig: env.KUBECONFIG! };
    await cp.ok([`--namespace=${NS}`, "create", "--filename=-"], {
      ...asAccount,
      input: toYaml(renderManifests(clusterManifestOptions(start, { image: IMAGE, gpus: 0, shmBytes: 1024 ** 3 }))),
    });
    // A node for the scheduler, and its kubelet's reports: both containers run.
    await cp.addNode("gpu-node-1");
    const kubelet = cp.kubeletFor("gpu-node-1", (pod) => ({
      phase: "Running",
      conditions: [{ type: "PodScheduled", status: "True" }],
      containerStatuses: pod.spec.containers.map((c) => ({
        name: c.name,
        ready: false,
        started: true,
        restartCount: 0,
        image: c.image,
        imageID: "",
        state: { running: { startedAt: new Date().toISOString() } },
      })),
    }));
    try {
      let pod = "";
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && !pod) {
        pod = (
          await cp.ok([
            `--namespace=${NS}`,
            "get",
            "pods",
            `--selector=${RUN_LABEL}=${runId}`,
            "--field-selector=status.phase=Running",
            "--output=name",
          ])
        ).trim();
        if (!pod) await new Promise((r) => setTimeout(r, 200));
      }
      expect(pod).toMatch(/^pod\/triton-dev-/);
      for (const args of [
        ["exec", "-i", pod, "--container=sync", "--", "/bin/sh", "-c", "true"],
        ["port-forward", pod, "0:8000"],
        ["logs", pod, "--container=triton"],
      ]) {
        const r = await cp.kubectl([`--namespace=${NS}`, "--request-timeout=20s", ...args], asAccount);
        expect(r.code, args.join(" ")).not.toBe(0);
        expect(r.stderr, args.join(" ")).not.toMatch(/forbidden/i);
        expect(r.stderr, args.join(" ")).toMatch(/no preferred addresses found/);
      }
      // Without the exec right the API refuses the same command.
      const partial = await cp.kubeconfigFor(
        (await cp.ok([`--namespace=${NS}`, "create", "token", "no-exec", "--duration=1h"])).trim(),
        "no-exec-2",
      );
      const denied = await cp.kubectl(
        [`--namespace=${NS}`, "exec", "-i", pod, "--container=sync", "--", "/bin/sh", "-c", "true"],
        { kubeconfig: partial },
      );
      expect(denied.stderr).toMatch(/forbidden/i);
    } finally {
      await kubelet.stop();
      await cp.ok([`--namespace=${NS}`, "delete", "deployments,services", `--selector=${RUN_LABEL}=${runId}`]);
    }
  }, 120_000);
});
