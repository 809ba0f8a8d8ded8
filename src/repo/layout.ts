import type { Dirent, Stats } from "node:fs";
import fsp from "node:fs/promises";
import { retryFdLimit } from "./fd-limit.js";
import path from "node:path";
import { UserError, explainFsError } from "../errors.js";

export const CONFIG_FILE = "config.pbtxt";

/**
 * Files that never reach the served repository: editor swap and backup files, VCS folders,
 * Python caches and every dotfile. Triton would otherwise treat them as changes (poll mode) or
 * trip on them.
 */
export function isIgnoredEntry(name: string): boolean {
  if (name.startsWith(".")) return true;
  if (name === "__pycache__" || name === "node_modules") return true;
  if (name.endsWith("~") || name.endsWith(".swp") || name.endsWith(".swo") || name.endsWith(".swx")) return true;
  if (name.startsWith("#") && name.endsWith("#")) return true;
  if (name.endsWith(".tmp") || name.endsWith(".pyc") || name.endsWith(".orig") || name.endsWith(".bak")) return true;
  if (/^4913$/.test(name)) return true; // vim's write-test file
  return false;
}

/** Sub-folders of a model that Triton never takes for versions (core's VersionsToLoad). */
const NON_VERSION_DIRS = new Set(["warmup", "initial_state", "configs"]);

export interface VersionDir {
  name: string;
  dir: string;
  version: number;
  /** Names directly inside, editor and cache litter left out. */
  entries: Map<string, { isDir: boolean }>;
}

/** One model folder as Triton would see it. */
export interface ModelLayout {
  name: string;
  dir: string;
  configFile: string;
  /** The text of config.pbtxt; undefined when the file is absent or unreadable. */
  configText?: string;
  /** Why config.pbtxt could not be read, when it exists but cannot be read. */
  configReadError?: UnreadableFile;
  /** Numeric version folders, lowest first. */
  versions: VersionDir[];
  /** Sub-folders Triton skips with a warning: not a number, or a leading zero. */
  ignoredDirs: string[];
  /** Every sub-folder, sorted as Triton's std::set sorts them (autofill inspects the first). */
  subdirs: string[];
  /**
   * The first of `subdirs` with what it holds: the one folder Triton's autofill looks into for a
   * model file when the config does not say what runs the model, a version folder or not.
   */
  firstSubdir?: { name: string; entries: Map<string, { isDir: boolean }> };
  /** Files directly in the model folder but config.pbtxt, litter left out, sorted: a model file here is never read. */
  topFiles: string[];
}

/** Version folder names Triton loads: decimal digits, no leading zero. */
export function isVersionDirName(name: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(name) && Number.isSafeInteger(Number(name));
}

async function readDirSafe(dir: string): Promise<Dirent[]> {
  try {
    return await retryFdLimit(() => fsp.readdir(dir, { withFileTypes: true }));
  } catch {
    return [];
  }
}

/** Follows symbolic links; undefined for a link that leads nowhere (Triton cannot open it either). */
async function kindOf(p: string, e: Dirent): Promise<"dir" | "file" | undefined> {
  if (e.isDirectory()) return "dir";
  if (!e.isSymbolicLink()) return "file";
  try {
    return (await fsp.stat(p)).isDirectory() ? "dir" : "file";
  } catch {
    return undefined;
  }
}

async function isDirectory(p: string, e: Dirent): Promise<boolean> {
  return (await kindOf(p, e)) === "dir";
}

/**
 * An entry of a repository that a user may take for a model folder but that is not one: a
 * symbolic link to a file, or one that leads nowhere. Triton cannot load a model from it, so it is
 * neither staged nor watched, and lint says why.
 */
export interface NotAModelFolder {
  name: string;
  /** Absolute path of the link. */
  path: string;
  /** Where the link points, as written in it. */
  target: string;
  why: "links to a file" | "dangling link";
  /** For a dangling link: the error code of following it (ENOENT, ELOOP, EACCES). */
  code?: string;
}

