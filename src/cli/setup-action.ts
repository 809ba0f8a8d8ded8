import { resolvePaths } from "../config/paths.js";
import { UsageError, UserError } from "../errors.js";
import { ensureEnvironment, type SetupProgress } from "../runtimes/local/environment.js";
import { checkManagedEnvironment, fixCommand, strongestFix } from "../runtimes/local/environment-health.js";
import { ensureKeyShim } from "../triton/key-shim.js";
import type { CliContext } from "./output.js";

/** `triton-dev setup`, loaded when the command runs. */
export async function setupAction(
  flags: { force: boolean; repair: boolean; json: boolean; withSitePackages: boolean },
  ctx: CliContext,
): Promise<void> {
  const { output, env } = ctx;
  if (flags.force && flags.repair)
    throw new UsageError("--force and --repair exclude each other", {
      hint: "--repair fixes the packages in place; --force rebuilds everything.",
    });
  const paths = resolvePaths(env);
  const started = Date.now();
  const onProgress = (p: SetupProgress) => {
    if (flags.json) output.out(JSON.stringify(p));
    else if (!p.line) output.out(`setup: ${p.message}`);
    else if (p.line.startsWith("Successfully") || p.line.startsWith("Downloading") || p.line.startsWith("Collecting"))
      output.out(`  ${p.line}`);
  };
  let repair = flags.repair;
  if (!flags.force && !repair) {
    // An environment someone installed into (numpy 2 over 1.x) is put right by a plain setup too.
    const health = await checkManagedEnvironment(paths, { importNumpy: true });
    const fix = health.environment ? strongestFix(health.problems) : undefined;
    if (fix === "force") {
      throw new UserError(`the managed environment is broken: ${health.problems.map((p) => p.problem).join("; ")}`, {
        hint: `Run \`${fixCommand(fix)}\` to rebuild it.`,
      });
    }
    if (fix === "repair") {
      for (const p of health.problems) onProgress({ step: "python", message: `repairing: ${p.problem}` });
      repair = true;
    }
  }
  const e = await ensureEnvironment({
    paths,
    env,
    force: flags.force,
    repair,
    inheritSitePackages: flags.withSitePackages,
    onProgress,
  });
  if (repair) {
    const after = await checkManagedEnvironment(paths, { importNumpy: true });
    if (after.problems.length) {
      const fix = strongestFix(after.problems)!;
      throw new UserError(`the repair left problems: ${after.problems.map((p) => p.problem).join("; ")}`, {
        hint: `Run \`${fixCommand(fix === "repair" ? "force" : fix)}\` to rebuild the environment.`,
      });
    }
  }
  // Every runtime needs it (the repository key's library), so a failing compiler shows here.
  const keyLibrary = await ensureKeyShim(paths.home, { env });
  if (!flags.json)
    output.out(
      `tritonserver: ${e.serverBin}\nbackends:     ${e.backendDir}\nkey library:  ${keyLibrary}\n(${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
}
