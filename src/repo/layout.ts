import type { Dirent } from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { UserError } from "../errors.js";
import { isIgnoredEntry } from "../reload/stage.js";

export const CONFIG_FILE = "config.pbtxt";

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
  configReadError?: string;
  /** Numeric version folders, lowest first. */
  versions: VersionDir[];
  /** Sub-folders Triton skips with a warning: not a number, or a leading zero. */
  ignoredDirs: string[];
  /** Every sub-folder, sorted as Triton's std::set sorts them (autofill inspects the first). */
  subdirs: string[];
}

/** Version folder names Triton loads: decimal digits, no leading zero. */
export function isVersionDirName(name: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(name) && Number.isSafeInteger(Number(name));
}

async function readDirSafe(dir: string): Promise<Dirent[]> {
  try {
    return await fsp.readdir(dir, { withFileTypes: true });
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

/** Model folder names in a repository, sorted. Throws UserError when `repo` is not a folder. */
export async function listModelNames(repo: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await fsp.readdir(repo, { withFileTypes: true });
  } catch (err) {
    throw new UserError(`cannot read model repository ${repo}`, {
      hint: "Pass the folder that holds one sub-folder per model.",
      cause: err,
    });
  }
  const names: string[] = [];
  for (const e of entries) {
    if (isIgnoredEntry(e.name)) continue;
    if (await isDirectory(path.join(repo, e.name), e)) names.push(e.name);
  }
  return names.sort();
}

export async function scanModel(repo: string, name: string): Promise<ModelLayout> {
  const dir = path.join(repo, name);
  const configFile = path.join(dir, CONFIG_FILE);
  const layout: ModelLayout = { name, dir, configFile, versions: [], ignoredDirs: [], subdirs: [] };
  try {
    layout.configText = await fsp.readFile(configFile, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") layout.configReadError = (err as Error).message;
  }
  for (const e of await readDirSafe(dir)) {
    if (isIgnoredEntry(e.name)) continue;
    const p = path.join(dir, e.name);
    if (!(await isDirectory(p, e))) continue;
    layout.subdirs.push(e.name);
    if (NON_VERSION_DIRS.has(e.name)) continue;
    if (!isVersionDirName(e.name)) {
      layout.ignoredDirs.push(e.name);
      continue;
    }
    const entries = new Map<string, { isDir: boolean }>();
    for (const f of await readDirSafe(p)) {
      if (isIgnoredEntry(f.name)) continue;
      const kind = await kindOf(path.join(p, f.name), f);
      if (kind) entries.set(f.name, { isDir: kind === "dir" });
    }
    layout.versions.push({ name: e.name, dir: p, version: Number(e.name), entries });
  }
  layout.subdirs.sort();
  layout.ignoredDirs.sort();
  layout.versions.sort((a, b) => a.version - b.version);
  return layout;
}
