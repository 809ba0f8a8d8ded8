import { execFile } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPortFree } from "../../src/net/ports.js";
import { findProcesses, isOurProcess } from "../../src/state/process.js";
import {
  copySampleModels,
  freePorts,
  jsonEvents,
  portArgs,
  runCli,
  SAMPLE_STAND_IN_READY,
  standInSkip,
  tempDir,
  testEnv,
  type SessionJsonEvent,
} from "../helpers/cli.js";
import { untilOffsetServes, writeOffsetModel } from "../helpers/offset-model.js";
import { expectPipelineServedAndLocked } from "../helpers/served.js";
import {
  buildTestImage,
  dockerAvailability,
  LocalRegistry,
  removeImage,
  removeTestImages,
} from "../fixtures/docker/harness.js";
import { kindNode, privilegedBlocker, type KindNode } from "../fixtures/kind-node/harness.js";

/**
 * `up --runtime kind` end to end against a REAL kind cluster: the kind v0.33.0 CLI and a kind node
 * image built on this machine by test/fixtures/kind-node/build.sh (Debian with systemd, containerd
 * 2, kubeadm/kubelet v1.34.3, the control-plane, kube-proxy, CoreDNS and pause images preloaded;
 * nothing is pulled from outside), given to triton-dev with `--node-image`. Where
 * test/integration/kind.test.ts emulates kind and kubectl, here kind creates the two-node cluster
 * of kind-config/cluster.yaml, `kind load docker-image` puts the Triton test image into the worker,
 * the kubelet runs the pod with the worker's mount of the state folder, and kubectl port-forwards.
 *
 * This is the kind runtime's main path; kind.test.ts keeps on the emulator only what needs a
 * cluster to misbehave or several clusters (a foreign one, a kept one, a crash loop) and what
 * needs no cluster at all.
 *
 * Never skipped silently: with a Docker daemon, a node image that build.sh cannot make fails the
 * file, naming build.sh; so does a daemon that cannot run kind's privileged nodes here.
 */
const availability = await dockerAvailability();
const skipReason = availability.ok ? "" : ` (skipped: ${availability.reason})`;
if (!availability.ok) console.warn(`real kind tests skipped: ${availability.reason}`);

const CLUSTER_LABEL = "io.x-k8s.kind.cluster";

