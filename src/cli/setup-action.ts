import { resolvePaths } from "../config/paths.js";
import { ensureEnvironment } from "../runtimes/local/environment.js";
import { ensureKeyShim } from "../triton/key-shim.js";
import type { CliContext } from "./output.js";

/** `triton-dev setup`, loaded when the command runs. */
export async function setupAction(
  flags: { force: boolean; json: boolean; withSitePackages: boolean },
  ctx: CliContext,
): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  const started = Date.now();
  const e = await ensureEnvironment({
    paths,
    env,
    force: flags.force,
    inheritSitePackages: flags.withSitePackages,
    onProgress: (p) => {
      if (flags.json) output.out(JSON.stringify(p));
      else if (!p.line) output.out(`setup: ${p.message}`);
      else if (p.line.startsWith("Successfully") || p.line.startsWith("Downloading") || p.line.startsWith("Collecting"))
        output.out(`  ${p.line}`);
    },
  });
  // Every runtime needs it (the repository key's library), so a failing compiler shows here.
  const keyLibrary = await ensureKeyShim(paths.home, { env });
  if (!flags.json)
    output.out(
      `tritonserver: ${e.serverBin}\nbackends:     ${e.backendDir}\nkey library:  ${keyLibrary}\n(${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
}
