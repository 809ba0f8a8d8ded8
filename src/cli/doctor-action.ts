import { resolvePaths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { findPortHolder, isPortFree } from "../net/ports.js";
import { check, type DoctorCheck } from "../runtimes/doctor-check.js";
import { RUNTIME_FACTS, type RuntimeKind } from "../runtimes/kinds.js";
import { RUNTIMES, type Runtimes } from "../runtimes/registry.js";
import { currentRun } from "../session/current-run.js";
import type { CliContext } from "./output.js";

export type { DoctorCheck };

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

export async function runDoctor(
  env: NodeJS.ProcessEnv,
  ports: number[],
  runtimes: Runtimes = RUNTIMES,
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
  // The runtime `up` falls back to must work (its checks fail `doctor`); the others' needs come
  // after the ports, as warnings.
  const drivers = await Promise.all(runtimes.kinds.map(async (k) => ({ kind: k, driver: await runtimes.load(k) })));
  const fallback = (k: RuntimeKind) => RUNTIME_FACTS[k].auto === "fallback";
  for (const { kind, driver } of drivers)
    if (fallback(kind)) checks.push(...((await driver.doctor?.({ paths, env })) ?? []));
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
  for (const { kind, driver } of drivers)
    if (!fallback(kind)) checks.push(...((await driver.doctor?.({ paths, env })) ?? []));
  return checks;
}
