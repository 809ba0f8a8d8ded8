import path from "node:path";
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
    p.store ? `${escape(p.text)}[^${sep}\\s"']+@\\d+(?![\\w-])` : escape(p.text),
  );
  // Each staged path with the rest of its path (up to a space, quote or list punctuation).
  const pattern = new RegExp(`(?:${alternatives.join("|")})[^\\s"'\`,;()]*`, "g");
  const userForm = (match: string) => {
    const p = prefixes.find((x) => match.startsWith(x.text))!;
    const rest = match.slice(p.text.length);
    return p.store ? user + rest.replace(/^([^/\\]+)@\d+/, "$1") : user + rest;
  };
  const key = (p: string) => p.replace(/[./\\:]+$/, "");
  // A traceback's frame ("path(64): initialize", 'File "path", line 3') names code, wherever it
  // was loaded from: never the folder a message compares.
  const isFrame = (offset: number, whole: string) =>
    /^\(\d+\)/.test(text.slice(offset + whole.length)) || /File "$/.test(text.slice(Math.max(0, offset - 6), offset));
  const found = [...text.matchAll(pattern)];
  if (!found.length) return text;
  const matches = found.filter((m) => !isFrame(m.index, m[0])).map((m) => m[0].replace(/[.:]+$/, ""));
  // A message comparing the folder a model was loaded from with another path ("expected X, got
  // Y") must not read "expected /a/b, got /a/b": a staged path whose user form the message also
  // holds (written as such, or as another staged path) keeps where it was staged beside it.
  // The same staged path seen from two places (this machine, a container's /models) is one path.
  const identity = (match: string) => {
    const p = prefixes.find((x) => match.startsWith(x.text))!;
    return `${p.store ? "store" : "repository"}:${key(match.slice(p.text.length))}`;
  };
  const formsOf = new Map<string, Set<string>>();
  for (const m of matches) {
    const k = key(userForm(m));
    formsOf.set(k, (formsOf.get(k) ?? new Set()).add(identity(m)));
  }
  const literal = text.replace(pattern, "\u0000");
  const ambiguous = (k: string) =>
    (formsOf.get(k)?.size ?? 0) > 1 || literal.split("\u0000").some((piece) => containsPath(piece, k));
  return text.replace(pattern, (whole: string, offset: number) => {
    // A sentence's full stop or a colon after the path is not part of it.
    const match = whole.replace(/[.:]+$/, "");
    const tail = whole.slice(match.length);
    const u = userForm(match);
    return (!isFrame(offset, whole) && ambiguous(key(u)) ? `${u} (staged copy: ${match})` : u) + tail;
  });
}

/** Whether `text` holds the path `p` as a whole path (not as the start of a longer one). */
function containsPath(text: string, p: string): boolean {
  let i = text.indexOf(p);
  while (i >= 0) {
    const next = text[i + p.length] ?? "";
    const after = text[i + p.length + 1] ?? "";
    // "/a/b/c", "/a/bc" and "/a/b.py" are longer paths; "/a/b." ends a sentence.
    const longer = /[\w@/\\-]/.test(next) || (next === "." && /\w/.test(after));
    if (!longer) return true;
    i = text.indexOf(p, i + 1);
  }
  return false;
}

/**
 * The staged-path-to-user-path mapping of one run: its staging folder as this machine sees it and
 * as its runtime's Triton does. `status`, the dashboard, the timeline, `perf` and `logs` use it.
 * Messages (not `logs`, which shows Triton's lines as written: `{ raw: true }`) are also made
 * readable: a python traceback without the importer's frames, a missing module with where to list it.
 */
export function userPathsOf(
  run: {
    runDir: string;
    modelsDir: string;
    /** The run record's: where the runtime's Triton sees the staging folder (absent: where it is). */
    tritonSees?: StagingLayout | undefined;
    buildsEnvironments?: true | undefined;
  },
  o: { raw?: boolean } = {},
): (text: string) => string {
  const layouts = [stagingLayout(run.runDir), ...(run.tritonSees ? [run.tritonSees] : [])];
  if (o.raw) return (text) => toUserPaths(text, layouts, run.modelsDir);
  const buildsEnvironments = run.buildsEnvironments === true;
  return (text) =>
    readablePythonError(toUserPaths(text, layouts, run.modelsDir), run.modelsDir, { buildsEnvironments });
}
