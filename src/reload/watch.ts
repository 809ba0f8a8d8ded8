import fsp from "node:fs/promises";
import type { Stats } from "node:fs";
import path from "node:path";
import { watch, type FSWatcher } from "chokidar";
import { log as rootLog } from "../log/logger.js";
import { isIgnoredEntry, isModelDir, listModelDirs } from "../repo/layout.js";

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
  now?: () => number;
  /** chokidar polling, for filesystems without inotify (network mounts, some containers). */
  usePolling?: boolean;
}

/**
 * chokidar drops a file's change event that comes within 50 ms of the previous one it emitted
 * for that file (FSWatcher._emit throttles "change" per path), without emitting it later. A save
 * in that window is only seen if the files are read after it, so a model is reported settled no
 * sooner than MIN_SETTLE_MS after its last event.
 */
const CHANGE_THROTTLE_MS = 50;
const MIN_SETTLE_MS = CHANGE_THROTTLE_MS + 10;

/** True when any segment of `rel` (relative to the repository) is an ignored entry. */
export function isIgnoredPath(rel: string): boolean {
  return rel.split(path.sep).some((seg) => seg.length > 0 && isIgnoredEntry(seg));
}

interface Pending {
  timer: NodeJS.Timeout;
  first: number;
  events: number;
  /** Every event so far replaced a file whole. */
  complete: boolean;
}

/**
 * Watches a model repository and reports, per model, one change per settled burst of events:
 * an editor's temp-file-and-rename save, or twenty saves in 200 ms, become one change.
 *
 * Model folders are those `listModelDirs` lists. A model folder that is a symbolic link to a
 * directory is watched through the link (chokidar follows links, `followSymlinks`, and reports
 * what happens in the target under the link's path), so a save in the target reloads it. Other
 * entries (a README, a link to a file or to nothing) are not models, and changes to them are
 * not reported, unless they were a model folder until then: that is a removal.
 */
export class RepositoryWatcher implements ModelWatcher {
  private watcher: FSWatcher | undefined;
  private readonly listeners = new Set<(c: ModelChange) => void>();
  private readonly pending = new Map<string, Pending>();
  /** The model folders as last seen, to tell a removed model from an entry that never was one. */
  private readonly models = new Set<string>();
  /** Inode of every watched file, to tell a file replaced by rename from one written in place. */
  private readonly inodes = new Map<string, number>();
  private readonly settleMs: number;
  private readonly completeSettleMs: number;
  private readonly maxWaitMs: number;
  private readonly now: () => number;

  constructor(
    readonly root: string,
    private readonly options: WatcherOptions = {},
  ) {
    this.settleMs = Math.max(options.settleMs ?? 150, MIN_SETTLE_MS);
    this.completeSettleMs = Math.min(Math.max(options.completeSettleMs ?? MIN_SETTLE_MS, MIN_SETTLE_MS), this.settleMs);
    this.maxWaitMs = options.maxWaitMs ?? 2_000;
    this.now = options.now ?? Date.now;
  }

  onChange(listener: (c: ModelChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async start(): Promise<void> {
    const models = await listModelDirs(this.root).catch(() => [] as string[]);
    for (const m of models) this.models.add(m);
    await Promise.all(models.map((m) => this.recordInodes(path.join(this.root, m))));
    const w = watch(this.root, {
      ignoreInitial: true,
      persistent: true,
      // The default, spelled out: a symlinked model folder is a model (see the class comment).
      followSymlinks: true,
      alwaysStat: true,
      usePolling: this.options.usePolling ?? false,
      ignored: (p: string) => {
        const rel = path.relative(this.root, p);
        return rel !== "" && !rel.startsWith("..") && isIgnoredPath(rel);
      },
    });
    this.watcher = w;
    w.on("all", (event, p, stats?: Stats) => this.record(p, this.replacedWhole(event, p, stats)));
    w.on("error", (err) => log.warn("watcher error", { error: String(err) }));
    await new Promise<void>((resolve) => w.once("ready", () => resolve()));
  }

  /** The inodes of the files already there, so that the first save of each is recognised too. */
  private async recordInodes(dir: string): Promise<void> {
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    await Promise.all(
      entries
        .filter((e) => !isIgnoredEntry(e.name))
        .map(async (e) => {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) return this.recordInodes(p);
          const st = await fsp.stat(p).catch(() => undefined);
          if (st?.isFile()) this.inodes.set(p, st.ino);
        }),
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
    const rel = path.relative(this.root, p);
    if (rel === "" || rel.startsWith("..")) return;
    const model = rel.split(path.sep)[0]!;
    if (isIgnoredEntry(model)) return;
    const now = this.now();
    const entry = this.pending.get(model);
    if (entry) clearTimeout(entry.timer);
    const first = entry?.first ?? now;
    const events = (entry?.events ?? 0) + 1;
    const allComplete = (entry?.complete ?? true) && complete;
    const settle = allComplete ? this.completeSettleMs : this.settleMs;
    const wait = Math.max(0, Math.min(settle, first + this.maxWaitMs - now));
    const timer = setTimeout(() => {
      this.pending.delete(model);
      void this.settled({ model, firstEventAt: first, events });
    }, wait);
    this.pending.set(model, { timer, first, events, complete: allComplete });
  }

  private async settled(change: ModelChange): Promise<void> {
    const isModel = await isModelDir(this.root, change.model);
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
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
    const w = this.watcher;
    this.watcher = undefined;
    await w?.close();
  }
}
