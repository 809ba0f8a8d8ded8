import type { Paths } from "../../config/paths.js";
import { UserError } from "../../errors.js";
import { check, type DoctorCheck } from "../doctor-check.js";
import { checkManagedEnvironment, fixCommand, strongestFix } from "./environment-health.js";
import { checkGlibc, glibcVersion } from "./glibc.js";
import { discoverPython } from "./python.js";

/** The local runtime's needs: glibc, a Python to build the environment from, and the managed environment itself. */
export async function localChecks(paths: Paths, env: NodeJS.ProcessEnv): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
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
  return checks;
}
