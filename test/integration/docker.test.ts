import { execFile } from "node:child_process";
import fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPortFree } from "../../src/net/ports.js";
import type { DriverEvent } from "../../src/events/driver-event.js";
import type { PullUpdate } from "../../src/runtimes/clients/container/image.js";
import { containerName } from "../../src/runtimes/docker/settings.js";
import {
  copySampleModels,
  freePorts,
  portArgs,
  runCli,
  SAMPLE_STAND_IN_READY,
  standInSkip,
  testEnv,
  type CliResult,
  type SessionJsonEvent,
} from "../helpers/cli.js";
import { UpProcess } from "../helpers/up-process.js";
import {
  buildTestImage,
  dockerAvailability,
  listenAddresses,
  LocalRegistry,
  ourContainers,
  removeImage,
  removeTestImages,
} from "../fixtures/docker/harness.js";
import { expectPipelineServedAndLocked } from "../helpers/served.js";

/**
 * The docker runtime against a real daemon (.ci/run starts Debian's docker.io with vfs storage).
 * No registry outside this machine is reachable, so the image is the NGC-layout stand-in that
 * test/fixtures/docker/build-image.sh builds, served by a real registry on 127.0.0.1: the pull,
 * its layers and progress run for real.
 */
const availability = await dockerAvailability();
const skipReason = availability.ok ? "" : ` (skipped: ${availability.reason})`;
if (!availability.ok) console.warn(`docker integration tests skipped: ${availability.reason}`);

interface JsonEvent {
  type: string;
  [k: string]: unknown;
}

function events(r: CliResult): JsonEvent[] {
  return r.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as JsonEvent);
}

