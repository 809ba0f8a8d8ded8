import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { UserError } from "../../../src/errors.js";
import {
  KIND_CONFIG_FILES,
  STATE_DIR_PLACEHOLDER,
  WORKER_MOUNT,
  kindConfigDir,
  nodeGpuSetupScript,
  readKindManifest,
  renderClusterConfig,
} from "../../../src/runtimes/kind/kind-config.js";
import { ROOT } from "../../helpers/cli.js";

type Any = Record<string, any>;

const STATE = "/home/dev/.cache/triton-dev/state";
const temps: string[] = [];
afterAll(async () => {
  for (const d of temps) await fsp.rm(d, { recursive: true, force: true });
});

const workers = (cfg: Any): Any[] => cfg.nodes.filter((n: Any) => n.role === "worker");

describe("kindConfigDir", () => {
  it("is the package's kind-config/ and holds every file the kind runtime uses", () => {
    expect(kindConfigDir()).toBe(path.join(ROOT, "kind-config"));
    for (const f of [...Object.values(KIND_CONFIG_FILES), "README.md"])
      expect(fs.existsSync(path.join(kindConfigDir(), f)), f).toBe(true);
  });

  it("says the installation is broken when the folder is missing", () => {
    expect(() => kindConfigDir("/nonexistent/kind-config")).toThrow(/missing from this installation/);
  });
});

