import type { Stats } from "node:fs";
import fs from "node:fs";
import { createHash } from "node:crypto";
import fsp from "node:fs/promises";
import { retryFdLimit } from "./fd-limit.js";
import os from "node:os";
import path from "node:path";
import { UserError, explainFsError } from "../errors.js";
import { isIgnoredEntry } from "./layout.js";

/**
 * The one walker of a model folder's files, so that lint, staging, content hashing and the
 * watcher follow the same rule:
 *
 * - files and folders are taken as they are; editor litter, caches and dotfiles are skipped;
 * - a symbolic link is followed. A link to a file may point anywhere (weights kept elsewhere);
 *   a link to a folder only inside the model's repository (`linkRoots`: the repository folder
 *   holding the model, and the folder the model folder really is in when it is itself a link, as
 *   in generated workspaces like lmdeploy's `model_repository/m -> ../triton_models/m` with
 *   `1/tokenizer -> ../../tokenizer`), and never to a folder it is inside of;
 * - FIFOs, sockets and devices are refused, directly or through a link, and never opened;
 * - a model holds at most `maxDepth` folder levels, `maxEntries` files and folders and `maxBytes`
 *   bytes (every save copies all of it).
 *
 * The model folder itself may be a link to a folder anywhere (repo/layout.ts); "inside" is then
 * inside the folder it resolves to.
 */
export interface ModelFileLimits {
  /** Folder levels below the model folder. */
  maxDepth: number;
  /** Files and folders in all. */
  maxEntries: number;
  /** Bytes of all files together, those reached through links included. */
  maxBytes: number;
}

/**
 * Files of a staged snapshot that staging rewrote (config.pbtxt with the model's
 * EXECUTION_ENV_PATH) keep the user's version here, so a snapshot still hashes as the user's
 * folder it was copied from; a `<file>.added` marker stands for a file the user's folder does not
 * have. A dot folder: Triton and the walker skip it.
 */
export const ORIGINALS_DIR = ".triton-dev-original";

export const MODEL_FILE_LIMITS: ModelFileLimits = { maxDepth: 32, maxEntries: 20_000, maxBytes: 64 * 1024 ** 3 };

export type ModelFileProblem =
  | "dangling-link"
  | "link-loop"
  | "link-outside"
  | "special-file"
  | "too-deep"
  | "too-many-entries"
  | "too-large"
  | "unreadable";

/** Problems after which the walk cannot go on: the model as a whole is over a limit. */
const LIMIT_PROBLEMS: ReadonlySet<ModelFileProblem> = new Set(["too-deep", "too-many-entries", "too-large"]);

/** A file of a model that Triton could not be given, or a model over a limit; `file` is in the user's folder. */
export class ModelFileError extends UserError {
  override name = "ModelFileError";
  constructor(
    readonly model: string,
    readonly file: string,
    readonly problem: ModelFileProblem,
    /** Follows the file's path: `${file} ${is}`. */
    readonly is: string,
    options: { hint: string; cause?: unknown },
  ) {
    super(`${file} ${is}`, options);
  }

  /** Whether the whole model is over a limit (rather than one of its files being wrong). */
  get overLimit(): boolean {
    return LIMIT_PROBLEMS.has(this.problem);
  }
}

export interface ModelEntry {
  /** Relative to the model folder. */
  rel: string;
  /** Where it is read from: in the model folder, through the links as written. */
  path: string;
  kind: "dir" | "file";
  /** Bytes, for a file. */
  size: number;
  ino: number;
  /**
   * Reached through a link that leads out of the model folder: a file linked from anywhere, or
   * what is in a linked folder elsewhere in the repository (the watcher watches `real` for those).
   */
  outside: boolean;
  /** Where it really is, every link resolved. */
  real: string;
}

const FILE_KIND_HINT =
  "A model folder holds files, folders and symbolic links to them; replace it with a regular file, or remove it.";
const FOLDER_LINK_HINT =
  "A link in a model folder may point at a file anywhere, but at a folder only inside the model's repository (the folder you pass with --models, or the folder a linked model folder really is in; triton-dev copies and watches nothing else): move the folder into the repository, link its files one by one, or make the model folder itself the link (models/NAME -> the folder).";

