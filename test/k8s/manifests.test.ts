import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { UserError } from "../../src/errors.js";
import { containerCommand } from "../../src/runtimes/docker/settings.js";
import {
  APP_LABEL,
  DEFAULT_NAME,
  GIT_SYNC_IMAGE,
  MANAGED_BY,
  REPOSITORY_KEY_ENV,
  parseYamlObjects,
  renderManifests,
  selectorLabels,
  toYaml,
  type K8sObject,
  type ManifestOptions,
} from "../../src/k8s/manifests.js";
import { BASE } from "../runtimes/kind/helpers.js";

type Any = Record<string, any>;

function byKind(objects: K8sObject[], kind: string): Any {
  const found = objects.filter((o) => o.kind === kind);
  expect(found, `exactly one ${kind}`).toHaveLength(1);
  return found[0] as Any;
}

const podSpec = (objects: K8sObject[]): Any => byKind(objects, "Deployment").spec.template.spec;
const triton = (objects: K8sObject[]): Any => podSpec(objects).containers.find((c: Any) => c.name === "triton");

describe("renderManifests: the Deployment", () => {
  it("is the article's: name, app label, one replica, poll mode with its interval, named ports", () => {
    const objects = renderManifests(BASE);
    expect(objects.map((o) => o.kind)).toEqual(["Deployment", "Service", "ServiceMonitor"]);
    const d = byKind(objects, "Deployment");
    expect(d.apiVersion).toBe("apps/v1");
    expect(d.metadata.name).toBe(DEFAULT_NAME);
    expect(d.metadata.labels).toMatchObject({ app: "triton", "app.kubernetes.io/managed-by": "triton-dev" });
    expect(d.spec.replicas).toBe(1);
    const c = triton(objects);
    expect(c.image).toBe(BASE.image);
    expect(c.args).toEqual([
      "tritonserver",
      "--model-repository=/models",
      "--model-control-mode=poll",
      "--repository-poll-secs=30",
      "--allow-metrics=true",
      "--metrics-config=summary_latencies=true",
      "--exit-on-error=false",
    ]);
    expect(c.ports).toEqual([
      { name: "http", containerPort: 8000 },
      { name: "grpc", containerPort: 8001 },
      { name: "metrics", containerPort: 8002 },
    ]);
    expect(c.imagePullPolicy).toBeUndefined();
  });

  it("selects its pods by app and instance, and the template carries those labels", () => {
    const d = byKind(renderManifests({ ...BASE, name: "triton-b" }), "Deployment");
    expect(d.spec.selector.matchLabels).toEqual({ app: "triton", "app.kubernetes.io/instance": "triton-b" });
    expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
  });

  it("probes: a startup probe on live instead of fixed initial delays, then liveness and readiness on the named http port", () => {
    const c = triton(renderManifests(BASE));
    expect(c.startupProbe).toEqual({
      httpGet: { path: "/v2/health/live", port: "http" },
      periodSeconds: 2,
      failureThreshold: 450,
    });
    expect(c.livenessProbe).toMatchObject({ httpGet: { path: "/v2/health/live", port: "http" }, periodSeconds: 10 });
    expect(c.readinessProbe).toEqual({ httpGet: { path: "/v2/health/ready", port: "http" }, periodSeconds: 5 });
    for (const p of [c.startupProbe, c.livenessProbe, c.readinessProbe]) expect(p.initialDelaySeconds).toBeUndefined();
    // Generous: at least 10 minutes of model loading before the kubelet gives up.
    expect(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold).toBeGreaterThanOrEqual(600);
  });

  it("mounts a memory-backed /dev/shm of shmSize", () => {
    const objects = renderManifests({ ...BASE, shmSize: "2Gi" });
    expect(podSpec(objects).volumes).toContainEqual({ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "2Gi" } });
    expect(triton(objects).volumeMounts).toContainEqual({ name: "dshm", mountPath: "/dev/shm" });
  });

  it("gpus 1: nvidia.com/gpu requests = limits, Recreate, a toleration for tainted GPU nodes", () => {
    const objects = renderManifests({ ...BASE, gpus: 1, resources: { cpu: "8", memory: "16Gi" } });
    const c = triton(objects);
    expect(c.resources).toEqual({
      limits: { cpu: "8", memory: "16Gi", "nvidia.com/gpu": 1 },
      requests: { cpu: "8", memory: "16Gi", "nvidia.com/gpu": 1 },
    });
    expect(byKind(objects, "Deployment").spec.strategy).toEqual({ type: "Recreate" });
    expect(podSpec(objects).tolerations).toEqual([{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
  });

  it("gpus 0: no GPU anywhere, and no resources at all when cpu and memory are not given", () => {
    const objects = renderManifests({ ...BASE, gpus: 0 });
    expect(triton(objects).resources).toBeUndefined();
    expect(podSpec(objects).tolerations).toBeUndefined();
    expect(byKind(objects, "Deployment").spec.strategy).toBeUndefined();
    expect(JSON.stringify(objects)).not.toContain("nvidia.com/gpu");
  });

  it("gpus 0 with only memory: just that, requests = limits", () => {
    expect(triton(renderManifests({ ...BASE, gpus: 0, resources: { memory: "4Gi" } })).resources).toEqual({
      limits: { memory: "4Gi" },
      requests: { memory: "4Gi" },
    });
  });

  it("runtimeClassName, nodeSelector and imagePullPolicy when given, absent otherwise", () => {
    const spec = podSpec(
      renderManifests({
        ...BASE,
        runtimeClassName: "nvidia",
        nodeSelector: { "triton-dev.io/managed": "true" },
        imagePullPolicy: "Never",
      }),
    );
    expect(spec.runtimeClassName).toBe("nvidia");
    expect(spec.nodeSelector).toEqual({ "triton-dev.io/managed": "true" });
    expect(spec.containers[0].imagePullPolicy).toBe("Never");
    const plain = podSpec(renderManifests(BASE));
    expect(plain.runtimeClassName).toBeUndefined();
    expect(plain.nodeSelector).toBeUndefined();
  });

  it("extraArgs come after ours", () => {
    const args = triton(renderManifests({ ...BASE, extraArgs: ["--log-verbose=1"] })).args as string[];
    expect(args.at(-1)).toBe("--log-verbose=1");
    expect(args[0]).toBe("tritonserver");
  });
});

describe("renderManifests: model sources", () => {
  it("pvc: the claim, read-only at /models", () => {
    const objects = renderManifests(BASE);
    expect(podSpec(objects).volumes).toContainEqual({
      name: "models",
      persistentVolumeClaim: { claimName: "triton-models" },
    });
    expect(triton(objects).volumeMounts).toContainEqual({ name: "models", mountPath: "/models", readOnly: true });
  });

  it("pvc with a subPath: mounted from that folder of the volume", () => {
    const objects = renderManifests({
      ...BASE,
      modelSource: { kind: "pvc", claimName: "shared", subPath: "triton/models" },
    });
    expect(triton(objects).volumeMounts).toContainEqual({
      name: "models",
      mountPath: "/models",
      readOnly: true,
      subPath: "triton/models",
    });
    expect(triton(objects).args).toContain("--model-repository=/models");
  });

  it("hostPath: a Directory on the node; repositorySubdir points Triton below it", () => {
    const objects = renderManifests({
      ...BASE,
      modelSource: { kind: "hostPath", path: "/triton-dev/runs/abc", repositorySubdir: "repository" },
    });
    expect(podSpec(objects).volumes).toContainEqual({
      name: "models",
      hostPath: { path: "/triton-dev/runs/abc", type: "Directory" },
    });
    expect(triton(objects).volumeMounts).toContainEqual({ name: "models", mountPath: "/models", readOnly: true });
    expect(triton(objects).args).toContain("--model-repository=/models/repository");
    const plain = renderManifests({ ...BASE, modelSource: { kind: "hostPath", path: "/data/models" } });
    expect(triton(plain).args).toContain("--model-repository=/models");
  });

  it("git: git-sync v4 clones once before Triton starts, then syncs beside it; Triton serves the link (+ subdir)", () => {
    const objects = renderManifests({
      ...BASE,
      modelSource: {
        kind: "git",
        repo: "https://github.com/org/models.git",
        branch: "main",
        subdir: "triton",
        periodSecs: 30,
      },
    });
    const spec = podSpec(objects);
    const syncArgs = [
      "--repo=https://github.com/org/models.git",
      "--ref=main",
      "--root=/git",
      "--link=current",
      "--period=30s",
    ];
    expect(spec.initContainers).toHaveLength(1);
    expect(spec.initContainers[0]).toMatchObject({
      name: "git-sync-init",
      image: GIT_SYNC_IMAGE,
      args: [...syncArgs, "--one-time"],
    });
    const sidecar = spec.containers.find((c: Any) => c.name === "git-sync");
    expect(sidecar).toMatchObject({
      image: GIT_SYNC_IMAGE,
      args: syncArgs,
      volumeMounts: [{ name: "models", mountPath: "/git" }],
    });
    expect(spec.volumes).toContainEqual({ name: "models", emptyDir: {} });
    expect(triton(objects).volumeMounts).toContainEqual({ name: "models", mountPath: "/git", readOnly: true });
    expect(triton(objects).args).toContain("--model-repository=/git/current/triton");
    const noSub = renderManifests({
      ...BASE,
      modelSource: { kind: "git", repo: "https://h/r.git", branch: "HEAD", periodSecs: 5 },
    });
    expect(triton(noSub).args).toContain("--model-repository=/git/current");
  });

  it("sync: an emptyDir the sync sidecar writes; Triton reads it and starts once the first copy's marker is there", () => {
    const objects = renderManifests({
      ...BASE,
      imagePullPolicy: "IfNotPresent",
      modelSource: { kind: "sync", repositorySubdir: "repository" },
    });
    const spec = podSpec(objects);
    expect(spec.volumes).toContainEqual({ name: "models", emptyDir: {} });
    expect(triton(objects).volumeMounts).toContainEqual({ name: "models", mountPath: "/models", readOnly: true });
    const args = triton(objects).args as string[];
    expect(args.slice(0, 4)).toEqual([
      "/bin/sh",
      "-c",
      'until [ -e /models/.triton-dev-synced ]; do sleep 0.5; done; exec "$@"',
      "sh",
    ]);
    expect(args[4]).toBe("tritonserver");
    expect(args).toContain("--model-repository=/models/repository");
    const sidecar = spec.containers.find((c: Any) => c.name === "sync");
    expect(sidecar).toMatchObject({
      image: BASE.image,
      imagePullPolicy: "IfNotPresent",
      volumeMounts: [{ name: "models", mountPath: "/models" }],
    });
    expect(sidecar.command[0]).toBe("/bin/sh");
    expect(spec.initContainers).toBeUndefined();
    expect(() => renderManifests({ ...BASE, modelSource: { kind: "sync", repositorySubdir: "../etc" } })).toThrow(
      /modelSource.repositorySubdir/,
    );
  });

  it("non-git sources have no git-sync", () => {
    expect(JSON.stringify(renderManifests(BASE))).not.toContain("git-sync");
    expect(podSpec(renderManifests(BASE)).initContainers).toBeUndefined();
  });
});

describe("renderManifests: the repository key", () => {
  const key = { header: "triton-dev-key", secretName: "triton-key", value: "s3cr3t" };

  it("with a value: a Secret, the env var from it, and both restricted-API flags expanding $(VAR)", () => {
    const objects = renderManifests({ ...BASE, repositoryKey: key });
    expect(objects.map((o) => o.kind)).toEqual(["Secret", "Deployment", "Service", "ServiceMonitor"]);
    const s = byKind(objects, "Secret");
    expect(s).toMatchObject({
      apiVersion: "v1",
      type: "Opaque",
      metadata: { name: "triton-key" },
      stringData: { key: "s3cr3t" },
    });
    const c = triton(objects);
    expect(c.env).toContainEqual({
      name: REPOSITORY_KEY_ENV,
      valueFrom: { secretKeyRef: { name: "triton-key", key: "key" } },
    });
    expect(c.args).toContain(
      `--http-restricted-api=model-repository,shared-memory,logging,trace:triton-dev-key=$(${REPOSITORY_KEY_ENV})`,
    );
    expect(c.args).toContain(
      `--grpc-restricted-protocol=model-repository,shared-memory,logging,trace:triton-dev-key=$(${REPOSITORY_KEY_ENV})`,
    );
    // The key itself never appears in the Deployment.
    expect(JSON.stringify(byKind(objects, "Deployment"))).not.toContain("s3cr3t");
  });

  it("sync with a key folder: the library is preloaded for Triton only, after the first copy brought it", () => {
    const objects = renderManifests({
      ...BASE,
      modelSource: { kind: "sync", repositorySubdir: "repository" },
      repositoryKey: { header: key.header, keyDir: "/models/key" },
    });
    const c = triton(objects);
    // Set on the container, the wait's every `sleep` would log that ld.so cannot preload it.
    expect(c.env.map((e: Any) => e.name)).not.toContain("LD_PRELOAD");
    expect(c.env).toContainEqual({ name: "TRITON_DEV_KEY_FILE", value: "/models/key/repository.key" });
    const script = (c.args as string[])[2]!;
    // What the shell hands Triton, run for real with the marker already there.
    const marked = script.replace("/models/.triton-dev-synced", "/");
    const r = spawnSync("/bin/sh", ["-c", marked, "sh", "/bin/sh", "-c", 'printf %s "$LD_PRELOAD"'], {
      encoding: "utf8",
      env: { PATH: process.env.PATH },
    });
    expect(r.stdout).toBe("/models/key/libtriton-dev-key.so");
  });

  it("with a key folder: the docker runtime's exact flags, the key read from the file, no Secret", () => {
    const objects = renderManifests({ ...BASE, repositoryKey: { header: key.header, keyDir: "/models/key" } });
    expect(objects.map((o) => o.kind)).not.toContain("Secret");
    const docker = containerCommand({
      reload: "poll",
      pollSecs: 30,
      repositoryKey: { header: key.header, value: key.value, dir: "/anywhere" },
    });
    const restricted = (args: string[]) => args.filter((a) => a.includes("restricted"));
    expect(restricted(triton(objects).args as string[])).toEqual(restricted(docker));
    expect(restricted(docker)).toHaveLength(2);
    expect(triton(objects).env).toContainEqual({ name: "TRITON_DEV_KEY_FILE", value: "/models/key/repository.key" });
    expect(() => renderManifests({ ...BASE, repositoryKey: { header: key.header, keyDir: "relative/key" } })).toThrow(
      /repositoryKey.keyDir/,
    );
  });

  it("without a value: references a Secret the user makes, renders none", () => {
    const objects = renderManifests({ ...BASE, repositoryKey: { header: "triton-dev-key", secretName: "mine" } });
    expect(objects.some((o) => o.kind === "Secret")).toBe(false);
    expect(triton(objects).env).toContainEqual({
      name: REPOSITORY_KEY_ENV,
      valueFrom: { secretKeyRef: { name: "mine", key: "key" } },
    });
  });

  it("without a key: no restriction flags and no env var for it", () => {
    const c = triton(renderManifests(BASE));
    expect(c.args.some((a: string) => a.includes("restricted"))).toBe(false);
    expect(c.env.map((e: Any) => e.name)).toEqual(["PYTHONDONTWRITEBYTECODE"]);
  });
});

describe("renderManifests: namespace, Service, ServiceMonitor, labels", () => {
  it("a namespace: the Namespace first, every other object in it", () => {
    const objects = renderManifests({
      ...BASE,
      namespace: "ml",
      repositoryKey: { header: "h", secretName: "k", value: "v" },
    });
    expect(objects[0]).toMatchObject({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ml" } });
    expect(objects[0]!.metadata.namespace).toBeUndefined();
    for (const o of objects.slice(1)) expect(o.metadata.namespace, o.kind).toBe("ml");
    expect(byKind(objects, "ServiceMonitor").spec.namespaceSelector).toEqual({ matchNames: ["ml"] });
  });

  it("no namespace: no Namespace object and no namespace fields", () => {
    const objects = renderManifests(BASE);
    expect(objects.some((o) => o.kind === "Namespace")).toBe(false);
    for (const o of objects) expect(o.metadata.namespace).toBeUndefined();
    expect(byKind(objects, "ServiceMonitor").spec.namespaceSelector).toBeUndefined();
  });

  it("the Service: ClusterIP, the three named ports, selecting the Deployment's pods", () => {
    const objects = renderManifests(BASE);
    const s = byKind(objects, "Service");
    expect(s.spec.type).toBe("ClusterIP");
    expect(s.spec.ports).toEqual([
      { name: "http", port: 8000, targetPort: "http", protocol: "TCP" },
      { name: "grpc", port: 8001, targetPort: "grpc", protocol: "TCP" },
      { name: "metrics", port: 8002, targetPort: "metrics", protocol: "TCP" },
    ]);
    expect(s.spec.selector).toEqual(byKind(objects, "Deployment").spec.selector.matchLabels);
  });

  it("the ServiceMonitor: selects the Service by its labels, scrapes the metrics port every 15 s", () => {
    const objects = renderManifests({ ...BASE, serviceMonitorLabels: { release: "prometheus" } });
    const sm = byKind(objects, "ServiceMonitor");
    expect(sm.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(sm.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "15s" }]);
    const svc = byKind(objects, "Service");
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) expect(svc.metadata.labels[k]).toBe(v);
    expect(svc.spec.ports.map((p: Any) => p.name)).toContain("metrics");
    expect(sm.metadata.labels.release).toBe("prometheus");
    expect(svc.metadata.labels.release).toBeUndefined();
  });

  it("serviceMonitor false: none", () => {
    expect(renderManifests({ ...BASE, serviceMonitor: false }).map((o) => o.kind)).toEqual(["Deployment", "Service"]);
  });

  it("every object and the pod template carry app, managed-by and the extra labels; selectors do not take the extra ones", () => {
    const labels = { "dev.triton-dev.run-id": "run-1" };
    const objects = renderManifests({
      ...BASE,
      namespace: "ml",
      labels,
      repositoryKey: { header: "h", secretName: "k", value: "v" },
    });
    expect(objects.map((o) => o.kind)).toEqual(["Namespace", "Secret", "Deployment", "Service", "ServiceMonitor"]);
    for (const o of objects)
      expect(o.metadata.labels, o.kind).toMatchObject({ ...APP_LABEL, ...MANAGED_BY, ...labels });
    const d = byKind(objects, "Deployment");
    expect(d.spec.template.metadata.labels).toMatchObject({ ...APP_LABEL, ...MANAGED_BY, ...labels });
    expect(d.spec.selector.matchLabels).toEqual(selectorLabels(DEFAULT_NAME));
    expect(byKind(objects, "Service").spec.selector).toEqual(selectorLabels(DEFAULT_NAME));
  });
});

describe("renderManifests: refuses what Kubernetes would", () => {
  const cases: Array<[string, Partial<ManifestOptions>, RegExp]> = [
    ["a name that is no DNS label", { name: "Triton_Server" }, /option name is "Triton_Server"/],
    ["a namespace that is no DNS label", { namespace: "ML" }, /option namespace/],
    ["negative gpus", { gpus: -1 }, /option gpus is -1/],
    ["fractional gpus", { gpus: 0.5 }, /option gpus/],
    ["pollSecs 0", { pollSecs: 0 }, /option pollSecs/],
    ["a docker-style shm size", { shmSize: "1g" }, /option shmSize is "1g".*Kubernetes quantity/],
    ["a bad cpu amount", { resources: { cpu: "eight" } }, /option resources.cpu/],
    ["a relative hostPath", { modelSource: { kind: "hostPath", path: "models" } }, /modelSource.path/],
    [
      "a subPath escaping the volume",
      { modelSource: { kind: "pvc", claimName: "c", subPath: "../x" } },
      /modelSource.subPath/,
    ],
    ["a bad claim name", { modelSource: { kind: "pvc", claimName: "Claim" } }, /modelSource.claimName/],
    [
      "an empty git repo",
      { modelSource: { kind: "git", repo: "", branch: "main", periodSecs: 30 } },
      /modelSource.repo/,
    ],
    ["a label value with a space", { labels: { run: "a b" } }, /option labels.run/],
    ["a header with a space", { repositoryKey: { header: "my key", secretName: "s" } }, /repositoryKey.header/],
  ];
  for (const [what, patch, message] of cases) {
    it(what, () => {
      const run = () => renderManifests({ ...BASE, ...patch });
      expect(run).toThrow(UserError);
      expect(run).toThrow(message);
    });
  }
});

describe("toYaml", () => {
  const rich: ManifestOptions = {
    ...BASE,
    namespace: "ml",
    repositoryKey: { header: "triton-dev-key", secretName: "triton-key", value: "0123" },
    resources: { cpu: "8", memory: "16Gi" },
    runtimeClassName: "nvidia",
    labels: { note: "yes", mode: "on", octal: "0755", flag: "true", num: "8" },
    modelSource: { kind: "git", repo: "git@github.com:org/models.git", branch: "v1.0", subdir: "repo", periodSecs: 30 },
  };

  it("writes one document per object, --- between them", () => {
    const objects = renderManifests(rich);
    const text = toYaml(objects);
    expect(text.split(/^---$/m)).toHaveLength(objects.length);
    expect(text.endsWith("\n")).toBe(true);
    expect(text).not.toContain("%YAML");
  });

  it("round-trips: parsed back, the same objects", () => {
    const objects = renderManifests(rich);
    expect(parseYamlObjects(toYaml(objects), "rendered")).toEqual(objects);
  });

  it("quotes strings that YAML 1.1 (kubectl's reading) would take for bools or numbers", () => {
    const text = toYaml(renderManifests(rich));
    for (const v of ["yes", "on", "0755", "true", "8", "0123"]) expect(text).toContain(`"${v}"`);
    // Read as YAML 1.1, the way Kubernetes reads it, the values stay strings.
    const docs = parseAllDocuments(text, { version: "1.1" }).map((d) => d.toJS() as Any);
    expect(docs[0]!.metadata.labels).toMatchObject(rich.labels!);
  });

  it("keeps long args on one line", () => {
    const long = "--backend-config=python,shm-default-byte-size=" + "1".repeat(120);
    const text = toYaml(renderManifests({ ...BASE, extraArgs: [long] }));
    expect(text).toContain(`- ${long}\n`);
  });

  it("parseYamlObjects names the source and line of a broken document", () => {
    expect(() => parseYamlObjects("apiVersion: v1\nkind: [\n", "x.yaml")).toThrow(/^x\.yaml:\d+:\d+: not valid YAML/);
    expect(() => parseYamlObjects("---\njust: a map\n", "y.yaml")).toThrow(
      /y\.yaml:2:1: this document is not a Kubernetes object/,
    );
    expect(parseYamlObjects("# only a comment\n---\n", "z.yaml")).toEqual([]);
  });
});
