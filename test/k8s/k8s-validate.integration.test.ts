/**
 * The rendered manifests and kind-config/ checked against the real Kubernetes, Prometheus operator
 * and kind Go types, by test/fixtures/k8s-validate (see its main.go for what it checks).
 *
 * The checker is built once per run with the Go toolchain. The first build on a machine downloads
 * the modules into the default module cache and compiles k8s.io/api: a minute or two. Later runs
 * take seconds. Without `go` on PATH the whole file is skipped, saying so.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  KIND_CONFIG_FILES,
  MANAGED_NODE_LABEL,
  NVIDIA_RUNTIME_CLASS,
  kindConfigDir,
  renderClusterConfig,
} from "../../src/runtimes/kind/kind-config.js";
import {
  renderManifests,
  toYaml,
  type K8sObject,
  type ManifestOptions,
  type ModelSource,
} from "../../src/k8s/manifests.js";
import { runCli, ROOT } from "../helpers/cli.js";
import { BASE } from "../runtimes/kind/helpers.js";

const FIXTURE = path.join(ROOT, "test/fixtures/k8s-validate");

function findGo(): string | undefined {
  const r = spawnSync("go", ["version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

const goVersion = findGo();
const title = goVersion
  ? `k8s-validate (${goVersion})`
  : "k8s-validate (skipped: `go` is not on PATH, so the Go schema checker cannot be built)";

describe.skipIf(!goVersion)(title, () => {
  let dir = "";
  let bin = "";

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-k8s-validate-"));
    bin = path.join(dir, "k8s-validate");
    // -mod=mod: resolve from go.mod/go.sum into the default module cache, never a vendor folder;
    // -buildvcs=false: the fixture sits inside this repository, whose git state is no business of the build.
    const build = spawnSync("go", ["build", "-o", bin, "."], {
      cwd: FIXTURE,
      env: { ...process.env, GOFLAGS: "-mod=mod -buildvcs=false" },
      encoding: "utf8",
    });
    if (build.status !== 0) throw new Error(`go build in ${FIXTURE} failed (exit ${build.status}):\n${build.stderr}`);
  }, 300_000);

  afterAll(async () => {
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  function validate(text: string): { code: number; stdout: string; stderr: string } {
    const r = spawnSync(bin, [], { input: text, encoding: "utf8" });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  }

  function expectValid(text: string, count: number): void {
    const r = validate(text);
    expect(r.stderr, text).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(count);
  }

  const sources: Record<string, ModelSource> = {
    pvc: { kind: "pvc", claimName: "triton-models" },
    "pvc+subPath": { kind: "pvc", claimName: "shared", subPath: "triton/models" },
    hostPath: { kind: "hostPath", path: "/triton-dev/runs/r1", repositorySubdir: "repository" },
    git: { kind: "git", repo: "https://github.com/org/models.git", branch: "main", subdir: "triton", periodSecs: 30 },
  };

  for (const [sourceName, modelSource] of Object.entries(sources)) {
    for (const gpus of [0, 1]) {
      it(`${sourceName}, gpus ${gpus}: every object decodes strictly and passes the checks`, () => {
        const objects = renderManifests({ ...BASE, gpus, modelSource });
        expectValid(toYaml(objects), objects.length);
      });
    }
  }

  it("everything at once: namespace, a Secret with its key, resources, runtime class, labels, extra args", () => {
    const o: ManifestOptions = {
      ...BASE,
      name: "triton-a",
      namespace: "ml",
      gpus: 2,
      runtimeClassName: "nvidia",
      resources: { cpu: "8", memory: "16Gi" },
      shmSize: "2Gi",
      repositoryKey: { header: "triton-dev-key", secretName: "triton-key", value: "0123abcd" },
      // Values that YAML 1.1 would read as bools or numbers if they were not quoted.
      labels: { "dev.triton-dev.run-id": "0755", note: "yes", mode: "on" },
      serviceMonitorLabels: { release: "prometheus" },
      nodeSelector: MANAGED_NODE_LABEL,
      imagePullPolicy: "IfNotPresent",
      extraArgs: ["--log-verbose=1"],
      modelSource: sources.git!,
    };
    const objects = renderManifests(o);
    expect(objects.map((x) => x.kind)).toEqual(["Namespace", "Secret", "Deployment", "Service", "ServiceMonitor"]);
    expectValid(toYaml(objects), objects.length);
  });

  it("a referenced Secret the user makes (not in the stream) is fine", () => {
    const objects = renderManifests({
      ...BASE,
      repositoryKey: { header: "triton-dev-key", secretName: "users-secret" },
    });
    expectValid(toYaml(objects), objects.length);
  });

  it("what the built CLI prints", async () => {
    const r = await runCli(
      [
        "manifests",
        "--namespace",
        "ml",
        "--models-from",
        "git:git@github.com:org/models.git#dev//m",
        "--repository-key-secret",
        "k",
      ],
      { ...process.env, TRITON_DEV_LOG: "warn" },
    );
    expect(r.code, r.stderr).toBe(0);
    expectValid(r.stdout, 4);
  });

  for (const file of [
    KIND_CONFIG_FILES.cluster,
    KIND_CONFIG_FILES.clusterGpu,
    KIND_CONFIG_FILES.runtimeClass,
    KIND_CONFIG_FILES.devicePlugin,
  ]) {
    it(`kind-config/${file} as shipped`, () => {
      expectValid(fs.readFileSync(path.join(kindConfigDir(), file), "utf8"), 1);
    });
  }

  for (const gpu of [false, true]) {
    it(`renderClusterConfig (gpu ${gpu}) as kind would load it`, () => {
      expectValid(
        renderClusterConfig({
          name: "triton-dev",
          stateDir: "/home/dev/.cache/triton-dev/state",
          gpu,
          nodeImage: "kindest/node:v1.33.1",
        }),
        1,
      );
    });
  }

  it("the Deployment for kind: hostPath under the worker mount, nvidia runtime class, the worker's label", () => {
    const objects = renderManifests({
      ...BASE,
      runtimeClassName: NVIDIA_RUNTIME_CLASS,
      nodeSelector: MANAGED_NODE_LABEL,
      imagePullPolicy: "IfNotPresent",
      modelSource: { kind: "hostPath", path: "/triton-dev/runs/abc", repositorySubdir: "repository" },
      repositoryKey: { header: "triton-dev-key", secretName: "triton-dev-key", value: "f00d" },
      labels: { "dev.triton-dev.run-id": "abc" },
    });
    expectValid(toYaml(objects), objects.length);
  });

  // The checker must not be a rubber stamp: each mistake below is one a cluster would refuse or
  // silently get wrong.
  describe("refuses broken input", () => {
    const deployment = (): Record<string, any> =>
      structuredClone(
        renderManifests({ ...BASE, repositoryKey: { header: "h", secretName: "s", value: "v" } }).find(
          (o) => o.kind === "Deployment",
        )!,
      ) as Record<string, any>;
    const withService = (d: Record<string, any>): string => {
      const all = renderManifests({ ...BASE, serviceMonitor: false });
      return toYaml([d as K8sObject, all.find((o) => o.kind === "Service")!]);
    };
    const cases: Array<[string, (d: Record<string, any>) => void, RegExp]> = [
      [
        "an unknown field",
        (d) => (d.spec.template.spec.containers[0].livenessprobe = {}),
        /unknown field "spec\.template\.spec\.containers\[0\]\.livenessprobe"/,
      ],
      [
        "a wrongly typed field",
        (d) => (d.spec.replicas = "one"),
        /cannot unmarshal string into Go struct field .*replicas/,
      ],
      [
        "a probe port name no container port has",
        (d) => (d.spec.template.spec.containers[0].readinessProbe.httpGet.port = "web"),
        /readinessProbe\.httpGet port "web" is not the name/,
      ],
      [
        "a selector that misses the pod labels",
        (d) => (d.spec.selector.matchLabels.app = "other"),
        /spec\.selector .* does not match/,
      ],
      [
        "$(VAR) in args with no env entry",
        (d) => (d.spec.template.spec.containers[0].env = d.spec.template.spec.containers[0].env.slice(0, 1)),
        /refers to \$\(TRITON_REPOSITORY_KEY\), which no env entry/,
      ],
      [
        "a mount of a volume that does not exist",
        (d) => (d.spec.template.spec.volumes = d.spec.template.spec.volumes.slice(1)),
        /names volume "models", which the pod does not have/,
      ],
      [
        "a GPU request above its limit",
        (d) => (d.spec.template.spec.containers[0].resources.requests["nvidia.com/gpu"] = 2),
        /requests \(2\) must equal limits \(1\)/,
      ],
    ];
    for (const [what, mutate, message] of cases) {
      it(what, () => {
        const d = deployment();
        mutate(d);
        const r = validate(withService(d));
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(message);
      });
    }

    it("a bare `yes` label value (YAML 1.1 reads a bool)", () => {
      const r = validate("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ml\n  labels:\n    note: yes\n");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cannot unmarshal bool/);
    });

    it("a ServiceMonitor whose port the Service does not have", () => {
      const objects = renderManifests(BASE) as Array<Record<string, any>>;
      objects.find((o) => o.kind === "ServiceMonitor")!.spec.endpoints[0].port = "prometheus";
      const r = validate(toYaml(objects as K8sObject[]));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/endpoints\[0\]\.port "prometheus" is not a port name/);
    });

    it("a kind config with a misspelt field", () => {
      const r = validate(
        "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: worker\n    extraMount: []\n",
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/field extraMount not found/);
    });
  });
});
