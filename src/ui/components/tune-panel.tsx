import { memo, type ReactElement } from "react";
import { formatConfirmation, formatDiff, formatRanking, formatSummary } from "../../tune/report.js";
import { duration, fit } from "../format.js";
import type { TuneState } from "../state.js";
import { toneColor, useTheme } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface TunePanelProps {
  tune: TuneState;
  now: number;
  width: number;
  height: number;
}

/** The tune of the selected model (`t`): its candidates as they are measured, then the ranking and the winner. */
export const TunePanel = memo(function TunePanel({ tune, now, width, height }: TunePanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const budget = Math.max(0, height - 2);
  const lines: ReactElement[] = [];
  const push = (el: ReactElement) => lines.length < budget && lines.push(el);
  const extra =
    tune.status === "running" && tune.startedAt
      ? `running ${duration(now - tune.startedAt)} (t stops it)`
      : tune.status === "done"
        ? "done (t runs again)"
        : tune.status === "failed"
          ? "failed"
          : undefined;
  if (tune.status === "idle")
    push(
      <Line key="idle">
        Press t to tune the selected model: batching and instance candidates staged beside it and measured.
      </Line>,
    );
  if (tune.plan)
    push(
      <Line key="plan" color={toneColor(theme, "dim")}>
        {fit(tune.plan, inner)}
      </Line>,
    );
  if (tune.status === "failed" && tune.error)
    for (const [i, l] of tune.error.split("\n").entries())
      push(
        <Line key={`e${i}`} color={toneColor(theme, "bad")}>
          {fit(l, inner)}
        </Line>,
      );
  const r = tune.report;
  if (r) {
    push(<Line key="sum">{fit(formatSummary(r), inner)}</Line>);
    const confirmation = formatConfirmation(r);
    if (confirmation)
      push(
        <Line key="confirm" color={toneColor(theme, "dim")}>
          {fit(confirmation, inner)}
        </Line>,
      );
    const diff = formatDiff(r);
    for (const [i, l] of (diff ? diff.split("\n") : ["no candidate met the budget"]).entries())
      push(
        <Line key={`d${i}`} color={toneColor(theme, l.startsWith("+") ? "ok" : l.startsWith("-") ? "bad" : "dim")}>
          {fit(l, inner)}
        </Line>,
      );
    for (const [i, l] of formatRanking(r).split("\n").entries())
      push(
        <Line key={`r${i}`} bold={i === 0}>
          {fit(l, inner)}
        </Line>,
      );
  } else {
    const room = Math.max(0, budget - lines.length);
    for (const [i, p] of tune.progress.slice(-room).entries())
      push(
        <Line key={`p${i}`} color={toneColor(theme, "dim")}>
          {fit(p, inner)}
        </Line>,
      );
  }
  return (
    <Panel title={tune.model ? `Tune: ${tune.model}` : "Tune"} extra={extra} width={width} height={height}>
      {lines}
    </Panel>
  );
});
