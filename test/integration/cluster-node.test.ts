/**
 * `up --runtime cluster` on a cluster whose pods really run: the control plane of
 * test/fixtures/k8s-control-plane plus one node of test/fixtures/k8s-node (a kubelet v1.34.3,
 * containerd 2 and runc), as a team's cluster is used: a kubeconfig context whose credential is a
 * ServiceAccount holding only the Role the README lists, in a namespace that exists. The node pulls
 * the test image (the NGC-layout stand-in) from a registry on 127.0.0.1; the kubelet runs the
 * probes; exec, port-forward and `logs -f` go through the API server, the kubelet and containerd's
 * streaming server into the pod. Nothing is emulated.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPortFree } from "../../src/net/ports.js";
import { ourKubectls } from "../../src/runtimes/cluster/driver.js";
import { REQUIRED_RIGHTS, RUN_LABEL } from "../../src/runtimes/cluster/settings.js";
import { buildTestImage, LocalRegistry } from "../fixtures/docker/harness.js";
import {
  buildControlPlane,
  controlPlaneAvailability,
  serviceAccountWith,
  startControlPlane,
  type ControlPlane,
} from "../fixtures/k8s-control-plane/harness.js";
import { buildNode, nodeAvailability, startNode, type KubeNode } from "../fixtures/k8s-node/harness.js";
import {
  copySampleModels,
  freePorts,
  portArgs,
  runCli,
  SAMPLE_STAND_IN_READY,
  testEnv,
  jsonEvents,
  type SessionJsonEvent,
} from "../helpers/cli.js";
import { untilOffsetServes, writeOffsetModel } from "../helpers/offset-model.js";
import { expectPipelineServedAndLocked } from "../helpers/served.js";

const availability = ((): { ok: true } | { ok: false; reason: string } => {
  const cp = controlPlaneAvailability();
  return cp.ok ? nodeAvailability() : cp;
})();
const title = `up --runtime cluster on a real node (kubelet, containerd 2, runc)${availability.ok ? "" : ` (skipped: ${availability.reason})`}`;
if (!availability.ok) console.warn(`cluster node tests skipped: ${availability.reason}`);

const CONTEXT = "lab";
const NS = "models";

const events = jsonEvents;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!availability.ok)(title, () => {
  const registry = new LocalRegistry();
  let cp: ControlPlane;
  let node: KubeNode;
  let env: NodeJS.ProcessEnv;
  let models: string;
  let image: string;
  let ports: { http: number; grpc: number; metrics: number };

  const runPod = async (): Promise<string> =>
    (
      await cp.ok([
        `--namespace=${NS}`,
        "get",
        "pods",
        `--selector=${RUN_LABEL}`,
        "--output=jsonpath={.items[0].metadata.name}",
      ])
    ).trim();
  const state = async () =>
    JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
      runId: string;
      logFile: string;
      supervisorPid: number;
    };

  beforeAll(async () => {
    const t0 = Date.now();
    const [cpBuild, nodeBuild, testImage] = await Promise.all([buildControlPlane(), buildNode(), buildTestImage()]);
    await registry.start(testImage.registryDir);
    image = registry.ref(testImage);
    const t1 = Date.now();
    cp = await startControlPlane(cpBuild, { context: CONTEXT });
    const t2 = Date.now();
    try {
      node = await startNode(cp, nodeBuild, { registries: [`127.0.0.1:${registry.port}`] });
    } catch (err) {
      await cp.stop();
      throw err;
    }
    console.info(
      `builds found in ${((t1 - t0) / 1000).toFixed(1)} s, control plane ready in ${((t2 - t1) / 1000).toFixed(1)} s, node Ready in ${((Date.now() - t2) / 1000).toFixed(1)} s`,
    );
    await cp.ok(["create", "namespace", NS]);
    const kubeconfig = await serviceAccountWith(cp, NS, "triton-dev", REQUIRED_RIGHTS);
    env = await testEnv({ PATH: `${cp.bin}${path.delimiter}${process.env.PATH}`, KUBECONFIG: kubeconfig });
    models = await copySampleModels();
    // The cluster runtime never sees the image its node pulls, and the stand-in image has no
    // onnxruntime backend (NGC's has): Triton would refuse bert_large, and with Triton's strict
    // readiness the kubelet would rightly hold the pod not ready. What this file checks is the node
    // and the kubelet's probes, so it serves what the stand-in image can.
    for (const m of ["bert_large", "bert_pipeline"]) await fsp.rm(path.join(models, m), { recursive: true });
    ports = await freePorts();
  }, 3_600_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    const t0 = Date.now();
    await node?.stop();
    console.info(`node stopped and removed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await cp?.stop();
    await registry.stop();
  }, 180_000);

  it("up: the node pulls the image, the kubelet's probes pass, every CPU model READY through the port-forward", async () => {
    const t0 = Date.now();
    const r = await runCli(
      [
        "up",
        "--runtime",
        "cluster",
        "--context",
        CONTEXT,
        "--namespace",
        NS,
        "--detach",
        "--json",
        "--image",
        image,
        "--models",
        models,
        "--timeout",
        "300",
        ...portArgs(ports),
      ],
      env,
      420_000,
    );
    const elapsed = Date.now() - t0;
    expect(r.code, `${r.stderr}\n${node.tails()}`).toBe(0);
    const ready = events(r).find((e) => e.type === "ready") as SessionJsonEvent<"ready">;
    expect(ready.models.map((m) => [m.name, m.state])).toEqual(SAMPLE_STAND_IN_READY);
    console.info(
      `up --runtime cluster --detach on a real node (image pull included) to every model READY: ${(elapsed / 1000).toFixed(1)} s`,
    );
    // The kubelet's own verdict: the startup and readiness probes passed.
    const pod = JSON.parse(await cp.ok([`--namespace=${NS}`, "get", `pod/${await runPod()}`, "--output=json"])) as {
      spec: { nodeName: string };
      status: {
        conditions: Array<{ type: string; status: string }>;
        containerStatuses: Array<{ name: string; ready: boolean; started: boolean; imageID: string }>;
      };
    };
    expect(pod.spec.nodeName).toBe(node.name);
    expect(pod.status.conditions.find((c) => c.type === "Ready")?.status).toBe("True");
    const triton = pod.status.containerStatuses.find((c) => c.name === "triton");
    expect(triton).toMatchObject({ ready: true, started: true });
    // Pulled by containerd from the registry: the image's digest is recorded.
    expect(triton?.imageID).toMatch(
      new RegExp(`^127\\.0\\.0\\.1:${registry.port}/triton-dev-test/tritonserver@sha256:[0-9a-f]{64}$`),
    );
  }, 480_000);

  it("serves inference through the port-forward, with the repository API locked to the run's key", async () => {
    await expectPipelineServedAndLocked(ports.http);
    const metrics = await fetch(`http://127.0.0.1:${ports.metrics}/metrics`).then((x) => x.text());
    expect(metrics).toContain("nv_inference_request_success");
  }, 120_000);

  it("`logs -f` carries Triton's log from the pod into the run's log file", async () => {
    const log = await fsp.readFile((await state()).logFile, "utf8");
    expect(log).toMatch(/successfully loaded 'sentiment_pipeline'/);
    expect(log).toMatch(/Started HTTPService at 0\.0\.0\.0:8000/);
    // The key library is preloaded for Triton only, once the first copy brought it: the wait for
    // that copy logs no loader error.
    expect(log).not.toMatch(/LD_PRELOAD cannot be preloaded/);
  });

  it("hot reload: a new model and an edit reach the pod's poll and are served; a refused edit never reaches it", async () => {
    await writeOffsetModel(models, "1");
    await untilOffsetServes(ports.http, 1, "new model", 120_000);
    const t0 = Date.now();
    const file = path.join(models, "offset", "1", "model.py");
    await fsp.writeFile(file, (await fsp.readFile(file, "utf8")).replace("x + 1.0", "x + 5.0"));
    await untilOffsetServes(ports.http, 5, "edited model", 120_000);
    console.info(
      `cluster runtime on a real node, save to new version served: ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    const edits = () =>
      runCli(["status", "--json"], env).then((s) =>
        (JSON.parse(s.stdout) as { edits: Array<{ model: string; outcome: string }> }).edits.filter(
          (e) => e.model === "offset",
        ),
      );
    expect((await edits()).at(-1)).toMatchObject({ outcome: "ready" });
    expect(await fsp.readFile((await state()).logFile, "utf8")).toMatch(/successfully loaded 'offset'/);

    // A config Triton would refuse: triton-dev refuses it here, and the pod keeps the good one.
    const config = path.join(models, "offset", "config.pbtxt");
    const good = await fsp.readFile(config, "utf8");
    await fsp.writeFile(config, good.replace("max_batch_size: 8", "max_batch_size: -3"));
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && (await edits()).at(-1)?.outcome !== "refused") await sleep(300);
    expect((await edits()).at(-1)?.outcome).toBe("refused");
    await untilOffsetServes(ports.http, 5, "after a refused edit");
    const inPod = await cp.ok([
      `--namespace=${NS}`,
      "exec",
      await runPod(),
      "--container=triton",
      "--",
      "cat",
      "/models/repository/offset/config.pbtxt",
    ]);
    expect(inPod).toContain("max_batch_size: 8");
    await fsp.writeFile(config, good);
  }, 360_000);

  it("down deletes the run's objects, the pod's containers leave the node, the forward and log follower stop, the ports are free", async () => {
    const s = await state();
    const t0 = Date.now();
    const r = await runCli(["down"], env);
    expect(r.code, r.stderr).toBe(0);
    console.info(`down (cluster runtime, real node): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(
      (
        await cp.ok([
          `--namespace=${NS}`,
          "get",
          "deployments,replicasets,pods,services",
          `--selector=${RUN_LABEL}=${s.runId}`,
          "--output=name",
        ])
      ).trim(),
    ).toBe("");
    // The kubelet stops the pod's containers; only the sandbox may linger until its GC.
    const deadline = Date.now() + 60_000;
    let running: string[];
    do {
      running = (await node.ctr(["tasks", "list"])).stdout
        .split("\n")
        .slice(1)
        .filter((l) => /RUNNING/.test(l));
      if (running.length === 0) break;
      await sleep(500);
    } while (Date.now() < deadline);
    expect(running).toEqual([]);
    expect(ourKubectls(CONTEXT, NS)).toEqual([]);
    for (const p of Object.values(ports)) expect(await isPortFree(p)).toBe(true);
    expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).running).toBe(false);
  }, 180_000);
});
