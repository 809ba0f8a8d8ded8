import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { UserError } from "../../errors.js";
import { CONTAINER_MODELS, SYNC_CONTAINER, SYNC_MARKER } from "../../k8s/manifests.js";
import { log as rootLog } from "../../log/logger.js";
import { currentPod, type Pod } from "../clients/kubectl/pod-status.js";
import type { KubectlClient } from "../clients/kubectl/kubectl-client.js";
import { lastLines, ToolCommandError } from "../clients/kubectl/tools.js";

const log = rootLog.child("cluster:sync");

/**
 * Run in the pod's sync container with the tar stream on stdin, its length and the served model
 * names as arguments. Exactly that many bytes are read and counted first: a stream that ends
 * early (seen with containerd 1.6's CRI streaming, which cuts `kubectl exec -i` input short) is
 * refused whole (exit 3), never half unpacked. The new snapshots land beside the old ones (one
 * the pod already has is kept as it is: snapshots never change, and a snapshot moved in again,
 * though equal, is new to Triton's poll, which would reload its model), then
 * each `repository/<model>` link is replaced by a rename (atomic: Triton's poll never finds a
 * model missing or half-copied), links of withdrawn models are removed, and the marker tells the
 * Triton container the first copy is complete. TRITON_DEV_SYNC_ROOT (tests) copies elsewhere than
 * the volume.
 */
export const SYNC_SCRIPT = `set -e
m="\${TRITON_DEV_SYNC_ROOT:-${CONTAINER_MODELS}}"
in="$m/.incoming"
rm -rf "$in"
mkdir -p "$in" "$m/store" "$m/repository"
n=$1
shift
head -c "$n" >"$in.tar"
got=$(wc -c <"$in.tar")
if [ "$got" -ne "$n" ]; then rm -f "$in.tar"; echo "triton-dev-sync: received $got of $n bytes" >&2; exit 3; fi
tar -x -o -f "$in.tar" -C "$in"
rm -f "$in.tar"
if [ -d "$in/key" ]; then rm -rf "$m/key.old"; if [ -d "$m/key" ]; then mv "$m/key" "$m/key.old"; fi; mv "$in/key" "$m/key"; rm -rf "$m/key.old"; fi
for d in "$in"/store/* "$in"/store/.[!.]*; do [ -e "$d" ] || continue; n=\${d##*/}; if [ -e "$m/store/$n" ]; then rm -rf "$d"; else mv "$d" "$m/store/$n"; fi; done
for l in "$in"/repository/* "$in"/repository/.[!.]*; do [ -e "$l" ] || [ -L "$l" ] || continue; mv -T "$l" "$m/repository/\${l##*/}"; done
for l in "$m"/repository/* "$m"/repository/.[!.]*; do
  [ -e "$l" ] || [ -L "$l" ] || continue
  keep=; for k in "$@"; do [ "$k" = "\${l##*/}" ] && keep=1; done
  [ -n "$keep" ] || rm -rf "$l"
done
rm -rf "$in"
touch "$m/${SYNC_MARKER}"
`;

/** How often a copy that arrives incomplete is sent again before the run gives up. */
const COPY_ATTEMPTS = 3;

export class SyncError extends UserError {
  override name = "SyncError";
}

export interface SyncOptions {
  tools: KubectlClient;
  context: string;
  namespace: string;
  /** The run folder: `repository/`, `store/` and `key/` are copied. */
  runDir: string;
  /** The pod whose sync container runs now (undefined: none yet). */
  pod: () => string | undefined;
  /** Each copy, as it completes (what was sent). */
  onSynced?: (s: { pod: string; snapshots: string[]; full: boolean; ms: number }) => void;
  /** How long a burst of publishes is let settle before one copy. */
  settleMs?: number;
  exec?: typeof execa;
  /** The time the settle window runs on (../../clock.ts); a copy's `ms` is real time. */
  clock?: Clock;
}

/** The pod's sync container is running (so `kubectl exec` can reach it). */
export function syncPod(pods: Pod[]): string | undefined {
  const pod = currentPod(pods);
  const cs = pod?.status?.containerStatuses?.find((c) => c.name === SYNC_CONTAINER);
  return pod && cs?.state?.running ? pod.metadata.name : undefined;
}

/**
 * Keeps the pod's copy of the run folder in step with this machine's: once for every pod the
 * Deployment runs (a replaced pod starts with an empty volume), then after every publish in the
 * staging repository (the reload controller's atomic link renames; a refused edit is never
 * published, so it never reaches the pod). Snapshots are immutable, so only new ones are sent.
 * One copy at a time; publishes meanwhile are gathered into the next.
 */
export class RepositorySync {
  private sent = new Set<string>();
  private podSynced: string | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private watcher: fs.FSWatcher | undefined;
  private timer: unknown;
  private stopped = false;
  lastError: Error | undefined;

  private readonly clock: Clock;

