import fsp from "node:fs/promises";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { UserError } from "../../errors.js";
import type { GpuRequest } from "./settings.js";

/**
 * How GPUs reach a container on this daemon. NVIDIA supports two ways today:
 *  - its runtime registered with Docker (`nvidia-ctk runtime configure --runtime=docker`): the
 *    container runs under `nvidia` and `--gpus` (DeviceRequests) says which GPUs, whatever mode the
 *    runtime is in (legacy hook or CDI);
 *  - CDI: a spec for `nvidia.com/gpu` (`nvidia-ctk cdi generate`) in the daemon's spec folders, and
 *    Docker 25 or later (CDI on by default from 28) injects the devices it names.
 * Without either, Docker 19.03+ still takes `--gpus` through the toolkit's hook where it is on
 * dockerd's PATH; only the daemon can tell, so it is asked ("daemon").
 */
export type GpuPath =
  | { kind: "nvidia-runtime"; runtime: string; why: string }
  | { kind: "cdi"; spec: CdiSpec; why: string }
  | { kind: "daemon"; why: string }
  | { kind: "none"; why: string; hint: string };

/** The NVIDIA GPU class of CDI devices. */
export const CDI_GPU_KIND = "nvidia.com/gpu";
/** Where CDI specs are read when the daemon does not say (the CDI specification's default folders). */
export const DEFAULT_CDI_DIRS = ["/etc/cdi", "/var/run/cdi"];
/** Docker's first release that takes CDI devices (`--device nvidia.com/gpu=all`, DeviceRequests driver "cdi"). */
export const CDI_MIN_DOCKER = 25;
/** From this release CDI is on without `"features": {"cdi": true}` in daemon.json. */
export const CDI_DEFAULT_DOCKER = 28;

export const RUNTIME_FIX =
  "Install the NVIDIA Container Toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker (`sudo systemctl restart docker`)";
const CPU_FIX = "or run on the CPU with `--gpus none` (python-backend models with KIND_CPU instances work there).";
const CDI_FIX =
  "or generate a CDI spec (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`) for Docker 25 or later";

/** A CDI spec file of the NVIDIA GPU class, as far as the decision needs it. */
export interface CdiSpec {
  file: string;
  kind: string;
  /** Device names: indexes ("0"), UUIDs ("GPU-..."), and "all" where the spec has it. */
  devices: string[];
}

/** What the daemon says that decides the path (client.ts reads it from /info and /version). */
export interface GpuDaemonFacts {
  version: string;
  runtimes: string[];
  defaultRuntime: string;
  /** The daemon's CDI spec folders (Docker 27+ reports them, empty when CDI is off); undefined when it does not say. */
  cdiSpecDirs?: string[] | undefined;
}

export interface GpuMachineFacts {
  daemon: GpuDaemonFacts;
  /** The CDI specs for nvidia.com/gpu found in the folders that apply, and the files that could not be read. */
  cdi: { specs: CdiSpec[]; dirs: string[]; unreadable: string[] };
  /** NVIDIA GPUs the host's driver lists: 0 no driver, undefined unknown (gpu/detect.ts). */
  hostGpus: number | undefined;
}

/** The daemon's major version, or NaN for one that does not read as a number (a development build). */
export function dockerMajor(version: string): number {
  const m = /^(\d+)\./.exec(version.trim());
  return m ? Number(m[1]) : NaN;
}

/** The path GPUs take on this daemon and machine, and why. Machine facts come in as data. */
export function decideGpuPath(f: GpuMachineFacts): GpuPath {
  const d = f.daemon;
  const listed = d.runtimes.join(", ") || "none";
  const nvidiaRuntime = d.defaultRuntime === "nvidia" ? "nvidia" : d.runtimes.find((r) => r === "nvidia");
  if (nvidiaRuntime)
    return {
      kind: "nvidia-runtime",
      runtime: nvidiaRuntime,
      why: `Docker ${d.version} has the NVIDIA runtime registered (runtimes: ${listed}; default ${d.defaultRuntime})`,
    };
  const spec = f.cdi.specs[0];
  if (spec) {
    const major = dockerMajor(d.version);
    const where = `a CDI spec for ${CDI_GPU_KIND} is at ${spec.file} (devices ${spec.devices.join(", ") || "none"})`;
    if (major < CDI_MIN_DOCKER)
      return {
        kind: "none",
        why: `the Docker daemon has no NVIDIA runtime (its runtimes: ${listed}), and ${where}, but Docker ${d.version} takes CDI devices only from ${CDI_MIN_DOCKER}`,
        hint: `Upgrade Docker to ${CDI_MIN_DOCKER} or later (CDI is on by default from ${CDI_DEFAULT_DOCKER}), or ${RUNTIME_FIX.charAt(0).toLowerCase()}${RUNTIME_FIX.slice(1)}; ${CPU_FIX}`,
      };
    if (d.cdiSpecDirs !== undefined && d.cdiSpecDirs.length === 0)
      return {
        kind: "none",
        why: `the Docker daemon has no NVIDIA runtime (its runtimes: ${listed}), and ${where}, but CDI is off in Docker ${d.version}`,
        hint: `Turn CDI on (\`"features": {"cdi": true}\` in /etc/docker/daemon.json, then restart Docker), or ${RUNTIME_FIX.charAt(0).toLowerCase()}${RUNTIME_FIX.slice(1)}; ${CPU_FIX}`,
      };
    return {
      kind: "cdi",
      spec,
      why: `no NVIDIA runtime is registered with Docker ${d.version}, and ${where}: the GPUs are passed as CDI devices`,
    };
  }
  if (f.hostGpus === 0)
    return {
      kind: "none",
      why: `the Docker daemon has no NVIDIA runtime (its runtimes: ${listed}), no CDI spec for ${CDI_GPU_KIND} is in ${f.cdi.dirs.join(" or ") || "the daemon's CDI folders"}, and this machine shows no NVIDIA driver`,
      hint: `${RUNTIME_FIX}, ${CDI_FIX}; ${CPU_FIX}`,
    };
  return {
    kind: "daemon",
    why: `no NVIDIA runtime is registered with Docker ${d.version} and no CDI spec for ${CDI_GPU_KIND} is in ${f.cdi.dirs.join(" or ") || "the daemon's CDI folders"}: Docker's own --gpus (the toolkit's hook on its PATH) is asked`,
  };
}

