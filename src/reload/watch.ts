import { REAL_CLOCK, type Clock } from "../clock.js";
import fsp from "node:fs/promises";
import type { Stats } from "node:fs";
import path from "node:path";
import { watch, type FSWatcher } from "chokidar";
import { log as rootLog } from "../log/logger.js";
import { isIgnoredEntry, isModelDir, listModelDirs } from "../repo/layout.js";
import { MODEL_FILE_LIMITS, listModelFiles, type ModelFileLimits } from "../repo/model-files.js";

const log = rootLog.child("watch");

/**
 * What the reload controller needs of a watcher (RepositoryWatcher, or a test's fake): one
 * change per settled edit of a model folder, including its removal.
 */
export interface ModelWatcher {
  /** Calls `listener` with every settled change from now on; the returned function stops that. */
  onChange(listener: (c: ModelChange) => void): () => void;
  /** Resolves once edits are being watched. */
  start(): Promise<void>;
  /** Stop watching; pending changes are dropped. Safe to call twice. */
  close(): Promise<void>;
}

export interface ModelChange {
  model: string;
  /** When the first event of this settled burst arrived (ms since epoch). */
  firstEventAt: number;
  events: number;
}

export interface WatcherOptions {
  /** Quiet time after the last event before a model counts as settled (never below MIN_SETTLE_MS). */
  settleMs?: number;
  /**
   * Quiet time when every event of the burst replaced a file whole (an editor's write-then-rename
   * save: the file has a new inode): its content is complete the moment the event arrives, so the
   * wait only gathers the other files of a "save all". Never below MIN_SETTLE_MS.
   */
  completeSettleMs?: number;
  /** Upper bound on how long a continuous stream of events can postpone a reload. */
  maxWaitMs?: number;
  /** The clock the settle windows run on; tests pass a fake one and move it themselves. */
  timers?: WatchTimers;
  /** chokidar polling, for filesystems without inotify (network mounts, some containers). */
  usePolling?: boolean;
  /** The model-file rule's limits (repo/model-files.ts): depth watched, linked folders watched. */
  limits?: ModelFileLimits;
}

/**
 * The time the watcher settles bursts by: the current time and one-shot timers of the run's clock
 * (../clock.ts). A test gives a FakeClock, whose time moves only when it says, so it can tell a
 * 60 ms settle from a 3 s one without waiting either out.
 */
export type WatchTimers = Pick<Clock, "now" | "setTimeout" | "clearTimeout">;

export const REAL_TIMERS: WatchTimers = REAL_CLOCK;

/**
 * chokidar drops a file's change event that comes within 50 ms of the previous one it emitted
 * for that file (FSWatcher._emit throttles "change" per path), without emitting it later. A save
 * in that window is only seen if the files are read after it, so a model is reported settled no
 * sooner than MIN_SETTLE_MS after its last event.
 */
const CHANGE_THROTTLE_MS = 50;
const MIN_SETTLE_MS = CHANGE_THROTTLE_MS + 10;