  constructor(private readonly o: SyncOptions) {
    this.clock = o.clock ?? REAL_CLOCK;
  }

  /** Copy now (or right after the copy under way); rejects with what went wrong. */
  sync(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.copy();
        } while (this.again && !this.stopped);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** Copies after each publish in `repository/` and whenever the pod changes (see `podChanged`). */
  watch(): void {
    if (this.watcher || this.stopped) return;
    this.watcher = fs.watch(path.join(this.o.runDir, "repository"), () => this.schedule());
    this.watcher.on("error", (err) => log.warn("the staging repository cannot be watched", { error: String(err) }));
  }

  /** The pod's sync container runs and it has not had its first copy. */
  needsFullCopy(): boolean {
    const pod = this.o.pod();
    return !!pod && pod !== this.podSynced;
  }

  schedule(): void {
    if (this.stopped) return;
    this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => {
      this.sync().catch((err: unknown) => {
        this.lastError = err instanceof Error ? err : new Error(String(err));
        log.warn("the copy to the pod failed; the next publish tries again", { error: this.lastError.message });
      });
    }, this.o.settleMs ?? 100);
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
  }

  private async copy(): Promise<void> {
    const pod = this.o.pod();
    if (!pod || this.stopped) return;
    const started = Date.now();
    const full = pod !== this.podSynced;
    if (full) this.sent.clear();
    const runDir = this.o.runDir;
    const store = await fsp.readdir(path.join(runDir, "store")).catch(() => [] as string[]);
    const fresh = store.filter((s) => !this.sent.has(s));
    const served = await fsp.readdir(path.join(runDir, "repository")).catch(() => [] as string[]);
    const tarFile = path.join(runDir, ".sync.tar");
    const exec = this.o.exec ?? execa;
    // Links are sent as links (repository/<model> -> ../store/<model>@<n>), the snapshots' files as they are.
    const members = [...(full ? ["key"] : []), ...fresh.map((s) => `store/${s}`), "repository"];
    const tar = await exec("tar", ["-c", "-f", tarFile, "-C", runDir, "--", ...members], { reject: false });
    if (tar.failed) {
      await fsp.rm(tarFile, { force: true });
      throw new SyncError(`could not pack the staged models for the pod: ${lastLines(String(tar.stderr), 4)}`, {
        hint: "tar must be on PATH; the run folder is " + runDir,
      });
    }
    try {
      const bytes = (await fsp.stat(tarFile)).size;
      for (let attempt = 1; ; attempt++) {
        try {
          await this.o.tools.kubectl(
            this.o.context,
            [
              `--namespace=${this.o.namespace}`,
              "exec",
              "-i",
              `pod/${pod}`,
              `--container=${SYNC_CONTAINER}`,
              "--",
              "/bin/sh",
              "-c",
              SYNC_SCRIPT,
              "sh",
              String(bytes),
              ...served,
            ],
            { inputFile: tarFile, timeoutMs: 600_000 },
          );
          break;
        } catch (err) {
          // kubectl exits with the command's code; the script's own line may not make it back
          // through a stream that also cut its input short.
          if (!(err instanceof ToolCommandError) || err.toolExitCode !== 3) throw err;
          const counted = /triton-dev-sync: received (\d+) of (\d+) bytes/.exec(err.stderr);
          const short = counted ? `${counted[1]} of ${counted[2]} bytes` : `fewer than ${bytes} bytes`;
          if (attempt < COPY_ATTEMPTS) {
            log.warn("the copy reached the pod incomplete; sending it again", {
              pod,
              received: short,
            });
            continue;
          }
          throw new SyncError(
            `the copy of the staged models reached pod ${pod} incomplete ${COPY_ATTEMPTS} times (last: ${short}): the cluster's exec stream cut the input short`,
            {
              hint: "The input of `kubectl exec -i` is cut short by some container runtimes' streaming (containerd 1.6 was seen to); a node with a newer containerd, or `triton-dev manifests` with a volume you fill yourself, avoids it.",
              cause: err,
            },
          );
        }
      }
    } catch (err) {
      if (err instanceof SyncError) throw err;
      throw new SyncError(
        `could not copy the staged models into pod ${pod}: ${err instanceof ToolCommandError ? lastLines(err.stderr, 4) : (err as Error).message}`,
        {
          hint: `The copy runs \`kubectl --context ${this.o.context} -n ${this.o.namespace} exec -i pod/${pod} -c ${SYNC_CONTAINER} -- /bin/sh\`; it needs the create right on pods/exec there (README, "The cluster runtime").`,
          cause: err,
        },
      );
    } finally {
      await fsp.rm(tarFile, { force: true });
    }
    for (const s of fresh) this.sent.add(s);
    this.podSynced = pod;
    this.lastError = undefined;
    this.o.onSynced?.({ pod, snapshots: fresh, full, ms: Date.now() - started });
    log.debug("synced", { pod, snapshots: fresh.length, full });
  }
}
