import { describe, expect, it } from "vitest";
import { UsageError } from "../../../src/errors.js";
import { localServerArgs } from "../../../src/runtimes/local/local-runtime.js";
import {
  containerCommand,
  containerName,
  deviceRequests,
  formatGpus,
  formatSize,
  isOurs,
  LABEL,
  parseGpus,
  parseSize,
  settingsHash,
  tritonContainerSpec,
  type ContainerSettings,
} from "../../../src/runtimes/docker/settings.js";

const settings: ContainerSettings = {
  image: "nvcr.io/nvidia/tritonserver:24.10-py3",
  imageId: "sha256:abc",
  gpus: { kind: "all" },
  shmBytes: 1024 ** 3,
  ports: { http: 18000, grpc: 18001, metrics: 18002 },
  host: "127.0.0.1",
  reload: "poll",
  pollSecs: 1,
  modelsDir: "/home/me/proj/models",
  runsDir: "/home/me/.cache/triton-dev/state/runs",
};

describe("--gpus", () => {
  it("parses all, none, counts and device lists", () => {
    expect(parseGpus("all")).toEqual({ kind: "all" });
    expect(parseGpus("none")).toEqual({ kind: "none" });
    expect(parseGpus("0")).toEqual({ kind: "none" });
    expect(parseGpus("2")).toEqual({ kind: "count", count: 2 });
    expect(parseGpus("device=0,2")).toEqual({ kind: "devices", ids: ["0", "2"] });
    expect(parseGpus("1,3")).toEqual({ kind: "devices", ids: ["1", "3"] });
    expect(parseGpus("GPU-3f2a1b4c-0000-1111-2222-333344445555")).toEqual({
      kind: "devices",
      ids: ["gpu-3f2a1b4c-0000-1111-2222-333344445555"],
    });
    expect(() => parseGpus("lots")).toThrow(UsageError);
  });

  it("becomes DeviceRequests as `docker run --gpus` sends them", () => {
    expect(deviceRequests({ kind: "none" })).toBeUndefined();
    expect(deviceRequests({ kind: "all" })).toEqual([{ Driver: "", Count: -1, Capabilities: [["gpu"]] }]);
    expect(deviceRequests({ kind: "count", count: 1 })).toEqual([{ Driver: "", Count: 1, Capabilities: [["gpu"]] }]);
    expect(deviceRequests({ kind: "devices", ids: ["0", "2"] })).toEqual([
      { Driver: "", DeviceIDs: ["0", "2"], Capabilities: [["gpu"]] },
    ]);
    expect(formatGpus(parseGpus("device=0,2"))).toBe("device=0,2");
  });
});

describe("--shm-size", () => {
  it("reads Docker's size syntax", () => {
    expect(parseSize("1g")).toBe(1024 ** 3);
    expect(parseSize("512m")).toBe(512 * 1024 ** 2);
    expect(parseSize("2GB")).toBe(2 * 1024 ** 3);
    expect(parseSize("1.5g")).toBe(1.5 * 1024 ** 3);
    expect(parseSize("4096")).toBe(4096);
    expect(() => parseSize("lots")).toThrow(/--shm-size must be a size like 1g/);
    expect(() => parseSize("0")).toThrow(UsageError);
    expect(formatSize(1024 ** 3)).toBe("1g");
    expect(formatSize(512 * 1024)).toBe("512k");
  });
});

describe("container name", () => {
  it("comes from the project folder, with a hash of the path to keep projects apart", () => {
    expect(containerName("/home/me/Proj X/models")).toMatch(/^triton-dev-proj-x-[0-9a-f]{8}$/);
    expect(containerName("/srv/my_repo")).toMatch(/^triton-dev-my_repo-[0-9a-f]{8}$/);
    expect(containerName("/a/proj/models")).not.toBe(containerName("/b/proj/models"));
    expect(containerName("/a/proj/models")).toBe(containerName("/a/proj/models/"));
  });
});

describe("settings hash", () => {
  it("changes with every setting that needs a new container, and only then", () => {
    const h = settingsHash(settings);
    expect(settingsHash({ ...settings })).toBe(h);
    for (const change of [
      { image: "other:1" },
      { imageId: "sha256:def" },
      { gpus: { kind: "none" as const } },
      { shmBytes: 2 * 1024 ** 3 },
      { ports: { ...settings.ports, grpc: 19001 } },
      { host: "0.0.0.0" },
      { reload: "explicit" as const },
      { pollSecs: 5 },
      { modelsDir: "/elsewhere/models" },
      { network: "triton-dev-x-net" },
    ]) {
      expect(settingsHash({ ...settings, ...change }), JSON.stringify(change)).not.toBe(h);
    }
    // The poll interval means nothing in explicit mode.
    expect(settingsHash({ ...settings, reload: "explicit", pollSecs: 1 })).toBe(
      settingsHash({ ...settings, reload: "explicit", pollSecs: 9 }),
    );
  });
});

