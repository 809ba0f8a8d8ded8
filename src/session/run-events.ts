import fs from "node:fs";
import path from "node:path";
import type { Clock } from "../clock.js";
import { UserError } from "../errors.js";
import { log as rootLog } from "../log/logger.js";
import { writeFileAtomic } from "../state/atomic-write.js";
import { followFile } from "../state/log-file.js";
import { isOurProcess } from "../state/process.js";
import type { RunState } from "../state/run-state.js";
import type { SessionEvent } from "./events.js";

const log = rootLog.child("run-events");

/**
 * A detached run's events, one JSON object per line, written by its supervisor: what a
 * dashboard or an event follower opened later replays and then follows (the edit timeline
 * above all, which otherwise only the supervisor's memory holds).
 */
export function eventsFile(state: Pick<RunState, "runDir">): string {
  return path.join(state.runDir, "events.jsonl");
}

/** Appends each event as it happens; synchronous so a line is never split between writers. */
export function eventWriter(state: Pick<RunState, "runDir">): (e: SessionEvent) => void {
  const file = eventsFile(state);
  return (e) => {
    try {
      fs.appendFileSync(file, JSON.stringify(e) + "\n");
    } catch (err) {
      log.warn("could not record an event", { file, error: String(err) });
    }
  };
}

/**
 * Every event recorded so far, then each new one as the supervisor writes it, until the
 * returned stop function is called. Lines that do not parse (a torn write at a crash) are skipped.
 */
export function followRunEvents(
  state: Pick<RunState, "runDir">,
  onEvent: (e: SessionEvent) => void,
  intervalMs = 250,
  clock?: Clock,
): () => void {
  return followFile(
    eventsFile(state),
    0,
    (line) => {
      if (!line.trim()) return;
      try {
        onEvent(JSON.parse(line) as SessionEvent);
      } catch {
        log.debug("skipped an unreadable event line", { line: line.slice(0, 200) });
      }
    },
    intervalMs,
    clock,
  );
}

function reloadRequestFile(state: Pick<RunState, "runDir">): string {
  return path.join(state.runDir, "reload-request.json");
}

/**
 * Ask a detached run's supervisor to reload a model now (the dashboard's `r`): the request is
 * written first, then SIGUSR2 tells the supervisor to read it.
 */
export async function requestReload(state: RunState, model: string, cliExecutable = process.execPath): Promise<void> {
  const pid = state.supervisorPid;
  if (pid === undefined || !isOurProcess(pid, cliExecutable)) {
    throw new UserError("hot reload is not running for this detached run", {
      hint: `Its watcher has stopped (see ${path.join(state.runDir, "supervisor.log")}); restart the run with \`triton-dev down\` and \`triton-dev up --detach\`.`,
    });
  }
  await writeFileAtomic(reloadRequestFile(state), JSON.stringify({ model }), 0o600);
  process.kill(pid, "SIGUSR2");
}

/** The supervisor's side: the model a SIGUSR2 asked to reload, read once and removed. */
export function takeReloadRequest(state: Pick<RunState, "runDir">): string | undefined {
  const file = reloadRequestFile(state);
  try {
    const { model } = JSON.parse(fs.readFileSync(file, "utf8")) as { model?: unknown };
    fs.rmSync(file, { force: true });
    return typeof model === "string" && model ? model : undefined;
  } catch {
    return undefined;
  }
}
