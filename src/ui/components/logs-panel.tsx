import { memo } from "react";
import { fit } from "../format.js";
import type { LogLine } from "../state.js";
import { toneColor, useTheme } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface LogsPanelProps {
  /** Already filtered. */
  lines: LogLine[];
  total: number;
  filter: string;
  scroll: number;
  width: number;
  height: number;
  title?: string;
}

/** The tail of Triton's log (and this tool's own warnings), scrolled back by `scroll` lines. */
export const LogsPanel = memo(function LogsPanel({
  lines,
  total,
  filter,
  scroll,
  width,
  height,
  title,
}: LogsPanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const rows = Math.max(0, height - 2);
  const end = Math.max(0, lines.length - scroll);
  const shown = lines.slice(Math.max(0, end - rows), end);
  const extra = [
    filter ? `filter "${filter}": ${lines.length}/${total}` : `${total} lines`,
    scroll ? `${scroll} up (PgDn)` : "",
  ]
    .filter(Boolean)
    .join(", ");
  return (
    <Panel title={title ?? "Triton log"} extra={extra} width={width} height={height}>
      {shown.length === 0 ? (
        <Line color={toneColor(theme, "dim")}>{filter ? "no line matches the filter" : "no log lines yet"}</Line>
      ) : null}
      {shown.map((l, i) => (
        <Line
          key={i}
          color={toneColor(
            theme,
            l.source === "tool"
              ? "accent"
              : l.level === "E" || l.level === "F"
                ? "bad"
                : l.level === "W"
                  ? "warn"
                  : undefined,
          )}
        >
          {fit(l.source === "tool" ? `triton-dev: ${l.text}` : l.text, inner)}
        </Line>
      ))}
    </Panel>
  );
});