/** Whether a relative path stays inside the folder it is relative to. */
function isInside(rel: string): boolean {
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** True when any segment of `rel` (relative to the repository) is an ignored entry. */
export function isIgnoredPath(rel: string): boolean {
  return rel.split(path.sep).some((seg) => seg.length > 0 && isIgnoredEntry(seg));
}

interface Pending {
  timer: unknown;
  first: number;
  events: number;
  /** Every event so far replaced a file whole. */
  complete: boolean;
}

/**
 * Watches a model repository and reports, per model, one change per settled burst of events:
 * an editor's temp-file-and-rename save, or twenty saves in 200 ms, become one change.
 *
 * Model folders are those `listModelDirs` lists. The watcher keeps to the model-file rule
 * (repo/model-files.ts) and reads less: it follows no symbolic link (chokidar's
 * `followSymlinks: false`), so a link to /usr or /dev/zero in a model costs a stat, never a walk
 * or a read, and a link that comes to point elsewhere is itself a change. A model folder that is
 * a link to a directory is watched where it leads (a second watch root, reported under the
 * model's name), unless that folder is over the rule's limits; so is a folder a link inside the
 * model leads to elsewhere in the repository (a generated workspace's `1/tokenizer ->
 * ../../tokenizer`), under every model that links it: the walker's rule bounds what is followed,
 * and the walk is redone after each settled change of the model. Other entries (a README, a link
 * to a file or to nothing) are not models, and changes to them are not reported, unless they
 * were a model folder until then: that is a removal. Depth is bounded by the rule's limit.
 */
export class RepositoryWatcher implements ModelWatcher {
  private watcher: FSWatcher | undefined;
  private readonly listeners = new Set<(c: ModelChange) => void>();
  private readonly pending = new Map<string, Pending>();
  /** The model folders as last seen, to tell a removed model from an entry that never was one. */
  private readonly models = new Set<string>();
  /** Inode of every watched file, to tell a file replaced by rename from one written in place. */
  private readonly inodes = new Map<string, number>();
  /** The repository as watched: its real path (chokidar follows no link, the root's included). */
  private realRoot: string;
  /**
   * Folders outside the models folder watched for a model, by their real path: where a model
   * folder that is a link leads (first), and the folders its links lead to elsewhere.
   */
  private readonly linked = new Map<string, string[]>();
  private readonly settleMs: number;
  private readonly completeSettleMs: number;
  private readonly maxWaitMs: number;
  private readonly timers: WatchTimers;
  private readonly limits: ModelFileLimits;
  private closed = false;
  private markClosed: () => void = () => {};
  /** Resolves when close() is called. */
  private readonly closedNow = new Promise<void>((resolve) => (this.markClosed = resolve));

  constructor(
    readonly root: string,
    private readonly options: WatcherOptions = {},
  ) {
    this.settleMs = Math.max(options.settleMs ?? 150, MIN_SETTLE_MS);
    this.completeSettleMs = Math.min(Math.max(options.completeSettleMs ?? MIN_SETTLE_MS, MIN_SETTLE_MS), this.settleMs);
    this.maxWaitMs = options.maxWaitMs ?? 2_000;
    this.timers = options.timers ?? REAL_TIMERS;
    this.limits = options.limits ?? MODEL_FILE_LIMITS;
    this.realRoot = path.resolve(root);
  }

  onChange(listener: (c: ModelChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async start(): Promise<void> {
    if (this.closed) return;
    this.realRoot = await fsp.realpath(this.root).catch(() => path.resolve(this.root));
    const models = await listModelDirs(this.root).catch(() => [] as string[]);
    for (const m of models) this.models.add(m);
    // Closed while the folder was read: a watcher made now would outlive close() and keep the
    // process running (a Ctrl-C right after Triton was ready did exactly that).
    if (this.closed) return;
    const w = watch([], {
      ignoreInitial: true,
      persistent: true,
      // Links are the model-file rule's, judged by lint and staging; the watcher follows none.
      followSymlinks: false,
      // chokidar counts levels below each watched folder: the models folder, then the model's.
      depth: this.limits.maxDepth + 1,
      alwaysStat: true,
      usePolling: this.options.usePolling ?? false,
      ignored: (p: string) => this.where(p).some((x) => x.ignored),
    });
    this.watcher = w;
    let scanned = false;
    w.on("all", (event, p, stats?: Stats) => {
      // Without followSymlinks chokidar reports each link of its first scan as added, ignoreInitial
      // or not; that is no edit.
      if (scanned) this.record(p, this.replacedWhole(event, p, stats));
    });
    w.on("error", (err) => log.warn("watcher error", { error: String(err) }));
    const ready = new Promise<void>((resolve) =>
      w.once("ready", () => {
        scanned = true;
        resolve();
      }),
    );
    const roots = [this.realRoot];
    for (const m of models) {
      const targets = await this.scan(m);
      for (const t of targets) if (!this.isWatched(t) && !roots.includes(t)) roots.push(t);
      if (targets.length) this.linked.set(m, targets);
    }
    // Closed while the links were read: chokidar's add() on a closed watcher opens it again, and
    // its handles would keep the process alive after the stop.
    if (this.closed) return;
    // One add, so that "ready" waits for every root's first scan.
    w.add(roots);
    // A watcher closed during its first scan never says "ready".
    await Promise.race([ready, this.closedNow]);
  }

  /**
   * The models a path chokidar reports belongs to, and whether it is an ignored entry there: a
   * path in the models folder belongs to the model it is in, one in a linked model's folder to
   * that model (to both, for a link to a folder in the repository).
   */
  private where(p: string): Array<{ model: string; ignored: boolean }> {
    const out: Array<{ model: string; ignored: boolean }> = [];
    const rel = path.relative(this.realRoot, p);
    if (rel !== "" && isInside(rel)) out.push({ model: rel.split(path.sep)[0]!, ignored: isIgnoredPath(rel) });
    for (const [model, targets] of this.linked) {
      for (const target of targets) {
        const r = path.relative(target, p);
        if (!isInside(r) || out.some((o) => o.model === model)) continue;
        out.push({ model, ignored: r !== "" && isIgnoredPath(r) });
        break;
      }
    }
    return out;
  }

  /**
   * The folders outside the models folder to watch for `model`, walked by the model-file rule:
   * where the model folder leads when it is a link, then the folders its links lead to elsewhere
   * in the repository. A model over the rule's limits gets none (lint and staging refuse it and
   * say why). Records the inodes of the files found, so that the first save of each is recognised.
   */
  private async scan(model: string): Promise<string[]> {
    const link = path.join(this.realRoot, model);
    const isLink = await fsp.lstat(link).then(
      (s) => s.isSymbolicLink(),
      () => false,
    );
    if (!(await isModelDir(this.realRoot, model))) return [];
    const dir = isLink ? await fsp.realpath(link).catch(() => undefined) : link;
    if (!dir) return [];
    let files;
    try {
      files = await listModelFiles(dir, model, { limits: this.limits, problems: [], repository: this.realRoot });
    } catch (err) {
      if (isLink) log.warn("not watching a linked model folder over the limits", { model, dir, error: String(err) });
      return [];
    }
    const targets = isLink ? [dir] : [];
    const within = (p: string) =>
      isInside(path.relative(this.realRoot, p)) || targets.some((t) => isInside(path.relative(t, p)));
    for (const f of files)
      if (f.kind === "dir" && f.outside && !targets.some((t) => isInside(path.relative(t, f.real))))
        targets.push(f.real);
    // The paths chokidar reports: real ones (it follows no link).
    for (const f of files) if (f.kind === "file" && within(f.real)) this.inodes.set(f.real, f.ino);
    return targets;
  }

  /** Watch the folders `model` leads to now, and no longer those it led to before. */
  private async follow(model: string): Promise<void> {
    const before = this.linked.get(model) ?? [];
    this.linked.delete(model);
    const after = await this.scan(model);
    for (const t of after) if (!before.includes(t) && !this.isWatched(t)) this.watcher?.add(t);
    if (after.length) this.linked.set(model, after);
    for (const t of before) if (!after.includes(t) && !this.isWatched(t)) this.watcher?.unwatch(t);
  }

  /** Whether `dir` is watched already: in the models folder, or where a model's links lead. */
  private isWatched(dir: string): boolean {
    return (
      isInside(path.relative(this.realRoot, dir)) ||
      [...this.linked.values()].some((ts) => ts.some((t) => isInside(path.relative(t, dir))))
    );
  }

  /**
   * A change that put a different file (inode) at a path that had one: a rename over it, which
   * is atomic, so the file is already complete. A file written in place (or created) may still be
   * growing and waits for the full quiet time.
   */
  private replacedWhole(event: string, p: string, stats: Stats | undefined): boolean {
    if (event === "unlink" || event === "unlinkDir") {
      this.inodes.delete(p);
      return false;
    }
    if (!stats || !stats.isFile()) return false;
    const before = this.inodes.get(p);
    this.inodes.set(p, stats.ino);
    return event === "change" && before !== undefined && before !== stats.ino;
  }

  private record(p: string, complete: boolean): void {
    for (const { model, ignored } of this.where(p)) if (!ignored) this.recordModel(model, complete);
  }

  private recordModel(model: string, complete: boolean): void {
    const now = this.timers.now();
    const entry = this.pending.get(model);
    if (entry) this.timers.clearTimeout(entry.timer);
    const first = entry?.first ?? now;
    const events = (entry?.events ?? 0) + 1;
    const allComplete = (entry?.complete ?? true) && complete;
    const settle = allComplete ? this.completeSettleMs : this.settleMs;
    const wait = Math.max(0, Math.min(settle, first + this.maxWaitMs - now));
    const timer = this.timers.setTimeout(() => {
      this.pending.delete(model);
      void this.settled({ model, firstEventAt: first, events });
    }, wait);
    this.pending.set(model, { timer, first, events, complete: allComplete });
  }

  private async settled(change: ModelChange): Promise<void> {
    const isModel = await isModelDir(this.root, change.model);
    // A model folder that is a link may point elsewhere now.
    await this.follow(change.model);
    // Closed meanwhile.
    if (!this.watcher) return;
    const was = this.models.has(change.model);
    if (isModel) this.models.add(change.model);
    else this.models.delete(change.model);
    if (!isModel && !was) return;
    for (const l of this.listeners) l(change);
  }

  /** Stop watching; pending changes are dropped. Safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    this.markClosed();
    for (const p of this.pending.values()) this.timers.clearTimeout(p.timer);
    this.pending.clear();
    const w = this.watcher;
    this.watcher = undefined;
    await w?.close();
  }
}