/**
 * The folders a link to a folder in the model `dir` may lead into: the repository holding it
 * (`repository`, by default the folder `dir` is in) and, when the model folder is itself a link,
 * the folder it really is in. A generated workspace (lmdeploy's `model_repository/m ->
 * ../triton_models/m`, whose `1/tokenizer -> ../../tokenizer`) is served as Triton serves it.
 * The filesystem's root, a top-level folder (`/usr`, `/home`) and the home folder itself are
 * never a repository here: a link into them would make every folder of the machine fair game.
 */
export async function linkRoots(dir: string, repository = path.dirname(path.resolve(dir))): Promise<string[]> {
  const roots = new Set<string>();
  const repoReal = await fsp.realpath(repository).catch(() => path.resolve(repository));
  roots.add(repoReal);
  const modelReal = await fsp.realpath(dir).catch(() => undefined);
  if (modelReal) roots.add(path.dirname(modelReal));
  const home = path.resolve(os.homedir());
  return [...roots].filter((r) => r.split(path.sep).filter(Boolean).length >= 2 && r !== home);
}

function specialKind(st: Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "neither a file nor a folder";
}

function isInside(child: string, parent: string): boolean {
  const r = path.relative(parent, child);
  return r === "" || (!r.startsWith("..") && !path.isAbsolute(r));
}

const GiB = 1024 ** 3;
const bytesText = (n: number) => (n >= GiB ? `${+(n / GiB).toFixed(1)} GiB` : `${+(n / 1024 ** 2).toFixed(1)} MB`);

export interface WalkOptions {
  limits?: ModelFileLimits;
  /** The model's repository, for `linkRoots` (default: the folder the model folder is in). */
  repository?: string;
  /**
   * Collect what is wrong with single files here and go on without them (lint reports them all);
   * without it the first one is thrown. A model over a limit is always thrown.
   */
  problems?: ModelFileError[];
}

/**
 * Every file and folder of the model folder `dir` by the rule above, depth first, each folder's
 * entries in byte order of their names. Throws ModelFileError for what breaks the rule.
 */
export async function listModelFiles(dir: string, model: string, options: WalkOptions = {}): Promise<ModelEntry[]> {
  const limits = options.limits ?? MODEL_FILE_LIMITS;
  const problem = (file: string, kind: ModelFileProblem, is: string, hint: string, cause?: unknown) => {
    const err = new ModelFileError(model, file, kind, is, { hint, ...(cause ? { cause } : {}) });
    if (!options.problems || err.overLimit) throw err;
    options.problems.push(err);
  };
  const fsProblem = (file: string, err: unknown, link = false) => {
    const { code, is, hint } = explainFsError(err, { link });
    const kind: ModelFileProblem =
      code === "ELOOP" ? "link-loop" : code === "ENOENT" && link ? "dangling-link" : "unreadable";
    problem(file, kind, is, hint, err);
  };

  let root: string;
  try {
    root = await fsp.realpath(dir);
  } catch (err) {
    fsProblem(dir, err, await isLink(dir));
    return [];
  }
  const roots = await linkRoots(dir, options.repository);
  const out: ModelEntry[] = [];
  let bytes = 0;
  // Real paths of the folders being walked, to refuse a link back into one of them.
  const ancestors: string[] = [root];

  const walk = async (at: string, real: string, rel: string, depth: number): Promise<void> => {
    let names: string[];
    try {
      names = (await retryFdLimit(() => fsp.readdir(at))).filter((n) => !isIgnoredEntry(n)).sort();
    } catch (err) {
      fsProblem(at, err);
      return;
    }
    for (const name of names) {
      const p = path.join(at, name);
      const r = rel ? path.join(rel, name) : name;
      if (out.length >= limits.maxEntries) {
        problem(
          dir,
          "too-many-entries",
          `holds more than ${limits.maxEntries} files and folders (counting what its links lead to)`,
          `triton-dev copies every file of a model on every save and takes at most ${limits.maxEntries}: keep data the model reads at run time outside the model folder and open it by its absolute path, or check that a link does not pull in a large tree.`,
        );
      }
      let st: Stats;
      try {
        st = await fsp.lstat(p);
      } catch (err) {
        fsProblem(p, err);
        continue;
      }
      let realPath = path.join(real, name);
      if (st.isSymbolicLink()) {
        const target = await fsp.readlink(p).catch(() => "?");
        try {
          st = await fsp.stat(p);
          realPath = await fsp.realpath(p);
        } catch (err) {
          const { code } = explainFsError(err);
          if (code === "ENOENT") {
            problem(
              p,
              "dangling-link",
              `is a symbolic link to ${target}, which does not exist`,
              "Point the link at a file that exists, or remove it.",
              err,
            );
          } else fsProblem(p, err, true);
          continue;
        }
        if (st.isDirectory() && (ancestors.includes(realPath) || isInside(root, realPath))) {
          problem(
            p,
            "link-loop",
            `is a symbolic link to ${target}, a folder it is inside of (following it would never end)`,
            "A link in a model folder must not point at the folder or one above it; remove or repoint it.",
          );
          continue;
        }
        if (st.isDirectory() && !isInside(realPath, root) && !roots.some((r) => isInside(realPath, r))) {
          problem(
            p,
            "link-outside",
            `is a symbolic link to ${realPath}, a folder outside the model's repository (${roots.join(" or ") || root})`,
            FOLDER_LINK_HINT,
          );
          continue;
        }
        if (!st.isDirectory() && !st.isFile()) {
          problem(
            p,
            "special-file",
            `is a symbolic link to ${realPath}, ${specialKind(st)}, not a file Triton can read`,
            FILE_KIND_HINT,
          );
          continue;
        }
      }
      const outside = !isInside(realPath, root);
      if (st.isDirectory()) {
        if (depth + 1 > limits.maxDepth) {
          problem(
            p,
            "too-deep",
            `is more than ${limits.maxDepth} folder levels deep in the model folder`,
            `triton-dev copies at most ${limits.maxDepth} folder levels of a model: flatten the folders, or check that a link does not pull in a deep tree.`,
          );
        }
        out.push({ rel: r, path: p, kind: "dir", size: 0, ino: st.ino, outside, real: realPath });
        ancestors.push(realPath);
        await walk(p, realPath, r, depth + 1);
        ancestors.pop();
      } else if (st.isFile()) {
        bytes += st.size;
        if (bytes > limits.maxBytes) {
          problem(
            dir,
            "too-large",
            `holds more than ${bytesText(limits.maxBytes)} (counting what its links lead to; passed at ${p})`,
            `triton-dev copies every file of a model on every save and takes at most ${bytesText(limits.maxBytes)}: keep large data outside the model folder and open it by its absolute path.`,
          );
        }
        out.push({ rel: r, path: p, kind: "file", size: st.size, ino: st.ino, outside, real: realPath });
      } else {
        problem(p, "special-file", `is ${specialKind(st)}, not a file Triton can read`, FILE_KIND_HINT);
      }
    }
  };
  await walk(dir, root, "", 0);
  return out;
}

