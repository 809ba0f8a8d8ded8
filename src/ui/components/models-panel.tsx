import { Text } from "ink";
import { memo } from "react";
import { clock, fit, seconds } from "../format.js";
import { batchingText, type ModelRow } from "../state.js";
import { stateTone, toneColor, useTheme, type Tone } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface ModelsPanelProps {
  models: ModelRow[];
  total: number;
  selected: string | undefined;
  filter: string;
  width: number;
  height: number;
}

/** Rows of the table plus borders and header, for the layout to budget. */
export function modelsPanelHeight(rows: number, maxHeight: number): number {
  return Math.max(4, Math.min(maxHeight, rows + 3));
}

function lastReload(m: ModelRow): { text: string; tone: Tone } {
  const e = m.lastEdit;
  if (e) {
    switch (e.phase) {
      case "saved":
      case "validated":
      case "environment":
      case "staged":
      case "loading":
        return { text: "reloading…", tone: "warn" };
      case "refused":
        return { text: `refused ${clock(e.at)}`, tone: "bad" };
      case "failed":
        return { text: `failed ${clock(e.at)}`, tone: "bad" };
      case "removed":
        return { text: "unloading…", tone: "warn" };
      default:
        break;
    }
  }
  if (m.lastReload) return { text: `${clock(m.lastReload.at)} ${seconds(m.lastReload.latencyMs)}`, tone: undefined };
  return { text: "—", tone: "dim" };
}

/** Every model: version, state, batching and instances, and its last reload with the latency. */
export const ModelsPanel = memo(function ModelsPanel({
  models,
  total,
  selected,
  filter,
  width,
  height,
}: ModelsPanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const rowsAvail = Math.max(0, height - 3);
  const nameW = Math.min(28, Math.max(5, ...models.map((m) => m.name.length)));
  const verW = 4;
  const stateW = 11;
  const reloadW = 17;
  const instW = 13;
  const batchW = Math.max(8, inner - 2 - nameW - verW - stateW - instW - reloadW - 5);
  const sel = models.findIndex((m) => m.name === selected);
  const selIndex = sel < 0 ? 0 : sel;
  // Keep the selected row in view when the list is longer than the panel.
  const start = Math.max(0, selIndex - rowsAvail + 1);
  const shown = models.slice(start, start + rowsAvail);
  const header = `  ${fit("MODEL", nameW)} ${fit("VER", verW)} ${fit("STATE", stateW)} ${fit("BATCHING", batchW)} ${fit("INSTANCES", instW)} ${fit("LAST RELOAD", reloadW)}`;
  const extra = filter ? `filter "${filter}": ${models.length}/${total}` : `${total}`;
  return (
    <Panel title="Models" extra={extra} width={width} height={height}>
      <Line bold>{fit(header, inner)}</Line>
      {shown.length === 0 ? (
        <Line>{total === 0 ? "  no models yet" : "  no model matches the filter (esc clears it)"}</Line>
      ) : null}
      {shown.map((m, i) => {
        const isSel = start + i === selIndex;
        const r = lastReload(m);
        // A model that is not served has no config to show: why it is not takes both columns.
        const middle = m.config
          ? `${fit(batchingText(m.config), batchW)} ${fit(m.config.instances || "—", instW)}`
          : fit(m.state === "READY" ? "" : (m.reason ?? ""), batchW + 1 + instW);
        return (
          <Text key={m.name} wrap="truncate" inverse={isSel}>
            {isSel ? "> " : "  "}
            <Text bold={isSel}>{fit(m.name, nameW)}</Text> {fit(m.version ? `v${m.version}` : "—", verW)}{" "}
            <Text color={toneColor(theme, stateTone(m.state))}>{fit(m.state, stateW)}</Text> {middle}{" "}
            <Text color={toneColor(theme, r.tone)}>{fit(r.text, reloadW)}</Text>
          </Text>
        );
      })}
    </Panel>
  );
});
