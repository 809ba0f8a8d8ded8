/**
 * The timestamped log lines both `docker logs --timestamps` and `kubectl logs --timestamps` give
 * (RFC 3339 with nanoseconds, then the text): every runtime that follows Triton's log through
 * one of them resumes and orders lines by these.
 */

/**
 * A log timestamp (RFC 3339 with nanoseconds) as [seconds, nanoseconds], so two of them
 * compare exactly; Date keeps only milliseconds.
 */
export function parseTimestamp(ts: string): [number, number] | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(ts);
  if (!m) return undefined;
  const secs = Date.parse(`${m[1]}${m[3]}`) / 1000;
  if (!Number.isFinite(secs)) return undefined;
  return [secs, Number((m[2] ?? "").padEnd(9, "0"))];
}

export function compareTimestamps(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}

/** The `since` query value the Engine API takes: seconds with a nanosecond fraction. */
export function sinceParam(ts: [number, number]): string {
  return `${ts[0]}.${String(ts[1]).padStart(9, "0")}`;
}

/** Splits a "TIMESTAMP text" line as `docker logs --timestamps` and `kubectl logs --timestamps` give it. */
export function splitLogLine(line: string): { ts?: [number, number]; raw?: string; text: string } {
  const sp = line.indexOf(" ");
  if (sp > 0) {
    const ts = parseTimestamp(line.slice(0, sp));
    if (ts) return { ts, raw: line.slice(0, sp), text: line.slice(sp + 1) };
  }
  return { text: line };
}
