import { Text } from "ink";
import { memo, type ReactElement } from "react";
import { displayPath, type Diagnostic } from "../../repo/diagnostics.js";
import { clock, fit, seconds, wrap } from "../format.js";
import type { TimelineEntry } from "../state.js";
import { toneColor, useTheme, type Tone } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface TimelinePanelProps {
  timeline: TimelineEntry[];
  width: number;
  height: number;
  /** Show every diagnostic with its hint (the details view) instead of the first one. */
  expanded?: boolean;
  /** Paths are shown relative to this folder (the models folder: the panel is narrow). */
  baseDir?: string;
  title?: string;
}

export function outcome(e: TimelineEntry): { text: string; tone: Tone } {
  switch (e.phase) {
    case "ready":
      return { text: `READY${e.version ? ` v${e.version}` : ""} in ${seconds(e.latencyMs)}`, tone: "ok" };
    case "refused": {
      const n = e.diagnostics?.length ?? 0;
      return { text: `REFUSED ${n} error${n === 1 ? "" : "s"}`, tone: "bad" };
    }
    case "failed":
      return { text: `FAILED after ${seconds(e.latencyMs)}`, tone: "bad" };
    case "unchanged":
      return { text: "saved, no change", tone: "dim" };
    case "removed":
      return { text: "folder deleted, unloading", tone: "warn" };
    case "unloaded":
      return { text: `unloaded in ${seconds(e.latencyMs)}`, tone: "warn" };
    default:
      return { text: `${e.phase}…`, tone: "warn" };
  }
}

export function diagnosticLine(d: Diagnostic, cwd = process.cwd()): string {
  return `${displayPath(d.file, cwd)}:${d.line}:${d.column}: ${d.message}`;
}

/** Each edit's outcome, newest first; refusals carry the diagnostics that say what to fix. */
export const TimelinePanel = memo(function TimelinePanel({
  timeline,
  width,
  height,
  expanded,
  title,
  baseDir,
}: TimelinePanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const budget = Math.max(0, height - 2);
  const lines: ReactElement[] = [];
  for (const e of timeline) {
    if (lines.length >= budget) break;
    const o = outcome(e);
    lines.push(
      <Text key={`${e.id}`} wrap="truncate">
        <Text color={toneColor(theme, "dim")}>{clock(e.savedAt)}</Text> #{e.id} <Text bold>{e.model}</Text>{" "}
        <Text color={toneColor(theme, o.tone)}>{o.text}</Text>
      </Text>,
    );
    const diags = e.phase === "refused" ? (e.diagnostics ?? []) : [];
    const shownDiags = expanded ? diags : diags.slice(0, 1);
    for (const [i, d] of shownDiags.entries()) {
      for (const [k, part] of wrap(diagnosticLine(d, baseDir), inner - 2, expanded ? Infinity : 2).entries()) {
        if (lines.length >= budget) break;
        lines.push(
          <Line key={`${e.id}-d${i}-${k}`} color={toneColor(theme, "bad")}>
            {`  ${part}`}
          </Line>,
        );
      }
      if (expanded && d.hint && lines.length < budget)
        lines.push(<Line key={`${e.id}-h${i}`}>{fit(`    hint: ${d.hint}`, inner)}</Line>);
    }
    if (!expanded && diags.length > 1 && lines.length < budget) {
      lines.push(
        <Line
          key={`${e.id}-more`}
          color={toneColor(theme, "dim")}
        >{`  ▸ ${diags.length - 1} more (select ${e.model}, enter)`}</Line>,
      );
    }
    if ((e.phase === "failed" || (expanded && e.reason)) && e.reason && lines.length < budget) {
      lines.push(
        <Line key={`${e.id}-r`} color={toneColor(theme, e.phase === "failed" ? "bad" : "dim")}>
          {fit(`  ${e.reason}`, inner)}
        </Line>,
      );
    }
  }
  return (
    <Panel
      title={title ?? "Edit timeline"}
      extra={timeline.length ? `${timeline.length}` : undefined}
      width={width}
      height={height}
    >
      {lines.length ? (
        lines
      ) : (
        <Line color={toneColor(theme, "dim")}>no edits yet: save a file under the models folder</Line>
      )}
    </Panel>
  );
});
