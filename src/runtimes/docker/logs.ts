import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { PassThrough, type Readable } from "node:stream";
import type Docker from "dockerode";
import { log as rootLog } from "../../log/logger.js";
import { compareTimestamps, parseTimestamp, sinceParam, splitLogLine } from "../log-timestamps.js";

const log = rootLog.child("docker:logs");

export function cursorFile(runDir: string): string {
  return path.join(runDir, "docker-log.cursor");
}

export interface LogFollower {
  /** Resolves when the stream ended (the container stopped) or stop() was called. */
  readonly ended: Promise<void>;
  /** Stop following; the position is kept in the cursor file for whoever follows next. */
  stop(): Promise<void>;
  /**
   * Stop at once and record the position synchronously: a detached `up` hands the log over to
   * its supervisor right after this, and the supervisor must find the cursor.
   */
  release(): void;
}

export interface FollowOptions {
  logFile: string;
  runDir: string;
  /** Start after the position an earlier follower recorded (the detached run's hand-over). */
  resume?: boolean;
  onLine?: (text: string) => void;
}

/**
 * Copies the container's output into the run's log file, where `logs`, the start-up error
 * report and the reload controller read it, as they do for the local runtime.
 */
export async function followLogs(container: Docker.Container, o: FollowOptions): Promise<LogFollower> {
  let after: [number, number] | undefined;
  let since: string | undefined;
  if (o.resume) {
    const saved = await fsp.readFile(cursorFile(o.runDir), "utf8").catch(() => "");
    after = parseTimestamp(saved.trim());
    // No position recorded: what came before is already in the file, so only new lines.
    since = after ? sinceParam([after[0], 0]) : String(Math.floor(Date.now() / 1000));
  }
  let lastRaw: string | undefined;
  const out = fs.createWriteStream(o.logFile, { flags: "a" });
  const raw = (await container.logs({
    follow: true,
    stdout: true,
    stderr: true,
    timestamps: true,
    ...(since ? { since: since as unknown as number } : {}),
  })) as unknown as Readable;
  const merged = new PassThrough();
  container.modem.demuxStream(raw, merged, merged);
  let partial = "";
  const onText = (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const { ts, raw: rawTs, text } = splitLogLine(line.replace(/\r$/, ""));
      // The since filter has whole-second precision; lines an earlier follower already wrote go.
      if (ts && after && compareTimestamps(ts, after) <= 0) continue;
      if (rawTs) lastRaw = rawTs;
      out.write(text + "\n");
      o.onLine?.(text);
    }
  };
  merged.on("data", onText);
  const ended = new Promise<void>((resolve) => {
    const done = () => resolve();
    raw.once("end", done);
    raw.once("close", done);
    raw.once("error", (err) => {
      log.debug("log stream error", { error: String(err) });
      done();
    });
  });
  let stopping: Promise<void> | undefined;
  const finish = async () => {
    if (partial) {
      out.write(splitLogLine(partial).text + "\n");
      partial = "";
    }
    await new Promise<void>((r) => out.end(r));
    if (lastRaw) await fsp.writeFile(cursorFile(o.runDir), lastRaw + "\n").catch(() => {});
  };
  void ended.then(() => (stopping ??= finish()));
  return {
    ended,
    release: () => {
      if (stopping) return;
      merged.off("data", onText);
      raw.destroy();
      if (lastRaw) {
        try {
          fs.writeFileSync(cursorFile(o.runDir), lastRaw + "\n");
        } catch {
          // the supervisor then starts from the present
        }
      }
      stopping = new Promise<void>((r) => out.end(r));
    },
    stop: () => {
      stopping ??= (async () => {
        raw.destroy();
        await ended;
        await finish();
      })();
      return stopping;
    },
  };
}
