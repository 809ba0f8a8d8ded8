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

/** An index entry as explainIndex gives it: what its reason comes from, where that decides what to do next. */
export interface ExplainedIndexEntry extends RepositoryIndexEntry {
  /** The reason names steps of this ensemble that failed to load: it loads once they do, not by a fix of its own. */
  heldBySteps?: true;
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
): Promise<ExplainedIndexEntry[]> {
  const out: ExplainedIndexEntry[] = index.map((e) =>
    e.reason ? { ...e, reason: oneLine(o.userPaths(e.reason)) } : { ...e },
  );
  const staged = new Set(o.staged);
  for (const name of o.staged) if (!out.some((e) => e.name === name)) out.push({ name, state: "UNAVAILABLE" });
  for (const e of out) {
    // "unloaded" is no reason for a model that never served: an ensemble Triton unloaded when a
    // step went away says which step keeps it out instead.
    const bare = !e.reason || e.reason === "unloaded";
    if (!staged.has(e.name) || !bare || e.state === "READY" || e.state === "LOADING" || e.state === "UNLOADING")
      continue;
    // Another version of the model serving is reason enough for this one's state.
    if (out.some((x) => x.name === e.name && x.state === "READY")) continue;
    const step = await o.fallback?.(e.name);
    const logged = step ? undefined : lastLoadFailure(o.logLines, e.name);
    const why = step ?? (logged ? oneLine(o.userPaths(logged)) : e.reason);
    if (why === "unloaded") continue;
    e.reason = why ?? "Triton did not load it and gave no reason (its log, `triton-dev logs`, may say more)";
    if (step) e.heldBySteps = true;
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
  return stepsNotAvailable(
    async (model) => {
      const g = staging.current(model);
      if (g === undefined) return undefined;
      return fsp.readFile(path.join(staging.snapshotDir(model, g), "config.pbtxt"), "utf8").catch(() => "");
    },
    (step) => failed.includes(step),
  );
}

/**
 * The same, for a reader of the served configs (`status` reads them from the run's repository):
 * the steps of the served config that `unavailable` says are not loaded, named.
 */
export function stepsNotAvailable(
  configOf: (model: string) => Promise<string | undefined>,
  unavailable: (step: string) => boolean,
  reasonOf: (step: string) => string | undefined = () => undefined,
): (model: string) => Promise<string | undefined> {
  return async (model) => {
    const config = await configOf(model);
    if (!config) return undefined;
    const steps = [...config.matchAll(/model_name\s*:\s*"([^"]+)"/g)].map((m) => m[1]!);
    const runs = [...new Set(steps)].filter((f) => f !== model && unavailable(f));
    if (!runs.length) return undefined;
    const why = runs.map((r) => reasonOf(r)).filter(Boolean);
    return `it runs ${runs.join(", ")}, which failed to load${why.length === 1 ? ` (${why[0]})` : ""}`;
  };
}
