import { canonicalName, lineNaming, type RequirementLine } from "./requirements.js";

/**
 * What stopped pip, read from its output:
 * - `stub`: a requirement (or one of its dependencies) needs another version of a package the
 *   python backend stub depends on (numpy 2 against a stub built for 1.x);
 * - `python`: a package needs another Python than the one the stub embeds;
 * - `other`: anything else pip refused or failed at (an unknown package, a build that failed, no network).
 */
export type PipFailureKind = "stub" | "python" | "other";

export interface PipFailure {
  kind: PipFailureKind;
  /** The requirements.txt entry the failure is about, when pip's output names it. */
  culprit?: RequirementLine;
  /** One sentence: what conflicts with what, or pip's first error line. */
  message: string;
  hint: string;
  /** pip's own error lines (the first few), for the diagnostic and the timeline. */
  excerpt: string[];
}

export interface FailureContext {
  requirements: RequirementLine[];
  /** The stub's packages pinned as constraints (`numpy==1.26.4`). */
  pins: string[];
  pythonVersion: string;
}

const MAX_EXCERPT = 6;

/** pip's error lines: from its first `ERROR:` on, blank lines and resolver chatter left out. */
export function errorExcerpt(lines: string[], max = MAX_EXCERPT): string[] {
  const first = lines.findIndex((l) => l.startsWith("ERROR:"));
  const from = first >= 0 ? lines.slice(first) : lines.slice(-max);
  return from
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() && !l.startsWith("INFO:") && !/^\s*(To fix this you could try to|\d\. )/.test(l))
    .slice(0, max);
}

/** `numpy>=2` -> `numpy`. */
function nameOfSpec(spec: string): string | undefined {
  return /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(spec.trim())?.[1];
}

/** The lines under pip's "The conflict is caused by:". */
function conflictCauses(lines: string[]): string[] {
  const at = lines.findIndex((l) => l.trim() === "The conflict is caused by:");
  if (at < 0) return [];
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (!l.trim()) break;
    out.push(l.trim());
  }
  return out;
}

export function classifyPipFailure(lines: string[], ctx: FailureContext): PipFailure {
  const excerpt = errorExcerpt(lines);
  const causes = conflictCauses(lines);
  // "The user requested (constraint) numpy==1.26.4": one side of the conflict is the stub's pin.
  const pinned = causes
    .map((c) => /^The user requested \(constraint\) (.+)$/.exec(c)?.[1])
    .find((spec): spec is string => !!spec && ctx.pins.includes(spec.trim()));
  if (pinned) {
    const pinName = nameOfSpec(pinned)!;
    const wants: Array<{ who?: string; spec: string }> = [];
    for (const c of causes) {
      const direct = /^The user requested (?!\(constraint\))(.+)$/.exec(c);
      if (direct) wants.push({ spec: direct[1]! });
      const dep = /^(\S+) (\S+) depends on (.+)$/.exec(c);
      if (dep && canonicalName(nameOfSpec(dep[3]!) ?? "") === canonicalName(pinName))
        wants.push({ who: `${dep[1]} ${dep[2]}`, spec: dep[3]! });
    }
    const first = wants[0] ?? { spec: pinName };
    const who = first.who?.split(" ")[0];
    const culprit = lineNaming(ctx.requirements, who ?? nameOfSpec(first.spec) ?? pinName);
    const version = pinned.split("==")[1] ?? pinned;
    const asked = first.who ? `${first.who} needs ${first.spec}` : `it asks for ${first.spec}`;
    return {
      kind: "stub",
      ...(culprit ? { culprit } : {}),
      message: `${asked}, but the python backend stub needs ${pinName} ${version} (the managed environment's, which every model shares)`,
      hint: first.who
        ? `Pin a version of ${who} that works with ${pinName} ${version}, or drop it; ${pinName} itself always comes from the managed environment.`
        : `Remove ${pinName} from requirements.txt or allow ${version} (for example \`${pinName}<${Number(version.split(".")[0]) + 1}\`): the stub is built against it, and the model gets it from the managed environment.`,
      excerpt,
    };
  }
  // "ERROR: Package 'tdfuture' requires a different Python: 3.11.7 not in '>=3.13'"
  const differentPython = lines
    .map((l) => /Package '([^']+)' requires a different Python: (\S+) not in '([^']+)'/.exec(l))
    .find((m) => m);
  const ignoredForPython = lines.some((l) => l.includes("require a different python version"));
  const notFound = lines
    .map((l) => /Could not find a version that satisfies the requirement (\S+)/.exec(l))
    .find((m) => m);
  if (differentPython || (ignoredForPython && notFound)) {
    const name = differentPython ? differentPython[1]! : nameOfSpec(notFound![1]!)!;
    const range = differentPython
      ? ` (it requires Python ${differentPython[3]})`
      : ` (${lines.find((l) => l.includes("require a different python version"))!.replace(/^ERROR:\s*/, "")})`;
    const culprit = lineNaming(ctx.requirements, name);
    return {
      kind: "python",
      ...(culprit ? { culprit } : {}),
      message: `${name} needs another Python than the stub's ${ctx.pythonVersion}${range}`,
      hint: `Pin a version of ${name} that supports Python ${ctx.pythonVersion.split(".").slice(0, 2).join(".")}, or set triton-dev up with a Python it supports (\`TRITON_DEV_PYTHON=python3.X triton-dev setup --force\`; the stubs cover 3.8 to 3.12).`,
      excerpt,
    };
  }
  const culprit = notFound ? lineNaming(ctx.requirements, nameOfSpec(notFound[1]!) ?? "") : undefined;
  return {
    kind: "other",
    ...(culprit ? { culprit } : {}),
    message: excerpt[0]?.replace(/^ERROR:\s*/, "") ?? "pip failed without saying why",
    hint: "Fix requirements.txt and save it again; pip reads your pip configuration (pip.conf, PIP_INDEX_URL, PIP_FIND_LINKS), so a private index or a wheel folder set there is used.",
    excerpt,
  };
}
