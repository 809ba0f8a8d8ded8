import { REAL_CLOCK, type Clock } from "../../../clock.js";
import { log as rootLog } from "../../../log/logger.js";
import { stripTritonPrefix } from "../../../state/log-file.js";
import { ExitTracker, exitProgress, versionsToUnload } from "../../../triton/log-lines.js";
import type { StopOutcome, UnloadsToWaitFor, UnloadWait } from "../../driver.js";
import { splitLogLine } from "../../log-timestamps.js";
import { logArgs } from "./connection.js";
import type { KubectlClient } from "./kubectl-client.js";

const log = rootLog.child("kubectl:delete-run");

/** The model versions Triton had loaded when the stop began (its repository index), and who hears of the wait. */
export interface UnloadWatch {
  loaded: ReadonlyArray<{ name: string; version?: string; state?: string }>;
  /** What the stop waits for, once it takes longer than `progressAfterMs`, and each time it changes. */
  onProgress?: (message: string) => void;
  progressAfterMs?: number;
  /** How long Triton may take to exit by itself once everything has unloaded. */
  settleMs?: number;
  /** The unloads that run the user's code; with it, the pod is force-deleted once those are over (process-group.ts). */
  waitFor?: UnloadsToWaitFor;
}

export interface DeleteTarget {
  context: string;
  namespace: string;
  selector: string;
  kinds: readonly string[];
  graceMs: number;
  /** The time the wait for the pod's end, the settle time and progress ticks run on (../../../clock.ts). */
  clock?: Clock;
}

/**
 * Delete what one run applied (by its label, never by name), then wait until its pod is gone:
 * Triton gets its SIGTERM and unloads its models within the pod's grace period. With `watch`,
 * the unloads are followed in the pod's log and the pod is force-deleted once every model loaded
 * at the start has unloaded: Triton 2.51 counts a reload that failed beside a serving version as
 * live until its exit timeout (10 s), and the pod's grace period would wait that out with nothing
 * of ours left to wait for (as the docker runtime's container-stop.ts). With `watch.waitFor`, the pod
 * is force-deleted as soon as no inference is in flight and the unloads that run the user's code
 * are over (its /dev/shm is the pod's own memory-backed volume, gone with it).
 */
export async function deleteRunObjects(
  tools: KubectlClient,
  o: DeleteTarget,
  watch?: UnloadWatch,
): Promise<StopOutcome> {
  const started = Date.now();
  const loaded = versionsToUnload(watch?.loaded ?? []);
  const waits = watch?.waitFor && loaded.length ? await whichToWaitFor(watch.waitFor, loaded) : undefined;
  const pods = loaded.length ? await podNames(tools, o) : [];
  const clock = o.clock ?? REAL_CLOCK;
  const follow = watch && pods.length ? followUnloads(tools, o, pods, loaded, watch, waits, clock) : undefined;
  try {
    await deleteAndWait(tools, o, follow, clock);
  } finally {
    follow?.stop();
  }
  return { ms: Date.now() - started, ...(waits ? { waitedFor: waits } : {}), ended: follow?.ended() ?? "exited" };
}

/** Which of the loaded versions' unloads run the user's code; undefined (wait for all) when that cannot be told. */
export async function whichToWaitFor(
  waitFor: UnloadsToWaitFor,
  loaded: ReadonlyArray<{ name: string; version?: string }>,
): Promise<UnloadWait[] | undefined> {
  return waitFor(loaded).catch((err: unknown) => {
    log.debug("could not tell which unloads run code; waiting for all", { error: String(err) });
    return undefined;
  });
}

