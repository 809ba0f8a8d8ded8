import { Text } from "ink";
import { memo, type ReactElement } from "react";
import { chart, seriesOf } from "../../perf/report.js";
import { duration, fit, perSec, usAsMs } from "../format.js";
import type { PerfState } from "../state.js";
import { toneColor, useTheme } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface PerfPanelProps {
  perf: PerfState;
  now: number;
  width: number;
  height: number;
}

const COLS: Array<[string, number]> = [
  ["conc", 5],
  ["infer/s", 9],
  ["p50", 7],
  ["p90", 7],
  ["p99", 7],
  ["avg", 7],
  ["server", 7],
  ["queue", 7],
  ["infer", 7],
  ["batch", 5],
  ["errors", 6],
];

/** The quick check of the selected model (`p`): its table, then throughput against latency. */
export const PerfPanel = memo(function PerfPanel({ perf, now, width, height }: PerfPanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const budget = Math.max(0, height - 2);
  const lines: ReactElement[] = [];
  const push = (el: ReactElement) => lines.length < budget && lines.push(el);
  const extra =
    perf.status === "running" && perf.startedAt
      ? `running ${duration(now - perf.startedAt)} (p cancels)`
      : perf.status === "done"
        ? "done (p runs again)"
        : perf.status === "failed"
          ? "failed"
          : undefined;

  if (perf.status === "idle") {
    push(
      <Line key="idle">
        Press p to measure the selected model: a short concurrency sweep, as `triton-dev perf` runs it.
      </Line>,
    );
  }
  if (perf.plan)
    push(
      <Line key="plan" color={toneColor(theme, "dim")}>
        {fit(perf.plan, inner)}
      </Line>,
    );
  if (perf.status === "failed" && perf.error) {
    for (const [i, l] of perf.error.split("\n").entries())
      push(
        <Line key={`e${i}`} color={toneColor(theme, "bad")}>
          {fit(l, inner)}
        </Line>,
      );
  }
  const sweep = perf.report?.sweeps[0];
  if (sweep && sweep.levels.length > 0) {
    push(
      <Line key="h" bold>
        {fit(COLS.map(([c, w], i) => (i === 0 ? fit(c, w) : fit(c, w, true))).join(" ") + "  (latency ms)", inner)}
      </Line>,
    );
    const levels = [...sweep.levels].sort((a, b) => a.value - b.value);
    for (const l of levels) {
      const cells = [
        String(l.value),
        perSec(l.throughput),
        usAsMs(l.latency.p50Us),
        usAsMs(l.latency.p90Us),
        usAsMs(l.latency.p99Us),
        usAsMs(l.latency.avgUs),
        usAsMs(l.server?.avgRequestUs),
        usAsMs(l.server?.queueUs),
        usAsMs(l.server?.computeInferUs),
        l.server && l.server.avgBatchSize > 0 ? l.server.avgBatchSize.toFixed(1) : "—",
        String(l.errorCount),
      ];
      push(
        <Line key={`l${l.value}`}>
          {fit(
            cells.map((c, i) => (i === 0 ? fit(c, COLS[i]![1]) : fit(c, COLS[i]![1], true))).join(" ") +
              (l.partial ? `  (${l.partial})` : l.stable ? "" : "  (unstable)"),
            inner,
          )}
        </Line>,
      );
    }
    const best = levels.reduce((a, b) => (b.throughput > a.throughput ? b : a));
    push(
      <Text key="best" wrap="truncate">
        best <Text bold color={toneColor(theme, "ok")}>{`${perSec(best.throughput)} infer/s`}</Text>
        {` at concurrency ${best.value}, p99 ${usAsMs(best.latency.p99Us)} ms`}
        {perf.report?.previous?.diffs.length
          ? `; vs previous run: ${perf.report.previous.diffs.map((d) => `${d.value}: ${d.throughputPct >= 0 ? "+" : ""}${d.throughputPct.toFixed(1)}%`).join(", ")}`
          : ""}
      </Text>,
    );
    const room = budget - lines.length - 1;
    if (room >= 7 && inner >= 40 && sweep.levels.some((l) => l.requests > 0)) {
      const text = chart([seriesOf(sweep, "*")], { width: Math.max(20, inner - 12), height: room - 4 });
      push(<Line key="sp"> </Line>);
      for (const [i, l] of text.split("\n").entries()) push(<Line key={`c${i}`}>{fit(l, inner)}</Line>);
    }
  }
  if (perf.status === "running" || (!sweep?.levels.length && perf.progress.length)) {
    const room = Math.max(0, budget - lines.length);
    for (const [i, p] of perf.progress.slice(-room).entries())
      push(
        <Line key={`p${i}`} color={toneColor(theme, "dim")}>
          {fit(p, inner)}
        </Line>,
      );
  }
  return (
    <Panel title={perf.model ? `Perf: ${perf.model}` : "Perf"} extra={extra} width={width} height={height}>
      {lines}
    </Panel>
  );
});
