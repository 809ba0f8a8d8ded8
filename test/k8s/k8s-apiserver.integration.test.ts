/**
 * The rendered manifests against a real Kubernetes API server (test/fixtures/k8s-control-plane:
 * etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.34.3 built from source),
 * with the Prometheus operator's published ServiceMonitor CRD installed: each variant passes
 * `kubectl apply --dry-run=server` and a real apply, every object comes back from the server with
 * every field as rendered (none dropped, none rewritten by defaulting or normalisation), and the
 * Deployment's pod is admitted. No kubelet runs, so no pod starts here.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  parseYamlObjects,
  renderManifests,
  toYaml,
  type K8sObject,
  type ManifestOptions,
} from "../../src/k8s/manifests.js";
import { KIND_CONFIG_FILES, kindConfigDir, MANAGED_NODE_LABEL } from "../../src/runtimes/kind/kind-config.js";
import {
  buildControlPlane,
  controlPlaneAvailability,
  SERVICE_MONITOR_CRD_FILE,
  startControlPlane,
  type ControlPlane,
} from "../fixtures/k8s-control-plane/harness.js";
import { runCli, testEnv } from "../helpers/cli.js";
import fsp from "node:fs/promises";

const availability = controlPlaneAvailability();
const title = availability.ok
  ? "the manifests on a real API server (kube-apiserver v1.34.3)"
  : `the manifests on a real API server (skipped: ${availability.reason})`;

/** The paths where `got` differs from `want` (every field of `want` must be in `got`, equal). */
export function differences(want: unknown, got: unknown, at = ""): string[] {
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return [`${at}: ${JSON.stringify(want)} came back as ${JSON.stringify(got)}`];
    if (got.length !== want.length) return [`${at}: ${want.length} items came back as ${got.length}`];
    return want.flatMap((w, i) => differences(w, got[i], `${at}[${i}]`));
  }
  if (want !== null && typeof want === "object") {
    if (got === null || typeof got !== "object" || Array.isArray(got))
      return [`${at}: an object came back as ${JSON.stringify(got)}`];
    return Object.entries(want).flatMap(([k, w]) =>
      k in got ? differences(w, (got as Record<string, unknown>)[k], `${at}.${k}`) : [`${at}.${k}: dropped`],
    );
  }
  // A resource amount written as a number comes back as the API's quantity string: the same value.
  if (typeof want === "number" && /\.resources\.(limits|requests)\./.test(at) && got === String(want)) return [];
  return want === got ? [] : [`${at}: ${JSON.stringify(want)} came back as ${JSON.stringify(got)}`];
}

const resource = (o: K8sObject) => `${o.kind.toLowerCase()}/${o.metadata.name}`;

