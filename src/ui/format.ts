/** Small number formats shared by the panels; all return fixed-width-friendly strings. */

export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, "0")}h`;
}

/** Uptime to the minute: a clock that changes every second would redraw an idle screen every second. */
export function uptime(ms: number): string {
  const m = Math.floor(Math.max(0, ms) / 60_000);
  if (m < 1) return "<1m";
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, "0")}h`;
}

export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Microseconds as ms with sensible precision; "—" when unknown. */
export function usAsMs(us: number | undefined): string {
  if (us === undefined || !Number.isFinite(us)) return "—";
  const ms = us / 1000;
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

export function perSec(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return "—";
  return x >= 1000 ? x.toFixed(0) : x >= 100 ? x.toFixed(1) : x.toFixed(2);
}

export { bytes } from "../events/size.js";

export function pct(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? "—" : `${(x * 100).toFixed(0)}%`;
}

export function clock(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** Cut to at most `n` columns, marking the cut. */
export function cut(s: string, n: number): string {
  if (n <= 0) return "";
  return s.length > n ? (n === 1 ? "…" : s.slice(0, n - 1) + "…") : s;
}

/**
 * Break `s` into lines of at most `width` columns, at spaces where it can; the last of
 * `maxLines` lines is cut with a mark when text remains.
 */
export function wrap(s: string, width: number, maxLines = Infinity): string[] {
  if (width <= 0) return [];
  const out: string[] = [];
  let rest = s;
  while (rest.length > 0 && out.length < maxLines) {
    if (rest.length <= width) {
      out.push(rest);
      rest = "";
      break;
    }
    const space = rest.lastIndexOf(" ", width);
    const at = space > width / 3 ? space : width;
    out.push(rest.slice(0, at));
    rest = rest.slice(at).replace(/^ /, "");
  }
  if (rest.length > 0 && out.length > 0) out[out.length - 1] = cut(out[out.length - 1]! + " " + rest, width);
  return out;
}

/** Pad or cut to exactly `n` columns (the panels are laid out in fixed columns). */
export function fit(s: string, n: number, right = false): string {
  if (n <= 0) return "";
  if (s.length > n) return n === 1 ? "…" : s.slice(0, n - 1) + "…";
  return right ? s.padStart(n) : s.padEnd(n);
}

const BLOCKS = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/**
 * A one-line chart of the newest values, `width` cells wide: older values are averaged into
 * cells when there are more values than cells; missing history is left blank.
 */
export function sparkline(values: readonly number[], width: number, max?: number): string {
  if (width <= 0) return "";
  let cells: number[];
  if (values.length <= width) cells = [...values];
  else {
    cells = [];
    const per = values.length / width;
    for (let i = 0; i < width; i++) {
      const from = Math.floor(i * per);
      const to = Math.max(from + 1, Math.floor((i + 1) * per));
      const slice = values.slice(from, to);
      cells.push(slice.reduce((a, b) => a + b, 0) / slice.length);
    }
  }
  const top = max ?? Math.max(0, ...cells);
  const line = cells
    .map((v) =>
      top <= 0 || v <= 0
        ? BLOCKS[0]!
        : BLOCKS[Math.min(BLOCKS.length - 1, Math.round((v / top) * (BLOCKS.length - 1)))]!,
    )
    .join("");
  return " ".repeat(width - cells.length) + line;
}
