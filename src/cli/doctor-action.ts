import { resolvePaths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { findPortHolder, isPortFree } from "../net/ports.js";
import { checkManagedEnvironment, fixCommand, strongestFix } from "../runtimes/local/environment-health.js";
import { checkGlibc, glibcVersion } from "../runtimes/local/glibc.js";
import { discoverPython } from "../runtimes/local/python.js";
import { currentRun } from "../session/current-run.js";
import type { CliContext } from "./output.js";
import type { NvidiaGpu } from "../runtimes/docker/doctor.js";

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
  /** Not needed by every runtime (Docker, GPUs): reported, but does not fail `doctor`. */
  warn?: boolean;
}

/** `triton-dev doctor`, loaded when the command runs. */
export async function doctorAction(
  flags: { json: boolean; httpPort: number; grpcPort: number; metricsPort: number },
  ctx: CliContext,
): Promise<void> {
  const { output, env } = ctx;
  const checks = await runDoctor(env, [flags.httpPort, flags.grpcPort, flags.metricsPort]);
  const passed = (c: DoctorCheck) => c.ok || !!c.warn;
  if (flags.json) output.out(JSON.stringify({ ok: checks.every(passed), checks }, null, 2));
  else {
    for (const c of checks) {
      output.out(`${c.ok ? "ok  " : c.warn ? "warn" : "FAIL"}  ${c.name.padEnd(14)} ${c.detail}`);
      if (!c.ok && c.hint) output.out(`      ${"".padEnd(14)} hint: ${c.hint}`);
    }
  }
  if (!checks.every(passed)) ctx.exitCode = 1;
}

async function check(name: string, fn: () => Promise<string> | string): Promise<DoctorCheck> {
  try {
    return { name, ok: true, detail: await fn() };
  } catch (err) {
    if (err instanceof UserError)
      return { name, ok: false, detail: err.message, ...(err.hint ? { hint: err.hint } : {}) };
    throw err;
  }
}

export interface DoctorDeps {
  /** The GPUs nvidia-smi lists (undefined: no nvidia-smi). */
  gpus?: () => Promise<NvidiaGpu[] | undefined>;
}

/**
 * The docker runtime's needs: the daemon, its NVIDIA runtime, and the GPUs the driver sees. None fails `doctor`: the
 * local runtime needs none of them.
 */
async function dockerChecks(env: NodeJS.ProcessEnv, deps: DoctorDeps): Promise<DoctorCheck[]> {
  const { probeDocker, nvidiaSmiGpus } = await import("../runtimes/docker/doctor.js");
  const { NVIDIA_FIX } = await import("../runtimes/docker/client.js");
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
      const gpus = await (deps.gpus ?? (() => nvidiaSmiGpus()))();
      if (gpus === undefined)
        throw new UserError(
          "nvidia-smi not found: no NVIDIA driver on this machine, so Triton runs on the CPU (KIND_CPU instance groups)",
          { hint: "Install the NVIDIA driver to use a GPU; the sample models also run on the CPU." },
        );
      if (gpus.length === 0)
        throw new UserError("nvidia-smi lists no GPU", { hint: "Check `nvidia-smi` and the driver." });
      return `${gpus.length} GPU(s): ${gpus.map((g) => `${g.index} ${g.name} (${g.memoryMiB} MiB, driver ${g.driver})`).join("; ")}`;
    }).then((c) => (c.ok ? c : { ...c, warn: true })),
  );
  return out;
}

/** The kind runtime's tools. Neither fails `doctor`: only `--runtime kind` needs them. */
async function kindChecks(env: NodeJS.ProcessEnv): Promise<DoctorCheck[]> {
  const [{ probeKindTools }, { KindTools }] = await Promise.all([
    import("../runtimes/kind/doctor.js"),
    import("../runtimes/kind/tools.js"),
  ]);
  return (await probeKindTools(new KindTools(undefined, env))).map((t) =>
    t.version
      ? { name: t.tool, ok: true, detail: `${t.tool} ${t.version}` }
      : {
          name: t.tool,
          ok: false,
          warn: true,
          detail: t.error
            ? `${t.tool} did not answer: ${t.error} (only the kind runtime needs it)`
            : `not installed (only the kind runtime needs it)`,
          ...(t.hint ? { hint: t.hint } : {}),
        },
  );
}

export async function runDoctor(
  env: NodeJS.ProcessEnv,
  ports: number[],
  deps: DoctorDeps = {},
): Promise<DoctorCheck[]> {
  const paths = resolvePaths(env);
  const checks: DoctorCheck[] = [];
  checks.push(
    await check("node", () => {
      const [maj, min] = process.versions.node.split(".").map(Number) as [number, number];
      if (maj < 20 || (maj === 20 && min < 19))
        throw new UserError(`Node.js ${process.versions.node} is too old`, {
          hint: "Install Node.js 20.19 or newer (22 or 24 recommended).",
        });
      return `Node.js ${process.versions.node}`;
    }),
  );
  checks.push(await check("glibc", () => `glibc ${checkGlibc(glibcVersion())}`));
  checks.push(
    await check("python", async () => {
      const p = await discoverPython({ env });
      return `Python ${p.version} at ${p.executable} (${p.libDir}/${p.libName})`;
    }),
  );
  checks.push(
    await check("environment", async () => {
      // The stub must match what is installed: a numpy 2 installed over 1.x, another Python or
      // a missing stub breaks models while Triton still reports them READY.
      const health = await checkManagedEnvironment(paths, { importNumpy: true });
      const e = health.environment;
      const fix = strongestFix(health.problems);
      if (!e || fix)
        throw new UserError(health.problems.map((p) => p.problem).join("; "), {
          hint:
            fix === "setup" || !e
              ? "Run `triton-dev setup` (or just `triton-dev up`, which runs it on first use)."
              : `Run \`${fixCommand(fix!)}\`${fix === "repair" ? ", which reinstalls the pinned packages and the stub without rebuilding the environment" : ""}.`,
        });
      return `nvidia-pytriton ${e.pytritonVersion} in ${e.venv} (Python ${health.python ?? e.python.version}, numpy ${health.numpy ?? "?"})`;
    }),
  );
  const run = await currentRun(paths, env).catch(() => undefined);
  for (const port of ports) {
    checks.push(
      await check(`port ${port}`, async () => {
        if (await isPortFree(port)) return "free";
        if (run?.alive && Object.values(run.state.ports).includes(port))
          return `in use by our running Triton (${run.run.describe().where})`;
        const holder = findPortHolder(port);
        throw new UserError(`in use${holder ? ` by pid ${holder.pid} (${holder.command.slice(0, 80)})` : ""}`, {
          hint: "Stop that process or pick other ports with --http-port/--grpc-port/--metrics-port.",
        });
      }),
    );
  }
  checks.push(...(await dockerChecks(env, deps)));
  checks.push(...(await kindChecks(env)));
  return checks;
}
