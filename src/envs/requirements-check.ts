import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { EnvFinding } from "./finding.js";
import {
  decodeRequirements,
  parseRequirementsText,
  requirementSpec,
  type Directive,
  type Position,
  type Requirement,
  type SourceKind,
} from "./requirements.js";

/**
 * What a requirements.txt may ask of pip, decided before pip runs (lint reports it, `up` refuses
 * it), and the one reading of the file that lint, the language server and `up`'s environment
 * identity share. The file is parsed by the strict grammar of requirements.ts; the files it
 * includes with -r/-c must lie in the model folder and are parsed the same way and inlined, so pip
 * is handed only the file the builder writes from `resolved`, never the user's.
 *
 * Stable codes:
 * - `requirements-syntax`, `requirements-encoding`, `requirements-direct-reference`: what the
 *   grammar does not accept (requirements.ts);
 * - `requirements-index`: --index-url/-i, --extra-index-url, --find-links/-f, --trusted-host,
 *   unless the user's own pip configuration (PIP_* variables, pip.conf) already sets that value
 *   (a find-links folder inside the model is the model's own);
 * - `requirements-outside-model`: -r/-c (or the requirements.txt itself, through a link) leaving
 *   the model folder, links followed;
 * - `requirements-unreadable`: a file that is not a regular file (a FIFO, a device), too large,
 *   or cannot be read: opened without blocking, never read past the size limit;
 * - `requirements-editable`: -e/--editable;
 * - `requirements-install-location`: --target/-t, --prefix, --root, --user, --src.
 * Nothing is read from a file outside the model folder, and nothing of one is ever quoted.
 */

export type PipSourceOption = "index-url" | "extra-index-url" | "find-links" | "trusted-host";

/** The sources the user's pip configuration names: a requirements file may repeat them. */
export interface PipSources {
  /** Index URLs (index-url and extra-index-url), normalized. */
  indexes: Set<string>;
  findLinks: Set<string>;
  trustedHosts: Set<string>;
  /** Where each was found (`PIP_INDEX_URL`, `/etc/pip.conf`), for messages. */
  origin: Map<string, string>;
}

export interface PipConfigSources {
  env?: NodeJS.ProcessEnv;
  home?: string;
  /** The Python prefix pip runs under: its `pip.conf` is pip's site configuration. */
  sitePrefix?: string;
  readFile?: (file: string) => string | undefined;
  platform?: NodeJS.Platform;
}

