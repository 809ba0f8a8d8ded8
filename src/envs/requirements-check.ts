import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Diagnostic } from "../repo/diagnostics.js";

/**
 * What a requirements.txt may ask of pip, checked before pip reads it (lint reports it, `up`
 * refuses it): pip follows the file's options wherever they point, so a model folder could have
 * it install from another index, read a file anywhere on the machine (and print its first line
 * in its error), or install somewhere else than the model's environment.
 *
 * Stable codes:
 * - `requirements-index`: --index-url/-i, --extra-index-url, --find-links/-f, --trusted-host,
 *   unless the user's own pip configuration (PIP_* variables, pip.conf) already sets that value;
 * - `requirements-outside-model`: -r/-c and paths (a wheel, a folder, a file: URL) that leave
 *   the model folder (links followed);
 * - `requirements-editable`: -e/--editable (installs a checkout in place, outside the environment);
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

export interface RequirementsCheck {
  diagnostics: Diagnostic[];
  allowed: AllowedSource[];
}

interface Token {
  text: string;
  /** 0-based offset in the logical line. */
  at: number;
}

/** A logical line of a requirements file: continuations joined, the comment removed, each character's place kept. */
interface LogicalLine {
  text: string;
  /** For each character of `text`: its 1-based line and column in the file. */
  pos: Array<{ line: number; column: number }>;
}

function logicalLines(text: string): LogicalLine[] {
  const physical = text.split(/\r?\n/);
  const out: LogicalLine[] = [];
  for (let i = 0; i < physical.length; i++) {
    let s = "";
    const pos: LogicalLine["pos"] = [];
    const append = (l: string, n: number) => {
      for (let c = 0; c < l.length; c++) pos.push({ line: n + 1, column: c + 1 });
      s += l;
    };
    let raw = physical[i]!;
    while (raw.endsWith("\\") && i + 1 < physical.length) {
      append(raw.slice(0, -1), i);
      raw = physical[++i]!;
    }
    append(raw, i);
    const comment = /(^|\s)#/.exec(s);
    const body = comment ? s.slice(0, comment.index + comment[1]!.length) : s;
    if (body.trim()) out.push({ text: body, pos: pos.slice(0, body.length) });
  }
  return out;
}

/** Whitespace-separated words with pip's (shlex's) quoting, each with its offset. */
function tokens(line: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < line.length) {
    while (i < line.length && /\s/.test(line[i]!)) i++;
    if (i >= line.length) break;
    const at = i;
    let text = "";
    while (i < line.length && !/\s/.test(line[i]!)) {
      const q = line[i]!;
      if (q === '"' || q === "'") {
        const end = line.indexOf(q, i + 1);
        const stop = end < 0 ? line.length : end;
        text += line.slice(i + 1, stop);
        i = stop + 1;
      } else {
        text += q;
        i++;
      }
    }
    out.push({ text, at });
  }
  return out;
}

type OptionKind = PipSourceOption | "requirement" | "constraint" | "editable" | "location";

/** The options that matter here, long and short, as pip's requirements-file parser takes them. */
const OPTIONS: Array<{ names: string[]; short?: string; kind: OptionKind; flag?: boolean }> = [
  { names: ["--index-url"], short: "-i", kind: "index-url" },
  { names: ["--extra-index-url"], kind: "extra-index-url" },
  { names: ["--find-links"], short: "-f", kind: "find-links" },
  { names: ["--trusted-host"], kind: "trusted-host" },
  { names: ["--requirement"], short: "-r", kind: "requirement" },
  { names: ["--constraint"], short: "-c", kind: "constraint" },
  { names: ["--editable"], short: "-e", kind: "editable" },
  { names: ["--target"], short: "-t", kind: "location" },
  { names: ["--prefix", "--root", "--src"], kind: "location" },
  { names: ["--user"], kind: "location", flag: true },
];