async function podNames(tools: KubectlClient, o: { context: string; namespace: string; selector: string }) {
  const out = await tools
    .kubectl(o.context, [`--namespace=${o.namespace}`, "get", "pods", `--selector=${o.selector}`, "--output=name"], {
      timeoutMs: 15_000,
    })
    .catch(() => "");
  return out
    .split("\n")
    .map((l) => l.trim().replace(/^pods?\//, ""))
    .filter(Boolean);
}

interface Follow {
  /**
   * Resolves once every watched model has unloaded and Triton has had `settleMs` to exit by itself,
   * or with `waitFor`, once nothing of the user's is left to run.
   */
  settled: Promise<void>;
  /** How the pod's end came, once `settled` has resolved; undefined when it had not (Triton exited by itself). */
  ended(): StopOutcome["ended"] | undefined;
  tell(): void;
  stop(): void;
}

function followUnloads(
  tools: KubectlClient,
  o: { context: string; namespace: string },
  pods: string[],
  loaded: ReadonlyArray<{ name: string; version?: string }>,
  watch: UnloadWatch,
  waits: UnloadWait[] | undefined,
  clock: Clock,
): Follow {
  const tracker = new ExitTracker(loaded, waits);
  let ended: StopOutcome["ended"] | undefined;
  const started = Date.now();
  // Lines from before the stop (an earlier reload's unloads) are dropped by their timestamps;
  // --since-time lets the follower start after the SIGTERM without missing a line.
  const since = new Date(started - 1000).toISOString();
  let resolveSettled!: () => void;
  const settled = new Promise<void>((r) => (resolveSettled = r));
  let timer: unknown;
  const children = pods.map((pod) =>
    tools.spawn(
      "kubectl",
      [`--context=${o.context}`, ...logArgs({ namespace: o.namespace, pod, follow: true, since })],
      (line, stream) => {
        if (stream !== "stdout") return;
        const { ts, text } = splitLogLine(line.replace(/\r$/, ""));
        if (ts && ts[0] * 1000 + ts[1] / 1e6 < started) return;
        if (!tracker.feed(stripTritonPrefix(text)) || ended) return;
        if (tracker.canEnd()) {
          ended = "ended";
          clock.clearTimeout(timer);
          resolveSettled();
        } else if (tracker.done() && !timer)
          timer = clock.setTimeout(() => {
            ended ??= "unloaded";
            resolveSettled();
          }, watch.settleMs ?? 250);
      },
    ),
  );
  return {
    settled,
    ended: () => ended,
    tell: exitProgress(tracker, watch.onProgress, watch.progressAfterMs),
    stop: () => {
      clock.clearTimeout(timer);
      for (const c of children) c.kill();
    },
  };
}

async function deleteAndWait(
  tools: KubectlClient,
  o: DeleteTarget,
  follow: Follow | undefined,
  clock: Clock,
): Promise<void> {
  void follow?.settled.then(async () => {
    log.info(
      follow.ended() === "ended"
        ? "no inference in flight and no unload left that runs the model's code; the pod is deleted now"
        : "every model unloaded; Triton still waits, so its pod is deleted now",
      { selector: o.selector },
    );
    await tools
      .kubectl(
        o.context,
        [
          `--namespace=${o.namespace}`,
          "delete",
          "pods",
          `--selector=${o.selector}`,
          "--grace-period=0",
          "--force",
          "--ignore-not-found",
          "--wait=false",
        ],
        { timeoutMs: 30_000 },
      )
      .catch((err: unknown) => log.debug("the forced pod deletion failed", { error: String(err) }));
  });
  const ticker = follow ? clock.setInterval(() => follow.tell(), 200) : undefined;
  try {
    await deleteObjects(tools, o);
  } finally {
    clock.clearInterval(ticker);
  }
  const deadline = clock.now() + o.graceMs + 30_000;
  while (clock.now() < deadline) {
    follow?.tell();
    if ((await podNames(tools, o)).length === 0) return;
    await clock.sleep(200);
  }
  log.warn("the Triton pod is still terminating; Kubernetes removes it", { selector: o.selector });
}

async function deleteObjects(tools: KubectlClient, o: DeleteTarget): Promise<void> {
  await tools.kubectl(
    o.context,
    [
      `--namespace=${o.namespace}`,
      "delete",
      o.kinds.join(","),
      `--selector=${o.selector}`,
      "--ignore-not-found",
      "--wait=true",
    ],
    { timeoutMs: o.graceMs + 60_000 },
  );
}

export function terminatePids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // gone already
    }
  }
}
