import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { UserError } from "../errors.js";

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

/** The model folders of a repository (directories not ignored), sorted by name. */
export async function listModelDirs(repo: string): Promise<string[]> {
  const entries = await fsp.readdir(repo, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory() && !isIgnoredEntry(e.name))
    .map((e) => e.name)
    .sort();
}

/**
 * Checks that `dir` is a model repository we can serve and returns its model names.
 * A missing or empty repository is the user's to fix, so the message says how.
 */
export async function requireModelRepository(dir: string): Promise<string[]> {
  let st: fs.Stats;
  try {
    st = await fsp.stat(dir);
  } catch {
    throw new UserError(`model repository ${dir} does not exist`, {
      hint: "Pass the folder holding your models with `--models DIR`, or create a model with `triton-dev init DIR`.",
    });
  }
  if (!st.isDirectory()) {
    throw new UserError(`model repository ${dir} is not a folder`, { hint: "Pass the folder that holds one sub-folder per model with `--models DIR`." });
  }
  const models = await listModelDirs(dir);
  if (models.length === 0) {
    throw new UserError(`model repository ${dir} holds no models`, {
      hint: "A model is a folder with config.pbtxt and a version folder (e.g. mymodel/config.pbtxt and mymodel/1/model.py). Create one with `triton-dev init " + dir + "`.",
    });
  }
  return models;
}

async function copyTree(src: string, dst: string): Promise<void> {
  await fsp.mkdir(dst, { recursive: true });
  for (const e of await fsp.readdir(src, { withFileTypes: true })) {
    if (isIgnoredEntry(e.name)) continue;
    const s = path.join(src, e.name);
    const d = path.join(dst, e.name);
    if (e.isDirectory()) await copyTree(s, d);
    else if (e.isFile()) await fsp.copyFile(s, d);
    else if (e.isSymbolicLink()) {
      // Resolve links so the staged model does not depend on the user's tree staying put.
      const real = await fsp.realpath(s);
      const rst = await fsp.stat(real);
      if (rst.isDirectory()) await copyTree(real, d);
      else await fsp.copyFile(real, d);
    }
  }
}

/**
 * Publish one model into the staging repository: copy into a hidden sibling, then rename into
 * place, so Triton never sees a partial model. The user's files are only read.
 */
export async function publishModel(sourceRepo: string, stagingRepo: string, name: string): Promise<void> {
  // The scratch folder sits beside the staging repository (same filesystem, so rename is
  // atomic) but outside it, where Triton's repository scan never looks.
  const scratch = path.join(path.dirname(stagingRepo), ".publish");
  await fsp.mkdir(scratch, { recursive: true });
  const stamp = `${name}-${process.pid}-${Date.now()}`;
  const tmp = path.join(scratch, `new-${stamp}`);
  const old = path.join(scratch, `old-${stamp}`);
  const target = path.join(stagingRepo, name);
  await copyTree(path.join(sourceRepo, name), tmp);
  const hadTarget = fs.existsSync(target);
  if (hadTarget) await fsp.rename(target, old);
  await fsp.rename(tmp, target);
  if (hadTarget) await fsp.rm(old, { recursive: true, force: true });
}

/** Stage every model of `sourceRepo` into a fresh `stagingRepo`. */
export async function stageRepository(sourceRepo: string, stagingRepo: string): Promise<string[]> {
  const models = await listModelDirs(sourceRepo);
  await fsp.rm(stagingRepo, { recursive: true, force: true });
  await fsp.mkdir(stagingRepo, { recursive: true });
  for (const m of models) await publishModel(sourceRepo, stagingRepo, m);
  return models;
}
