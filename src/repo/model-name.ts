/**
 * Which model folder names Triton 2.51 and its python backend can serve safely, as measured on
 * the real server (see docs/ARCHITECTURE.md, "Model names"):
 *
 * - The python backend starts every stub (the auto-complete one and each instance's) through
 *   `bash -c "exec <stub> <repository>/<model>/<version>/model.py ... <instance name>"`, unquoted.
 *   A space or `;` splits the command (the stub exits, Triton waits for it forever and an `up`
 *   with `--load-model=*` never gets ready); `$(...)`, backquotes and the like run as commands.
 * - The stub's embedded Python reads the model's path as ASCII: a non-ASCII name fails with
 *   UnicodeEncodeError.
 * - Triton's HTTP API does not decode a percent-encoded model name in the URL, while every HTTP
 *   client (triton-dev's, tritonclient) encodes what is not a URL's unreserved character: a model
 *   named `a@b` or `a+b` loads, but no request, load or readiness check reaches it. The same
 *   holds for ensembles, whatever backend.
 * - A folder name is at most 255 bytes on Linux; the staged snapshot `<model>@<generation>`
 *   needs room for its suffix.
 *
 * What is left: ASCII letters, digits, '_', '-' and '.' (a leading '.' is a hidden entry, never
 * listed as a model), at most MAX_MODEL_NAME_LENGTH characters.
 */

/** Linux's 255-byte folder names, less room for the staged snapshot's `@<generation>`. */
export const MAX_MODEL_NAME_LENGTH = 240;

const SERVABLE = /^[A-Za-z0-9_.-]+$/;
/** Characters bash acts on in an unquoted word (whitespace apart). */
const SHELL_SPECIAL = /[$`'"\\;&|<>(){}[\]*?!#~]/u;

/** A name as it can be shown in one line of a message: control characters escaped. */
export function shownName(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f]/gu, (c) => JSON.stringify(c).slice(1, -1));
}

function listed(chars: Iterable<string>): string {
  const shown = [...new Set(chars)].map((c) =>
    c === " " ? "a space" : /\s|[\u0000-\u001f\u007f]/u.test(c) ? JSON.stringify(c) : `'${c}'`,
  );
  return shown.length <= 6 ? shown.join(", ") : `${shown.slice(0, 6).join(", ")}, ...`;
}

/** Why `name` cannot be served safely, as a clause that follows "it", or undefined when it can. */
export function modelNameProblem(name: string): string | undefined {
  const chars = [...name];
  const nonAscii = chars.filter((c) => c > "\u007f");
  if (nonAscii.length) {
    return `has non-ASCII characters (${listed(nonAscii)}): the python backend's stub reads the model's path as ASCII and fails with UnicodeEncodeError, and Triton's HTTP API does not decode the percent-encoded name clients send`;
  }
  const shell = chars.filter((c) => /\s|[\u0000-\u001f\u007f]/u.test(c) || SHELL_SPECIAL.test(c));
  if (shell.length) {
    return `has ${listed(shell)}, which the shell acts on: the python backend starts the model's process through bash with the model's path unquoted on its command line, so the process never starts (or part of the name runs as a command) and the load never ends`;
  }
  const other = chars.filter((c) => !SERVABLE.test(c));
  if (other.length) {
    return `has ${listed(other)}: Triton's HTTP API does not decode a percent-encoded model name, and HTTP clients encode ${other.length === 1 ? "it" : "them"}, so no request reaches the model`;
  }
  if (chars.length > MAX_MODEL_NAME_LENGTH) {
    return `is ${chars.length} characters long: at most ${MAX_MODEL_NAME_LENGTH} fit in a folder name with the staged copy's '@<generation>' suffix`;
  }
  return undefined;
}

/**
 * A servable name close to `name` and not in `taken`: accents dropped, every run of other
 * characters replaced by '_', no leading '.', no trailing '_', shortened to the limit.
 */
export function servableName(name: string, taken: ReadonlySet<string> = new Set()): string {
  const base =
    name
      .normalize("NFKD")
      .replace(/\p{M}/gu, "")
      .replace(/[^A-Za-z0-9_.-]+/g, "_")
      .replace(/^[._]+/, "")
      .replace(/_+$/, "")
      .slice(0, MAX_MODEL_NAME_LENGTH) || "model";
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) {
    const suffix = `_${i}`;
    const candidate = base.slice(0, MAX_MODEL_NAME_LENGTH - suffix.length) + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}
