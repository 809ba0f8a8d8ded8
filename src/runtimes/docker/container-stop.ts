import { PassThrough, type Readable } from "node:stream";
import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { log as rootLog } from "../../log/logger.js";
import { stripTritonPrefix } from "../../state/log-file.js";
import { ExitTracker, exitProgress, versionsToUnload } from "../../triton/log-lines.js";
import type { StopOutcome, UnloadsToWaitFor } from "../driver.js";
import { splitLogLine } from "../log-timestamps.js";

const log = rootLog.child("docker");

export interface ContainerStopOptions {
  /** How long Triton may take to exit after SIGTERM before the container is killed. */
  graceMs: number;
  /** The model versions loaded when the stop begins (Triton's repository index); [] when Triton does not say. */
  loaded?: () => Promise<ReadonlyArray<{ name: string; version?: string; state?: string }>>;
  /** A line for the user when the stop takes longer than `progressAfterMs`, and each time it changes. */
  onProgress?: (message: string) => void;
  progressAfterMs?: number;
  /** How long Triton may take to exit by itself once everything has unloaded (see process-group.ts). */
  settleMs?: number;
  /** The unloads that run the user's code; with it, the container is killed once those are over (process-group.ts). */
  waitFor?: UnloadsToWaitFor;
  pollMs?: number;
  /** The time the grace, settle and kill waits run on (../../clock.ts); the outcome's `ms` is real time. */
  clock?: Clock;
}

/** The daemon's "not running" (304, 409) and "no such container" (404). */
function gone(err: unknown): boolean {
  const code = (err as { statusCode?: number }).statusCode;
  return code === 304 || code === 404 || code === 409;
}

async function running(container: Docker.Container): Promise<boolean> {
  try {
    const s = (await container.inspect()).State;
    return s.Running || s.Restarting;
  } catch (err) {
    if (gone(err)) return false;
    throw err;
  }
}

/**
 * Stops Triton's container as the local runtime stops its process group: SIGTERM, the unloads
 * followed in the container's log, and the container killed 250 ms after everything loaded at the
 * start has unloaded, or with `waitFor`, as soon as no inference is in flight and the unloads that
 * run the user's code are over (the python stubs' shared memory is the container's own /dev/shm,
 * gone with it). Triton 2.51 keeps counting a reload that failed beside a serving version as
 * live until its exit timeout (10 s), and `docker stop` would wait that out with nothing of ours
 * left to wait for. Without a list of loaded models it is a plain `docker stop`.
 */
export async function stopTritonContainer(container: Docker.Container, o: ContainerStopOptions): Promise<StopOutcome> {
  const clock = o.clock ?? REAL_CLOCK;
  const started = Date.now();
  // The grace time counts from the same moment on the clock the waits run on.
  const graceFrom = clock.now();
  const loaded = o.loaded ? versionsToUnload(await o.loaded().catch(() => [])) : [];
  if (loaded.length === 0) {
    await container.stop({ t: Math.max(1, Math.round(o.graceMs / 1000)) }).catch((err: unknown) => {
      if (!gone(err)) throw err;
    });
    return { ms: Date.now() - started, ended: "exited" };
  }
  const waits = o.waitFor
    ? await o.waitFor(loaded).catch((err: unknown) => {
        log.debug("could not tell which unloads run code; waiting for all", { error: String(err) });
        return undefined;
      })
    : undefined;
  const tracker = new ExitTracker(loaded, waits);
  const tell = exitProgress(tracker, o.onProgress, o.progressAfterMs);
  // The since filter has whole-second precision: older lines (an unload of an earlier reload) are
  // dropped by their timestamps.
  const raw = (await container.logs({
    follow: true,
    stdout: true,
    stderr: true,
    timestamps: true,
    since: Math.floor(started / 1000),
  })) as unknown as Readable;
  const merged = new PassThrough();
  container.modem.demuxStream(raw, merged, merged);
  let partial = "";
  let allUnloadedAt: number | undefined;
  let canEnd = false;
  merged.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const { ts, text } = splitLogLine(line.replace(/\r$/, ""));
      if (ts && ts[0] * 1000 + ts[1] / 1e6 < started) continue;
      if (tracker.feed(stripTritonPrefix(text))) tell();
      if (tracker.done()) allUnloadedAt ??= clock.now();
      if (tracker.canEnd()) canEnd = true;
    }
  });
  raw.on("error", (err) => log.debug("log stream error while stopping", { error: String(err) }));
  const outcome = (ended: StopOutcome["ended"]): StopOutcome => ({
    ms: Date.now() - started,
    ...(waits ? { waitedFor: waits } : {}),
    ended,
  });
  let ended: StopOutcome["ended"] | undefined;
  try {
    try {
      await container.kill({ signal: "SIGTERM" });
    } catch (err) {
      if (gone(err)) return outcome("exited");
      throw err;
    }
    const deadline = graceFrom + o.graceMs;
    while (clock.now() < deadline) {
      if (!(await running(container))) return outcome("exited");
      tell();
      if (canEnd) {
        ended = "ended";
        log.info("no inference in flight and no unload left that runs the model's code; killing the container", {
          waitedFor: waits?.map((w) => w.model),
          stillUnloading: tracker.unloading(),
        });
        break;
      }
      if (allUnloadedAt !== undefined && clock.now() - allUnloadedAt >= (o.settleMs ?? 250)) {
        ended = "unloaded";
        log.info("every model unloaded; Triton still waits, so its container is stopped now", {
          tritonCountsLive: tracker.liveModels,
        });
        break;
      }
      await clock.sleep(o.pollMs ?? (waits ? 25 : 100));
    }
  } finally {
    raw.destroy();
  }
  if (!ended) log.warn("Triton did not exit in time; killing its container", { graceMs: o.graceMs });
  await container.kill({ signal: "SIGKILL" }).catch((err: unknown) => {
    if (!gone(err)) throw err;
  });
  const killDeadline = clock.now() + 5_000;
  while ((await running(container)) && clock.now() < killDeadline) await clock.sleep(o.pollMs ?? 50);
  const done = outcome(ended ?? "killed");
  log.debug("container stopped", { loaded: loaded.length, ...done });
  return done;
}