describe.skipIf(!availability.ok)(`up --runtime docker against a real daemon${skipReason}`, () => {
  const docker = (availability as { docker: Docker }).docker;
  const registry = new LocalRegistry();
  let image = "";
  let env: NodeJS.ProcessEnv;
  let runsDir: string;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;
  let name: string;
  const up = (extra: string[] = [], e: NodeJS.ProcessEnv = env) =>
    runCli(
      [
        "up",
        "--runtime",
        "docker",
        "--detach",
        "--json",
        "--image",
        image,
        "--models",
        models,
        ...portArgs(ports),
        ...extra,
      ],
      e,
    );
  const containerId = async () => (await docker.getContainer(name).inspect()).Id;

  beforeAll(async () => {
    const built = await buildTestImage();
    await registry.start(built.registryDir);
    image = registry.ref(built);
    // Absent from the daemon, so the first `up` pulls it, every layer.
    await removeTestImages(docker, built);
    env = await testEnv();
    runsDir = path.join(env.TRITON_DEV_STATE_DIR!, "runs");
    ports = await freePorts();
    models = await copySampleModels();
    name = containerName(models);
  }, 900_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    for (const c of (await ourContainers(docker, runsDir).catch(() => [])) ?? [])
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
    await registry.stop();
    if (image) await removeImage(docker, image).catch(() => {});
  }, 120_000);

  it("refuses --gpus all on a daemon without the NVIDIA runtime before pulling, naming the fix", async () => {
    const r = await up(["--gpus", "all"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/GPUs were requested \(--gpus\), but the Docker daemon has no NVIDIA runtime/);
    expect(r.stderr).toMatch(/NVIDIA Container Toolkit/);
    expect(r.stderr).toMatch(/nvidia-ctk runtime configure --runtime=docker/);
    expect(r.stderr).toMatch(/restart Docker/);
    expect(r.stderr).toMatch(/--gpus none/);
    // Nothing was pulled or created.
    await expect(docker.getImage(image).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await ourContainers(docker, runsDir)).toEqual([]);
  });

  it("with a CDI spec for nvidia.com/gpu but no NVIDIA runtime, refuses --gpus all on Docker before 25 naming the spec, the version and the fixes; doctor says the same", async () => {
    const version = (await docker.version()).Version;
    // A daemon of 25 or later would take the spec's devices: this case is for the older ones.
    if (Number(version.split(".")[0]) >= 25) return;
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-cdi-"));
    try {
      // The shape `nvidia-ctk cdi generate` writes; only the device names are read.
      await fsp.writeFile(
        path.join(dir, "nvidia.yaml"),
        'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: "0"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n- name: all\n  containerEdits: {}\n',
      );
      const e = { ...env, TRITON_DEV_CDI_SPEC_DIRS: dir };
      const r = await up(["--gpus", "all"], e);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `GPUs were requested (--gpus), but the Docker daemon has no NVIDIA runtime (its runtimes: `,
      );
      expect(r.stderr).toContain(
        `and a CDI spec for nvidia.com/gpu is at ${path.join(dir, "nvidia.yaml")} (devices 0, all), but Docker ${version} takes CDI devices only from 25`,
      );
      expect(r.stderr).toMatch(/Upgrade Docker to 25 or later \(CDI is on by default from 28\)/);
      expect(r.stderr).toMatch(/nvidia-ctk runtime configure --runtime=docker/);
      await expect(docker.getImage(image).inspect()).rejects.toMatchObject({ statusCode: 404 });
      expect(await ourContainers(docker, runsDir)).toEqual([]);
      const d = await runCli(["doctor"], e);
      expect(d.stdout).toMatch(
        /warn\s+docker gpus\s+GPUs reach containers not possible: .*takes CDI devices only from 25/,
      );
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  it("says plainly when the daemon cannot be reached", async () => {
    const r = await up([], { ...env, DOCKER_HOST: "unix:///nonexistent/docker.sock" });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /cannot reach the Docker daemon at unix:\/\/\/nonexistent\/docker.sock: its socket does not exist/,
    );
    expect(r.stderr).toMatch(/--runtime local/);
  });

  it("pulls the image with per-layer progress, starts the container, and every model its image has a backend for is READY", async () => {
    const r = await up();
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const ev = events(r);
    const pulls = ev.filter((e) => e.type === "pull");
    const last = pulls.at(-1) as DriverEvent & PullUpdate;
    expect(last.finished).toBe(true);
    expect(last.layers.length).toBeGreaterThanOrEqual(2);
    expect(last.layers.every((l) => l.phase === "done")).toBe(true);
    expect(last.downloaded).toBe(last.size);
    expect(last.size).toBeGreaterThan(10 * 1024 * 1024);
    expect(pulls.some((e) => (e.changed as { phase?: string } | undefined)?.phase === "downloading")).toBe(true);
    expect(ev.find((e) => e.type === "container")).toMatchObject({ action: "created", name, image });
    const ready = ev.find((e) => e.type === "ready") as SessionJsonEvent<"ready">;
    expect(ready.models.map((m) => [m.name, m.state])).toEqual(SAMPLE_STAND_IN_READY);
    // The stand-in image has only the python backend (NGC's has onnxruntime): the ONNX sample is
    // skipped naming the backend, the image and where it runs, never left to Triton's "unable to
    // find backend library"; its ensemble waits for it.
    const skipped = Object.fromEntries(
      ev.filter((e) => e.type === "skipped").map((e) => [e.model as string, e.reason as string]),
    );
    expect(skipped.bert_large).toBe(
      `${standInSkip("docker", image)}. Serve it with that image: \`triton-dev up --runtime docker --image nvcr.io/nvidia/tritonserver:24.10-py3\`.`,
    );
    expect(skipped.bert_pipeline).toMatch(/^it runs bert_large \(skipped\), which is not served/);
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout) as {
      models: Array<{ name: string; state: string; reason?: string }>;
    };
    expect(s.models.find((m) => m.name === "bert_large")).toMatchObject({
      state: "SKIPPED",
      reason: standInSkip("docker", image),
    });
  }, 240_000);

  it("serves inference from the container, with the repository API locked to the run's key", async () => {
    await expectPipelineServedAndLocked(ports.http);
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(s).toMatchObject({
      running: true,
      runtime: "docker",
      serverReady: true,
      container: { name, image, gpus: "none", shmBytes: 1024 ** 3 },
    });
  }, 120_000);

  it("runs tritonserver under umask 077 in the container, its python backend regions 0600", async () => {
    const pid = (await docker.getContainer(name).inspect()).State.Pid;
    // The image's entrypoint execs tritonserver: the container's first process is the server.
    expect(await fsp.readlink(`/proc/${pid}/exe`)).toMatch(/tritonserver$/);
    expect(await fsp.readFile(`/proc/${pid}/status`, "utf8")).toMatch(/^Umask:\s+0077$/m);
    const maps = await fsp.readFile(`/proc/${pid}/maps`, "utf8");
    const regions = [
      ...new Set([...maps.matchAll(/\/dev\/shm\/(triton_python_backend_shm_region_\S+)/g)].map((m) => m[1]!)),
    ];
    expect(regions.length).toBeGreaterThan(0);
    for (const r of regions) expect((await fsp.stat(`/proc/${pid}/root/dev/shm/${r}`)).mode & 0o777).toBe(0o600);
  });

  it("labels the container, mounts the staging repository read-only and sets the article's resources", async () => {
    const i = await docker.getContainer(name).inspect();
    const state = JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    expect(i.Config.Labels).toMatchObject({
      "dev.triton-dev.tool": "triton-dev",
      "dev.triton-dev.run-id": state.runId,
      "dev.triton-dev.repository": state.repository,
    });
    expect(i.HostConfig.Binds).toEqual([
      `${state.repository}:/models:ro`,
      `${path.join(state.runDir, "store")}:/store:ro`,
      `${path.join(state.runDir, "key")}:/opt/triton-dev/key:ro`,
    ]);
    expect(i.HostConfig.ShmSize).toBe(1024 ** 3);
    // memlock=-1 is asked for, but this sandbox's daemon lacks CAP_SYS_RESOURCE: the runtime
    // retries without it and says so; the stack limit stays.
    expect(i.HostConfig.Ulimits).toContainEqual({ Name: "stack", Soft: 67108864, Hard: 67108864 });
    expect(i.Config.Cmd).toEqual(
      expect.arrayContaining([
        "tritonserver",
        "--model-repository=/models",
        "--model-control-mode=poll",
        "--exit-on-error=false",
      ]),
    );
  });

  it("keeps the key out of `docker inspect` and the host's process list, behind the image's entrypoint too", async () => {
    const i = await docker.getContainer(name).inspect();
    const state = JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    const key: string = state.repositoryKey.value;
    expect(key).toMatch(/^[0-9a-f]{48}$/);
    expect(i.Config.Entrypoint).toEqual(["/opt/nvidia/nvidia_entrypoint.sh"]);
    expect(JSON.stringify(i)).not.toContain(key);
    const ps = await new Promise<string>((resolve, reject) =>
      execFile("ps", ["-eo", "args", "--width", "100000"], { maxBuffer: 64 * 1024 * 1024 }, (err, out) =>
        err ? reject(err) : resolve(out),
      ),
    );
    expect(ps).toMatch(/tritonserver --model-repository=\/models/);
    expect(ps).not.toContain(key);
  });

  it("publishes the ports on 127.0.0.1 only", async () => {
    const i = await docker.getContainer(name).inspect();
    for (const [inside, outside] of [
      ["8000/tcp", ports.http],
      ["8001/tcp", ports.grpc],
      ["8002/tcp", ports.metrics],
    ] as const) {
      expect(i.HostConfig.PortBindings[inside]).toEqual([{ HostIp: "127.0.0.1", HostPort: String(outside) }]);
      expect(i.NetworkSettings.Ports[inside]).toEqual([{ HostIp: "127.0.0.1", HostPort: String(outside) }]);
      // What actually listens on the host (docker-proxy): loopback, never a wildcard address.
      const listeners = await listenAddresses(outside);
      expect(listeners.length).toBeGreaterThan(0);
      expect(
        listeners.every((a) => a === "127.0.0.1"),
        `listeners on ${outside}: ${listeners.join(", ")}`,
      ).toBe(true);
    }
  });

  it("reattaches to its running container when `up` runs again with the same settings", async () => {
    const before = await containerId();
    const t0 = Date.now();
    const r = await up();
    const elapsed = Date.now() - t0;
    expect(r.code).toBe(0);
    const ev = events(r);
    expect(ev.find((e) => e.type === "container")).toMatchObject({ action: "reattached", id: before });
    expect(ev.some((e) => e.type === "pull")).toBe(false);
    expect(
      (ev.find((e) => e.type === "ready") as SessionJsonEvent<"ready">).models.every((m) => m.state === "READY"),
    ).toBe(true);
    expect(await containerId()).toBe(before);
    console.info(`up (reattach) to READY: ${(elapsed / 1000).toFixed(1)} s`);
  }, 120_000);

  it("replaces a running container of an older triton-dev whose flags restrict fewer APIs", async () => {
    // The same container as an older triton-dev started it: only model-repository behind the key.
    const i = await docker.getContainer(name).inspect();
    const older = (i.Config.Cmd ?? []).map((a) =>
      a.replace(/^(--http-restricted-api=|--grpc-restricted-protocol=)[^:]+:/, "$1model-repository:"),
    );
    expect(older).not.toEqual(i.Config.Cmd);
    await docker.getContainer(i.Id).remove({ force: true });
    const c = await docker.createContainer({
      name,
      Image: i.Config.Image,
      Cmd: older,
      Env: i.Config.Env,
      Labels: i.Config.Labels,
      ExposedPorts: i.Config.ExposedPorts,
      HostConfig: i.HostConfig,
    });
    await c.start();
    const r = await up();
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(events(r).find((e) => e.type === "container")).toMatchObject({ action: "created" });
    await expect(c.inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect((await fetch(`http://127.0.0.1:${ports.http}/v2/systemsharedmemory/status`)).status).toBe(403);
  }, 180_000);

  it("recreates the container when a setting changed, and the image present starts fast", async () => {
    const before = await containerId();
    const t0 = Date.now();
    const r = await up(["--shm-size", "512m"]);
    const elapsed = Date.now() - t0;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const ev = events(r);
    expect(ev.find((e) => e.type === "container")).toMatchObject({
      action: "created",
      replaced: "its settings differ",
    });
    const after = await containerId();
    expect(after).not.toBe(before);
    await expect(docker.getContainer(before).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect((await docker.getContainer(after).inspect()).HostConfig.ShmSize).toBe(512 * 1024 ** 2);
    const ready = ev.find((e) => e.type === "ready") as SessionJsonEvent<"ready">;
    expect(ready.models.every((m) => m.state === "READY")).toBe(true);
    console.info(
      `up --runtime docker (image present, new container) to READY: ${(elapsed / 1000).toFixed(1)} s (Triton start to READY ${(ready.elapsedMs / 1000).toFixed(1)} s)`,
    );
  }, 180_000);

  it("down stops and removes the container and frees the ports", async () => {
    const r = await runCli(["down"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`stopped Triton \\(container ${name}, removed, docker runtime`));
    expect(await ourContainers(docker, runsDir)).toEqual([]);
    for (const p of Object.values(ports)) expect(await isPortFree(p)).toBe(true);
    expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).running).toBe(false);
  }, 60_000);

  it("Ctrl-C on a foreground up removes its container", async () => {
    const t0 = Date.now();
    const p = new UpProcess(["--runtime", "docker", "--image", image, "--models", models, ...portArgs(ports)], env);
    try {
      const ready = await p.waitFor((e) => e.type === "ready", 120_000);
      // The figure for the closing note: a fresh container, the image present, nothing to replace.
      console.info(
        `up --runtime docker (image present) to every model READY: ${((Date.now() - t0) / 1000).toFixed(1)} s (container start to READY ${((ready.elapsedMs as number) / 1000).toFixed(1)} s)`,
      );
      // Once it watches: `up` installs its signal handlers after the watcher started.
      await p.waitFor((e) => e.type === "watching", 120_000);
      const id = await containerId();
      expect(await p.stop()).toBe(0);
      await expect(docker.getContainer(id).inspect()).rejects.toMatchObject({ statusCode: 404 });
      expect(await ourContainers(docker, runsDir)).toEqual([]);
    } finally {
      await p.stop();
    }
  }, 180_000);

  it("maps the daemon's own 'could not select device driver' to the same clear GPU error", async () => {
    // The image is present now, so the daemon itself is asked and refuses at start.
    const r = await up(["--gpus", "1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /GPUs were requested \(--gpus\), but the Docker daemon has no NVIDIA runtime \("could not select device driver/,
    );
    expect(r.stderr).toMatch(/nvidia-ctk runtime configure --runtime=docker/);
    expect(await ourContainers(docker, runsDir)).toEqual([]);
  }, 60_000);

  it("reports a port that is taken, and leaves no container behind", async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen({ port: ports.metrics, host: "127.0.0.1" }, r));
    try {
      const r = await up();
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `port ${ports.metrics} (metrics) on 127.0.0.1 is already in use by pid ${process.pid}`,
      );
      expect(r.stderr).toMatch(/--metrics-port N/);
      expect(await ourContainers(docker, runsDir)).toEqual([]);
    } finally {
      await new Promise((r) => srv.close(r));
    }
  }, 60_000);

  it("never stops or removes a container without our labels, even with our name", async () => {
    const stranger = await docker.createContainer({
      name,
      Image: image,
      Cmd: ["sleep", "600"],
      Labels: { purpose: "someone else's" },
    });
    try {
      await stranger.start();
      const r = await up();
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(`a container named ${name} already exists and was not created by triton-dev; it is left alone`),
      );
      const down = await runCli(["down"], env);
      expect(down.code).toBe(0);
      const i = await stranger.inspect();
      expect(i.State.Running).toBe(true);
      expect(i.Id).toBe(stranger.id);
    } finally {
      await stranger.remove({ force: true });
    }
  }, 60_000);

  it("shows Triton's shared-memory error with the --shm-size hint", async () => {
    const r = await up(["--shm-size", "512k", "--timeout", "90"]);
    try {
      expect(r.code).toBe(1);
      const hint = events(r).find((e) => e.type === "hint" && String(e.message).includes("shared memory"));
      expect(hint?.message).toMatch(/\/dev\/shm is 512k.*--shm-size 1g/);
      expect(r.stderr).toMatch(/failed to load/);
    } finally {
      await runCli(["down"], env);
    }
    expect(await ourContainers(docker, runsDir)).toEqual([]);
  }, 180_000);
});
