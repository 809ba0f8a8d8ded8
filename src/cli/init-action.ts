import path from "node:path";
import { UsageError } from "../errors.js";
import { displayPath, formatDiagnostic } from "../repo/diagnostics.js";
import { scaffoldPythonModel, validateModelName } from "../repo/init.js";
import { lintModel } from "../repo/lint.js";
import { processOutput, type Output } from "./output.js";

export interface InitFlags {
  name: string;
}

/** Runs `triton-dev init`; returns the exit code. */
export async function runInit(
  dir: string,
  flags: InitFlags,
  output: Output = processOutput,
  cwd: string = process.cwd(),
): Promise<number> {
  const problem = validateModelName(flags.name);
  if (problem) throw new UsageError(problem, { hint: "Pass --name with a name like my_model." });
  const repo = path.resolve(cwd, dir);
  const created = await scaffoldPythonModel(repo, flags.name);
  for (const f of created.files) output.out(`created ${displayPath(f, cwd)}`);
  // The scaffold must lint clean in this repository too (a sibling ensemble may already expect it).
  const result = await lintModel(repo, flags.name);
  for (const d of result.diagnostics) output.out(formatDiagnostic(d, cwd));
  const rel = displayPath(repo, cwd);
  output.out(
    `next: edit ${displayPath(created.files[1]!, cwd)}, then \`triton-dev lint ${rel}\` and \`triton-dev up --models ${rel}\``,
  );
  return result.errorCount > 0 ? 1 : 0;
}
