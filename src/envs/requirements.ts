import { createHash } from "node:crypto";

/** The file beside a python model's config.pbtxt that lists its packages, in pip's format. */
export const REQUIREMENTS_FILE = "requirements.txt";

/*
 * requirements.txt is read by a strict grammar of our own, not by pip's parser, and pip never
 * reads the user's file: the builder hands pip a file it writes from what was parsed here.
 *
 * Why not pip's own parser: every known way past the old checks was pip accepting more than the
 * checker understood (line breaks Python's splitlines honours, a comment whose trailing `\` pip
 * does not join, optparse's abbreviated options, shlex's backslash escapes, encodings chosen by
 * a BOM or a coding cookie, `${VAR}` expansion). Asking pip's parser means tracking its version's
 * quirks, running its Python on untrusted bytes, and still letting it open the files that -r/-c
 * name. A grammar that accepts exactly a safe subset, and a canonical ASCII rendering of it that
 * is the only thing pip sees, cannot drift: whatever this file does not understand is refused
 * with its line and column, and what pip installs is what the environment's identity names.
 *
 * Accepted, one per logical line:
 * - a requirement: a name, extras, version specifiers, an environment marker, `--hash` options;
 * - `-r`/`--requirement`, `-c`/`--constraint` with a relative path (the checker keeps them inside
 *   the model folder and inlines them);
 * - `-i`/`--index-url`, `--extra-index-url`, `-f`/`--find-links`, `--trusted-host` (the checker
 *   allows only values the user's pip configuration sets, or a find-links folder of the model);
 * - `--no-index`, `--prefer-binary`, `--pre`, `--only-binary`, `--no-binary`;
 * - comments (`#` at the start of a line or after a blank), blank lines, a trailing `\` that joins
 *   a requirement's next line (never on a line with a comment).
 * Only `\n` and `\r\n` end a line; the file is UTF-8 (a UTF-8 BOM is allowed) and every character
 * outside comments is printable ASCII.
 */

export interface Position {
  line: number;
  column: number;
}

export type GrammarCode =
  | "requirements-syntax"
  | "requirements-encoding"
  | "requirements-direct-reference"
  | "requirements-editable"
  | "requirements-install-location";

/** Something the grammar refuses, at its place in the file. */
export interface GrammarProblem extends Position {
  code: GrammarCode;
  message: string;
  hint: string;
}

export interface RequirementLine extends Position {
  /** The file it was read from, when known (a file that `-r` includes has its own lines). */
  file?: string;
  /** The requirement in canonical form (`tdgreet[x]>=1.0,<2; python_version >= "3.8"`), hashes left out. */
  text: string;
  /** The distribution it names, canonical (`my-pkg`). */
  name: string;
}

export interface Requirement extends RequirementLine {
  /** `--hash` values, `sha256:<hex>`, sorted. */
  hashes: string[];
}

export type SourceKind = "index-url" | "extra-index-url" | "find-links" | "trusted-host";

export type Directive = Position &
  (
    | { kind: SourceKind; option: string; value: string }
    | { kind: "requirement" | "constraint"; option: string; value: string; valueAt: Position }
    | { kind: "flag"; option: "--no-index" | "--prefer-binary" | "--pre" }
    | { kind: "binary"; option: "--only-binary" | "--no-binary"; value: string }
  );

export interface ParsedRequirements {
  requirements: Requirement[];
  directives: Directive[];
  problems: GrammarProblem[];
}

/** PEP 503's normalized form, as pip compares names. */
export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

const SYNTAX_HINT =
  'Write one requirement per line (`name[extra]>=1.0,<2; python_version >= "3.8"`, optionally `--hash=sha256:...`), or one of the options triton-dev passes on to pip (-r/-c of a file in the model folder, --index-url, --extra-index-url, --find-links, --trusted-host, --no-index, --prefer-binary, --pre, --only-binary, --no-binary), spelled out in full.';

