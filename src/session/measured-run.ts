/**
 * The recorded run as perf and tune measure it: found here and handed to them (perf/run.ts
 * `PerfDeps.run`), so the measuring tools sit below the session and import nothing of it.
 */
import { resolvePaths } from "../config/paths.js";
import type { RunState } from "../state/run-state.js";
import { currentRun } from "./current-run.js";
import { collectStatus } from "./status.js";

export interface RecordedRun {
  find(): Promise<{ state: RunState; alive: boolean } | undefined>;
  model(name: string): Promise<{ state: string; reason?: string } | undefined>;
}

/** The run `triton-dev up` recorded in `env`'s state folder, and what `status` knows of its models. */
export function recordedRun(env: NodeJS.ProcessEnv = process.env): RecordedRun {
  return {
    find: () => currentRun(resolvePaths(env), env),
    model: async (name) => (await collectStatus(resolvePaths(env)))?.models?.find((m) => m.name === name),
  };
}
