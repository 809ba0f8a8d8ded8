import { Text } from "ink";
import { memo, type ReactElement } from "react";
import type { ModelMetrics } from "../../metrics/history.js";
import type { ScrapeState } from "../../metrics/scraper.js";
import { bytes, fit, pct, perSec, sparkline, usAsMs } from "../format.js";
import { toneColor, useTheme } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface MetricsPanelProps {
  metrics: ScrapeState | undefined;
  width: number;
  height: number;
  /** The `m` view: every figure and wider charts. */
  full?: boolean;
  /** Scrape interval, to say how many minutes the sparklines span. */
  intervalMs?: number;
}

const queueFigure = (m: ModelMetrics, summaries: boolean) => (summaries ? m.queueP99Us : m.queueAvgUs);

/** Throughput and queue latency per model with their recent history, and the GPUs. */
export const MetricsPanel = memo(function MetricsPanel({
  metrics,
  width,
  height,
  full,
  intervalMs = 2000,
}: MetricsPanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const budget = Math.max(0, height - 2);
  const v = metrics?.view;
  const rangeS = Math.round((v?.rangeMs ?? 10_000) / 1000);
  const extra = `rates over ${rangeS} s, scraped every ${intervalMs / 1000} s`;
  const lines: ReactElement[] = [];
  const push = (el: ReactElement) => lines.length < budget && lines.push(el);
  if (metrics?.error)
    push(
      <Line key="err" color={toneColor(theme, "bad")}>
        {fit(metrics.error, inner)}
      </Line>,
    );
  if (!v || v.scrapes === 0) {
    push(
      <Line key="wait" color={toneColor(theme, "dim")}>
        waiting for the first scrape of Triton's /metrics…
      </Line>,
    );
  } else {
    const summaries = v.summaries;
    const qLabel = summaries ? "queue p99" : "queue avg";
    const nameW = Math.min(24, Math.max(5, ...v.models.map((m) => m.model.length)));
    if (!full) {
      const fixed = nameW + 1 + 8 + 1 + 12 + 1;
      const sparkW = Math.max(0, inner - fixed - 1);
      push(
        <Line key="h" bold>
          {fit(
            `${fit("MODEL", nameW)} ${fit("req/s", 8, true)} ${fit(qLabel + " ms", 12, true)} ${sparkW >= 6 ? `req/s, last ${spanText(v.scrapes, intervalMs)}` : ""}`,
            inner,
          )}
        </Line>,
      );
      for (const m of v.models) {
        push(
          <Text key={m.model} wrap="truncate">
            {fit(m.model, nameW)} {fit(perSec(m.requestsPerSec), 8, true)}{" "}
            {fit(usAsMs(queueFigure(m, summaries)), 12, true)}{" "}
            <Text color={toneColor(theme, "accent")}>{sparkW >= 6 ? sparkline(m.throughputSeries, sparkW) : ""}</Text>
          </Text>,
        );
      }
    } else {
      const cols = `${fit("MODEL", nameW)} ${fit("req/s", 8, true)} ${fit("infer/s", 8, true)} ${fit("batch", 5, true)} ${fit("queue avg", 9, true)} ${fit("queue p99", 9, true)} ${fit("infer avg", 9, true)} ${fit("request", 8, true)} ${fit("pending", 7, true)} ${fit("fail/s", 6, true)}`;
      push(
        <Line key="h" bold>
          {fit(cols + "  (ms)", inner)}
        </Line>,
      );
      const sparkW = Math.max(8, inner - nameW - 16);
      for (const m of v.models) {
        push(
          <Line key={m.model}>
            {fit(
              `${fit(m.model, nameW)} ${fit(perSec(m.requestsPerSec), 8, true)} ${fit(perSec(m.inferencesPerSec), 8, true)} ${fit(m.avgBatch !== undefined ? m.avgBatch.toFixed(1) : "—", 5, true)} ${fit(usAsMs(m.queueAvgUs), 9, true)} ${fit(summaries ? usAsMs(m.queueP99Us) : "n/a", 9, true)} ${fit(usAsMs(m.computeInferAvgUs), 9, true)} ${fit(usAsMs(m.requestAvgUs), 8, true)} ${fit(String(m.pending), 7, true)} ${fit(perSec(m.failuresPerSec), 6, true)}`,
              inner,
            )}
          </Line>,
        );
        push(
          <Text key={`${m.model}-t`} wrap="truncate">
            {fit("", nameW)} {fit("req/s", 14)}{" "}
            <Text color={toneColor(theme, "accent")}>{sparkline(m.throughputSeries, sparkW)}</Text>
          </Text>,
        );
        push(
          <Text key={`${m.model}-q`} wrap="truncate">
            {fit("", nameW)} {fit(summaries ? "queue p99" : "queue avg", 14)}{" "}
            <Text color={toneColor(theme, "warn")}>{sparkline(m.queueSeries, sparkW)}</Text>
          </Text>,
        );
      }
    }
    if (v.gpus.length === 0)
      push(
        <Line key="gpu" color={toneColor(theme, "dim")}>
          GPU: Triton reports none (no nv_gpu_* metrics)
        </Line>,
      );
    for (const g of v.gpus) {
      const head = `GPU ${g.uuid.slice(0, 12)} util ${pct(g.utilization)} mem ${bytes(g.memoryUsedBytes)}/${bytes(g.memoryTotalBytes)}${g.powerWatts !== undefined ? ` ${g.powerWatts.toFixed(0)} W` : ""} `;
      push(
        <Text key={g.uuid} wrap="truncate">
          {head}
          <Text color={toneColor(theme, "accent")}>
            {sparkline(g.utilizationSeries, Math.max(0, inner - head.length), 1)}
          </Text>
        </Text>,
      );
    }
    if (full && v.cpu) {
      push(
        <Line key="cpu">
          {fit(
            `Triton host: CPU ${pct(v.cpu.utilization)}, memory ${bytes(v.cpu.memoryUsedBytes)}/${bytes(v.cpu.memoryTotalBytes)}`,
            inner,
          )}
        </Line>,
      );
    }
    if (!summaries) {
      push(
        <Line key="note" color={toneColor(theme, "dim")}>
          {fit(
            "queue: mean from the cumulative counters (Triton has no queue histogram); p99 needs --metrics-config summary_latencies=true",
            inner,
          )}
        </Line>,
      );
    }
  }
  return (
    <Panel title="Metrics" extra={extra} width={width} height={height}>
      {lines}
    </Panel>
  );
});

function spanText(scrapes: number, intervalMs: number): string {
  const s = Math.round(((scrapes - 1) * intervalMs) / 1000);
  return s >= 60 ? `${Math.round(s / 60)} min` : `${s} s`;
}
