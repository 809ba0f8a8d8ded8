import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../../src/errors.js";
import { containerGpuPath } from "../../../src/runtimes/docker/docker-runtime.js";
import {
  cdiDevices,
  cdiDirsFor,
  decideGpuPath,
  describeGpuPath,
  findCdiSpecs,
  type CdiSpec,
  type GpuMachineFacts,
} from "../../../src/runtimes/docker/gpu-path.js";
import {
  gpuContainerParts,
  tritonContainerSpec,
  type ContainerSettings,
} from "../../../src/runtimes/docker/settings.js";

const spec: CdiSpec = {
  file: "/var/run/cdi/nvidia.yaml",
  kind: "nvidia.com/gpu",
  devices: ["0", "1", "GPU-1f0c", "GPU-2a9e", "all"],
};
const facts = (
  over: Partial<Omit<GpuMachineFacts, "daemon">> & { daemon?: Partial<GpuMachineFacts["daemon"]> } = {},
): GpuMachineFacts => ({
  hostGpus: 1,
  ...over,
  daemon: { version: "28.5.2", runtimes: ["io.containerd.runc.v2", "runc"], defaultRuntime: "runc", ...over.daemon },
  cdi: over.cdi ?? { specs: [], dirs: ["/etc/cdi", "/var/run/cdi"], unreadable: [] },
});
const withSpec = { specs: [spec], dirs: ["/etc/cdi", "/var/run/cdi"], unreadable: [] };

