import { Text } from "ink";
import { memo, type ReactElement } from "react";
import type { LevelResult } from "../../perf/profile.js";
import { plusMinus } from "../../perf/noise.js";
import { chart, seriesOf, throughputNoise } from "../../perf/report.js";
import { isStreamingSweep } from "../../perf/stream-report.js";
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
  ["±infer", 7],
];

/** A decoupled model's columns: responses, time to first response, inter-response latency. */
const STREAM_COLS: Array<[string, number]> = [
  ["conc", 5],
  ["req/s", 7],
  ["resp/s", 8],
  ["r/req", 6],
  ["ttft50", 7],
  ["ttft99", 7],
  ["itl50", 7],
  ["itl99", 7],
  ["p99", 7],
  ["out/s", 8],
  ["errors", 6],
];

const present = (l: { count: number; p50Us: number } | undefined, us: number | undefined) =>
  l && l.count > 0 ? usAsMs(us) : "—";

function streamCells(l: LevelResult): string[] {
  const s = l.stream;
  return [
    String(l.value),
    perSec(s?.requestsPerSec ?? l.throughput),
    s ? perSec(s.responsesPerSec) : "—",
    s ? s.responsesPerRequest.toFixed(1) : "—",
    present(s?.firstResponse, s?.firstResponse.p50Us),
    present(s?.firstResponse, s?.firstResponse.p99Us),
    present(s?.interResponse, s?.interResponse.p50Us),
    present(s?.interResponse, s?.interResponse.p99Us),
    l.requests ? usAsMs(l.latency.p99Us) : "—",
    s ? perSec(s.outputElementsPerSec) : "—",
    String(l.errorCount),
  ];
}

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
  const streaming = sweep ? isStreamingSweep(sweep) : false;
  const cols = streaming ? STREAM_COLS : COLS;
  if (sweep && sweep.levels.length > 0) {
    push(
      <Line key="h" bold>
        {fit(cols.map(([c, w], i) => (i === 0 ? fit(c, w) : fit(c, w, true))).join(" ") + "  (latency ms)", inner)}
      </Line>,
    );
    const levels = [...sweep.levels].sort((a, b) => a.value - b.value);
    for (const l of levels) {
      const cells = streaming
        ? streamCells(l)
        : [
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
            // The throughput's spread over its windows: a difference between levels inside it is noise.
            plusMinus(throughputNoise(l)),
          ];
      push(
        <Line key={`l${l.value}`}>
          {fit(
            cells.map((c, i) => (i === 0 ? fit(c, cols[i]![1]) : fit(c, cols[i]![1], true))).join(" ") +
              (l.partial ? `  (${l.partial})` : l.stable ? "" : "  (unstable)"),
            inner,
          )}
        </Line>,
      );
    }
    const best = levels.reduce((a, b) => (b.throughput > a.throughput ? b : a));
    const ttft = best.stream?.firstResponse;
    push(
      <Text key="best" wrap="truncate">
        best{" "}
        <Text bold color={toneColor(theme, "ok")}>
          {streaming && best.stream
            ? `${perSec(best.stream.responsesPerSec)} responses/s`
            : `${perSec(best.throughput)} infer/s`}
        </Text>
        {streaming
          ? ` at concurrency ${best.value}, ${perSec(best.throughput)} requests/s, first response p99 ${present(ttft, ttft?.p99Us)} ms`
          : ` at concurrency ${best.value}, p99 ${usAsMs(best.latency.p99Us)} ms`}
        {perf.report?.previous?.diffs.length
          ? `; vs previous run: ${perf.report.previous.diffs.map((d) => `${d.value}: ${d.throughputPct >= 0 ? "+" : ""}${d.throughputPct.toFixed(1)}%`).join(", ")}`
          : ""}
      </Text>,
    );
    const room = budget - lines.length - 1;
    if (room >= 7 && inner >= 40 && sweep.levels.some((l) => l.requests > 0)) {
      const text = chart([seriesOf(sweep, "*")], {
        width: Math.max(20, inner - 12),
        height: room - 4,
        ...(streaming ? { xLabel: "throughput (requests/s)" } : {}),
      });
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
