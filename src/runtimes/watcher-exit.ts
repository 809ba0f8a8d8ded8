import type { Clock } from "../clock.js";
import { isOurProcess } from "../state/process.js";

/**
 * A detached run's watcher stops its port-forward and log follower on SIGTERM, which `down` sent
 * it: it is given a moment (polled on `clock`), so that nothing of the run is left when `down` returns.
 */
export async function awaitWatcherExit(supervisorPid: number | undefined, clock: Clock, waitMs = 5_000): Promise<void> {
  const deadline = clock.now() + waitMs;
  while (supervisorPid !== undefined && isOurProcess(supervisorPid, process.execPath) && clock.now() < deadline)
    await clock.sleep(100);
}
