import fs from "node:fs/promises";
import path from "node:path";

/**
 * The seconds Triton's exit had left each time it counted them in its log, in order: once a
 * second it logs "Timeout 9: Found 3 live models and 0 in-flight non-inference requests", down to
 * "Timeout 0" and "Exit timeout expired" when it waits its whole exit timeout out. A stop that ends
 * the server once everything of ours has unloaded never lets it get there, however slow the
 * machine makes the unloads, so this is what a test of that stop asserts rather than its duration.
 */
export function exitCountdown(log: string): number[] {
  return [...log.matchAll(/Timeout (\d+): Found \d+ live models/g)].map((m) => Number(m[1]));
}

/** What a stop's Triton log must show: its exit never ran out of time (and never counted at all is fine). */
export function endedBeforeExitTimeout(log: string): { countdown: number[]; expired: boolean } {
  const countdown = exitCountdown(log);
  return { countdown, expired: /Exit timeout expired/.test(log) || countdown.includes(0) };
}

/** The log file of the run recorded in the state folder (read it before `down`, which removes the record). */
export async function runLogFile(env: NodeJS.ProcessEnv): Promise<string> {
  const state = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8")) as {
    logFile: string;
  };
  return state.logFile;
}
