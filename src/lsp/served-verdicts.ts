import fs from "node:fs";
import path from "node:path";
import type { Diagnostic } from "../repo/diagnostics.js";
import { CONFIG_FILE } from "../repo/layout.js";
import { type RunVerdicts, verdictDiagnostics } from "./verdict.js";

const real = (f: string): string | undefined => {
  try {
    return fs.realpathSync(f);
  } catch {
    // A file deleted while open has no real path.
    return undefined;
  }
};

/**
 * The running server's verdict as findings by file, for the editor: only the run that serves a
 * repository being edited here, each finding also under the name the editor opened its file by.
 */
export function servedVerdictsByFile(
  v: RunVerdicts | undefined,
  repositories: readonly string[],
  openFiles: readonly string[],
  textOf: (file: string) => string | undefined,
): Map<string, Diagnostic[]> {
  const next = new Map<string, Diagnostic[]>();
  const served = v ? real(v.modelsDir) : undefined;
  if (!v || served === undefined || !repositories.some((r) => real(r) === served)) return next;
  for (const verdict of v.verdicts.values()) {
    // Triton's reasons name the user's files as the run recorded the repository.
    const modelDir = path.join(v.modelsDir, verdict.model);
    const configFile = path.join(modelDir, CONFIG_FILE);
    for (const d of verdictDiagnostics(verdict, modelDir, v.server, textOf(configFile))) {
      const list = next.get(d.file) ?? [];
      list.push(d);
      next.set(d.file, list);
    }
  }
  // The editor may name the repository by another path (a link): the same files, its names.
  for (const [file, ds] of [...next]) {
    const target = real(file);
    for (const p of openFiles) {
      if (p === file || target === undefined) continue;
      if (real(p) === target)
        next.set(
          p,
          ds.map((d) => ({ ...d, file: p })),
        );
    }
  }
  return next;
}