describe("the Triton container", () => {
  const key = { header: "triton-dev-key", value: "s3cret", dir: "/state/runs/run-1/key" };
  const spec = tritonContainerSpec({
    name: "triton-dev-proj-12345678",
    settings,
    runId: "run-1",
    repository: "/state/runs/run-1/repository",
    store: "/state/runs/run-1/store",
    repositoryKey: key,
  });

  it("runs the local runtime's flags against the container's paths, plus the latency summaries", () => {
    const local = localServerArgs(
      { backendDir: "/opt/tritonserver/backends" },
      {
        runId: "",
        runDir: "",
        logFile: "",
        repository: "/models",
        ports: { http: 8000, grpc: 8001, metrics: 8002 },
        host: "0.0.0.0",
        reload: "poll",
        pollSecs: 1,
        repositoryKey: key,
      },
    );
    expect(spec.Cmd).toEqual(["tritonserver", ...local]);
    // One builder for every runtime: each flag once (the latency summaries were once passed twice).
    expect(new Set(spec.Cmd as string[]).size).toBe((spec.Cmd as string[]).length);
    expect(spec.Cmd).toContain("--metrics-config=summary_latencies=true");
    expect(spec.Cmd).toContain("--exit-on-error=false");
    expect(spec.Cmd).toContain("--model-control-mode=poll");
    expect(spec.Cmd).toContain(
      "--http-restricted-api=model-repository,shared-memory,logging,trace:triton-dev-key=triton-dev-key-file\n",
    );
    expect(containerCommand({ reload: "explicit", pollSecs: 1, repositoryKey: key })).toContain("--load-model=*");
  });

  it("never carries the key: `docker inspect` and the host's process list show only where the library reads it", () => {
    expect(JSON.stringify(spec)).not.toContain("s3cret");
    expect(spec.Env).toEqual(
      expect.arrayContaining([
        "LD_PRELOAD=/opt/triton-dev/key/libtriton-dev-key.so",
        "TRITON_DEV_KEY_FILE=/opt/triton-dev/key/repository.key",
      ]),
    );
  });

  it("mounts the staging repository and its store read-only, keeping the relative symlinks valid", () => {
    expect(spec.HostConfig?.Binds).toEqual([
      "/state/runs/run-1/repository:/models:ro",
      "/state/runs/run-1/store:/store:ro",
      "/state/runs/run-1/key:/opt/triton-dev/key:ro",
    ]);
  });

  it("has the article's resources: GPUs, 1 GiB /dev/shm, memlock and stack ulimits", () => {
    expect(spec.HostConfig?.DeviceRequests).toEqual([{ Driver: "", Count: -1, Capabilities: [["gpu"]] }]);
    expect(spec.HostConfig?.ShmSize).toBe(1024 ** 3);
    expect(spec.HostConfig?.Ulimits).toEqual([
      { Name: "memlock", Soft: -1, Hard: -1 },
      { Name: "stack", Soft: 67108864, Hard: 67108864 },
    ]);
    const cpu = tritonContainerSpec({
      name: "n",
      settings: { ...settings, gpus: { kind: "none" } },
      runId: "r",
      repository: "/r",
      store: "/s",
      repositoryKey: key,
    });
    expect(cpu.HostConfig?.DeviceRequests).toBeUndefined();
  });

  it("publishes its three ports on 127.0.0.1 only", () => {
    expect(spec.HostConfig?.PortBindings).toEqual({
      "8000/tcp": [{ HostIp: "127.0.0.1", HostPort: "18000" }],
      "8001/tcp": [{ HostIp: "127.0.0.1", HostPort: "18001" }],
      "8002/tcp": [{ HostIp: "127.0.0.1", HostPort: "18002" }],
    });
  });

  it("carries our labels: tool, run id, repository path, state folder and settings", () => {
    expect(spec.Labels).toMatchObject({
      [LABEL.tool]: "triton-dev",
      [LABEL.runId]: "run-1",
      [LABEL.repository]: "/state/runs/run-1/repository",
      [LABEL.runsDir]: settings.runsDir,
      [LABEL.settings]: settingsHash(settings),
      [LABEL.role]: "triton",
    });
    expect(isOurs(spec.Labels)).toBe(true);
    expect(isOurs({})).toBe(false);
    expect(isOurs({ [LABEL.tool]: "someone-else" })).toBe(false);
  });

  it("joins the monitoring network as `triton`, the target in compose/prometheus/prometheus.yml", () => {
    const s = tritonContainerSpec({
      name: "n",
      settings: { ...settings, network: "n-net" },
      runId: "r",
      repository: "/r",
      store: "/s",
      repositoryKey: key,
    });
    expect(s.HostConfig?.NetworkMode).toBe("n-net");
    expect(s.NetworkingConfig?.EndpointsConfig?.["n-net"]?.Aliases).toEqual(["triton"]);
  });
});
