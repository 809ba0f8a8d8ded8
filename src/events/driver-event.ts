/**
 * The one event shape every runtime's driver may emit of its own. It lives here, beside the bus,
 * not in runtimes/, because its readers (up's plain lines, the dashboard, the editor's verdict)
 * must recognise it without importing any runtime.
 */

/**
 * An event a runtime names and words itself (docker's `pull` and `container`, local's `setup`):
 * its own fields travel as they are in `--json` and the run's event file, and `reads` says how it
 * reads, so `up`'s plain lines and the dashboard show it without knowing the runtime. Its `type`
 * is the runtime's own word, never one of the session's (session/events.ts).
 */
export interface DriverEvent {
  type: string;
  /** The runtime that emitted it (runtimes/kinds.ts names them). */
  runtime: string;
  reads: {
    /** The plain line `up` prints (absent: nothing printed, e.g. a pull's byte counts). */
    line?: string;
    /** The dashboard's status line (absent: left as it was). */
    status?: string;
  };
  /** What the dashboard's server panel shows from now on. */
  server?: { container?: string; monitoring?: { prometheus: string; grafana: string } };
  [field: string]: unknown;
}

/** Read back from `--json` or a run's event file: whether an event is a runtime's own. */
export function isDriverEvent(e: { type: string }): e is DriverEvent {
  const reads = (e as { reads?: unknown }).reads;
  return typeof reads === "object" && reads !== null && typeof (e as { runtime?: unknown }).runtime === "string";
}
