import fsp from "node:fs/promises";
import path from "node:path";
import { isIgnoredEntry, listModelDirs } from "../repo/layout.js";

/**
 * `src` may itself be a link to a directory (a symlinked model folder): the snapshot holds copies
 * of the files, so editing the link's target changes nothing served until the watcher sees it.
 */
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

export interface PublishOptions {
  /**
   * Run the repository's prepare step (default true). Explicit mode skips it: its only purpose is
   * to keep the python stub from writing __pycache__ into a served folder, which matters only
   * when Triton polls the folder's mtime.
   */
  prepare?: boolean;
}

/**
 * Rewrites paths into a staging repository (`<run>/repository/<model>/...`) or its snapshots
 * (`<run>/store/<model>@<generation>/...`) as the same paths in the user's repository: Triton's
 * messages (a model.py traceback, say) then name the file the user edits.
 */
export function toUserPaths(text: string, staging: { repository: string; store: string }, sourceRepo: string): string {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const user = sourceRepo.endsWith(path.sep) ? sourceRepo : sourceRepo + path.sep;
  return text
    .split(staging.repository + path.sep)
    .join(user)
    .replace(
      new RegExp(
        `${escape(staging.store + path.sep)}([^${escape(path.sep)}\\s"']+)@\\d+(?=${escape(path.sep)}|["'\\s]|$)`,
        "g",
      ),
      (_m, name: string) => user + name,
    );
}

/** Where a run's staging repository and its snapshots live. */
export function stagingLayout(runDir: string): { repository: string; store: string } {
  return { repository: path.join(runDir, "repository"), store: path.join(runDir, "store") };
}

export interface StagingOptions {
  /** Run after a model is copied and before it becomes visible (e.g. precompiling model.py). */
  prepare?: (modelDir: string) => Promise<void>;
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

  /** Stage every model of `sourceRepo` for which `include` holds; returns the staged names. */
  async init(sourceRepo: string, include: (name: string) => boolean = () => true): Promise<string[]> {
    await fsp.rm(this.repository, { recursive: true, force: true });
    await Promise.all([this.repository, this.store, this.scratch].map((d) => fsp.mkdir(d, { recursive: true })));
    const staged: string[] = [];
    for (const m of await listModelDirs(sourceRepo)) {
      if (!include(m)) continue;
      await this.publish(sourceRepo, m);
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
    await copyTree(path.join(sourceRepo, name), dir);
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
    await copyTree(dir, copy);
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

  private async point(name: string, target: string): Promise<void> {
    await fsp.mkdir(this.scratch, { recursive: true });
    const tmp = path.join(this.scratch, `link-${name}-${process.pid}-${Date.now()}`);
    await fsp.symlink(path.relative(this.repository, target), tmp);
    // rename(2) over an existing symlink is atomic; the scratch folder is outside the
    // repository, so Triton never sees the temporary link.
    await fsp.rename(tmp, path.join(this.repository, name));
  }
}