export interface RepositoryEntries {
  /** Model folder names, sorted: directories, and symbolic links to directories wherever these are. */
  models: string[];
  /** Links that are not model folders, sorted by name. Plain files are neither (a README is no mistake). */
  notModels: NotAModelFolder[];
}

/**
 * The one rule for what a model folder is, which lint, `up`, staging, the watcher and the reload
 * controller all follow: a directory, or a symbolic link that resolves to one (Triton stats the
 * entries of its repository, so it follows links too); never an ignored name.
 */
export async function classifyEntry(
  repo: string,
  name: string,
  dirent?: Dirent,
): Promise<"model" | "other" | NotAModelFolder> {
  if (isIgnoredEntry(name)) return "other";
  const p = path.join(repo, name);
  let isLink: boolean;
  if (dirent) {
    if (dirent.isDirectory()) return "model";
    isLink = dirent.isSymbolicLink();
  } else {
    const st = await fsp.lstat(p).catch(() => undefined);
    if (!st) return "other";
    if (st.isDirectory()) return "model";
    isLink = st.isSymbolicLink();
  }
  if (!isLink) return "other";
  const target = await fsp.readlink(p).catch(() => "?");
  try {
    if ((await fsp.stat(p)).isDirectory()) return "model";
    return { name, path: p, target, why: "links to a file" };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { name, path: p, target, why: "dangling link", ...(code ? { code } : {}) };
  }
}

/** What `listModelDirs` lists, and the links it leaves out. Throws UserError when `repo` cannot be read. */
export async function readRepositoryEntries(repo: string): Promise<RepositoryEntries> {
  let entries: Dirent[];
  try {
    entries = await retryFdLimit(() => fsp.readdir(repo, { withFileTypes: true }));
  } catch (err) {
    throw new UserError(`cannot read model repository ${repo}`, {
      hint: "Pass the folder that holds one sub-folder per model.",
      cause: err,
    });
  }
  const kinds = await Promise.all(entries.map((e) => classifyEntry(repo, e.name, e)));
  const models = entries.filter((_, i) => kinds[i] === "model").map((e) => e.name);
  const notModels = kinds.filter((k): k is NotAModelFolder => typeof k === "object");
  return { models: models.sort(), notModels: notModels.sort((a, b) => (a.name < b.name ? -1 : 1)) };
}

/** The model folders of a repository, sorted by name. Throws UserError when `repo` cannot be read. */
export async function listModelDirs(repo: string): Promise<string[]> {
  return (await readRepositoryEntries(repo)).models;
}

/** Whether `repo/name` is a model folder now, by the rule `listModelDirs` lists them. */
export async function isModelDir(repo: string, name: string): Promise<boolean> {
  return (await classifyEntry(repo, name)) === "model";
}

/**
 * Checks that `dir` is a model repository we can serve and returns its model names.
 * A missing or empty repository is the user's to fix, so the message says how.
 */
export async function requireModelRepository(dir: string): Promise<string[]> {
  let st: Stats;
  try {
    st = await fsp.stat(dir);
  } catch {
    throw new UserError(`model repository ${dir} does not exist`, {
      hint: "Pass the folder holding your models with `--models DIR`, or create a model with `triton-dev init DIR`.",
    });
  }
  if (!st.isDirectory()) {
    throw new UserError(`model repository ${dir} is not a folder`, {
      hint: "Pass the folder that holds one sub-folder per model with `--models DIR`.",
    });
  }
  const models = await listModelDirs(dir);
  if (models.length === 0) {
    throw new UserError(`model repository ${dir} holds no models`, {
      hint:
        "A model is a folder with config.pbtxt and a version folder (e.g. mymodel/config.pbtxt and mymodel/1/model.py). Create one with `triton-dev init " +
        dir +
        "`.",
    });
  }
  return models;
}

function tooLarge(size: number, maxBytes: number): UnreadableFile {
  return {
    message: `it is ${(size / 1024 ** 2).toFixed(1)} MB, far larger than any config (at most ${maxBytes / 1024 ** 2} MB is read)`,
    hint: "Check that this is the file you meant; a config.pbtxt is a few kilobytes.",
  };
}

