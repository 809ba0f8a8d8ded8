import fs from "node:fs";
import fsp from "node:fs/promises";
import { REAL_CLOCK, type Clock } from "../clock.js";

function lastNonEmptyLines(text: string, n: number): string[] {
  return text
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0)
    .slice(-n);
}

/** The last `n` non-empty lines of a file (reads only the tail, so large logs stay cheap). */
export async function tailLines(file: string, n: number, maxBytes = 256 * 1024): Promise<string[]> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, "r");
  } catch {
    return [];
  }
  try {
    const { size } = await fh.stat();
    const start = Math.max(0, size - maxBytes);
    const buf = Buffer.alloc(size - start);
    await fh.read(buf, 0, buf.length, start);
    return lastNonEmptyLines(buf.toString("utf8"), n);
  } finally {
    await fh.close();
  }
}

export function tailLinesSync(file: string, n: number): string[] {
  try {
    const text = fs.readFileSync(file, "utf8");
    return lastNonEmptyLines(text, n);
  } catch {
    return [];
  }
}

/** Triton's own log prefix ("I1129 17:47:25.798258 3019 file.cc:839] ") stripped, for short messages. */
export function stripTritonPrefix(line: string): string {
  return line.replace(/^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ \d+ [\w.]+:\d+\] /, "").replace(/^"(.*)"$/, "$1");
}

/**
 * Follow a file as it grows, calling onLine for each complete new line, until the returned
 * stop function is called. Polling keeps it simple and works on every filesystem; the poll runs
 * on `clock` (../clock.ts).
 */
export function followFile(
  file: string,
  fromOffset: number,
  onLine: (line: string) => void,
  intervalMs = 250,
  clock: Clock = REAL_CLOCK,
): () => void {
  let offset = fromOffset;
  let partial = "";
  let busy = false;
  const timer = clock.setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const st = await fsp.stat(file).catch(() => undefined);
      if (!st) return;
      if (st.size < offset) offset = 0;
      if (st.size === offset) return;
      const fh = await fsp.open(file, "r");
      try {
        const buf = Buffer.alloc(st.size - offset);
        await fh.read(buf, 0, buf.length, offset);
        offset = st.size;
        const text = partial + buf.toString("utf8");
        const lines = text.split("\n");
        partial = lines.pop() ?? "";
        for (const l of lines) onLine(l);
      } finally {
        await fh.close();
      }
    } finally {
      busy = false;
    }
  }, intervalMs);
  return () => clock.clearInterval(timer);
}
