import { randomBytes } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import { writeFileAtomic } from "../state/atomic-write.js";
import type { SweepResult } from "./report.js";

/** A finished `triton-dev perf`, as kept on disk so the next run can show what changed. */
export interface SavedRun {
  version: 1;
  id: string;
  savedAt: string;
  model: string;
  /** One sweep, or one per variant for --compare. */
  sweeps: SweepResult[];
  compare?: string;
}

/** Model names become folder names: keep them to safe characters. */
function modelDir(root: string, model: string): string {
  return path.join(root, model.replace(/[^A-Za-z0-9._-]/g, "_"));
}

export function historyRoot(stateDir: string): string {
  return path.join(stateDir, "perf");
}

export async function saveRun(
  root: string,
  run: Omit<SavedRun, "version" | "id" | "savedAt">,
  now = new Date(),
): Promise<{ file: string; saved: SavedRun }> {
  const id = `${now.toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}-${randomBytes(3).toString("hex")}`;
  const saved: SavedRun = { version: 1, id, savedAt: now.toISOString(), ...run };
  const file = path.join(modelDir(root, run.model), `${id}.json`);
  await writeFileAtomic(file, JSON.stringify(saved, null, 2) + "\n", 0o644);
  return { file, saved };
}

/** Earlier runs of `model`, newest first; unreadable files are skipped. */
export async function listRuns(root: string, model: string): Promise<SavedRun[]> {
  const dir = modelDir(root, model);
  let names: string[];
  try {
    names = (await fsp.readdir(dir))
      .filter((n) => n.endsWith(".json"))
      .sort()
      .reverse();
  } catch {
    return [];
  }
  const out: SavedRun[] = [];
  for (const n of names) {
    try {
      const r = JSON.parse(await fsp.readFile(path.join(dir, n), "utf8")) as SavedRun;
      if (r.version === 1 && Array.isArray(r.sweeps)) out.push(r);
    } catch {
      // a damaged record is no reason to fail a new run
    }
  }
  return out;
}

/**
 * The newest earlier plain run (not a comparison) measured the same way: the same repository's
 * model (two repositories' `ensemble_model` are different models), the same inputs (an
 * --input-data file is not random data), same protocol, same kind of load, batch size and shared
 * memory mode, same stream (for a decoupled model), so that its numbers are comparable. A record
 * that does not say its repository or inputs (an older one) is compared with nothing.
 */
export async function previousComparable(root: string, sweep: SweepResult): Promise<SavedRun | undefined> {
  for (const r of await listRuns(root, sweep.model)) {
    const s = r.sweeps[0];
    if (r.compare || r.sweeps.length !== 1 || !s) continue;
    if (
      s.repository !== undefined &&
      s.repository === sweep.repository &&
      s.inputs !== undefined &&
      s.inputs === sweep.inputs &&
      s.protocol === sweep.protocol &&
      s.kind === sweep.kind &&
      s.batchSize === sweep.batchSize &&
      s.sharedMemory === sweep.sharedMemory &&
      // A streamed sweep is compared with one streamed the same way.
      s.streaming === sweep.streaming &&
      // One version is compared with the same version (or both with the server's pick).
      s.version === sweep.version &&
      s.levels.some((l) => l.requests > 0)
    )
      return r;
  }
  return undefined;
}
