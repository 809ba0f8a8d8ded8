import fsp from "node:fs/promises";
import path from "node:path";
import { UserError } from "../errors.js";
import { isIgnoredEntry, listModelDirs } from "../repo/layout.js";
import { stagingLayout, toUserPaths } from "../state/staged-paths.js";

/**
 * A model that cannot be copied into a snapshot: a link that leads nowhere or back into its own
 * folder, a FIFO or device, a path too long, a full disk. It is that model's problem (reported in
 * the user's path), never the whole `up`'s.
 */
export class StagingError extends UserError {
  override name = "StagingError";
  constructor(
    readonly model: string,
    message: string,
    options: { hint: string; cause?: unknown },
  ) {
    super(message, options);
  }
}

const FILE_KIND_HINT =
  "A model folder holds files, folders and symbolic links to them; remove it or replace it with a regular file.";

/** What the user reads for a filesystem error met while copying `p` of `model`. */
export function stagingError(model: string, p: string, err: unknown): StagingError {
  if (err instanceof StagingError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  const why: Record<string, [string, string]> = {
    ENOENT: [`${p} vanished or is a symbolic link to nothing`, "Point the link at a file that exists, or remove it."],
    ELOOP: [`${p} is a symbolic link that loops`, "Point the link at a real file or folder, or remove it."],
    ENAMETOOLONG: [`${p}: a path in it is too long for the filesystem`, "Shorten the model's file or folder names."],
    ENOSPC: [
      `no space left on the disk of the state folder while copying ${p}`,
      "Free some space (old runs: `triton-dev down` keeps only the last three), then save again.",
    ],
    EDQUOT: [`the disk quota of the state folder is used up while copying ${p}`, "Free some space, then save again."],
    EACCES: [`${p} cannot be read (permission denied)`, "Make it readable for the user running triton-dev."],
    EPERM: [`${p} cannot be read (operation not permitted)`, "Make it readable for the user running triton-dev."],
  };
  const [message, hint] = why[code ?? ""] ?? [
    `could not copy ${p}: ${(err as Error).message}`,
    "Check the file; the last good version keeps serving.",
  ];
  return new StagingError(model, `${model}: ${message}`, { hint, cause: err });
}

function specialKind(st: {
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}) {
  return st.isFIFO()
    ? "a FIFO"
    : st.isSocket()
      ? "a socket"
      : st.isCharacterDevice() || st.isBlockDevice()
        ? "a device"
        : "not a regular file";
}

/**
 * `src` may itself be a link to a directory (a symlinked model folder): the snapshot holds copies
 * of the files, so editing the link's target changes nothing served until the watcher sees it.
 * Links are followed (their content is copied), except one that leads back into a folder being
 * copied, which would never end; FIFOs, sockets and devices are refused (reading one can block).
 */
async function copyTree(model: string, src: string, dst: string, ancestors: ReadonlySet<string>): Promise<void> {
  const real = await fsp.realpath(src).catch((err: unknown) => Promise.reject(stagingError(model, src, err)));
  if (ancestors.has(real)) {
    throw new StagingError(model, `${model}: ${src} leads back to ${real}, a folder it is inside of`, {
      hint: "A link inside a model folder must not point at the folder or one above it; remove or repoint it.",
    });
  }
  const inside = new Set([...ancestors, real]);
  await fsp.mkdir(dst, { recursive: true }).catch((err: unknown) => Promise.reject(stagingError(model, src, err)));
  const entries = await fsp
    .readdir(src, { withFileTypes: true })
    .catch((err: unknown) => Promise.reject(stagingError(model, src, err)));
  for (const e of entries) {
    if (isIgnoredEntry(e.name)) continue;
    const s = path.join(src, e.name);
    const d = path.join(dst, e.name);
    try {
      const st = e.isSymbolicLink() ? await fsp.stat(s) : e;
      if (st.isDirectory()) await copyTree(model, s, d, inside);
      else if (st.isFile()) await fsp.copyFile(s, d);
      else {
        throw new StagingError(model, `${model}: ${s} is ${specialKind(st)}, not a file Triton can read`, {
          hint: FILE_KIND_HINT,
        });
      }
    } catch (err) {
      throw stagingError(model, s, err);
    }
  }
}

export interface PublishOptions {
  /**
   * Run the repository's prepare step (default true). Explicit mode skips it: its only purpose is
   * to keep the python stub from writing __pycache__ into a served folder, which matters only
   * when Triton polls the folder's mtime.
   */
  prepare?: boolean;
}

// One mapping of staged paths to the user's, shared with status, the dashboard and perf.
export { stagingLayout, toUserPaths } from "../state/staged-paths.js";

export interface StagingOptions {
  /** Run after a model is copied and before it becomes visible (e.g. precompiling model.py). */
  prepare?: (modelDir: string) => Promise<void>;
}

/**
 * The models a run serves, read from its staging repository (from any process): each link to a
 * snapshot generation. A model withdrawn after a failed load, or whose folder was deleted, has none.
 */
export async function servedModels(runDir: string): Promise<string[]> {
  const { repository } = stagingLayout(runDir);
  const names: string[] = [];
  for (const e of await fsp.readdir(repository).catch(() => [] as string[])) {
    const target = await fsp.readlink(path.join(repository, e)).catch(() => undefined);
    if (target && /@\d+$/.test(target)) names.push(e);
  }
  return names.sort();
}

/**
 * The repository Triton serves. Each entry of `repository/` is a symlink to an immutable
 * snapshot in `store/<name>@<generation>`; publishing a model writes a new snapshot and swaps
 * the link with one rename. Triton therefore never sees a partial model or a moment without the
 * model, however it polls, and the last good snapshot stays at hand to restore. The user's
 * files are only read.
 */
export class StagingRepository {
  readonly repository: string;
  private readonly store: string;
  private readonly scratch: string;
  private readonly generations = new Map<string, number>();
  /** The highest generation ever written per model, so numbers are never reused. */
  private readonly highest = new Map<string, number>();
  private readonly prepare: StagingOptions["prepare"];

  constructor(runDir: string, options: StagingOptions = {}) {
    ({ repository: this.repository, store: this.store } = stagingLayout(runDir));
    this.scratch = path.join(runDir, ".publish");
    this.prepare = options.prepare;
  }

  /**
   * Stage every model of `sourceRepo` for which `include` holds; returns the staged names. A model
   * that cannot be copied is left out and passed to `onError`, never failing the others.
   */
  async init(
    sourceRepo: string,
    include: (name: string) => boolean = () => true,
    onError: (e: StagingError) => void = (e) => {
      throw e;
    },
  ): Promise<string[]> {
    await fsp.rm(this.repository, { recursive: true, force: true });
    await Promise.all([this.repository, this.store, this.scratch].map((d) => fsp.mkdir(d, { recursive: true })));
    const staged: string[] = [];
    for (const m of await listModelDirs(sourceRepo)) {
      if (!include(m)) continue;
      try {
        await this.publish(sourceRepo, m);
      } catch (err) {
        if (!(err instanceof StagingError)) throw err;
        onError(err);
        continue;
      }
      staged.push(m);
    }
    return staged;
  }

  /** Pick up what an earlier process staged here (the detached run's supervisor does this). */
  async load(): Promise<void> {
    this.generations.clear();
    this.highest.clear();
    for (const e of await fsp.readdir(this.repository).catch(() => [] as string[])) {
      const target = await fsp.readlink(path.join(this.repository, e)).catch(() => undefined);
      const m = target && /@(\d+)$/.exec(target);
      if (m) this.generations.set(e, Number(m[1]));
    }
    for (const e of await fsp.readdir(this.store).catch(() => [] as string[])) {
      const m = /^(.+)@(\d+)$/.exec(e);
      if (m) this.highest.set(m[1]!, Math.max(this.highest.get(m[1]!) ?? 0, Number(m[2])));
    }
  }

  /** The generation currently served for `name`, if staged. */
  current(name: string): number | undefined {
    return this.generations.get(name);
  }

  snapshotDir(name: string, generation: number): string {
    return path.join(this.store, `${name}@${generation}`);
  }

  has(name: string): boolean {
    return this.generations.has(name);
  }

  names(): string[] {
    return [...this.generations.keys()].sort();
  }

  /**
   * Copy the model into a new snapshot and make it the served one. Returns its generation.
   * `prepare: false` skips the prepare step (see PublishOptions).
   */
  async publish(sourceRepo: string, name: string, options: PublishOptions = {}): Promise<number> {
    const generation = this.nextGeneration(name);
    const dir = this.snapshotDir(name, generation);
    await fsp.rm(dir, { recursive: true, force: true });
    try {
      await copyTree(name, path.join(sourceRepo, name), dir, new Set());
    } catch (err) {
      // A partial snapshot is never left behind (on a full disk it would only fill it further).
      await fsp.rm(dir, { recursive: true, force: true }).catch(() => {});
      throw stagingError(name, path.join(sourceRepo, name), err);
    }
    if (options.prepare !== false) await this.prepare?.(dir);
    await this.point(name, dir);
    this.generations.set(name, generation);
    return generation;
  }

  /** Serve an earlier snapshot again (the last good one after a failed load). */
  async restore(name: string, generation: number, options: PublishOptions = {}): Promise<void> {
    const dir = this.snapshotDir(name, generation);
    // A fresh copy gives Triton a strictly newer mtime, which poll mode needs to notice the change.
    const next = this.nextGeneration(name);
    const copy = this.snapshotDir(name, next);
    await fsp.rm(copy, { recursive: true, force: true });
    await copyTree(name, dir, copy, new Set());
    if (options.prepare !== false) await this.prepare?.(copy);
    await this.point(name, copy);
    this.generations.set(name, next);
  }

  /**
   * Stop serving `name`: its folder was deleted, or its load failed with no earlier version to
   * fall back on (poll mode would otherwise retry it at every poll).
   */
  async remove(name: string): Promise<void> {
    await fsp.rm(path.join(this.repository, name), { force: true });
    this.generations.delete(name);
  }

  /**
   * Generations only grow, also across a removal: a model published again after being withdrawn
   * gets a snapshot folder of its own instead of reusing one a loading stub may still read.
   */
  private nextGeneration(name: string): number {
    const next = Math.max(this.generations.get(name) ?? 0, this.highest.get(name) ?? 0) + 1;
    this.highest.set(name, next);
    return next;
  }

  /**
   * Triton names files by where it loaded them (this repository, or a snapshot in the store);
   * point the user at their own files instead.
   */
  userPaths(text: string, sourceRepo: string): string {
    return toUserPaths(text, { repository: this.repository, store: this.store }, sourceRepo);
  }

  /** Delete snapshots of `name` other than the served one and those in `keep`. */
  async prune(name: string, keep: number[] = []): Promise<void> {
    const served = this.generations.get(name);
    const prefix = `${name}@`;
    for (const e of await fsp.readdir(this.store)) {
      if (!e.startsWith(prefix)) continue;
      const g = Number(e.slice(prefix.length));
      if (g === served || keep.includes(g)) continue;
      await fsp.rm(path.join(this.store, e), { recursive: true, force: true });
    }
  }

  /**
   * Serve a placeholder under `name` (its files, relative to the model folder) until remove():
   * poll mode's way of having Triton forget a failed load (reload/forget.ts). Its snapshot is no
   * generation, so load() and servedModels() do not take it for the model's own.
   */
  async publishPlaceholder(name: string, files: Record<string, string>): Promise<void> {
    const dir = path.join(this.store, `${name}@placeholder`);
    await fsp.rm(dir, { recursive: true, force: true });
    for (const [rel, text] of Object.entries(files)) {
      await fsp.mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await fsp.writeFile(path.join(dir, rel), text);
    }
    await this.point(name, dir);
    this.generations.delete(name);
  }

  private async point(name: string, target: string): Promise<void> {
    await fsp.mkdir(this.scratch, { recursive: true });
    const tmp = path.join(this.scratch, `link-${name}-${process.pid}-${Date.now()}`);
    await fsp.symlink(path.relative(this.repository, target), tmp);
    // rename(2) over an existing symlink is atomic; the scratch folder is outside the
    // repository, so Triton never sees the temporary link.
    await fsp.rename(tmp, path.join(this.repository, name));
  }
}