interface Found {
  kind: OptionKind;
  option: string;
  value?: string;
  /** Offset of the option's token in the logical line. */
  at: number;
}

function optionsOf(line: string): Found[] {
  const words = tokens(line);
  const out: Found[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!w.text.startsWith("-")) continue;
    for (const o of OPTIONS) {
      const long = o.names.find((n) => w.text === n || w.text.startsWith(`${n}=`));
      const short = o.short && w.text.startsWith(o.short) ? o.short : undefined;
      if (!long && !short) continue;
      const option = long ?? short!;
      if (o.flag) {
        if (w.text === option) out.push({ kind: o.kind, option, at: w.at });
        continue;
      }
      let value = w.text.slice(option.length).replace(/^=/, "");
      if (!value && i + 1 < words.length) value = words[++i]!.text;
      out.push({ kind: o.kind, option, value, at: w.at });
      break;
    }
  }
  return out;
}

/** pip expands `${NAME}` in requirements files from the environment (POSIX names only). */
function expandVars(s: string, env: NodeJS.ProcessEnv): string {
  return s.replace(/\$\{([A-Z0-9_]+)\}/g, (m, n: string) => env[n] ?? m);
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

/** A requirement that is a path or a file: URL (a wheel, an sdist, a project folder), as pip tells them apart. */
function localPath(req: string, base: string): string | undefined {
  const spec = req.split(/\s+--?[a-z]/)[0]!.trim();
  const at = /^[A-Za-z0-9._-]+(\[[^\]]*\])?\s*@\s*(\S+)/.exec(spec);
  const target = at ? at[2]! : spec.split(/[\s;]/)[0]!;
  if (/^file:/i.test(target)) {
    try {
      return decodeURIComponent(new URL(target).pathname);
    } catch {
      return target.replace(/^file:(\/\/)?/i, "");
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) return undefined; // a remote URL: the line names it
  const looksLikePath =
    target.startsWith(".") ||
    target.startsWith("/") ||
    target.startsWith("~") ||
    target.includes("/") ||
    /\.(whl|zip|tar\.gz|tgz|tar\.bz2|tar)$/i.test(target);
  if (!looksLikePath) return undefined;
  const expanded = target.startsWith("~") ? path.join(os.homedir(), target.slice(1)) : target;
  return path.resolve(base, expanded);
}

export interface CheckOptions {
  /** The model the file belongs to, for the diagnostics. */
  model?: string;
  /** What the user's pip configuration allows (default: read from this machine). */
  pip?: PipSources;
  /** For `${VAR}` expansion, as pip does (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * The user's model folder, when `modelDir` is a staged copy of it: staging copies the files
   * that links point at, so a link in the user's folder that leaves it (`common.txt ->
   * /etc/shadow`) is judged there, where it is still a link.
   */
  userDir?: string;
}

const MAX_DEPTH = 10;

/**
 * Checks a model's requirements.txt (and the files inside the model folder it includes with -r/-c,
 * at their own lines). `file` is read; a file it names outside `modelDir` is never opened.
 */
export function checkRequirementsFile(file: string, modelDir: string, o: CheckOptions = {}): RequirementsCheck {
  const pip = o.pip ?? userPipSources({ env: o.env ?? process.env });
  const env = o.env ?? process.env;
  const result: RequirementsCheck = { diagnostics: [], allowed: [] };
  const seen = new Set<string>();
  const within = (p: string): boolean => {
    if (!inside(modelDir, p)) return false;
    if (!o.userDir) return true;
    const rel = path.relative(modelDir, p);
    return inside(o.userDir, path.join(o.userDir, rel));
  };
  const visit = (f: string, depth: number) => {
    if (seen.has(f) || depth > MAX_DEPTH) return;
    seen.add(f);
    let text: string;
    try {
      text = fs.readFileSync(f, "utf8");
    } catch {
      return; // pip says it cannot open it; that is the builder's error, at the line that named it
    }
    const base = path.dirname(f);
    const report = (l: LogicalLine, at: number, code: string, message: string, hint: string) => {
      const p = l.pos[at] ?? l.pos[0]!;
      result.diagnostics.push({
        severity: "error",
        file: f,
        line: p.line,
        column: p.column,
        message,
        hint,
        ...(o.model ? { model: o.model } : {}),
        code,
      });
    };
    for (const l of logicalLines(text)) {
      const found = optionsOf(l.text);
      for (const x of found) {
        const value = x.value ? expandVars(x.value, env) : "";
        switch (x.kind) {
          case "index-url":
          case "extra-index-url":
          case "find-links":
          case "trusted-host": {
            const n = x.kind === "trusted-host" ? value.toLowerCase() : normalizeSource(value);
            const set =
              x.kind === "find-links" ? pip.findLinks : x.kind === "trusted-host" ? pip.trustedHosts : pip.indexes;
            const originKey = `${x.kind === "extra-index-url" ? "index-url" : x.kind} ${n}`;
            const localLinks = x.kind === "find-links" && !/^[a-z][a-z0-9+.-]*:\/\//i.test(value);
            if (localLinks && within(path.resolve(base, value))) break; // a wheel folder in the model
            if (value && set.has(n)) {
              result.allowed.push({
                file: f,
                line: l.pos[x.at]!.line,
                option: x.kind,
                value,
                origin: pip.origin.get(originKey) ?? "pip configuration",
              });
              break;
            }
            report(
              l,
              x.at,
              "requirements-index",
              `${x.option} points pip at ${x.kind === "trusted-host" ? "a host" : "a source"} your pip configuration does not use: packages would come from there`,
              `Remove the line, or set it in your own pip configuration (${pipVariable(x.kind)} or pip.conf) if you mean to install from it; then the line is allowed and \`up\` names it.`,
            );
            break;
          }
          case "requirement":
          case "constraint": {
            if (!value) break;
            if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && !/^file:/i.test(value)) {
              report(
                l,
                x.at,
                "requirements-outside-model",
                `${x.option} names a file on another machine: pip would read requirements from outside the model folder`,
                "Copy what it lists into this requirements.txt.",
              );
              break;
            }
            const target = path.resolve(base, /^file:/i.test(value) ? (localPath(value, base) ?? value) : value);
            if (!within(target)) {
              report(
                l,
                x.at,
                "requirements-outside-model",
                `${x.option} names a file outside the model folder ${modelDir}: pip would read it`,
                "Keep the requirements the model needs in files inside its folder (the folder is what is staged and served), or copy them into this requirements.txt.",
              );
              break;
            }
            visit(target, depth + 1);
            break;
          }
          case "editable":
            report(
              l,
              x.at,
              "requirements-editable",
              `${x.option} installs a project in place (editable), which the model's environment would then depend on`,
              "List the package by name (or as a wheel inside the model folder) instead.",
            );
            break;
          case "location":
            report(
              l,
              x.at,
              "requirements-install-location",
              `${x.option} would have pip install somewhere else than the model's environment`,
              "Remove it: triton-dev installs the model's packages into an environment of its own.",
            );
            break;
        }
      }
      if (l.text.trimStart().startsWith("-")) continue;
      const local = localPath(expandVars(l.text.trim(), env), base);
      if (local && !within(local)) {
        report(
          l,
          l.text.length - l.text.trimStart().length,
          "requirements-outside-model",
          `this requirement is a path outside the model folder ${modelDir}`,
          "Put the wheel or project inside the model folder (a wheels/ folder beside requirements.txt) and name it by a relative path, or name the package so pip finds it on your index.",
        );
      }
    }
  };
  visit(file, 0);
  return result;
}

function pipVariable(kind: PipSourceOption): string {
  return `PIP_${kind.toUpperCase().replace(/-/g, "_")}`;
}