describe("renderClusterConfig", () => {
  it("cluster.yaml: the name, and the state folder mounted into the labelled worker at /triton-dev", () => {
    const text = renderClusterConfig({ name: "triton-dev", stateDir: STATE, gpu: false });
    const cfg = parse(text) as Any;
    expect(cfg).toMatchObject({ kind: "Cluster", apiVersion: "kind.x-k8s.io/v1alpha4", name: "triton-dev" });
    expect(cfg.nodes.map((n: Any) => n.role)).toEqual(["control-plane", "worker"]);
    const [w] = workers(cfg);
    expect(w?.labels).toEqual({ "triton-dev.io/managed": "true" });
    expect(w?.extraMounts).toEqual([{ hostPath: STATE, containerPath: WORKER_MOUNT }]);
    expect(text).not.toContain(STATE_DIR_PLACEHOLDER);
    expect(text).not.toContain("/dev/null");
    // The file's explanations come along, for whoever reads the generated config.
    expect(text).toMatch(/^# /m);
  });

  it("cluster-gpu.yaml: the same plus the nvkind /dev/null mount and the gpu.present label", () => {
    const cfg = parse(renderClusterConfig({ name: "gpu-dev", stateDir: STATE, gpu: true })) as Any;
    expect(cfg.name).toBe("gpu-dev");
    const [w] = workers(cfg);
    expect(w?.labels).toEqual({ "triton-dev.io/managed": "true", "nvidia.com/gpu.present": "true" });
    expect(w?.extraMounts).toEqual([
      { hostPath: STATE, containerPath: WORKER_MOUNT },
      { hostPath: "/dev/null", containerPath: "/var/run/nvidia-container-devices/all" },
    ]);
  });

  it("a node image goes on every node", () => {
    const cfg = parse(
      renderClusterConfig({ name: "k", stateDir: STATE, gpu: false, nodeImage: "kindest/node:v1.33.1" }),
    ) as Any;
    for (const n of cfg.nodes) expect(n.image).toBe("kindest/node:v1.33.1");
  });

  it("paths that need quoting in YAML survive", () => {
    const odd = "/home/a user/#state: x";
    const cfg = parse(renderClusterConfig({ name: "k", stateDir: odd, gpu: false })) as Any;
    expect(workers(cfg)[0]!.extraMounts[0].hostPath).toBe(odd);
  });

  it("refuses a relative state folder, a bad cluster name, and a config without the worker mount", async () => {
    expect(() => renderClusterConfig({ name: "k", stateDir: "state", gpu: false })).toThrow(
      /absolute path; got 'state'/,
    );
    expect(() => renderClusterConfig({ name: "Triton Dev", stateDir: STATE, gpu: false })).toThrow(UserError);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-kindcfg-"));
    temps.push(dir);
    await fsp.writeFile(
      path.join(dir, "cluster.yaml"),
      "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: control-plane\n",
    );
    expect(() => renderClusterConfig({ name: "k", stateDir: STATE, gpu: false, configDir: dir })).toThrow(
      new RegExp(`${path.join(dir, "cluster.yaml").replace(/[.]/g, "\\.")}: no node mounts anything at /triton-dev`),
    );
  });
});

describe("readKindManifest", () => {
  it("the RuntimeClass: nvidia, handler nvidia", () => {
    expect(readKindManifest(KIND_CONFIG_FILES.runtimeClass)).toEqual([
      expect.objectContaining({
        apiVersion: "node.k8s.io/v1",
        kind: "RuntimeClass",
        metadata: expect.objectContaining({ name: "nvidia" }),
        handler: "nvidia",
      }),
    ]);
  });

  it("the device plugin: v0.17.0 under the nvidia RuntimeClass, on gpu.present nodes, tolerating the GPU taint, with the kubelet's socket folder", () => {
    const [ds, ...rest] = readKindManifest(KIND_CONFIG_FILES.devicePlugin) as Any[];
    expect(rest).toEqual([]);
    expect(ds).toMatchObject({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { namespace: "kube-system" } });
    const spec = ds!.spec.template.spec;
    expect(spec.runtimeClassName).toBe("nvidia");
    expect(spec.nodeSelector).toEqual({ "nvidia.com/gpu.present": "true" });
    expect(spec.tolerations).toContainEqual({ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" });
    expect(spec.containers[0].image).toBe("nvcr.io/nvidia/k8s-device-plugin:v0.17.0");
    expect(spec.volumes).toContainEqual({
      name: "kubelet-device-plugins-dir",
      hostPath: { path: "/var/lib/kubelet/device-plugins", type: "Directory" },
    });
    expect(spec.containers[0].volumeMounts).toContainEqual({
      name: "kubelet-device-plugins-dir",
      mountPath: "/var/lib/kubelet/device-plugins",
    });
  });

  it("names the file when it is not a Kubernetes object", async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-kindcfg-"));
    temps.push(dir);
    await fsp.writeFile(path.join(dir, "x.yaml"), "hello: world\n");
    expect(() => readKindManifest("x.yaml", dir)).toThrow(
      `${path.join(dir, "x.yaml")}:1:1: this document is not a Kubernetes object`,
    );
  });
});

describe("node-gpu-setup.sh", () => {
  it("is an executable bash script that parses, and installs the NVIDIA container toolkit in a kind node and configures containerd for it", () => {
    const script = nodeGpuSetupScript();
    expect(fs.statSync(script).mode & 0o111).not.toBe(0);
    execFileSync("bash", ["-n", script]);
    const text = fs.readFileSync(script, "utf8");
    expect(text).toContain("apt-get install");
    expect(text).toContain("nvidia-container-toolkit");
    expect(text).toContain("nvidia-ctk runtime configure --runtime=containerd --config-source=file");
    expect(text).toContain("systemctl restart containerd");
  });

  it("outside a kind node it stops with a clear message before changing anything", () => {
    // A containerd config that does not exist: the script must stop at that check whatever this
    // machine is (run as root on a host with GPUs it would otherwise go on to install packages).
    let stderr = "";
    let code = 0;
    try {
      execFileSync("bash", [nodeGpuSetupScript()], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { PATH: process.env.PATH, CONTAINERD_CONFIG: "/nonexistent/containerd/config.toml" },
      });
    } catch (err) {
      const e = err as { status: number; stderr: Buffer };
      code = e.status;
      stderr = String(e.stderr);
    }
    expect(code).toBe(1);
    expect(stderr).toMatch(/node-gpu-setup: error: .*\n.*hint: /);
  });
});