/** A config is a few kilobytes; anything past this is not one (and is not read into memory). */
export const MAX_CONFIG_BYTES = 8 * 1024 * 1024;

/** Why a config (or source) file cannot be read, with what to do; a FIFO or device is never opened. */
export interface UnreadableFile {
  message: string;
  hint: string;
}

/**
 * Read a text file the user wrote, refusing what is not a regular file (a read of a FIFO blocks,
 * of /dev/zero never ends) and what is larger than `maxBytes`.
 */
export async function readUserText(
  file: string,
  maxBytes = MAX_CONFIG_BYTES,
): Promise<{ text: string } | { missing: true } | { unreadable: UnreadableFile }> {
  let st: Stats;
  try {
    st = await fsp.stat(file);
  } catch (err) {
    const link = await fsp.lstat(file).then(
      (l) => l.isSymbolicLink(),
      () => false,
    );
    const { code, is, hint } = explainFsError(err, { link });
    // A link to nothing is not the same as no file.
    if (code === "ENOENT" && !link) return { missing: true };
    return { unreadable: { message: `it ${is}`, hint } };
  }
  if (!st.isFile()) {
    const what = st.isDirectory() ? "a folder" : st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : "a device";
    return { unreadable: { message: `it is ${what}, not a file`, hint: "Replace it with a regular text file." } };
  }
  if (st.size > maxBytes) return { unreadable: tooLarge(st.size, maxBytes) };
  try {
    return { text: await retryFdLimit(() => fsp.readFile(file, "utf8")) };
  } catch (err) {
    const { is, hint } = explainFsError(err);
    return { unreadable: { message: `it ${is}`, hint } };
  }
}

/** What a folder holds as staging copies it (litter left out, links followed; a dangling one is left out). */
async function folderEntries(dir: string): Promise<Map<string, { isDir: boolean }>> {
  const entries = new Map<string, { isDir: boolean }>();
  for (const f of await readDirSafe(dir)) {
    if (isIgnoredEntry(f.name)) continue;
    const kind = await kindOf(path.join(dir, f.name), f);
    if (kind) entries.set(f.name, { isDir: kind === "dir" });
  }
  return entries;
}

/**
 * `configText`: the config's text when it is not the file's (an editor's unsaved buffer); the
 * file is then not read.
 */
export async function scanModel(repo: string, name: string, configText?: string): Promise<ModelLayout> {
  const dir = path.join(repo, name);
  const configFile = path.join(dir, CONFIG_FILE);
  const layout: ModelLayout = { name, dir, configFile, versions: [], ignoredDirs: [], subdirs: [], topFiles: [] };
  const config =
    configText === undefined
      ? await readUserText(configFile)
      : configText.length > MAX_CONFIG_BYTES
        ? { unreadable: tooLarge(configText.length, MAX_CONFIG_BYTES) }
        : { text: configText };
  if ("text" in config) layout.configText = config.text;
  else if ("unreadable" in config) layout.configReadError = config.unreadable;
  for (const e of await readDirSafe(dir)) {
    if (isIgnoredEntry(e.name)) continue;
    const p = path.join(dir, e.name);
    if (!(await isDirectory(p, e))) {
      if (e.name !== CONFIG_FILE) layout.topFiles.push(e.name);
      continue;
    }
    layout.subdirs.push(e.name);
    if (NON_VERSION_DIRS.has(e.name)) continue;
    if (!isVersionDirName(e.name)) {
      layout.ignoredDirs.push(e.name);
      continue;
    }
    layout.versions.push({ name: e.name, dir: p, version: Number(e.name), entries: await folderEntries(p) });
  }
  layout.subdirs.sort();
  const first = layout.subdirs[0];
  if (first !== undefined) {
    const v = layout.versions.find((x) => x.name === first);
    layout.firstSubdir = { name: first, entries: v ? v.entries : await folderEntries(path.join(dir, first)) };
  }
  layout.topFiles.sort();
  layout.ignoredDirs.sort();
  layout.versions.sort((a, b) => a.version - b.version);
  return layout;
}