describe("decideGpuPath: how GPUs reach the container", () => {
  it("takes the NVIDIA runtime when it is registered, before any CDI spec", () => {
    const p = decideGpuPath(facts({ daemon: { version: "20.10.24", runtimes: ["nvidia", "runc"] }, cdi: withSpec }));
    expect(p).toMatchObject({ kind: "nvidia-runtime", runtime: "nvidia" });
    expect(p.why).toBe("Docker 20.10.24 has the NVIDIA runtime registered (runtimes: nvidia, runc; default runc)");
    expect(describeGpuPath(p)).toMatch(/^through the NVIDIA runtime \(--runtime nvidia with --gpus\)/);
  });

  it("takes the NVIDIA runtime when it is the daemon's default", () => {
    expect(decideGpuPath(facts({ daemon: { defaultRuntime: "nvidia", runtimes: ["runc"] } }))).toMatchObject({
      kind: "nvidia-runtime",
      runtime: "nvidia",
    });
  });

  it("passes CDI devices on Docker 25+ without the NVIDIA runtime where a spec for nvidia.com/gpu is", () => {
    for (const version of ["25.0.0", "27.3.1", "28.5.2"]) {
      const p = decideGpuPath(facts({ daemon: { version }, cdi: withSpec }));
      expect(p).toMatchObject({ kind: "cdi", spec });
      expect(p.why).toContain(`no NVIDIA runtime is registered with Docker ${version}`);
      expect(p.why).toContain(
        "a CDI spec for nvidia.com/gpu is at /var/run/cdi/nvidia.yaml (devices 0, 1, GPU-1f0c, GPU-2a9e, all)",
      );
    }
  });

  it("refuses CDI on Docker older than 25, naming the spec, the version and both fixes", () => {
    const p = decideGpuPath(facts({ daemon: { version: "20.10.24+dfsg1" }, cdi: withSpec }));
    expect(p.kind).toBe("none");
    expect(p.why).toMatch(/no NVIDIA runtime \(its runtimes: io\.containerd\.runc\.v2, runc\)/);
    expect(p.why).toMatch(/but Docker 20\.10\.24\+dfsg1 takes CDI devices only from 25$/);
    expect(p.kind === "none" && p.hint).toMatch(
      /^Upgrade Docker to 25 or later.*install the NVIDIA Container Toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker`.*--gpus none/,
    );
  });

  it("refuses CDI where the daemon says CDI is off (Docker 27 reports no spec folders)", () => {
    const p = decideGpuPath(facts({ daemon: { version: "27.1.0", cdiSpecDirs: [] }, cdi: withSpec }));
    expect(p.kind).toBe("none");
    expect(p.why).toMatch(/but CDI is off in Docker 27\.1\.0$/);
    expect(p.kind === "none" && p.hint).toMatch(/"features": \{"cdi": true\}/);
  });

  it("refuses without runtime, spec or driver; asks the daemon where a driver is or cannot be told", () => {
    const none = decideGpuPath(facts({ hostGpus: 0 }));
    expect(none.kind).toBe("none");
    expect(none.why).toMatch(
      /no CDI spec for nvidia\.com\/gpu is in \/etc\/cdi or \/var\/run\/cdi, and this machine shows no NVIDIA driver$/,
    );
    expect(none.kind === "none" && none.hint).toMatch(
      /nvidia-ctk runtime configure --runtime=docker.*nvidia-ctk cdi generate/,
    );
    expect(decideGpuPath(facts({ hostGpus: 2 })).kind).toBe("daemon");
    expect(decideGpuPath(facts({ hostGpus: undefined })).kind).toBe("daemon");
  });
});

describe("the container's GPU settings along each path", () => {
  it("the NVIDIA runtime: --runtime nvidia and NVIDIA_VISIBLE_DEVICES, no device request for the daemon", () => {
    const path = { kind: "nvidia-runtime" as const, runtime: "nvidia", isDefault: false };
    expect(gpuContainerParts({ kind: "all" }, path)).toEqual({
      hostConfig: { Runtime: "nvidia" },
      env: ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"],
    });
    expect(gpuContainerParts({ kind: "count", count: 2 }, path).env[0]).toBe("NVIDIA_VISIBLE_DEVICES=0,1");
    expect(gpuContainerParts({ kind: "devices", ids: ["GPU-1f0c"] }, path).env[0]).toBe(
      "NVIDIA_VISIBLE_DEVICES=GPU-1f0c",
    );
    expect(gpuContainerParts({ kind: "none" }, path)).toEqual({ hostConfig: {}, env: [] });
  });

  it("the NVIDIA runtime as the default: --gpus none says void (an NGC image sets NVIDIA_VISIBLE_DEVICES=all)", () => {
    const path = { kind: "nvidia-runtime" as const, runtime: "nvidia", isDefault: true };
    expect(gpuContainerParts({ kind: "none" }, path)).toEqual({ hostConfig: {}, env: ["NVIDIA_VISIBLE_DEVICES=void"] });
    expect(gpuContainerParts({ kind: "all" }, path).hostConfig).toEqual({});
  });

  it("CDI: a device request of driver cdi naming the spec's devices", () => {
    expect(gpuContainerParts({ kind: "all" }, { kind: "cdi", devices: ["nvidia.com/gpu=all"] })).toEqual({
      hostConfig: { DeviceRequests: [{ Driver: "cdi", DeviceIDs: ["nvidia.com/gpu=all"] }] },
      env: [],
    });
  });

  it("the daemon's --gpus: DeviceRequests as `docker run --gpus` sends them", () => {
    expect(gpuContainerParts({ kind: "all" }, { kind: "daemon" }).hostConfig).toEqual({
      DeviceRequests: [{ Driver: "", Count: -1, Capabilities: [["gpu"]] }],
    });
    expect(gpuContainerParts({ kind: "none" }, undefined)).toEqual({ hostConfig: {}, env: [] });
  });

  it("CDI device names for each --gpus form, checked against the spec", () => {
    expect(cdiDevices({ kind: "all" }, spec)).toEqual(["nvidia.com/gpu=all"]);
    expect(cdiDevices({ kind: "all" }, { ...spec, devices: ["1", "0", "GPU-1f0c"] })).toEqual([
      "nvidia.com/gpu=0",
      "nvidia.com/gpu=1",
    ]);
    expect(cdiDevices({ kind: "count", count: 1 }, spec)).toEqual(["nvidia.com/gpu=0"]);
    expect(cdiDevices({ kind: "devices", ids: ["GPU-2a9e"] }, spec)).toEqual(["nvidia.com/gpu=GPU-2a9e"]);
    const tooMany = (() => {
      try {
        cdiDevices({ kind: "count", count: 3 }, spec);
      } catch (e) {
        return e;
      }
    })();
    expect(tooMany).toBeInstanceOf(UserError);
    expect((tooMany as UserError).message).toBe(
      "--gpus 3 (it lists 2 GPU(s)): the CDI spec /var/run/cdi/nvidia.yaml has no such device",
    );
    expect(() => cdiDevices({ kind: "devices", ids: ["7"] }, spec)).toThrow(/--gpus device=7: the CDI spec/);
  });

  it("the container spec carries the path, and the settings hash changes with it", () => {
    const settings: ContainerSettings = {
      image: "img",
      imageId: "sha256:1",
      gpus: { kind: "all" },
      gpuPath: containerGpuPath({ kind: "all" }, decideGpuPath(facts({ cdi: withSpec })), { defaultRuntime: "runc" }),
      shmBytes: 1024 ** 3,
      ports: { http: 8000, grpc: 8001, metrics: 8002 },
      host: "127.0.0.1",
      reload: "explicit",
      pollSecs: 2,
      modelsDir: "/m",
      runsDir: "/r",
    };
    const input = {
      name: "n",
      runId: "run",
      repository: "/r/run/repository",
      store: "/r/run/store",
      repositoryKey: { header: "k", dir: "/r/run/key" },
    } as Parameters<typeof tritonContainerSpec>[0];
    const cdi = tritonContainerSpec({ ...input, settings });
    expect(cdi.HostConfig?.DeviceRequests).toEqual([{ Driver: "cdi", DeviceIDs: ["nvidia.com/gpu=all"] }]);
    expect(cdi.HostConfig?.Runtime).toBeUndefined();
    const rt = tritonContainerSpec({
      ...input,
      settings: { ...settings, gpuPath: { kind: "nvidia-runtime", runtime: "nvidia", isDefault: false } },
    });
    expect(rt.HostConfig?.Runtime).toBe("nvidia");
    expect(rt.HostConfig?.DeviceRequests).toBeUndefined();
    expect(rt.Env).toContain("NVIDIA_VISIBLE_DEVICES=all");
    expect(rt.Labels!["dev.triton-dev.settings"]).not.toBe(cdi.Labels!["dev.triton-dev.settings"]);
  });
});

describe("CDI specs on disk", () => {
  let root: string;
  beforeAll(async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), "cdi-"));
    await fsp.mkdir(path.join(root, "etc"));
    await fsp.mkdir(path.join(root, "run"));
    // What `nvidia-ctk cdi generate` writes, cut down to what is read.
    await fsp.writeFile(
      path.join(root, "etc", "nvidia.yaml"),
      `cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: GPU-1f0c
  containerEdits: {}
- name: all
  containerEdits: {}
containerEdits:
  hooks:
  - hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
`,
    );
    await fsp.writeFile(
      path.join(root, "run", "nvidia.json"),
      JSON.stringify({ cdiVersion: "0.6.0", kind: "nvidia.com/gpu", devices: [{ name: "0" }, { name: "1" }] }),
    );
    await fsp.writeFile(
      path.join(root, "run", "other.yaml"),
      "cdiVersion: 0.6.0\nkind: vendor.example/fpga\ndevices: []\n",
    );
    await fsp.writeFile(path.join(root, "run", "broken.yaml"), "kind: [unterminated\n");
    await fsp.writeFile(path.join(root, "run", "notes.txt"), "not a spec");
  });
  afterAll(async () => {
    await fsp.rm(root, { recursive: true, force: true });
  });

  it("reads nvidia.com/gpu specs, the later folder first, and lists what it could not read", async () => {
    const found = await findCdiSpecs([path.join(root, "etc"), path.join(root, "run")]);
    expect(found.specs).toEqual([
      { file: path.join(root, "run", "nvidia.json"), kind: "nvidia.com/gpu", devices: ["0", "1"] },
      { file: path.join(root, "etc", "nvidia.yaml"), kind: "nvidia.com/gpu", devices: ["0", "GPU-1f0c", "all"] },
    ]);
    expect(found.unreadable).toHaveLength(1);
    expect(found.unreadable[0]).toContain(path.join(root, "run", "broken.yaml"));
  });

  it("a missing folder is no spec, not an error", async () => {
    expect(await findCdiSpecs([path.join(root, "nope")])).toEqual({ specs: [], unreadable: [] });
  });

  it("reads the daemon's folders when it reports them, else TRITON_DEV_CDI_SPEC_DIRS or the defaults; none for a remote daemon", () => {
    const d = { version: "28.0.0", runtimes: ["runc"], defaultRuntime: "runc" };
    expect(cdiDirsFor({ ...d, cdiSpecDirs: ["/opt/cdi"] }, "unix:///var/run/docker.sock", {})).toEqual(["/opt/cdi"]);
    expect(cdiDirsFor(d, "unix:///var/run/docker.sock", {})).toEqual(["/etc/cdi", "/var/run/cdi"]);
    expect(cdiDirsFor(d, "unix:///var/run/docker.sock", { TRITON_DEV_CDI_SPEC_DIRS: "/a:/b" })).toEqual(["/a", "/b"]);
    expect(cdiDirsFor(d, "tcp://gpu-box:2375", {})).toEqual([]);
  });
});
