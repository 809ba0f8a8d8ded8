import { createHash } from "node:crypto";

/** The file beside a python model's config.pbtxt that lists its packages, in pip's format. */
export const REQUIREMENTS_FILE = "requirements.txt";

export interface RequirementLine {
  /** 1-based line of the file where the requirement starts (continuations joined). */
  line: number;
  /** 1-based column of its first character. */
  column: number;
  /** The requirement as pip reads it: continuations joined, the comment and surrounding blanks removed. */
  text: string;
  /** The distribution it names, canonical (`my-pkg`); absent for option lines (`--extra-index-url ...`). */
  name?: string;
}

/** PEP 503's normalized form, as pip compares names. */
export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

const NAME = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)/;

/**
 * The requirements of a requirements.txt, one entry each, as pip splits them: a trailing `\`
 * joins the next line, ` #` starts a comment, blank lines are nothing.
 */
export function parseRequirements(text: string): RequirementLine[] {
  const out: RequirementLine[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let raw = lines[i]!;
    while (raw.endsWith("\\") && i + 1 < lines.length) raw = raw.slice(0, -1) + lines[++i]!;
    // pip's comment rule: `#` at the start or after whitespace (a URL's `#egg=` fragment stays).
    const uncommented = raw.replace(/(^|\s)#.*$/, "");
    const body = uncommented.trim();
    if (!body) continue;
    const column = uncommented.length - uncommented.trimStart().length + 1;
    const m = body.startsWith("-") ? undefined : NAME.exec(body);
    out.push({
      line: start + 1,
      column,
      text: body.replace(/\s+/g, " "),
      ...(m ? { name: canonicalName(m[1]!) } : {}),
    });
  }
  return out;
}

/**
 * The requirements as a set: order, comments, blank lines and spacing change nothing pip
 * installs, so they change nothing in the environment's identity either.
 */
export function normalizeRequirements(text: string): string[] {
  return [...new Set(parseRequirements(text).map(canonicalText))].sort();
}

/**
 * A requirement as pip compares it: the name canonical, no blanks around version operators
 * (`TdGreet >= 1.0` is `tdgreet>=1.0`). Option lines are left as they are.
 */
function canonicalText(r: RequirementLine): string {
  if (!r.name) return r.text;
  const rest = r.text.slice(NAME.exec(r.text)![1]!.length);
  return r.name + rest.replace(/\s*(===|==|!=|~=|<=|>=|<|>|,|;)\s*/g, "$1").trim();
}

/** What an environment is built for, beyond the requirements: the interpreter and the packages pinned under it. */
export interface EnvironmentBase {
  /** The stub's Python, `3.11.7`. */
  pythonVersion: string;
  /** Its extension ABI (`cpython-311-x86_64-linux-gnu`): compiled wheels are only valid for it. */
  soabi: string;
  /** The managed site-packages layered under the environment. */
  sitePackages: string;
  /** The stub's packages, as pip constraints (`numpy==1.26.4`). */
  pins: string[];
}

/** Bumped when the way environments are built changes, so old ones are not reused. */
const LAYOUT_VERSION = 1;

/** Content address of the environment for these requirements on this base. */
export function environmentKey(requirements: string[], base: EnvironmentBase): string {
  const identity = JSON.stringify({
    v: LAYOUT_VERSION,
    requirements,
    python: base.pythonVersion,
    soabi: base.soabi,
    sitePackages: base.sitePackages,
    pins: [...base.pins].sort(),
  });
  return createHash("sha256").update(identity).digest("hex").slice(0, 20);
}

/** The line of `requirements` that names `name` (pip's canonical comparison), if any. */
export function lineNaming(requirements: RequirementLine[], name: string): RequirementLine | undefined {
  const c = canonicalName(name);
  return requirements.find((r) => r.name === c);
}
