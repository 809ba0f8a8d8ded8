import { log as rootLog } from "../../log/logger.js";
import { signalReaches } from "../../state/process.js";

const log = rootLog.child("local");

function groupAlive(pgid: number): boolean {
  return signalReaches(-pgid);
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface StopOptions {
  graceMs?: number;
  /** When we are the parent, the child's exit promise (reaps it, so it does not linger as a zombie). */
  exited?: Promise<unknown>;
}

/**
 * SIGTERM the whole process group (server and its python stubs), wait up to graceMs for
 * every member to go, then SIGKILL whatever is left. Returns once the group is empty.
 */
export async function stopProcessGroup(pgid: number, options: StopOptions = {}): Promise<void> {
  const graceMs = options.graceMs ?? 15_000;
  if (!groupAlive(pgid)) return;
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) break;
    await sleep(100);
  }
  if (groupAlive(pgid)) {
    log.warn("server did not stop in time; killing it", { pgid, graceMs });
    signalGroup(pgid, "SIGKILL");
    const killDeadline = Date.now() + 5_000;
    while (groupAlive(pgid) && Date.now() < killDeadline) await sleep(50);
  }
  if (options.exited) await options.exited;
}
