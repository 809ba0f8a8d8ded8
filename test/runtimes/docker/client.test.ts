import { describe, expect, it } from "vitest";
import {
  daemonAddress,
  dockerOptions,
  isNoGpuDriverError,
  NVIDIA_FIX,
} from "../../../src/runtimes/clients/container/client.js";
import { isMemlockRefused, startError, withoutMemlock } from "../../../src/runtimes/docker/docker-runtime.js";
import { isShmError, shmHint } from "../../../src/runtimes/shm-hints.js";
import { parseNvidiaSmi } from "../../../src/runtimes/docker/doctor.js";
import type { ContainerSettings } from "../../../src/runtimes/docker/settings.js";

describe("the daemon's address", () => {
  it("follows DOCKER_HOST, else the default socket", () => {
    expect(daemonAddress({})).toBe("unix:///var/run/docker.sock");
    expect(dockerOptions({})).toMatchObject({ socketPath: "/var/run/docker.sock" });
    expect(dockerOptions({ DOCKER_HOST: "unix:///run/user/1000/docker.sock" })).toMatchObject({
      socketPath: "/run/user/1000/docker.sock",
    });
    expect(dockerOptions({ DOCKER_HOST: "tcp://10.0.0.5:2375" })).toMatchObject({
      host: "10.0.0.5",
      port: "2375",
      protocol: "http",
    });
    expect(dockerOptions({ DOCKER_HOST: "tcp://box:2376" })).toMatchObject({ protocol: "https" });
    expect(dockerOptions({ DOCKER_HOST: "ssh://me@box" })).toMatchObject({
      protocol: "ssh",
      host: "box",
      username: "me",
    });
  });
});

const settings = {
  ports: { http: 18000, grpc: 18001, metrics: 18002 },
  host: "127.0.0.1",
  image: "img",
  gpus: { kind: "all" },
} as ContainerSettings;
const daemonError = (message: string) =>
  Object.assign(new Error(`(HTTP code 500) server error - ${message}`), { statusCode: 500, json: { message } });

describe("the daemon's refusals, told plainly", () => {
  it("no NVIDIA runtime: names the toolkit, nvidia-ctk, the restart and --gpus none", () => {
    const err = daemonError('could not select device driver "" with capabilities: [[gpu]]');
    expect(isNoGpuDriverError(err)).toBe(true);
    const e = startError(err, { settings, name: "n" });
    expect(e.message).toMatch(/GPUs were requested \(--gpus\), but the Docker daemon has no NVIDIA runtime/);
    expect(e.hint).toBe(NVIDIA_FIX);
    expect(NVIDIA_FIX).toMatch(
      /NVIDIA Container Toolkit.*nvidia-ctk runtime configure --runtime=docker.*restart Docker.*--gpus none/,
    );
  });

  it("a taken port: which one and the flag to change it", () => {
    const e = startError(
      daemonError(
        "driver failed programming external connectivity on endpoint x: Bind for 127.0.0.1:18001 failed: port is already allocated",
      ),
      { settings, name: "n" },
    );
    expect(e.message).toBe("Docker could not publish port 18001 on 127.0.0.1: it is already in use");
    expect(e.hint).toMatch(/--grpc-port N/);
  });

  it("memlock refused (rootless Docker): recognised, and dropped from the spec for the retry", () => {
    expect(
      isMemlockRefused(
        daemonError(
          "OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting rlimits for ready process: error setting rlimit type 8: operation not permitted: unknown",
        ),
      ),
    ).toBe(true);
    const spec = withoutMemlock({
      Image: "x",
      HostConfig: {
        Ulimits: [
          { Name: "memlock", Soft: -1, Hard: -1 },
          { Name: "stack", Soft: 1, Hard: 1 },
        ],
      },
    });
    expect(spec.HostConfig?.Ulimits).toEqual([{ Name: "stack", Soft: 1, Hard: 1 }]);
  });

  it("python-backend shared memory: Triton's words get the --shm-size hint", () => {
    expect(
      isShmError(
        "Internal: Unable to initialize shared memory key 'x' to requested size (1048576 bytes). If you are running Triton inside docker, use '--shm-size' flag to control the shared memory region size.",
      ),
    ).toBe(true);
    expect(isShmError("successfully loaded 'x'")).toBe(false);
    expect(shmHint(512 * 1024)).toMatch(/\/dev\/shm is 512k.*--shm-size 1g/);
    expect(shmHint(2 * 1024 ** 3)).toMatch(/--shm-size 4g/);
  });
});

describe("nvidia-smi", () => {
  it("parses its CSV query output", () => {
    // As printed on an H200 machine of this workplace (driver 580), a second GPU added.
    expect(parseNvidiaSmi("0, NVIDIA H200, 143771, 580.159.04\n1, NVIDIA H200, 143771, 580.159.04\n")).toEqual([
      { index: 0, name: "NVIDIA H200", memoryMiB: 143771, driver: "580.159.04" },
      { index: 1, name: "NVIDIA H200", memoryMiB: 143771, driver: "580.159.04" },
    ]);
  });
});