/** Characters Python's str.splitlines() ends a line at, besides \n: pip splits there. */
const PY_LINE_BREAKS = new Map<string, string>([
  ["\r", "\\r (carriage return)"],
  ["\v", "\\v (vertical tab)"],
  ["\f", "\\f (form feed)"],
  ["\x1c", "\\x1c (file separator)"],
  ["\x1d", "\\x1d (group separator)"],
  ["\x1e", "\\x1e (record separator)"],
  ["\x85", "\\x85 (next line)"],
  ["\u2028", "\\u2028 (line separator)"],
  ["\u2029", "\\u2029 (paragraph separator)"],
]);

const BOMS: Array<[number[], string]> = [
  [[0x00, 0x00, 0xfe, 0xff], "UTF-32"],
  [[0xff, 0xfe, 0x00, 0x00], "UTF-32"],
  [[0xfe, 0xff], "UTF-16"],
  [[0xff, 0xfe], "UTF-16"],
];

/** pip's auto_decode: a coding cookie in a `#` line among the first two picks the encoding. */
const CODING = /coding[:=]\s*([-\w.]+)/;

/**
 * The file's bytes as text, or why not: pip would decode UTF-16/32 (by a BOM) or the encoding a
 * coding cookie names (utf-7 hides `+AAo-` newlines), so anything but UTF-8 is refused.
 */
export function decodeRequirements(bytes: Uint8Array): { text: string } | { problem: GrammarProblem } {
  const encoding = (message: string, hint: string, at: Position = { line: 1, column: 1 }) => ({
    problem: { ...at, code: "requirements-encoding" as const, message, hint },
  });
  for (const [bom, name] of BOMS) {
    if (bom.every((b, i) => bytes[i] === b)) {
      return encoding(
        `the file starts with a ${name} byte order mark: pip would read it as ${name}`,
        "Save requirements.txt as UTF-8.",
      );
    }
  }
  let body = bytes;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) body = bytes.subarray(3);
  const firstTwo = Buffer.from(body.subarray(0, 4096)).toString("latin1").split("\n").slice(0, 2);
  for (let i = 0; i < firstTwo.length; i++) {
    const m = firstTwo[i]!.startsWith("#") ? CODING.exec(firstTwo[i]!) : null;
    if (!m) continue;
    const name = m[1]!.toLowerCase().replace(/_/g, "-");
    if (name === "utf-8" || name === "utf8") continue;
    return encoding(
      `a coding declaration names ${m[1]}: pip would decode the file as ${m[1]}, not as the UTF-8 checked here`,
      "Remove the coding line (or make it `# -*- coding: utf-8 -*-`) and save the file as UTF-8.",
      { line: i + 1, column: m.index + 1 },
    );
  }
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(body) };
  } catch {
    // Where the first invalid byte is: decode line by line.
    const lines = Buffer.from(body).toString("latin1").split("\n");
    let line = 1;
    for (const l of lines) {
      try {
        new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(l, "latin1"));
      } catch {
        break;
      }
      line++;
    }
    return encoding("the file is not valid UTF-8", "Save requirements.txt as UTF-8.", { line, column: 1 });
  }
}

/** A logical line: continuations joined, the comment removed, each character's place kept. */
interface LogicalLine {
  text: string;
  pos: Position[];
  /** Where the line ends (for a problem at its end). */
  end: Position;
}

