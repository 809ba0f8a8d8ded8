import fsp from "node:fs/promises";
import path from "node:path";
import { stripTritonPrefix, tailLines } from "../state/log-file.js";
import type { RepositoryIndexEntry } from "../triton/http-client.js";
import { lastLoadFailure } from "../triton/log-lines.js";
import type { StagingRepository } from "./stage.js";

/** How much of Triton's log is searched for a reason (the lines since the server started, mostly). */
const LOG_BYTES = 4 * 1024 * 1024;

/** The last lines of Triton's log without their prefix, for lastLoadFailure. */
export async function tritonLogLines(logFile: string): Promise<string[]> {
  return (await tailLines(logFile, 200_000, LOG_BYTES)).map(stripTritonPrefix);
}

/** Triton's multi-line reasons (a traceback) as one line, for the timeline, `up` and `status`. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

export interface ExplainOptions {
  /** The models triton-dev gave Triton. */
  staged: readonly string[];
  /** Triton's log lines (tritonLogLines). */
  logLines: readonly string[];
  /** Staged paths in Triton's words as the user's (state/staged-paths.ts). */
  userPaths: (text: string) => string;
  /** What we know when Triton said nothing (an ensemble whose step failed). */
  fallback?: (model: string) => Promise<string | undefined>;
}

/**
 * Triton's index with a reason for every staged model that is not READY: the index's own, else the
 * one Triton only logged (a model folder without a usable config fails in Triton's poll, and the
 * index then lists it with no state or reason), else `fallback`'s, else where to look; never none.
 * A staged model the index does not list at all (no version to load) is added as UNAVAILABLE.
 * Reasons name the user's files and are one line.
 */
export async function explainIndex(
  index: readonly RepositoryIndexEntry[],
  o: ExplainOptions,
): Promise<RepositoryIndexEntry[]> {
  const out = index.map((e) => (e.reason ? { ...e, reason: oneLine(o.userPaths(e.reason)) } : { ...e }));
  const staged = new Set(o.staged);
  for (const name of o.staged) if (!out.some((e) => e.name === name)) out.push({ name, state: "UNAVAILABLE" });
  for (const e of out) {
    if (!staged.has(e.name) || e.reason || e.state === "READY" || e.state === "LOADING" || e.state === "UNLOADING")
      continue;
    // Another version of the model serving is reason enough for this one's state.
    if (out.some((x) => x.name === e.name && x.state === "READY")) continue;
    const logged = lastLoadFailure(o.logLines, e.name);
    const why = logged ? oneLine(o.userPaths(logged)) : await o.fallback?.(e.name);
    e.reason = why ?? "Triton did not load it and gave no reason (its log, `triton-dev logs`, may say more)";
  }
  return out;
}

/**
 * Triton gives no reason for a model it did not try: an ensemble whose step model failed. The
 * fallback for explainIndex that names those of `failed` the staged config runs.
 */
export function stepFailed(
  staging: StagingRepository,
  failed: readonly string[],
): (model: string) => Promise<string | undefined> {
  return async (model) => {
    const g = staging.current(model);
    if (g === undefined) return undefined;
    const config = await fsp.readFile(path.join(staging.snapshotDir(model, g), "config.pbtxt"), "utf8").catch(() => "");
    const runs = failed.filter(
      (f) => f !== model && new RegExp(`model_name\\s*:\\s*"${f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`).test(config),
    );
    return runs.length ? `it runs ${runs.join(", ")}, which failed to load` : undefined;
  };
}
