import { execFile } from "node:child_process";
import { UserError } from "../../errors.js";
import { check, type DoctorCheck } from "../doctor-check.js";
import { connectDocker, daemonAddress, daemonFacts, NVIDIA_FIX, requireDaemon, type DaemonFacts } from "./client.js";

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
  daemon: { ok: true; address: string; facts: DaemonFacts } | { ok: false; address: string; error: UserError };
}

/** The daemon and its runtimes, for `doctor`. */
export async function probeDocker(env: NodeJS.ProcessEnv): Promise<DockerDoctor> {
  const address = daemonAddress(env);
  const docker = connectDocker(env);
  try {
    await requireDaemon(docker, env, 3_000);
    return { daemon: { ok: true, address, facts: await daemonFacts(docker) } };
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
    out.push(
      d.facts.nvidia
        ? {
            name: "nvidia runtime",
            ok: true,
            detail: `registered with Docker (runtimes: ${d.facts.runtimes.join(", ")}; default ${d.facts.defaultRuntime})`,
          }
        : {
            name: "nvidia runtime",
            ok: false,
            warn: true,
            detail: `not registered with Docker (runtimes: ${d.facts.runtimes.join(", ") || "none"}): \`up --runtime docker\` runs on the CPU (--gpus none)`,
            hint: NVIDIA_FIX,
          },
    );
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
