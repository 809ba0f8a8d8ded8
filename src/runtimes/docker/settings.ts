import { createHash } from "node:crypto";
import path from "node:path";
import type Docker from "dockerode";
import { keyArg, keyShimEnv } from "../../triton/key-shim.js";
import { serverArgs, TRITON_DEFAULT_PORTS } from "../../triton/server-args.js";
import { dockerFacts } from "./facts.js";
import type { Ports, StartOptions } from "../driver.js";
import { formatGpus, type GpuRequest } from "../container-options.js";

export { DEFAULT_IMAGE } from "./facts.js";
export { DEFAULT_SHM_BYTES, formatGpus, formatSize, parseGpus, parseSize } from "../container-options.js";
export type { GpuRequest } from "../container-options.js";
/** Where the staging repository and its snapshots appear inside the container (Triton's messages name these). */
export const CONTAINER_REPOSITORY = dockerFacts.stagingSeenAs!.repository;
export const CONTAINER_STORE = dockerFacts.stagingSeenAs!.store;
/** The run's key folder (triton/key-shim.ts): the key file and the library that hands it to tritonserver. */
export const CONTAINER_KEY_DIR = "/opt/triton-dev/key";
export const CONTAINER_PORTS: Ports = TRITON_DEFAULT_PORTS;
export const CONTAINER_BACKENDS = IMAGE_BACKENDS_DIR;

import { IMAGE_BACKENDS_DIR } from "../clients/container/image-backends.js";
import { LABEL, TOOL, type Role } from "../clients/container/labels.js";

export { LABEL, TOOL, type Role };

/** HostConfig.DeviceRequests for a GPU request, as `docker run --gpus` sends them. */
export function deviceRequests(g: GpuRequest): Docker.DeviceRequest[] | undefined {
  switch (g.kind) {
    case "none":
      return undefined;
    case "all":
      return [{ Driver: "", Count: -1, Capabilities: [["gpu"]] }];
    case "count":
      return [{ Driver: "", Count: g.count, Capabilities: [["gpu"]] }];
    case "devices":
      return [{ Driver: "", DeviceIDs: g.ids, Capabilities: [["gpu"]] }];
  }
}

/**
 * How the container gets its GPUs (gpu-path.ts decides): under the NVIDIA runtime, which reads
 * NVIDIA_VISIBLE_DEVICES whatever its mode (legacy hook or CDI), so the daemon's own `--gpus` support
 * (the toolkit's hook on dockerd's PATH) is not needed; as CDI devices; or as `docker run --gpus`
 * sends them, for the daemon to resolve.
 */
export type ContainerGpuPath =
  | { kind: "nvidia-runtime"; runtime: string; isDefault: boolean }
  | { kind: "cdi"; devices: string[] }
  | { kind: "daemon" };

/** NVIDIA_VISIBLE_DEVICES for a request: what `docker run --gpus` puts there. */
export function visibleDevices(g: GpuRequest): string {
  switch (g.kind) {
    case "none":
      return "void";
    case "all":
      return "all";
    case "count":
      return Array.from({ length: g.count }, (_, i) => String(i)).join(",");
    case "devices":
      return g.ids.join(",");
  }
}

/** The HostConfig and environment that give the container its GPUs along `path`. */
export function gpuContainerParts(
  g: GpuRequest,
  path: ContainerGpuPath | undefined,
): { hostConfig: Docker.HostConfig; env: string[] } {
  if (path?.kind === "nvidia-runtime") {
    // With the NVIDIA runtime as the daemon's default, an NGC image's NVIDIA_VISIBLE_DEVICES=all
    // would hand it every GPU: --gpus none says void.
    if (g.kind === "none") return { hostConfig: {}, env: path.isDefault ? ["NVIDIA_VISIBLE_DEVICES=void"] : [] };
    return {
      hostConfig: path.isDefault ? {} : { Runtime: path.runtime },
      env: [`NVIDIA_VISIBLE_DEVICES=${visibleDevices(g)}`, "NVIDIA_DRIVER_CAPABILITIES=compute,utility"],
    };
  }
  if (g.kind === "none") return { hostConfig: {}, env: [] };
  if (path?.kind === "cdi")
    return { hostConfig: { DeviceRequests: [{ Driver: "cdi", DeviceIDs: path.devices }] }, env: [] };
  return { hostConfig: { DeviceRequests: deviceRequests(g)! }, env: [] };
}

/**
 * One container per project: `up` in the same project finds it again (reattach), another
 * project gets its own. The project is the folder holding `models/` (or the models folder
 * itself when it has another name); the hash keeps two projects of the same name apart.
 */
export function containerName(modelsDir: string): string {
  const abs = path.resolve(modelsDir);
  const base = path.basename(abs) === "models" ? path.basename(path.dirname(abs)) : path.basename(abs);
  const slug =
    base
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, "-")
      .replace(/^[^a-z0-9]+/, "")
      .slice(0, 40) || "project";
  const h = createHash("sha256").update(abs).digest("hex").slice(0, 8);
  return `triton-dev-${slug}-${h}`;
}

