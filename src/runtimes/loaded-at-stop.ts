import { log as rootLog } from "../log/logger.js";
import { clientForRun, type RepositoryIndexEntry } from "../triton/http-client.js";

const log = rootLog.child("runtimes:stop");

/** How long a stop asks Triton for its loaded models before it stops it the plain way. */
export const STOP_INDEX_TIMEOUT_MS = 3000;

/**
 * The model versions Triton has loaded, read just before a stop: every runtime's stop follows
 * their unloads in Triton's log and ends the server once they are over. Never rejects: a server
 * too busy to answer within `timeoutMs` (a loaded machine) gives [], and is stopped the plain way.
 * clientForRun's connection is not kept open, which would hold Triton's exit.
 */
export async function loadedBeforeStop(
  run: Parameters<typeof clientForRun>[0],
  timeoutMs = STOP_INDEX_TIMEOUT_MS,
): Promise<RepositoryIndexEntry[]> {
  try {
    return await clientForRun(run, { timeoutMs }).repositoryIndex();
  } catch (err) {
    log.info("Triton did not say what it has loaded; the stop waits for its exit", { error: String(err) });
    return [];
  }
}
