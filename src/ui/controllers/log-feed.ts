import { REAL_CLOCK, type Clock } from "../../clock.js";
import { followFile } from "../../state/log-file.js";
import { applyLogLines, tritonLogLine, type DashboardState, type LogLine } from "../state.js";
import type { Store } from "../store.js";

/**
 * Follows Triton's log into the store, a batch of lines per poll rather than a render per line.
 * `userPaths` (once known) names the user's files where Triton names the staging copy.
 */
export function followTritonLog(
  store: Store<DashboardState>,
  logFile: string,
  intervalMs = 500,
  userPaths: () => ((text: string) => string) | undefined = () => undefined,
  clock: Clock = REAL_CLOCK,
): () => void {
  let batch: LogLine[] = [];
  let timer: unknown;
  const flush = () => {
    timer = undefined;
    const lines = batch;
    batch = [];
    store.update((s) => applyLogLines(s, lines));
  };
  const stop = followFile(
    logFile,
    0,
    (line) => {
      if (!line.trim()) return;
      const map = userPaths();
      batch.push(tritonLogLine(map ? map(line) : line));
      timer ??= clock.setTimeout(flush, 20);
    },
    intervalMs,
    clock,
  );
  return () => {
    stop();
    if (timer) clock.clearTimeout(timer);
    if (batch.length) flush();
  };
}