export interface ContainerSettings {
  image: string;
  /** The image's content id: a re-pulled tag with new content means a new container. */
  imageId: string;
  gpus: GpuRequest;
  /** How the GPUs reach the container (absent: --gpus none on a daemon without the NVIDIA runtime). */
  gpuPath?: ContainerGpuPath;
  shmBytes: number;
  ports: Ports;
  host: string;
  reload: StartOptions["reload"];
  pollSecs: number;
  modelsDir: string;
  runsDir: string;
  /** The user-defined network when the monitoring stack runs beside Triton. */
  network?: string;
}

/** Everything that, when changed, means the running container no longer fits and is recreated. */
export function settingsHash(s: ContainerSettings): string {
  const canonical = JSON.stringify({
    image: s.image,
    imageId: s.imageId,
    gpus: formatGpus(s.gpus),
    ...(s.gpuPath ? { gpuPath: s.gpuPath } : {}),
    shm: s.shmBytes,
    ports: [s.ports.http, s.ports.grpc, s.ports.metrics],
    host: s.host,
    reload: s.reload,
    pollSecs: s.reload === "poll" ? s.pollSecs : 0,
    modelsDir: s.modelsDir,
    runsDir: s.runsDir,
    network: s.network ?? null,
  });
  return createHash("sha256").update(canonical).digest("hex").slice(0, 16);
}

export function labels(
  role: Role,
  o: { runId: string; runsDir: string; repository?: string; settings?: string },
): Record<string, string> {
  return {
    [LABEL.tool]: TOOL,
    [LABEL.role]: role,
    [LABEL.runId]: o.runId,
    [LABEL.runsDir]: o.runsDir,
    ...(o.repository ? { [LABEL.repository]: o.repository } : {}),
    ...(o.settings ? { [LABEL.settings]: o.settings } : {}),
  };
}

export function isOurs(l: Record<string, string> | undefined | null): boolean {
  return !!l && l[LABEL.tool] === TOOL;
}

function portKey(p: number): string {
  return `${p}/tcp`;
}

/** Published only on `host` (127.0.0.1 unless the user asked otherwise). */
export function portBindings(
  ports: Ports,
  host: string,
  inside: Ports = CONTAINER_PORTS,
): Record<string, Array<{ HostIp: string; HostPort: string }>> {
  return Object.fromEntries(
    (Object.keys(inside) as Array<keyof Ports>).map((k) => [
      portKey(inside[k]),
      [{ HostIp: host, HostPort: String(ports[k]) }],
    ]),
  );
}

/** The tritonserver command inside the container: the local runtime's flags, container paths. */
export function containerCommand(o: Pick<StartOptions, "reload" | "pollSecs" | "repositoryKey">): string[] {
  return [
    "tritonserver",
    ...serverArgs({
      repository: CONTAINER_REPOSITORY,
      backendDir: CONTAINER_BACKENDS,
      reload: o.reload,
      pollSecs: o.pollSecs,
      listen: { host: "0.0.0.0", ports: CONTAINER_PORTS },
      repositoryKey: keyArg(o.repositoryKey.header),
      logInfo: true,
      exitTimeoutSecs: 10,
    }),
  ];
}

export interface TritonContainerInput {
  name: string;
  settings: ContainerSettings;
  runId: string;
  /** Host paths of the staging repository and its snapshot store. */
  repository: string;
  store: string;
  repositoryKey: StartOptions["repositoryKey"];
}

export function tritonContainerSpec(i: TritonContainerInput): Docker.ContainerCreateOptions {
  const s = i.settings;
  const inside = Object.values(CONTAINER_PORTS).map(portKey);
  const gpu = gpuContainerParts(s.gpus, s.gpuPath);
  return {
    name: i.name,
    Image: s.image,
    Cmd: containerCommand({ reload: s.reload, pollSecs: s.pollSecs, repositoryKey: i.repositoryKey }),
    Labels: labels("triton", {
      runId: i.runId,
      runsDir: s.runsDir,
      repository: i.repository,
      settings: settingsHash(s),
    }),
    // The stub ignores this for model.py, which is why the store is mounted read-only too:
    // a __pycache__ written into a served model would make poll mode reload it.
    // Only where the key is: the key itself is in a file of the user's, mounted read-only, so
    // neither `docker inspect` nor the host's process list shows it.
    Env: [
      "PYTHONDONTWRITEBYTECODE=1",
      ...gpu.env,
      ...Object.entries(keyShimEnv(CONTAINER_KEY_DIR)).map(([k, v]) => `${k}=${v}`),
    ],
    ExposedPorts: Object.fromEntries(inside.map((p) => [p, {}])),
    HostConfig: {
      // The staged models are relative symlinks into ../store, so both folders keep their
      // relative position inside the container.
      Binds: [
        `${i.repository}:${CONTAINER_REPOSITORY}:ro`,
        `${i.store}:${CONTAINER_STORE}:ro`,
        `${i.repositoryKey.dir}:${CONTAINER_KEY_DIR}:ro`,
      ],
      PortBindings: portBindings(s.ports, s.host),
      ShmSize: s.shmBytes,
      Ulimits: [
        { Name: "memlock", Soft: -1, Hard: -1 },
        { Name: "stack", Soft: 67108864, Hard: 67108864 },
      ],
      ...gpu.hostConfig,
      ...(s.network ? { NetworkMode: s.network } : {}),
    },
    ...(s.network ? { NetworkingConfig: { EndpointsConfig: { [s.network]: { Aliases: ["triton"] } } } } : {}),
  };
}