describe.skipIf(!availability.ok)(title, () => {
  let cp: ControlPlane;
  let n = 0;
  const ns = () => `m${++n}-${Math.random().toString(36).slice(2, 7)}`;

  beforeAll(async () => {
    cp = await startControlPlane(await buildControlPlane());
    await cp.ok(["apply", "--server-side", `--filename=${SERVICE_MONITOR_CRD_FILE}`]);
    await cp.ok(["wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com"]);
    // The GPU variants name the nvidia RuntimeClass, which the kind runtime installs from kind-config/.
    await cp.ok(["apply", `--filename=${path.join(kindConfigDir(), KIND_CONFIG_FILES.runtimeClass)}`]);
  }, 3_600_000);

  afterAll(async () => {
    await cp?.stop();
  }, 60_000);

  /** Dry run, real apply, read back, and the pod the Deployment makes. */
  async function applyAndCompare(objects: K8sObject[]): Promise<void> {
    const yaml = toYaml(objects);
    const dryRun = async (text: string) => {
      const r = await cp.kubectl(["apply", "--dry-run=server", "--filename=-"], { input: text });
      expect(r.stderr, text).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("(server dry run)");
    };
    const ns = objects.find((o) => o.kind === "Namespace");
    const namespace = ns?.metadata.name;
    if (ns) {
      // A server-side dry run creates nothing, so the objects in a namespace that does not exist
      // yet are refused ("namespaces ... not found"), as on any cluster: the Namespace goes first.
      await dryRun(toYaml([ns]));
      expect((await cp.kubectl(["get", `namespace/${namespace}`])).code).toBe(1);
      await cp.ok(["apply", "--filename=-"], { input: toYaml([ns]) });
    }
    await dryRun(yaml);
    const applied = await cp.kubectl(["apply", "--filename=-"], { input: yaml });
    expect(applied.stderr).toBe("");
    expect(applied.code).toBe(0);
    for (const o of objects) {
      const nsArgs = o.metadata.namespace ? [`--namespace=${o.metadata.namespace}`] : [];
      const kind =
        o.kind === "ServiceMonitor" ? `servicemonitors.monitoring.coreos.com/${o.metadata.name}` : resource(o);
      const got = JSON.parse(await cp.ok([...nsArgs, "get", kind, "--output=json"])) as Record<string, unknown>;
      const want: Record<string, unknown> = { ...o };
      if (o.kind === "Secret") {
        // stringData is write-only: it comes back base64 in data.
        const { stringData, ...rest } = o as K8sObject & { stringData: Record<string, string> };
        Object.assign(want, rest, {
          data: Object.fromEntries(Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
        });
        delete want.stringData;
      }
      expect(differences(want, got), `${resource(o)} as the server has it`).toEqual([]);
    }
    const deployment = objects.find((o) => o.kind === "Deployment");
    if (deployment && namespace) {
      // The controllers make its pod: admitted (the ServiceAccount, the RuntimeClass), pending.
      const deadline = Date.now() + 60_000;
      let pods: Array<{ spec: { containers: unknown[] }; status?: { phase?: string } }> = [];
      while (Date.now() < deadline) {
        pods = JSON.parse(await cp.ok([`--namespace=${namespace}`, "get", "pods", "--output=json"])).items;
        if (pods.length) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(pods, "the Deployment's pod").toHaveLength(1);
      const template = (deployment.spec as { template: { spec: { containers: unknown[] } } }).template;
      // What admission adds to the pod, and only that: the ServiceAccount token's projected volume,
      // mounted in each container (ServiceAccount), and five minutes' tolerance of a not-ready or
      // unreachable node (DefaultTolerationSeconds).
      type Container = { volumeMounts?: Array<{ name: string }> };
      const spec = structuredClone(pods[0]!.spec) as {
        volumes: Array<{ name: string }>;
        containers: Container[];
        initContainers?: Container[];
        tolerations?: Array<{ key?: string; effect?: string; tolerationSeconds?: number }>;
      };
      const token = spec.volumes.filter((v) => v.name.startsWith("kube-api-access-"));
      expect(token).toHaveLength(1);
      spec.volumes = spec.volumes.filter((v) => v !== token[0]);
      for (const c of [...spec.containers, ...(spec.initContainers ?? [])])
        c.volumeMounts = c.volumeMounts?.filter((m) => m.name !== token[0]!.name);
      const defaulted = (t: { key?: string; effect?: string; tolerationSeconds?: number }) =>
        ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"].includes(t.key ?? "") &&
        t.effect === "NoExecute" &&
        t.tolerationSeconds === 300;
      expect(spec.tolerations?.filter(defaulted)).toHaveLength(2);
      spec.tolerations = spec.tolerations?.filter((t) => !defaulted(t));
      expect(differences(template.spec, spec, "pod.spec")).toEqual([]);
      expect(pods[0]!.status?.phase).toBe("Pending");
    }
  }

  const variant = (o: Partial<ManifestOptions>): ManifestOptions => ({
    image: "nvcr.io/nvidia/tritonserver:24.10-py3",
    gpus: 0,
    pollSecs: 30,
    modelSource: { kind: "pvc", claimName: "triton-models" },
    shmSize: "1Gi",
    serviceMonitor: false,
    namespace: ns(),
    ...o,
  });

  for (const gpus of [0, 1]) {
    for (const mode of ["poll", "explicit"] as const) {
      for (const serviceMonitor of [false, true]) {
        it(`${gpus ? "GPU" : "CPU"}, ${mode} mode, ${serviceMonitor ? "with" : "without"} the ServiceMonitor`, async () => {
          const objects = renderManifests(
            variant({
              gpus,
              modelControlMode: mode,
              serviceMonitor,
              ...(gpus ? { runtimeClassName: "nvidia" } : {}),
            }),
          );
          expect(objects.map((o) => o.kind)).toEqual([
            "Namespace",
            "Deployment",
            "Service",
            ...(serviceMonitor ? ["ServiceMonitor"] : []),
          ]);
          await applyAndCompare(objects);
        }, 120_000);
      }
    }
  }

  it("every option at once: a Secret with its key, resources, labels, node selector, git-sync, extra args", async () => {
    const objects = renderManifests(
      variant({
        name: "triton-a",
        gpus: 2,
        runtimeClassName: "nvidia",
        resources: { cpu: "8", memory: "16Gi" },
        shmSize: "2Gi",
        repositoryKey: { header: "triton-dev-key", secretName: "triton-key", value: "0123abcd" },
        labels: { "dev.triton-dev.run-id": "0755", note: "yes", mode: "on" },
        serviceMonitor: true,
        serviceMonitorLabels: { release: "prometheus" },
        nodeSelector: MANAGED_NODE_LABEL,
        imagePullPolicy: "IfNotPresent",
        extraArgs: ["--log-verbose=1"],
        modelSource: {
          kind: "git",
          repo: "https://github.com/org/models.git",
          branch: "main",
          subdir: "triton",
          periodSecs: 30,
        },
      }),
    );
    expect(objects.map((x) => x.kind)).toEqual(["Namespace", "Secret", "Deployment", "Service", "ServiceMonitor"]);
    await applyAndCompare(objects);
  }, 120_000);

  it("the kind runtime's Deployment: hostPath run folder, the key file, the worker's node selector", async () => {
    const objects = renderManifests(
      variant({
        modelSource: { kind: "hostPath", path: "/triton-dev/runs/r1", repositorySubdir: "repository" },
        repositoryKey: { header: "triton-dev-key", keyDir: "/models/key" },
        labels: { "triton-dev.io/run": "r1" },
        nodeSelector: MANAGED_NODE_LABEL,
        imagePullPolicy: "Never",
        logInfo: true,
        exitTimeoutSecs: 10,
      }),
    );
    await applyAndCompare(objects);
  }, 120_000);

  it("what the built CLI prints (`triton-dev manifests --namespace`), as a user applies it", async () => {
    const namespace = ns();
    const env = await testEnv();
    const r = await runCli(["manifests", "--namespace", namespace], env);
    expect(r.code, r.stderr).toBe(0);
    const file = path.join(env.TRITON_DEV_STATE_DIR!, "manifests.yaml");
    await fsp.writeFile(file, r.stdout);
    await applyAndCompare(parseYamlObjects(r.stdout, file));
    // And the file itself, as a user has it: the cluster holds exactly what it says.
    const diff = await cp.kubectl(["diff", `--filename=${file}`]);
    expect(diff.stdout + diff.stderr).toBe("");
    expect(diff.code).toBe(0);
  }, 120_000);

  it("a ServiceMonitor is refused where the CRD's schema says so (the server really checks it)", async () => {
    const [, , , sm] = renderManifests(variant({ serviceMonitor: true }));
    const bad = { ...sm!, spec: { ...(sm!.spec as object), endpoints: [{ port: "metrics", scheme: "gopher" }] } };
    await cp.ok(["create", "namespace", sm!.metadata.namespace!]);
    const r = await cp.kubectl(["apply", "--dry-run=server", "--filename=-"], { input: toYaml([bad]) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/scheme/);
  }, 60_000);
});
