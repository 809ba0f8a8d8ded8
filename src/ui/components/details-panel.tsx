import { Text } from "ink";
import { memo, type ReactElement } from "react";
import { clock, fit, seconds } from "../format.js";
import { batchingText, type ModelRow, type TimelineEntry } from "../state.js";
import { stateTone, toneColor, useTheme } from "../theme.js";
import { Line, Panel } from "./panel.js";
import { diagnosticLine, outcome } from "./timeline-panel.js";

export interface DetailsPanelProps {
  model: ModelRow | undefined;
  /** The model's edits, newest first. */
  edits: TimelineEntry[];
  width: number;
  height: number;
}

/** `enter` on a model: its config, and its edits with every phase and every diagnostic. */
export const DetailsPanel = memo(function DetailsPanel({ model, edits, width, height }: DetailsPanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const budget = Math.max(0, height - 2);
  const lines: ReactElement[] = [];
  const push = (el: ReactElement) => lines.length < budget && lines.push(el);
  if (!model) {
    push(<Line key="none">no model selected</Line>);
  } else {
    push(
      <Text key="state" wrap="truncate">
        <Text bold>{model.name}</Text> {model.version ? `version ${model.version} ` : ""}
        <Text color={toneColor(theme, stateTone(model.state))}>{model.state}</Text>
        {model.reason ? ` (${model.reason})` : ""}
      </Text>,
    );
    if (model.servedAs) push(<Line key="served">{fit(model.servedAs, inner)}</Line>);
    const c = model.config;
    if (c) {
      push(
        <Line key="plat">{fit(`platform/backend ${c.platform || "?"}, max_batch_size ${c.maxBatchSize}`, inner)}</Line>,
      );
      push(<Line key="batch">{fit(`batching: ${batchingText(c)}`, inner)}</Line>);
      if (c.steps.length) push(<Line key="steps">{fit(`steps: ${c.steps.join(" → ")}`, inner)}</Line>);
      if (c.instances) push(<Line key="inst">{fit(`instances: ${c.instances}`, inner)}</Line>);
    }
    if (model.lastReload)
      push(
        <Line key="last">{`last reload ${clock(model.lastReload.at)}, ${seconds(model.lastReload.latencyMs)} from save to ready`}</Line>,
      );
    push(<Line key="sp"> </Line>);
    if (edits.length === 0)
      push(
        <Line key="noedit" color={toneColor(theme, "dim")}>
          no edit of this model yet
        </Line>,
      );
    for (const e of edits) {
      const o = outcome(e);
      push(
        <Text key={`e${e.id}`} wrap="truncate">
          {clock(e.savedAt)} #{e.id} <Text color={toneColor(theme, o.tone)}>{o.text}</Text>
          <Text
            color={toneColor(theme, "dim")}
          >{`  ${e.phases.map((p) => `${p.phase} +${seconds(p.sinceSavedMs)}`).join(" → ")}`}</Text>
        </Text>,
      );
      for (const [i, d] of (e.diagnostics ?? []).entries()) {
        push(
          <Line key={`e${e.id}d${i}`} color={toneColor(theme, d.severity === "error" ? "bad" : "warn")}>
            {fit(`  ${d.severity}: ${diagnosticLine(d)}`, inner)}
          </Line>,
        );
        if (d.hint) push(<Line key={`e${e.id}h${i}`}>{fit(`    hint: ${d.hint}`, inner)}</Line>);
      }
      if (e.reason)
        push(
          <Line key={`e${e.id}r`} color={toneColor(theme, e.phase === "failed" ? "bad" : "dim")}>
            {fit(`  ${e.reason}`, inner)}
          </Line>,
        );
    }
  }
  return (
    <Panel
      title={model ? `Details: ${model.name}` : "Details"}
      extra="enter or esc closes"
      width={width}
      height={height}
    >
      {lines}
    </Panel>
  );
});