function describeChar(c: string): string {
  const known = PY_LINE_BREAKS.get(c);
  if (known) return known;
  const code = c.codePointAt(0)!;
  return `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
}

/**
 * Splits the text into logical lines, refusing what pip would split or join differently: line
 * breaks other than \n and \r\n, control characters, and a `\` continuation on a line with a
 * comment (pip does not join a line that is only a comment, but does join a requirement's
 * trailing comment: the two readings hide different lines).
 */
function logicalLines(text: string, problems: GrammarProblem[]): LogicalLine[] {
  const physical = text.split("\n");
  const out: LogicalLine[] = [];
  let joined: { text: string; pos: Position[] } | undefined;
  for (let i = 0; i < physical.length; i++) {
    let raw = physical[i]!;
    if (raw.endsWith("\r")) raw = raw.slice(0, -1);
    let bad = false;
    for (let c = 0; c < raw.length; c++) {
      const ch = raw[c]!;
      const code = ch.charCodeAt(0);
      if (ch === "\t") continue;
      if (code < 0x20 || code === 0x7f || (code >= 0x80 && code < 0xa0) || code === 0x2028 || code === 0x2029) {
        problems.push({
          line: i + 1,
          column: c + 1,
          code: "requirements-syntax",
          message: PY_LINE_BREAKS.has(ch)
            ? `${describeChar(ch)} here: pip ends a line at it, so what follows would be read as a line of its own`
            : `control character ${describeChar(ch)} here`,
          hint: "Use only \\n (or \\r\\n) to end lines, and no control characters; save the file again from a plain text editor.",
        });
        bad = true;
        break;
      }
    }
    if (bad) {
      joined = undefined;
      continue;
    }
    const comment = /(^|[ \t])#/.exec(raw);
    const continues = raw.endsWith("\\");
    if (continues && comment) {
      problems.push({
        line: i + 1,
        column: raw.length,
        code: "requirements-syntax",
        message:
          "a `\\` at the end of a line with a comment: pip joins the next line to some such lines and not to others",
        hint: "Remove the `\\` at the end of the comment.",
      });
      joined = undefined;
      continue;
    }
    const body = comment ? raw.slice(0, comment.index + comment[1]!.length) : continues ? raw.slice(0, -1) : raw;
    const cur = joined ?? { text: "", pos: [] };
    for (let c = 0; c < body.length; c++) cur.pos.push({ line: i + 1, column: c + 1 });
    cur.text += body;
    if (continues) {
      joined = cur;
      continue;
    }
    joined = undefined;
    if (cur.text.trim()) out.push({ ...cur, end: { line: i + 1, column: body.length + 1 } });
  }
  if (joined?.text.trim()) {
    const last = joined.pos[joined.pos.length - 1]!;
    out.push({ ...joined, end: { line: last.line, column: last.column + 1 } });
  }
  return out;
}

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?/;
const VERSION_OP = /^(===|==|!=|~=|<=|>=|<|>)/;
/** A version or a prefix match (`1.0.*`); it never starts with `-` (pip would take it for an option). */
const VERSION = /^[A-Za-z0-9*][A-Za-z0-9._*+!-]*/;
const MARKER_VARS = new Set([
  "python_version",
  "python_full_version",
  "os_name",
  "sys_platform",
  "platform_release",
  "platform_system",
  "platform_version",
  "platform_machine",
  "platform_python_implementation",
  "implementation_name",
  "implementation_version",
  "extra",
]);
const MARKER_OPS = /^(===|==|!=|~=|<=|>=|<|>|not\s+in\b|in\b)/;
/** A marker's quoted string: printable ASCII, no quotes, backslashes or `$`, no blank before a `-`. */
const MARKER_STRING = /^(["'])([A-Za-z0-9 ._+*!~,:;/<>=()@-]*)\1/;
/** What pip takes for an archive file (is_archive_file), whatever else the line says. */
const ARCHIVE = /^\S*\.(whl|zip|tar\.gz|tgz|tar|tar\.bz2|tbz|tar\.xz|txz|tlz|tar\.lz|tar\.lzma)(?=[\s;[]|$)/i;
const HASH = /^(sha256|sha384|sha512):([0-9a-f]+)$/;
const HASH_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

class LineError extends Error {
  constructor(
    readonly at: number,
    message: string,
    readonly code: GrammarCode = "requirements-syntax",
    readonly hint: string = SYNTAX_HINT,
  ) {
    super(message);
  }
}

/** A cursor over one logical line. */
class Cursor {
  i = 0;
  constructor(readonly s: string) {}
  ws(): boolean {
    const start = this.i;
    while (this.i < this.s.length && (this.s[this.i] === " " || this.s[this.i] === "\t")) this.i++;
    return this.i > start;
  }
  done(): boolean {
    return this.i >= this.s.length;
  }
  rest(): string {
    return this.s.slice(this.i);
  }
  take(re: RegExp): RegExpExecArray | null {
    const m = re.exec(this.rest());
    if (m) this.i += m[0].length;
    return m;
  }
  peek(t: string): boolean {
    return this.s.startsWith(t, this.i);
  }
  fail(message: string, at = this.i): never {
    throw new LineError(at, message);
  }
  /** The character here, for a message. */
  here(): string {
    return this.done() ? "the end of the line" : `\`${this.s[this.i]}\``;
  }
}

