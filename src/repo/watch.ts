import path from "node:path";
import { watch, type FSWatcher } from "chokidar";
import { log as rootLog } from "../log/logger.js";
import { isIgnoredEntry } from "./stage.js";

const log = rootLog.child("watch");

export interface ModelChange {
  model: string;
  /** When the first event of this settled burst arrived (ms since epoch). */
  firstEventAt: number;
  events: number;
}

export interface WatcherOptions {
  /** Quiet time after the last event before a model counts as settled. */
  settleMs?: number;
  /** Upper bound on how long a continuous stream of events can postpone a reload. */
  maxWaitMs?: number;
  now?: () => number;
  /** chokidar polling, for filesystems without inotify (network mounts, some containers). */
  usePolling?: boolean;
}

/** True when any segment of `rel` (relative to the repository) is an ignored entry. */
export function isIgnoredPath(rel: string): boolean {
  return rel.split(path.sep).some((seg) => seg.length > 0 && isIgnoredEntry(seg));
}

/**
 * Watches a model repository and reports, per model, one change per settled burst of events:
 * an editor's temp-file-and-rename save, or twenty saves in 200 ms, become one change.
 */
export class RepositoryWatcher {
  private watcher: FSWatcher | undefined;
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; first: number; events: number }>();
  private readonly settleMs: number;
  private readonly maxWaitMs: number;
  private readonly now: () => number;

  constructor(
    readonly root: string,
    private readonly onChange: (c: ModelChange) => void,
    private readonly options: WatcherOptions = {},
  ) {
    this.settleMs = options.settleMs ?? 150;
    this.maxWaitMs = options.maxWaitMs ?? 2_000;
    this.now = options.now ?? Date.now;
  }

  async start(): Promise<void> {
    const w = watch(this.root, {
      ignoreInitial: true,
      persistent: true,
      usePolling: this.options.usePolling ?? false,
      ignored: (p: string) => {
        const rel = path.relative(this.root, p);
        return rel !== "" && !rel.startsWith("..") && isIgnoredPath(rel);
      },
    });
    this.watcher = w;
    w.on("all", (_event, p) => this.record(p));
    w.on("error", (err) => log.warn("watcher error", { error: String(err) }));
    await new Promise<void>((resolve) => w.once("ready", () => resolve()));
  }

  private record(p: string): void {
    const rel = path.relative(this.root, p);
    if (rel === "" || rel.startsWith("..")) return;
    const model = rel.split(path.sep)[0]!;
    if (isIgnoredEntry(model)) return;
    const now = this.now();
    const entry = this.pending.get(model);
    if (entry) clearTimeout(entry.timer);
    const first = entry?.first ?? now;
    const events = (entry?.events ?? 0) + 1;
    const wait = Math.max(0, Math.min(this.settleMs, first + this.maxWaitMs - now));
    const timer = setTimeout(() => {
      this.pending.delete(model);
      this.onChange({ model, firstEventAt: first, events });
    }, wait);
    this.pending.set(model, { timer, first, events });
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
