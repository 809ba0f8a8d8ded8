import { execFile } from "node:child_process";
import { UserError } from "../../errors.js";
import { check, type DoctorCheck } from "../doctor-check.js";
import { detectNvidiaGpus } from "../../gpu/detect.js";
import {
  connectDocker,
  daemonAddress,
  daemonFacts,
  NVIDIA_FIX,
  requireDaemon,
  type DaemonFacts,
} from "../clients/container/client.js";
import { cdiDirsFor, decideGpuPath, describeGpuPath, findCdiSpecs, type GpuPath } from "./gpu-path.js";

export interface NvidiaGpu {
  index: number;
  name: string;
  memoryMiB: number;
  driver: string;
}

export type RunCommand = (cmd: string, args: string[]) => Promise<{ stdout: string }>;

const defaultRun: RunCommand = (cmd, args) =>
  new Promise((resolve, reject) =>
    execFile(cmd, args, { timeout: 15_000 }, (err, stdout) =>
      err ? reject(err) : resolve({ stdout: String(stdout) }),
    ),
  );

/** `nvidia-smi --query-gpu ... --format=csv,noheader,nounits` lines, parsed. */
export function parseNvidiaSmi(csv: string): NvidiaGpu[] {
  return csv
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [index, name, mem, driver] = l.split(",").map((s) => s.trim());
      return { index: Number(index), name: name ?? "?", memoryMiB: Number(mem), driver: driver ?? "?" };
    });
}

/** The GPUs nvidia-smi sees; undefined when nvidia-smi is not installed. */
export async function nvidiaSmiGpus(run: RunCommand = defaultRun): Promise<NvidiaGpu[] | undefined> {
  try {
    const { stdout } = await run("nvidia-smi", [
      "--query-gpu=index,name,memory.total,driver_version",
      "--format=csv,noheader,nounits",
    ]);
    return parseNvidiaSmi(stdout);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new UserError(`nvidia-smi failed: ${(err as Error).message.split("\n")[0]}`, {
      hint: "The NVIDIA driver is installed but not working (a driver/library version mismatch after an update needs a reboot).",
      cause: err,
    });
  }
}

export interface DockerDoctor {
  daemon:
    | { ok: true; address: string; facts: DaemonFacts; gpuPath: GpuPath; unreadableCdi: string[] }
    | { ok: false; address: string; error: UserError };
}

/** The daemon, its runtimes and the way GPUs would reach a container, for `doctor`. */
export async function probeDocker(
  env: NodeJS.ProcessEnv,
  detectGpus: () => Promise<number | undefined> = () => detectNvidiaGpus(),
): Promise<DockerDoctor> {
  const address = daemonAddress(env);
  const docker = connectDocker(env);
  try {
    await requireDaemon(docker, env, 3_000);
    const facts = await daemonFacts(docker);
    const dirs = cdiDirsFor(facts, address, env);
    const cdi = await findCdiSpecs(dirs);
    const gpuPath = decideGpuPath({ daemon: facts, cdi: { ...cdi, dirs }, hostGpus: await detectGpus() });
    return { daemon: { ok: true, address, facts, gpuPath, unreadableCdi: cdi.unreadable } };
  } catch (err) {
    if (err instanceof UserError) return { daemon: { ok: false, address, error: err } };
    throw err;
  }
}

export { NVIDIA_FIX };

/**
 * The docker runtime's needs: the daemon, its NVIDIA runtime, and the GPUs the driver sees. None fails `doctor`: the
 * local runtime needs none of them.
 */
export async function dockerChecks(
  env: NodeJS.ProcessEnv,
  gpus: () => Promise<NvidiaGpu[] | undefined> = () => nvidiaSmiGpus(),
): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  const probe = await probeDocker(env);
  const d = probe.daemon;
  if (d.ok) {
    out.push({
      name: "docker",
      ok: true,
      detail: `Docker ${d.facts.version} (API ${d.facts.apiVersion}, ${d.facts.storageDriver} storage) at ${d.address}`,
    });
    const p = d.gpuPath;
    const passes = p.kind === "nvidia-runtime" || p.kind === "cdi";
    out.push({
      name: "docker gpus",
      ok: passes,
      ...(passes ? {} : { warn: true }),
      detail:
        `GPUs reach containers ${describeGpuPath(p)}` +
        (passes ? "" : ": `up --runtime docker` runs on the CPU (--gpus none)") +
        (d.unreadableCdi.length ? `; CDI files skipped: ${d.unreadableCdi.join("; ")}` : ""),
      ...(p.kind === "none" ? { hint: p.hint } : passes ? {} : { hint: NVIDIA_FIX }),
    });
  } else {
    out.push({
      name: "docker",
      ok: false,
      warn: true,
      detail: `${d.error.message} (only the docker runtime needs it)`,
      ...(d.error.hint ? { hint: d.error.hint } : {}),
    });
  }
  out.push(
    await check("gpus", async () => {
      const found = await gpus();
      if (found === undefined)
        throw new UserError(
          "nvidia-smi not found: no NVIDIA driver on this machine, so Triton runs on the CPU (KIND_CPU instance groups)",
          { hint: "Install the NVIDIA driver to use a GPU; the sample models also run on the CPU." },
        );
      if (found.length === 0)
        throw new UserError("nvidia-smi lists no GPU", { hint: "Check `nvidia-smi` and the driver." });
      return `${found.length} GPU(s): ${found.map((g) => `${g.index} ${g.name} (${g.memoryMiB} MiB, driver ${g.driver})`).join("; ")}`;
    }).then((c) => (c.ok ? c : { ...c, warn: true })),
  );
  return out;
}