function parseMarker(c: Cursor): string {
  const or: string[] = [parseMarkerAnd(c)];
  for (;;) {
    const save = c.i;
    if (c.ws() && c.take(/^or(?=[\s(])/) && (c.ws() || c.peek("("))) {
      or.push(parseMarkerAnd(c));
      continue;
    }
    c.i = save;
    return or.join(" or ");
  }
}

function parseMarkerAnd(c: Cursor): string {
  const and: string[] = [parseMarkerExpr(c)];
  for (;;) {
    const save = c.i;
    if (c.ws() && c.take(/^and(?=[\s(])/) && (c.ws() || c.peek("("))) {
      and.push(parseMarkerExpr(c));
      continue;
    }
    c.i = save;
    return and.join(" and ");
  }
}

function parseMarkerExpr(c: Cursor): string {
  c.ws();
  if (c.take(/^\(/)) {
    const inner = parseMarker(c);
    c.ws();
    if (!c.take(/^\)/)) c.fail(`expected \`)\` closing the marker's \`(\`, found ${c.here()}`);
    return `(${inner})`;
  }
  const left = parseMarkerValue(c);
  c.ws();
  const op = c.take(MARKER_OPS);
  if (!op) c.fail(`expected a comparison (==, !=, <, <=, >, >=, ~=, in, not in), found ${c.here()}`);
  c.ws();
  const right = parseMarkerValue(c);
  return `${left} ${op[1]!.replace(/\s+/, " ")} ${right}`;
}

function parseMarkerValue(c: Cursor): string {
  const at = c.i;
  const s = c.take(MARKER_STRING);
  if (s) {
    if (/ -/.test(s[2]!))
      c.fail("a blank before `-` in a marker string: pip would read from there on as an option", at);
    return `"${s[2]}"`;
  }
  const v = c.take(/^[a-z_]+/);
  if (v && MARKER_VARS.has(v[0])) return v[0];
  c.fail(
    v
      ? `\`${v[0]}\` is not an environment marker variable`
      : `expected a marker variable (python_version, sys_platform, ...) or a quoted string of plain characters, found ${c.here()}`,
    at,
  );
}

function directReference(at: number, what: string): LineError {
  return new LineError(
    at,
    `${what}: pip would fetch or read it from there, which triton-dev does not check`,
    "requirements-direct-reference",
    "Name the package by its name and version (`name==1.0`); for a wheel of your own, put it in a folder of the model (wheels/), add `--find-links ./wheels` and name the package.",
  );
}

function parseRequirementLine(line: string): Omit<Requirement, "line" | "column" | "file"> {
  const c: Cursor = new Cursor(line);
  c.ws();
  const start = c.i;
  const head = line.slice(start);
  if (/^([a-z][a-z0-9+.-]*:|[./~])/i.test(head) || ARCHIVE.test(head)) {
    throw directReference(start, "a path or URL in place of a package name");
  }
  const name = c.take(NAME);
  if (!name) c.fail(`expected a package name, found ${c.here()}`);
  if (/^[/:+]/.test(c.rest())) throw directReference(start, "a path or URL in place of a package name");
  let text = canonicalName(name[0]);
  c.ws();
  if (c.take(/^\[/)) {
    const extras: string[] = [];
    c.ws();
    while (!c.peek("]")) {
      const e = c.take(NAME);
      if (!e) c.fail(`expected an extra's name, found ${c.here()}`);
      extras.push(canonicalName(e[0]));
      c.ws();
      if (c.take(/^,/)) {
        c.ws();
        continue;
      }
      if (!c.peek("]")) c.fail(`expected \`,\` or \`]\` in the extras, found ${c.here()}`);
    }
    c.i++;
    if (extras.length) text += `[${[...new Set(extras)].sort().join(",")}]`;
    c.ws();
  }
  if (c.peek("@")) throw directReference(c.i, "a direct reference (`name @ URL`)");
  const paren = c.take(/^\(/);
  const specs: string[] = [];
  if (paren) c.ws();
  for (let op = c.take(VERSION_OP); op; op = c.take(VERSION_OP)) {
    const opText = op[1]!;
    c.ws();
    const v = c.take(VERSION);
    if (!v) c.fail(`expected a version after \`${opText}\`, found ${c.here()}`);
    if (v[0].includes("*") && !/^(==|!=)$/.test(opText) && !/\.\*$/.test(v[0])) c.fail(`\`${v[0]}\` is not a version`);
    specs.push(opText + v[0]);
    const save = c.i;
    c.ws();
    if (c.take(/^,/)) {
      c.ws();
      if (!VERSION_OP.test(c.rest())) c.fail(`expected a version comparison after \`,\`, found ${c.here()}`);
      continue;
    }
    c.i = save;
    break;
  }
  if (paren) {
    c.ws();
    if (!c.take(/^\)/)) c.fail(`expected \`)\` closing the version's \`(\`, found ${c.here()}`);
  }
  text += specs.join(",");
  const beforeMarker = c.i;
  c.ws();
  if (c.take(/^;/)) {
    c.ws();
    text += `; ${parseMarker(c)}`;
  } else {
    c.i = beforeMarker;
  }
  const hashes: string[] = [];
  for (;;) {
    const gap = c.ws();
    if (c.done()) break;
    const at = c.i;
    if (!gap) c.fail(`expected a blank, \`;\` with a marker, or the end of the line, found ${c.here()}`);
    if (!c.peek("-")) c.fail(`expected \`--hash=...\` or the end of the line, found ${c.here()}`);
    const word = c.take(/^\S+/)![0];
    let value: string | undefined;
    if (word.startsWith("--hash=")) value = word.slice("--hash=".length);
    else if (word === "--hash") {
      c.ws();
      value = c.take(/^\S+/)?.[0];
    } else {
      throw new LineError(
        at,
        `\`${word}\` on a requirement's line: only \`--hash=sha256:...\` may follow a requirement`,
        "requirements-syntax",
        "Remove the option (pip would apply it to this requirement), or put a pip option the file may carry on a line of its own.",
      );
    }
    const h = value ? HASH.exec(value) : null;
    if (!h || h[2]!.length !== HASH_LENGTH[h[1]!]) {
      c.fail("expected `--hash=sha256:<64 hex digits>` (or sha384, sha512)", at);
    }
    hashes.push(value!);
  }
  return { text, name: canonicalName(name[0]), hashes: [...new Set(hashes)].sort() };
}

interface OptionSpec {
  kind: "source" | "include" | "flag" | "binary" | "editable" | "location" | "hash";
  /** The canonical long name. */
  long: string;
  short?: string;
  source?: SourceKind;
  include?: "requirement" | "constraint";
}

const OPTION_SPECS: OptionSpec[] = [
  { kind: "source", long: "--index-url", short: "-i", source: "index-url" },
  { kind: "source", long: "--extra-index-url", source: "extra-index-url" },
  { kind: "source", long: "--find-links", short: "-f", source: "find-links" },
  { kind: "source", long: "--trusted-host", source: "trusted-host" },
  { kind: "include", long: "--requirement", short: "-r", include: "requirement" },
  { kind: "include", long: "--constraint", short: "-c", include: "constraint" },
  { kind: "flag", long: "--no-index" },
  { kind: "flag", long: "--prefer-binary" },
  { kind: "flag", long: "--pre" },
  { kind: "binary", long: "--only-binary" },
  { kind: "binary", long: "--no-binary" },
  { kind: "editable", long: "--editable", short: "-e" },
  { kind: "location", long: "--target", short: "-t" },
  { kind: "location", long: "--prefix" },
  { kind: "location", long: "--root" },
  { kind: "location", long: "--src" },
  { kind: "location", long: "--user" },
  { kind: "hash", long: "--hash" },
];

/**
 * pip's other requirements-file options: a word that abbreviates one of these (optparse takes
 * any unique prefix) is said to be that option.
 */
const PIP_OTHER_OPTIONS = ["--use-feature", "--global-option", "--config-settings", "--require-hashes"];

/** The option pip would take `word` for (optparse: exact, or the one long option it is a prefix of). */
function pipWouldRead(word: string): string | undefined {
  if (!word.startsWith("--") || word.length < 3) return undefined;
  const all = [...OPTION_SPECS.map((o) => o.long), ...PIP_OTHER_OPTIONS];
  const hits = all.filter((o) => o.startsWith(word));
  return hits.length === 1 ? hits[0] : undefined;
}

/** An option's value: URL and path characters only (no quotes, `\`, `$`, `#`). */
const VALUE = /^[A-Za-z0-9._~:/?[\]@!&()*+,;=%-]+$/;

type ParsedOption =
  | { kind: SourceKind | "requirement" | "constraint"; option: string; value: string; valueAt: number }
  | { kind: "flag"; option: "--no-index" | "--prefer-binary" | "--pre" }
  | { kind: "binary"; option: "--only-binary" | "--no-binary"; value: string };

function parseOptionLine(line: string): ParsedOption {
  const c: Cursor = new Cursor(line);
  c.ws();
  const at = c.i;
  const word = c.take(/^[^\s=]+/)![0];
  const spec = OPTION_SPECS.find((o) => o.long === word || o.short === word);
  if (!spec) {
    const meant = pipWouldRead(word);
    throw new LineError(
      at,
      meant
        ? `\`${word}\` is not spelled out: pip would read it as ${meant}, which triton-dev does not take in this form`
        : `\`${word}\` is not an option triton-dev passes on to pip`,
      "requirements-syntax",
      meant ? `Write ${meant} in full if it is one the file may carry; otherwise remove the line.` : SYNTAX_HINT,
    );
  }
  if (spec.kind === "editable") {
    throw new LineError(
      at,
      `${word} installs a project in place (editable), which the model's environment would then depend on`,
      "requirements-editable",
      "List the package by name (a wheel of your own in a folder of the model, found through `--find-links ./wheels`) instead.",
    );
  }
  if (spec.kind === "location") {
    throw new LineError(
      at,
      `${word} would have pip install somewhere else than the model's environment`,
      "requirements-install-location",
      "Remove it: triton-dev installs the model's packages into an environment of its own.",
    );
  }
  if (spec.kind === "hash") {
    throw new LineError(at, "`--hash` on a line of its own: it belongs on a requirement's line");
  }
  if (spec.kind === "flag") {
    c.ws();
    if (!c.done()) c.fail(`${word} takes no value; found ${c.here()}`);
    return { kind: "flag", option: spec.long as "--no-index" | "--prefer-binary" | "--pre" };
  }
  if (c.peek("=")) {
    if (word !== spec.long)
      c.fail(`write \`${word} VALUE\` (with a blank): \`=\` after a short option is part of the value`);
    c.i++;
  } else if (!c.ws()) {
    c.fail(`expected a blank or \`=\` and ${word}'s value, found ${c.here()}`);
  }
  const valueAt = c.i;
  const value = c.take(/^\S+/)?.[0];
  if (!value) c.fail(`${word} needs a value`);
  if (!VALUE.test(value)) {
    c.fail(
      `${word}'s value \`${value}\` has characters pip would read otherwise (quotes, \`\\\`, \`$\`, \`#\`, non-ASCII)`,
      valueAt,
    );
  }
  c.ws();
  if (!c.done()) c.fail(`one option per line: found ${c.here()} after ${word}'s value`);
  if (spec.kind === "binary") {
    if (!/^(:all:|:none:|[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*)$/.test(value))
      c.fail(`${word} takes :all:, :none: or package names separated by commas`, valueAt);
    return { kind: "binary", option: spec.long as "--only-binary" | "--no-binary", value };
  }
  if (spec.kind === "include") return { kind: spec.include!, option: word, value, valueAt };
  return { kind: spec.source!, option: word, value, valueAt };
}

/** Parses the text of a requirements file by the grammar above; what it refuses is in `problems`. */
export function parseRequirementsText(text: string, file?: string): ParsedRequirements {
  const out: ParsedRequirements = { requirements: [], directives: [], problems: [] };
  for (const l of logicalLines(text, out.problems)) {
    const lead = l.text.length - l.text.trimStart().length;
    const where = (i: number): Position => l.pos[i] ?? l.end;
    try {
      // Outside comments only printable ASCII: a name, a version or a URL needs nothing else.
      for (let i = 0; i < l.text.length; i++) {
        const ch = l.text[i]!;
        if (ch !== "\t" && (ch < " " || ch > "~")) throw new LineError(i, `${describeChar(ch)} outside a comment`);
        if (ch === "\\") throw new LineError(i, "`\\` inside a line: pip reads it as an escape or a line join");
        if (ch === "$") throw new LineError(i, "`$` here: pip expands `${VAR}` from its environment");
      }
      if (l.text[lead] === "-") {
        const d = parseOptionLine(l.text);
        if (d.kind === "requirement" || d.kind === "constraint") {
          out.directives.push({ ...d, ...where(lead), valueAt: where(d.valueAt) });
        } else if (d.kind === "flag" || d.kind === "binary") {
          out.directives.push({ ...d, ...where(lead) });
        } else {
          const { valueAt: _unused, ...source } = d;
          out.directives.push({ ...source, kind: d.kind, ...where(lead) });
        }
      } else {
        out.requirements.push({ ...parseRequirementLine(l.text), ...where(lead), ...(file ? { file } : {}) });
      }
    } catch (err) {
      if (!(err instanceof LineError)) throw err;
      out.problems.push({ ...where(err.at), code: err.code, message: err.message, hint: err.hint });
    }
  }
  return out;
}

/** The requirements of a text, one entry each (for tests and pip's failures: which line names a package). */
export function parseRequirements(text: string): Requirement[] {
  return parseRequirementsText(text).requirements;
}

/** A requirement as the environment's identity and pip's file name it: with its hashes. */
export function requirementSpec(r: Requirement): string {
  return [r.text, ...r.hashes.map((h) => `--hash=${h}`)].join(" ");
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

/**
 * Bumped when the way environments are built changes, so old ones are not reused. 2: the identity
 * is the parsed requirements (with the files -r/-c include and every option), and pip reads only
 * the file written from them; an environment keyed by version 1 may have been built from options
 * its key did not show.
 */
const LAYOUT_VERSION = 2;

/** Content address of the environment for these requirements (an identity list) on this base. */
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
export function lineNaming<T extends RequirementLine>(requirements: T[], name: string): T | undefined {
  const c = canonicalName(name);
  return requirements.find((r) => r.name === c);
}