/** What the test reads of a pod, as `kubectl get -o json` gives it. */
interface PodJson {
  status: { phase: string };
  spec: {
    containers: Array<{
      name: string;
      command?: string[];
      args?: string[];
      env?: Array<{ name: string; value?: string }>;
      volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
    }>;
    volumes: Array<{ name: string; hostPath?: { path: string } }>;
  };
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { env, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${String(stdout)}${String(stderr)}` }),
    ),
  );
}

describe.skipIf(!availability.ok)(`up --runtime kind on a real kind cluster${skipReason}`, () => {
  const docker = (availability as { docker: Docker }).docker;
  const registry = new LocalRegistry();
  const cluster = `tdkr-${Math.random().toString(36).slice(2, 7)}`;
  let node: KindNode;
  let image = "";
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;

  /** Our kubectl processes for the cluster: every one, or the long-running port-forward and log follower. */
  const kubectls = (longRunning = false) =>
    findProcesses(
      (argv) =>
        path.basename(argv[0] ?? "") === "kubectl" &&
        argv.includes(`--context=kind-${cluster}`) &&
        (!longRunning || argv.includes("port-forward") || argv.includes("logs")),
    );
  const runState = async () =>
    JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
      runDir: string;
      logFile: string;
      supervisorPid: number;
      repositoryKey: { value: string };
    };

  /** `up --runtime kind --detach` of the test's models and image on the cluster `name`, with `extra`. */
  const upKind = (name: string, extra: string[] = [], e: NodeJS.ProcessEnv = env, timeoutMs?: number) =>
    runCli(
      [
        "up",
        "--runtime",
        "kind",
        "--cluster",
        name,
        "--detach",
        "--image",
        image,
        "--models",
        models,
        ...portArgs(ports),
        ...extra,
      ],
      e,
      timeoutMs,
    );

  const containers = () =>
    docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${CLUSTER_LABEL}=${cluster}`] }) });

  beforeAll(async () => {
    const blocker = await privilegedBlocker(await docker.info());
    if (blocker) throw new Error(blocker);
    node = await kindNode();
    const built = await buildTestImage();
    await registry.start(built.registryDir);
    image = registry.ref(built);
    // Absent from the daemon, so `up` pulls it (with progress) before `kind load`.
    await removeTestImages(docker, built);
    const home = await tempDir("kind-real-home");
    env = await testEnv({
      PATH: `${path.dirname(node.kind)}:${path.dirname(node.kubectl)}:${process.env.PATH}`,
      // kind writes the cluster's context here, not into the user's ~/.kube/config.
      KUBECONFIG: path.join(home, "kubeconfig"),
    });
    ports = await freePorts();
    models = await copySampleModels();
  }, 1_900_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    if (node && env)
      for (const name of [cluster, `${cluster}-foreign`])
        await run(node.kind, ["delete", "cluster", `--name=${name}`], env);
    for (const c of await containers().catch(() => []))
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => {});
    await registry.stop();
    if (image) await removeImage(docker, image).catch(() => {});
  }, 180_000);

  it("refuses --gpus all when Docker has no NVIDIA runtime, before creating anything", async () => {
    const r = await upKind(cluster, ["--gpus", "all"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /GPUs were requested \(--gpus\) for the kind cluster, but the Docker daemon has no NVIDIA runtime/,
    );
    expect(r.stderr).toMatch(/accept-nvidia-visible-devices-as-volume-mounts=true/);
    expect((await runCli(["status", "--json"], env)).stdout).toMatch(/"running": false/);
    expect(await containers()).toEqual([]);
  }, 60_000);

  it("names the install command when kind is not on PATH", async () => {
    const r = await upKind(cluster, [], { ...env, PATH: path.dirname(process.execPath) });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("kind was not found on PATH");
    expect(r.stderr).toContain("go install sigs.k8s.io/kind@v0.33.0");
  });

  it("up --node-image creates the two-node cluster with kind, loads the image, and every CPU model is READY through the port-forward", async () => {
    const t0 = Date.now();
    const r = await upKind(cluster, ["--node-image", node.image, "--json", "--poll-secs", "1"], env, 600_000);
    const elapsed = Date.now() - t0;
    if (r.code !== 0) console.error(r.stderr.slice(-6000));
    expect(r.code).toBe(0);
    const ev = jsonEvents(r);
    const steps = ev
      .filter((e) => e.type === "progress" && e.runtime === "kind")
      .map((e) => `${e.step as string}: ${e.message as string}`);
    expect((ev.filter((e) => e.type === "pull").at(-1) as { finished?: boolean } | undefined)?.finished).toBe(true);
    expect(steps).toEqual(
      expect.arrayContaining([
        `cluster: creating the kind cluster ${cluster} (a minute or two the first time)`,
        `cluster: Set kubectl context to "kind-${cluster}"`,
        `image: loading ${image} into the cluster's node (kind load docker-image)`,
        "apply: applying Namespace/triton-dev, Deployment/triton-inference-server, Service/triton-inference-server in namespace triton-dev",
        expect.stringMatching(/^forward: port-forwarding 127\.0\.0\.1:\d+, \d+, \d+ to pod triton-inference-server-/),
      ]),
    );
    const skipped = ev.filter((e) => e.type === "skipped") as SessionJsonEvent<"skipped">[];
    expect(skipped.map((e) => e.model).sort()).toEqual(["bert_large", "bert_pipeline", "resnet50_fp16"]);
    // kind loads this daemon's image into its nodes, so the runtime looked inside it for its backends.
    expect(skipped.find((e) => e.model === "bert_large")?.reason).toContain(standInSkip("kind", image));
    const ready = ev.find((e) => e.type === "ready") as SessionJsonEvent<"ready">;
    expect(ready.models.map((m) => [m.name, m.state])).toEqual(SAMPLE_STAND_IN_READY);
    // Both nodes are kind's containers of the image we named, and the cluster is kind's own.
    const nodes = await containers();
    expect(nodes.map((c) => c.Names[0]).sort()).toEqual([`/${cluster}-control-plane`, `/${cluster}-worker`]);
    for (const c of nodes) expect(c.Image).toBe(node.image);
    expect((await run(node.kind, ["get", "clusters"], env)).out.split("\n")).toContain(cluster);
    const pods = await run(
      node.kubectl,
      [`--context=kind-${cluster}`, "-n", "triton-dev", "get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}"],
      env,
    );
    expect(pods.out.trim()).toBe(`${cluster}-worker`);
    const health = await fetch(`http://127.0.0.1:${ports.http}/v2/health/ready`);
    expect(health.status).toBe(200);
    console.info(
      `real kind: up --runtime kind --detach (new 2-node cluster, pull, kind load) to every model READY: ${(elapsed / 1000).toFixed(1)} s`,
    );
  }, 660_000);

  it("serves inference through the port-forward, with the repository API locked to the run's key", async () => {
    await expectPipelineServedAndLocked(ports.http);
    const metrics = await fetch(`http://127.0.0.1:${ports.metrics}/metrics`).then((x) => x.text());
    expect(metrics).toContain("nv_inference_request_success");
  }, 120_000);

  it("status shows the cluster, context and namespace; the kubelet runs the rendered Deployment, with no key in it", async () => {
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(s).toMatchObject({
      running: true,
      runtime: "kind",
      detached: true,
      serverReady: true,
      cluster: {
        name: cluster,
        context: `kind-${cluster}`,
        namespace: "triton-dev",
        created: true,
        keepCluster: false,
        image,
        gpus: 0,
        nodeContainer: `${cluster}-worker`,
      },
    });
    const text = (await runCli(["status"], env)).stdout;
    expect(text).toContain(`runtime   kind (kind cluster ${cluster}`);
    expect(text).toContain(`cluster   ${cluster} (context kind-${cluster}, namespace triton-dev; deleted by \`down\`)`);
    const state = await runState();
    // The pod as the API server holds it: the run folder through the worker's mount of the state
    // folder (read-only, the key file in it), Triton in poll mode, the key itself nowhere.
    const got = await run(
      node.kubectl,
      [`--context=kind-${cluster}`, "-n", "triton-dev", "get", "pods", "-o", "json"],
      env,
    );
    expect(got.code).toBe(0);
    const pods = (JSON.parse(got.out) as { items: PodJson[] }).items;
    expect(pods).toHaveLength(1);
    const pod = pods[0]!;
    expect(pod.status.phase).toBe("Running");
    const triton = pod.spec.containers.find((c) => c.name === "triton")!;
    const args = [...(triton.command ?? []), ...(triton.args ?? [])];
    expect(args).toEqual(
      expect.arrayContaining([
        "--model-repository=/models/repository",
        "--model-control-mode=poll",
        "--repository-poll-secs=1",
      ]),
    );
    expect(triton.env).toEqual(
      expect.arrayContaining([{ name: "TRITON_DEV_KEY_FILE", value: "/models/key/repository.key" }]),
    );
    const hostPath = pod.spec.volumes.map((v) => v.hostPath?.path).find(Boolean);
    expect(hostPath).toBe(path.posix.join("/triton-dev", path.relative(env.TRITON_DEV_STATE_DIR!, state.runDir)));
    expect(triton.volumeMounts).toEqual(
      expect.arrayContaining([expect.objectContaining({ mountPath: "/models", readOnly: true })]),
    );
    expect(got.out).not.toContain(state.repositoryKey.value);
    const worker = await docker.getContainer(`${cluster}-worker`).inspect();
    expect(worker.Mounts.find((m) => m.Destination === "/triton-dev")?.Source).toBe(env.TRITON_DEV_STATE_DIR);
    // The detached run's port-forward and log follower belong to its supervisor.
    expect(isOurProcess(state.supervisorPid, process.execPath)).toBe(true);
    expect(kubectls(true).length).toBe(2);
  }, 60_000);

  it("serves a saved edit: a new model, then a change to it, through the worker's mount and Triton's poll", async () => {
    const until = (want: number, what: string) => untilOffsetServes(ports.http, want, what, 90_000);
    await writeOffsetModel(models, "1");
    await until(1, "new model");
    const t0 = Date.now();
    const file = path.join(models, "offset", "1", "model.py");
    await fsp.writeFile(file, (await fsp.readFile(file, "utf8")).replace("x + 1.0", "x + 5.0"));
    await until(5, "edited model");
    console.info(`real kind: poll-mode reload, save to new version served: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(s.edits.find((e: { model: string }) => e.model === "offset")).toMatchObject({ outcome: "ready" });
    // Triton's log reached the run's log file through `kubectl logs --follow` (API server -> kubelet).
    expect(await fsp.readFile((await runState()).logFile, "utf8")).toMatch(/successfully loaded 'offset'/);
  }, 240_000);

  it("down deletes the cluster, stops the port-forward and log follower, frees the ports; kind lists no such cluster", async () => {
    const state = await runState();
    const t0 = Date.now();
    const r = await runCli(["down"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `stopped Triton (kind cluster ${cluster}, deleted, kind runtime, http 127.0.0.1:${ports.http})`,
    );
    console.info(`real kind: down (cluster deleted): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(await containers()).toEqual([]);
    expect((await run(node.kind, ["get", "clusters"], env)).out.split("\n")).not.toContain(cluster);
    await new Promise((r) => setTimeout(r, 500));
    expect(kubectls()).toEqual([]);
    expect(isOurProcess(state.supervisorPid, process.execPath)).toBe(false);
    for (const p of Object.values(ports)) expect(await isPortFree(p)).toBe(true);
    expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).running).toBe(false);
  }, 180_000);
  it("refuses a kind cluster of that name that triton-dev did not create, and leaves it running", async () => {
    const foreign = `${cluster}-foreign`;
    const created = await run(node.kind, ["create", "cluster", `--name=${foreign}`, `--image=${node.image}`], env);
    expect(created.code, created.out).toBe(0);
    const nodes = () =>
      docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${CLUSTER_LABEL}=${foreign}`] }) });
    try {
      const r = await upKind(foreign);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `a kind cluster named ${foreign} exists and was not created by triton-dev (no node carries the label triton-dev.io/managed=true); it is left alone`,
      );
      expect(r.stderr).toContain("--cluster NAME");
      expect((await runCli(["down"], env)).code).toBe(0);
      // Still there and untouched: its node runs, kind lists it, and nothing of ours is in it.
      expect((await nodes()).map((c) => c.State)).toEqual(["running"]);
      expect((await run(node.kind, ["get", "clusters"], env)).out.split("\n")).toContain(foreign);
      const ns = await run(node.kubectl, [`--context=kind-${foreign}`, "get", "namespace", "triton-dev"], env);
      expect(ns.code).not.toBe(0);
      expect(ns.out).toContain("NotFound");
    } finally {
      await run(node.kind, ["delete", "cluster", `--name=${foreign}`], env);
    }
    expect(await nodes()).toEqual([]);
  }, 240_000);
});