function readQuietly(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** A URL as pip would fetch it, for comparing: no trailing slash, scheme and host lowercase. */
export function normalizeSource(value: string): string {
  const v = value.trim();
  try {
    const u = new URL(v);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}${u.search}`.toLowerCase();
  } catch {
    return v.replace(/\/+$/, "");
  }
}

/** pip's configuration files, in its order (global, user, site), and PIP_CONFIG_FILE. */
function configFiles(o: Required<Omit<PipConfigSources, "sitePrefix">> & { sitePrefix?: string }): string[] {
  if (o.env.PIP_CONFIG_FILE === os.devNull) return [];
  const files: string[] = [];
  if (o.platform === "darwin") files.push("/Library/Application Support/pip/pip.conf");
  const xdgDirs = (o.env.XDG_CONFIG_DIRS || "/etc/xdg").split(":").filter(Boolean);
  files.push(...xdgDirs.map((d) => path.join(d, "pip", "pip.conf")), "/etc/pip.conf");
  files.push(path.join(o.home, ".pip", "pip.conf"));
  if (o.platform === "darwin") files.push(path.join(o.home, "Library", "Application Support", "pip", "pip.conf"));
  files.push(path.join(o.env.XDG_CONFIG_HOME || path.join(o.home, ".config"), "pip", "pip.conf"));
  if (o.sitePrefix) files.push(path.join(o.sitePrefix, "pip.conf"));
  if (o.env.PIP_CONFIG_FILE) files.push(o.env.PIP_CONFIG_FILE);
  return files;
}

/** The [global] and [install] values of an ini file pip reads (continuation lines joined). */
function iniValues(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let section = "";
  let key: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    if (/^\s*[#;]/.test(raw) || !raw.trim()) continue;
    const sec = /^\s*\[([^\]]+)\]/.exec(raw);
    if (sec) {
      section = sec[1]!.trim().toLowerCase();
      key = undefined;
      continue;
    }
    if (section !== "global" && section !== "install") continue;
    if (/^\s/.test(raw) && key) {
      out.set(key, `${out.get(key) ?? ""} ${raw.trim()}`);
      continue;
    }
    const kv = /^([^=:]+)[=:](.*)$/.exec(raw);
    if (!kv) continue;
    key = kv[1]!.trim().toLowerCase().replace(/_/g, "-");
    out.set(key, kv[2]!.trim());
  }
  return out;
}

/** The index, find-links and trusted-host values the user's pip configuration sets. */
export function userPipSources(o: PipConfigSources = {}): PipSources {
  const env = o.env ?? process.env;
  const read = o.readFile ?? readQuietly;
  const sources: PipSources = { indexes: new Set(), findLinks: new Set(), trustedHosts: new Set(), origin: new Map() };
  const add = (option: PipSourceOption, values: string, origin: string) => {
    for (const v of values.split(/\s+/).filter(Boolean)) {
      const n = option === "trusted-host" ? v.toLowerCase() : normalizeSource(v);
      const set =
        option === "find-links"
          ? sources.findLinks
          : option === "trusted-host"
            ? sources.trustedHosts
            : sources.indexes;
      set.add(n);
      sources.origin.set(`${option === "extra-index-url" ? "index-url" : option} ${n}`, origin);
    }
  };
  const files = configFiles({
    env,
    home: o.home ?? os.homedir(),
    readFile: read,
    platform: o.platform ?? process.platform,
    ...(o.sitePrefix ? { sitePrefix: o.sitePrefix } : {}),
  });
  for (const file of files) {
    const text = read(file);
    if (text === undefined) continue;
    const values = iniValues(text);
    for (const option of ["index-url", "extra-index-url", "find-links", "trusted-host"] as const) {
      const v = values.get(option);
      if (v) add(option, v, file);
    }
  }
  for (const option of ["index-url", "extra-index-url", "find-links", "trusted-host"] as const) {
    const name = `PIP_${option.toUpperCase().replace(/-/g, "_")}`;
    const v = env[name];
    if (v) add(option, v, name);
  }
  return sources;
}

/** An index or find-links source a requirements file uses that the user's configuration allows: `up` names it. */
export interface AllowedSource {
  file: string;
  line: number;
  option: PipSourceOption;
  value: string;
  /** Where the user's configuration sets it. */
  origin: string;
}

/** The requirements as pip will be given them, every included file inlined. */
export interface ResolvedRequirements {
  requirements: Requirement[];
  constraints: Requirement[];
  /** Options for pip's file, canonical and in the files' order (a find-links folder of the model as its real path). */
  pipOptions: string[];
  /**
   * The environment's identity: every requirement, constraint and option, canonical, sorted and
   * without repeats (order, comments and spacing change nothing pip installs). A find-links
   * folder of the model is named by its path in the model and the hash of the files in it.
   */
  identity: string[];
}

export interface RequirementsCheck {
  diagnostics: EnvFinding[];
  allowed: AllowedSource[];
  /** Present when nothing was refused: what pip installs and the environment is named by. */
  resolved?: ResolvedRequirements;
}

/** More than any real requirements file (pip-compile's output with hashes for hundreds of packages). */
export const MAX_REQUIREMENTS_BYTES = 1024 * 1024;

const KINDS: Array<[(s: fs.Stats) => boolean, string]> = [
  [(s) => s.isFIFO(), "a FIFO"],
  [(s) => s.isCharacterDevice(), "a character device"],
  [(s) => s.isBlockDevice(), "a block device"],
  [(s) => s.isSocket(), "a socket"],
  [(s) => s.isDirectory(), "a folder"],
];

type Refusal = { message: string; hint: string };

const UNREADABLE_HINT = "Make it a regular file you can read, then run the command again.";

/**
 * Opens `file` only as a regular file: a FIFO or a device is refused without blocking
 * (O_NONBLOCK) and without reading, and a link is not followed here (the caller resolved it and
 * checked where it leads). Calls `use` with the descriptor and its size, and closes it.
 */
function withRegularFile<T>(file: string, use: (fd: number, size: number) => T | Refusal): T | Refusal {
  let fd: number;
  try {
    fd = fs.openSync(
      file,
      fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW | fs.constants.O_NOCTTY,
    );
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      message:
        code === "ELOOP" ? "became a symbolic link while it was checked" : `cannot be opened (${code ?? String(err)})`,
      hint: UNREADABLE_HINT,
    };
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const kind = KINDS.find(([is]) => is(st))?.[1] ?? "not a regular file";
      return { message: `is ${kind}, not a regular file`, hint: "Make it a regular file in the model folder." };
    }
    return use(fd, st.size);
  } catch (err) {
    return { message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, hint: UNREADABLE_HINT };
  } finally {
    fs.closeSync(fd);
  }
}

/** A requirements file's bytes, when it is a regular file no larger than `limit`. */
export function readRequirementsBytes(file: string, limit = MAX_REQUIREMENTS_BYTES): { bytes: Buffer } | Refusal {
  const tooLarge: Refusal = {
    message: `is larger than ${Math.round(limit / 1024)} KiB`,
    hint: "A requirements file lists package names and versions; keep it under that size.",
  };
  return withRegularFile(file, (fd, size): { bytes: Buffer } | Refusal => {
    if (size > limit) return tooLarge;
    // The file may grow after fstat: never read more than one byte past the limit.
    const buf = Buffer.alloc(limit + 1);
    let n = 0;
    for (let r = -1; r !== 0 && n <= limit; n += r) r = fs.readSync(fd, buf, n, buf.length - n, null);
    return n > limit ? tooLarge : { bytes: buf.subarray(0, n) };
  });
}

/** sha256 of a regular file, streamed (a wheel may be large). */
function fileDigest(file: string): string | undefined {
  const r = withRegularFile(file, (fd) => {
    const h = createHash("sha256");
    const buf = Buffer.alloc(1 << 20);
    for (let n = fs.readSync(fd, buf, 0, buf.length, null); n > 0; n = fs.readSync(fd, buf, 0, buf.length, null)) {
      h.update(buf.subarray(0, n));
    }
    return { digest: h.digest("hex") };
  });
  return "digest" in r ? r.digest : undefined;
}

/** Whether `p` (made real where it exists) lies inside `dir` (made real). */
function inside(dir: string, p: string): boolean {
  const real = (x: string): string => {
    try {
      return fs.realpathSync(x);
    } catch {
      // Not there (yet): its nearest existing parent decides where it would be.
      const parent = path.dirname(x);
      return parent === x ? x : path.join(real(parent), path.basename(x));
    }
  };
  const rel = path.relative(real(dir), real(p));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * The files directly in a find-links folder of the model, by name and content: pip picks wheels
 * from there, so they are part of what the environment is built from.
 */
function folderDigest(dir: string): string {
  const h = createHash("sha256");
  let names: string[];
  try {
    names = fs.readdirSync(dir).sort();
  } catch {
    return "missing";
  }
  for (const name of names) {
    let entry = path.join(dir, name);
    try {
      entry = fs.realpathSync(entry);
    } catch {
      continue; // a dangling link: pip finds nothing there either
    }
    const digest = fileDigest(entry);
    if (digest) h.update(`${name}\0${digest}\0`);
  }
  return h.digest("hex").slice(0, 16);
}

export interface CheckOptions {
  /** The model the file belongs to, for the diagnostics. */
  model?: string;
  /** What the user's pip configuration allows (default: read from this machine). */
  pip?: PipSources;
  env?: NodeJS.ProcessEnv;
  /**
   * The user's model folder, when `modelDir` is a staged copy of it: staging copies the files
   * that links point at, so a link in the user's folder that leaves it (`common.txt ->
   * /etc/shadow`) is judged there, where it is still a link.
   */
  userDir?: string;
}

const MAX_DEPTH = 10;

const SOURCE_HINT = (kind: SourceKind) =>
  `Remove the line, or set it in your own pip configuration (${pipVariable(kind)} or pip.conf) if you mean to install from it; then the line is allowed and \`up\` names it.`;

/**
 * Checks a model's requirements.txt and the files inside the model folder it includes with -r/-c
 * (each at its own lines), and resolves what pip is to install. `file` is read; a file outside
 * `modelDir` is never opened.
 */
export function checkRequirementsFile(file: string, modelDir: string, o: CheckOptions = {}): RequirementsCheck {
  const reading = startReading(modelDir, o);
  visit(reading, file, 0, false);
  return finishReading(reading);
}

type Report = (f: string, at: Position, code: EnvFinding["code"], message: string, hint: string) => void;

/** One check of a requirements.txt as it follows -r/-c: the findings and what pip is to be given. */
interface Reading {
  modelDir: string;
  pip: PipSources;
  result: RequirementsCheck;
  requirements: Requirement[];
  constraints: Requirement[];
  pipOptions: string[];
  identity: Set<string>;
  /** Real paths already read: a file included twice, or in a loop, is read once. */
  seen: Set<string>;
  within: (p: string) => boolean;
  report: Report;
}

/** The -r/-c line that names an included file: problems reading that file are reported there. */
interface IncludedFrom {
  file: string;
  at: Position;
}

function startReading(modelDir: string, o: CheckOptions): Reading {
  const pip = o.pip ?? userPipSources({ env: o.env ?? process.env });
  const result: RequirementsCheck = { diagnostics: [], allowed: [] };
  const within = (p: string): boolean => {
    if (!inside(modelDir, p)) return false;
    if (!o.userDir) return true;
    const rel = path.relative(modelDir, p);
    return inside(o.userDir, path.join(o.userDir, rel));
  };
  const report: Report = (f, at, code, message, hint) => {
    result.diagnostics.push({
      severity: "error",
      file: f,
      line: at.line,
      column: at.column,
      message,
      hint,
      ...(o.model ? { model: o.model } : {}),
      code,
    });
  };
  return {
    modelDir,
    pip,
    result,
    requirements: [],
    constraints: [],
    pipOptions: [],
    identity: new Set(),
    seen: new Set(),
    within,
    report,
  };
}

function finishReading(r: Reading): RequirementsCheck {
  const { result } = r;
  // In the file's order (the grammar's findings and the options' come from two passes).
  const files = [...new Set(result.diagnostics.map((d) => d.file))];
  result.diagnostics.sort(
    (a, b) =>
      files.indexOf(a.file) - files.indexOf(b.file) ||
      (a.line ?? 0) - (b.line ?? 0) ||
      (a.column ?? 0) - (b.column ?? 0),
  );
  if (result.diagnostics.length === 0) {
    const { requirements, constraints, pipOptions, identity } = r;
    result.resolved = { requirements, constraints, pipOptions, identity: [...identity].sort() };
  }
  return result;
}

function visit(r: Reading, f: string, depth: number, asConstraint: boolean, from?: IncludedFrom): void {
  const text = readIncluded(r, f, depth, from);
  if (text === undefined) return;
  const parsed = parseRequirementsText(text, f);
  for (const p of parsed.problems) r.report(f, p, p.code, p.message, p.hint);
  const base = path.dirname(f);
  for (const d of parsed.directives) {
    switch (d.kind) {
      case "requirement":
      case "constraint":
        include(r, f, base, d, depth, asConstraint);
        break;
      case "flag":
        r.pipOptions.push(d.option);
        r.identity.add(d.option);
        break;
      case "binary":
        r.pipOptions.push(`${d.option} ${d.value}`);
        r.identity.add(`${d.option} ${d.value}`);
        break;
      default:
        sourceOption(r, f, base, d);
    }
  }
  for (const req of parsed.requirements) {
    (asConstraint ? r.constraints : r.requirements).push(req);
    r.identity.add(`${asConstraint ? "-c " : ""}${requirementSpec(req)}`);
  }
}

/**
 * The text of `f`, when it lies in the model folder, was not read before, is not nested too
 * deep, and is a readable regular file in the grammar's encoding; otherwise reported, undefined.
 */
function readIncluded(r: Reading, f: string, depth: number, from?: IncludedFrom): string | undefined {
  const { modelDir, report } = r;
  const here = from ?? { file: f, at: { line: 1, column: 1 } };
  if (!r.within(f)) {
    report(
      here.file,
      here.at,
      "requirements-outside-model",
      from
        ? `names a file outside the model folder ${modelDir}: pip would read it`
        : `${path.basename(f)} is a link that leads out of the model folder ${modelDir}`,
      "Keep the requirements the model needs in files inside its folder (the folder is what is staged and served), or copy them into this requirements.txt.",
    );
    return undefined;
  }
  let real: string;
  try {
    real = fs.realpathSync(f);
  } catch (err) {
    report(
      here.file,
      here.at,
      "requirements-unreadable",
      `${from ? `names ${path.relative(modelDir, f)}, which ` : ""}cannot be opened (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      "Create the file in the model folder, or remove the line.",
    );
    return undefined;
  }
  if (r.seen.has(real)) return undefined;
  if (depth > MAX_DEPTH) {
    report(
      here.file,
      here.at,
      "requirements-syntax",
      `-r/-c nest more than ${MAX_DEPTH} files deep`,
      "Include fewer levels of files.",
    );
    return undefined;
  }
  r.seen.add(real);
  const read = readRequirementsBytes(real);
  if (!("bytes" in read)) {
    report(
      here.file,
      here.at,
      "requirements-unreadable",
      `${from ? `${path.relative(modelDir, f)} ` : `${path.basename(f)} `}${read.message}`,
      read.hint,
    );
    return undefined;
  }
  const decoded = decodeRequirements(read.bytes);
  if ("problem" in decoded) {
    const p = decoded.problem;
    report(f, p, p.code, p.message, p.hint);
    return undefined;
  }
  return decoded.text;
}

type IncludeLine = Extract<Directive, { kind: "requirement" | "constraint" }>;
type SourceLine = Extract<Directive, { kind: SourceKind }>;

/** A -r/-c line of `f`: the file it names is read in place, if it is a file of the model's. */
function include(r: Reading, f: string, base: string, d: IncludeLine, depth: number, asConstraint: boolean): void {
  if (/^[a-z][a-z0-9+.-]*:/i.test(d.value)) {
    r.report(
      f,
      d,
      "requirements-outside-model",
      `${d.option} names a URL: pip would read requirements from outside the model folder`,
      "Copy what it lists into this requirements.txt.",
    );
    return;
  }
  if (path.isAbsolute(d.value) || d.value.startsWith("~")) {
    r.report(
      f,
      d,
      "requirements-outside-model",
      `${d.option} names an absolute path: pip would read a file outside the model folder`,
      "Name a file inside the model folder by a path relative to this file, or copy what it lists here.",
    );
    return;
  }
  visit(r, path.resolve(base, d.value), depth + 1, asConstraint || d.kind === "constraint", { file: f, at: d });
}

/**
 * An index, find-links or trusted-host line of `f`: kept when it names the model's own wheels or
 * what the user's pip configuration already uses, refused otherwise.
 */
function sourceOption(r: Reading, f: string, base: string, d: SourceLine): void {
  const option = `--${d.kind}`;
  const remote = /^https?:\/\//i.test(d.value);
  if (modelFindLinks(r, base, d, option)) return;
  const { pip } = r;
  const n = d.kind === "trusted-host" ? d.value.toLowerCase() : normalizeSource(d.value);
  const set = d.kind === "find-links" ? pip.findLinks : d.kind === "trusted-host" ? pip.trustedHosts : pip.indexes;
  const originKey = `${d.kind === "extra-index-url" ? "index-url" : d.kind} ${n}`;
  const wellFormed =
    d.kind === "trusted-host" ? /^[a-z0-9.-]+(:\d+)?$/i.test(d.value) : remote || d.kind === "find-links";
  if (wellFormed && set.has(n)) {
    r.result.allowed.push({
      file: f,
      line: d.line,
      option: d.kind,
      value: d.value,
      origin: pip.origin.get(originKey) ?? "pip configuration",
    });
    r.pipOptions.push(`${option} ${d.value}`);
    r.identity.add(`${option} ${n}`);
    return;
  }
  r.report(
    f,
    d,
    "requirements-index",
    `${d.option} points pip at ${d.kind === "trusted-host" ? "a host" : "a source"} your pip configuration does not use: packages would come from there`,
    SOURCE_HINT(d.kind),
  );
}

/** Whether `d` is a --find-links of a folder inside the model; if so, it is kept. */
function modelFindLinks(r: Reading, base: string, d: SourceLine, option: string): boolean {
  if (d.kind !== "find-links" || /^[a-z][a-z0-9+.-]*:/i.test(d.value) || path.isAbsolute(d.value)) return false;
  const folder = path.resolve(base, d.value);
  if (!r.within(folder)) return false;
  // The model's own wheels: pip gets the folder's real path, the identity its place and content.
  let realFolder = folder;
  try {
    realFolder = fs.realpathSync(folder);
  } catch {
    // pip finds nothing there and says so.
  }
  r.pipOptions.push(`${option} ${realFolder}`);
  r.identity.add(`${option} ./${path.relative(r.modelDir, folder) || "."} ${folderDigest(realFolder)}`);
  return true;
}

/** The file pip reads: what was resolved, canonical, ASCII, one entry a line. */
export function pipRequirementsText(r: ResolvedRequirements): string {
  return [...r.pipOptions, ...r.requirements.map(requirementSpec)].map((l) => `${l}\n`).join("");
}

function pipVariable(kind: PipSourceOption): string {
  return `PIP_${kind.toUpperCase().replace(/-/g, "_")}`;
}
