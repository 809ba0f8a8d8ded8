import fs from "node:fs";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { log as rootLog } from "../log/logger.js";
import { isIgnoredEntry } from "../repo/layout.js";

const log = rootLog.child("lsp");

/** Quiet time after a model's last event before it is read again: an editor's save is several events. */
const SETTLE_MS = 60;

/**
 * The language server's watch of saves made elsewhere: one inotify watch on each model folder and
 * on each folder directly in it (its version folders), set as the model is read, and nothing
 * walked up front. reload/watch.ts (chokidar) walks and stats the whole repository before it
 * watches anything: at 20,000 models that took 111 s of a busy machine's CPU and 200 MB, while
 * the editor waited on the same event loop. A file deeper than a version folder (1/tokenizer/…)
 * is not watched: its model is read again on its next change or save.
 */
export class ModelFolderWatch {
  private readonly byModel = new Map<string, Map<string, fs.FSWatcher>>();
  private readonly timers = new Map<string, unknown>();
  /** Set once the system refused a watch (inotify's limit): later models are not watched. */
  private refused = false;
  private closed = false;

  constructor(
    private readonly repo: string,
    private readonly onChange: (model: string) => void,
    /** The time the settle windows run on (../clock.ts). */
    private readonly clock: Clock = REAL_CLOCK,
  ) {}

  /**
   * Watches the model folder and the folders named in it, and stops watching those gone (no
   * `subdirs`: the folder itself, before it is read). `recheck`: a folder watched only now may
   * have changed since it was read, so the model is reported once more (not while the repository
   * is first read: each model is read right before).
   */
  watch(model: string, subdirs?: readonly string[], recheck = false): void {
    if (this.closed) return;
    const dir = path.join(this.repo, model);
    const want = new Set([dir, ...(subdirs ?? []).map((s) => path.join(dir, s))]);
    let have = this.byModel.get(model);
    if (!have) this.byModel.set(model, (have = new Map()));
    if (subdirs)
      for (const [d, w] of have)
        if (!want.has(d)) {
          w.close();
          have.delete(d);
        }
    let added = false;
    for (const d of want) {
      if (have.has(d) || this.refused) continue;
      try {
        const w = fs.watch(d, { persistent: false }, (_event, name) => {
          if (typeof name === "string" && name && isIgnoredEntry(name)) return;
          this.fire(model);
        });
        const held = have;
        w.on("error", () => {
          // The folder went (removed, or a link that now leads elsewhere): its model is read again.
          w.close();
          held.delete(d);
          this.fire(model);
        });
        have.set(d, w);
        added = true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOSPC" || code === "EMFILE") {
          this.refused = true;
          log.warn("cannot watch more model folders: saves made elsewhere in the others are not seen", {
            repo: this.repo,
            watched: this.count(),
            hint: "Raise fs.inotify.max_user_watches (sysctl), or save from the editor.",
          });
        }
        // Otherwise the folder is not there (any more): the repository's own watch reports that.
      }
    }
    if (recheck && added) this.fire(model);
  }

  unwatch(model: string): void {
    for (const w of this.byModel.get(model)?.values() ?? []) w.close();
    this.byModel.delete(model);
    this.clock.clearTimeout(this.timers.get(model));
    this.timers.delete(model);
  }

  private count(): number {
    let n = 0;
    for (const m of this.byModel.values()) n += m.size;
    return n;
  }

  private fire(model: string): void {
    if (this.closed) return;
    this.clock.clearTimeout(this.timers.get(model));
    this.timers.set(
      model,
      this.clock.setTimeout(() => {
        this.timers.delete(model);
        if (!this.closed) this.onChange(model);
      }, SETTLE_MS),
    );
  }

  close(): void {
    this.closed = true;
    for (const m of [...this.byModel.keys()]) this.unwatch(m);
  }
}