async function isLink(p: string): Promise<boolean> {
  return fsp.lstat(p).then(
    (s) => s.isSymbolicLink(),
    () => false,
  );
}

/**
 * Opens a file of the model for reading only if it still is a regular file: O_NONBLOCK keeps a
 * FIFO put there since the walk from blocking the open, and it is refused after.
 */
export async function openModelFile(p: string): Promise<fsp.FileHandle> {
  const handle = await fsp.open(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const st = await handle.stat().catch(async (err: unknown) => {
    await handle.close();
    throw err;
  });
  if (!st.isFile()) {
    await handle.close();
    throw new ModelFileError("", p, "special-file", `is ${specialKind(st)}, not a file Triton can read`, {
      hint: FILE_KIND_HINT,
    });
  }
  return handle;
}

/**
 * A hash of a model's content by the walker's rule (names, kinds and bytes, through links), to tell
 * a save that changed nothing. Undefined when the rule refuses the model: staging then says why.
 * Files are streamed, so memory stays small however large they are.
 */
export async function hashModelDir(
  dir: string,
  model = path.basename(dir),
  limits: ModelFileLimits = MODEL_FILE_LIMITS,
): Promise<string | undefined> {
  const h = createHash("sha1");
  try {
    for (const e of await listModelFiles(dir, model, { limits })) {
      if (e.kind === "dir") {
        h.update(`d:${e.rel}\n`);
        continue;
      }
      const original = path.join(dir, ORIGINALS_DIR, e.rel);
      if (fs.existsSync(`${original}.added`)) continue;
      const file = fs.existsSync(original) ? original : e.path;
      h.update(`f:${e.rel}:${file === e.path ? e.size : fs.statSync(file).size}\n`);
      const handle = await openModelFile(file);
      try {
        for await (const chunk of handle.createReadStream({ autoClose: false })) h.update(chunk as Buffer);
      } finally {
        await handle.close();
      }
    }
  } catch {
    return undefined;
  }
  return h.digest("hex");
}