/** What `doctor` and `up` print for a path. */
export function describeGpuPath(p: GpuPath): string {
  switch (p.kind) {
    case "nvidia-runtime":
      return `through the NVIDIA runtime (--runtime ${p.runtime} with --gpus): ${p.why}`;
    case "cdi":
      return `as CDI devices (${CDI_GPU_KIND}): ${p.why}`;
    case "daemon":
      return `through Docker's --gpus: ${p.why}`;
    case "none":
      return `not possible: ${p.why}`;
  }
}

/** The CDI device names for a `--gpus` request, checked against the spec's devices. */
export function cdiDevices(g: GpuRequest, spec: CdiSpec): string[] {
  const named = (n: string) => `${spec.kind}=${n}`;
  const missing = (what: string) =>
    new UserError(`--gpus ${what}: the CDI spec ${spec.file} has no such device`, {
      hint: `Its devices: ${spec.devices.join(", ") || "none"}. Regenerate it (\`sudo nvidia-ctk cdi generate --output=${spec.file}\`) if the GPUs changed.`,
    });
  switch (g.kind) {
    case "none":
      return [];
    case "all":
      if (spec.devices.includes("all")) return [named("all")];
      return indexDevices(spec).map(named);
    case "count": {
      const idx = indexDevices(spec);
      if (idx.length < g.count) throw missing(`${g.count} (it lists ${idx.length} GPU(s))`);
      return idx.slice(0, g.count).map(named);
    }
    case "devices":
      for (const id of g.ids) if (!spec.devices.includes(id)) throw missing(`device=${id}`);
      return g.ids.map(named);
  }
}

function indexDevices(spec: CdiSpec): string[] {
  return spec.devices.filter((n) => /^\d+$/.test(n)).sort((a, b) => Number(a) - Number(b));
}

const cdiSpecSchema = z.object({
  cdiVersion: z.string(),
  kind: z.string(),
  devices: z.array(z.object({ name: z.string() }).loose()).default([]),
});

/**
 * The CDI specs of `kind` in `dirs` (.yaml, .yml, .json), in the order CDI gives them priority (later
 * folders override earlier ones, so the last folder's spec comes first). A file that cannot be read
 * or is not a CDI spec is listed as unreadable, not fatal: Docker skips it too.
 */
export async function findCdiSpecs(
  dirs: readonly string[],
  kind = CDI_GPU_KIND,
  readDir: (d: string) => Promise<string[]> = (d) => fsp.readdir(d),
  readFile: (f: string) => Promise<string> = (f) => fsp.readFile(f, "utf8"),
): Promise<{ specs: CdiSpec[]; unreadable: string[] }> {
  const specs: CdiSpec[] = [];
  const unreadable: string[] = [];
  for (const dir of [...dirs].reverse()) {
    const names = await readDir(dir).catch(() => [] as string[]);
    for (const name of names.filter((n) => /\.(ya?ml|json)$/i.test(n)).sort()) {
      const file = path.join(dir, name);
      try {
        const text = await readFile(file);
        const parsed = cdiSpecSchema.safeParse(/\.json$/i.test(name) ? JSON.parse(text) : parseYaml(text));
        if (!parsed.success) {
          unreadable.push(`${file} (not a CDI spec: ${parsed.error.issues[0]?.path.join(".") || "?"})`);
          continue;
        }
        if (parsed.data.kind === kind) specs.push({ file, kind, devices: parsed.data.devices.map((dev) => dev.name) });
      } catch (err) {
        unreadable.push(`${file} (${(err as Error).message.split("\n")[0]})`);
      }
    }
  }
  return { specs, unreadable };
}

/**
 * The folders to read CDI specs from: those the daemon reports, else TRITON_DEV_CDI_SPEC_DIRS
 * (colon-separated), else the CDI defaults. A daemon on another machine (tcp://, ssh://) that does
 * not report them has its specs out of reach: none are read.
 */
export function cdiDirsFor(daemon: GpuDaemonFacts, address: string, env: NodeJS.ProcessEnv): string[] {
  if (daemon.cdiSpecDirs && daemon.cdiSpecDirs.length > 0 && address.startsWith("unix://")) return daemon.cdiSpecDirs;
  if (!address.startsWith("unix://")) return [];
  const fromEnv = env.TRITON_DEV_CDI_SPEC_DIRS?.split(":").filter(Boolean);
  return fromEnv && fromEnv.length > 0 ? fromEnv : DEFAULT_CDI_DIRS;
}
