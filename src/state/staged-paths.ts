import path from "node:path";
import { RUNTIME_FACTS, type RuntimeKind } from "../runtimes/kinds.js";
import { readablePythonError } from "../triton/python-errors.js";

/** A staging repository (`<run>/repository/<model>/...`) and its snapshots (`<run>/store/<model>@<generation>/...`). */
export interface StagingLayout {
  repository: string;
  store: string;
}

/** Where a run's staging repository and its snapshots live on this machine. */
export function stagingLayout(runDir: string): StagingLayout {
  return { repository: path.join(runDir, "repository"), store: path.join(runDir, "store") };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Rewrites paths into a staging repository or its snapshots as the same paths in the user's
 * repository: Triton's messages (a model.py traceback, say) then name the file the user edits.
 * `staging` may list several layouts: the run's folder on this machine and where the runtime's
 * Triton sees it (a container's /models). The one mapping every message of Triton goes through.
 */
export function toUserPaths(
  text: string,
  staging: StagingLayout | readonly StagingLayout[],
  sourceRepo: string,
): string {
  const user = sourceRepo.endsWith(path.sep) ? sourceRepo : sourceRepo + path.sep;
  const sep = escape(path.sep);
  const layouts: readonly StagingLayout[] = Array.isArray(staging) ? staging : [staging as StagingLayout];
  // One pass, longest prefix first: a path already the user's is never mapped again (a user's
  // folder may itself lie under a container's /models).
  const prefixes = layouts
    .flatMap((l) => [
      { text: l.repository + path.sep, store: false },
      { text: l.store + path.sep, store: true },
    ])
    .sort((a, b) => b.text.length - a.text.length);
  const alternatives = prefixes.map((p) =>
    p.store ? `${escape(p.text)}[^${sep}\\s"']+@\\d+(?=${sep}|["'\\s]|$)` : escape(p.text),
  );
  return text.replace(new RegExp(alternatives.join("|"), "g"), (match) => {
    const p = prefixes.find((x) => match.startsWith(x.text))!;
    return p.store ? user + match.slice(p.text.length).replace(/@\d+$/, "") : user;
  });
}

/**
 * The staged-path-to-user-path mapping of one run: its staging folder as this machine sees it and
 * as its runtime's Triton does. `status`, the dashboard, the timeline, `perf` and `logs` use it.
 * Messages (not `logs`, which shows Triton's lines as written: `{ raw: true }`) are also made
 * readable: a python traceback without the importer's frames, a missing module with where to list it.
 */
export function userPathsOf(
  run: {
    runtime: RuntimeKind;
    runDir: string;
    modelsDir: string;
  },
  o: { raw?: boolean } = {},
): (text: string) => string {
  const seenAs = RUNTIME_FACTS[run.runtime].stagingSeenAs;
  const layouts = [stagingLayout(run.runDir), ...(seenAs ? [seenAs] : [])];
  if (o.raw) return (text) => toUserPaths(text, layouts, run.modelsDir);
  const buildsEnvironments = RUNTIME_FACTS[run.runtime].buildsEnvironments === true;
  return (text) =>
    readablePythonError(toUserPaths(text, layouts, run.modelsDir), run.modelsDir, { buildsEnvironments });
}
