import { Box, Text } from "ink";
import { useMemo } from "react";
import { useDashboardKeys } from "../hooks/use-dashboard-keys.js";
import { useStore } from "../hooks/use-store.js";
import { useTerminalSize, type TerminalSize } from "../hooks/use-terminal-size.js";
import type { Command } from "../keys.js";
import { selectedModel, visibleLogs, visibleModels, type DashboardState } from "../state.js";
import type { Store } from "../store.js";
import { DetailsPanel } from "./details-panel.js";
import { HelpPanel } from "./help-panel.js";
import { LogsPanel } from "./logs-panel.js";
import { MetricsPanel } from "./metrics-panel.js";
import { ModelsPanel, modelsPanelHeight } from "./models-panel.js";
import { PerfPanel } from "./perf-panel.js";
import { TunePanel } from "./tune-panel.js";
import { SERVER_PANEL_HEIGHT, ServerPanel } from "./server-panel.js";
import { StatusBar } from "./status-bar.js";
import { TimelinePanel } from "./timeline-panel.js";

export interface AppProps {
  store: Store<DashboardState>;
  onCommand: (c: Command) => void;
  /** Fixed size (tests); otherwise the terminal's, following resizes. */
  size?: TerminalSize;
  scrapeIntervalMs?: number;
  clock?: () => number;
}

export const MIN_COLUMNS = 60;
export const MIN_ROWS = 16;

/** Heights of the stacked regions for a terminal of `rows` lines. */
export function layout(rows: number, modelRows: number): { usable: number; models: number; main: number } {
  // One line is kept free: Ink clears and repaints the whole screen when a frame fills the terminal.
  const usable = rows - 1;
  const rest = usable - SERVER_PANEL_HEIGHT - 1;
  const models = modelsPanelHeight(modelRows, Math.max(4, Math.floor(rest * 0.4)));
  return { usable, models, main: Math.max(0, rest - models) };
}

/** The dashboard: reads the store, lays the panels out for the terminal, sends keys on. */
export function App({ store, onCommand, size: fixed, scrapeIntervalMs, clock }: AppProps) {
  const s = useStore(store);
  const live = useTerminalSize();
  const { columns: W, rows } = fixed ?? live;
  const models = useMemo(() => visibleModels(s), [s.models, s.ui.modelFilter]);
  const logs = useMemo(() => visibleLogs(s), [s.logs, s.ui.logFilter]);
  const selected = selectedModel(s);
  const { main, models: modelsH } = layout(rows, models.length);
  useDashboardKeys(store, onCommand, Math.max(1, main - 2), clock);

  if (W < MIN_COLUMNS || rows < MIN_ROWS) {
    return (
      <Box flexDirection="column">
        <Text wrap="truncate">{`triton-dev: the dashboard needs ${MIN_COLUMNS}×${MIN_ROWS}; this terminal is ${W}×${rows}.`}</Text>
        <Text wrap="truncate">{`Triton ${s.server.phase}; q quits.`}</Text>
      </Box>
    );
  }

  const view = s.ui.help ? "help" : s.ui.view;
  let body;
  switch (view) {
    case "help":
      body = <HelpPanel width={W} height={main} ownsServer={s.ownsServer} />;
      break;
    case "logs":
      body = (
        <LogsPanel
          lines={logs}
          total={s.logs.length}
          filter={s.ui.logFilter}
          scroll={s.ui.logScroll}
          width={W}
          height={main}
        />
      );
      break;
    case "metrics":
      body = (
        <MetricsPanel
          metrics={s.metrics}
          full
          width={W}
          height={main}
          {...(scrapeIntervalMs ? { intervalMs: scrapeIntervalMs } : {})}
        />
      );
      break;
    case "perf":
      body = <PerfPanel perf={s.perf} now={s.now} width={W} height={main} />;
      break;
    case "tune":
      body = <TunePanel tune={s.tune} now={s.now} width={W} height={main} />;
      break;
    case "details":
      body = (
        <DetailsPanel
          model={selected}
          edits={s.timeline.filter((e) => e.model === selected?.name)}
          width={W}
          height={main}
        />
      );
      break;
    default: {
      const side = W >= 110;
      // The timeline and metrics take what they need (within limits); the log tail gets the rest.
      const need = side ? Math.max(timelineLines(s), metricsLines(s)) + 2 : timelineLines(s) + metricsLines(s) + 4;
      const logsH = main >= 16 ? Math.max(4, main - Math.max(8, Math.min(need, Math.floor(main * 0.7)))) : 0;
      const topH = main - logsH;
      const tw = side ? Math.floor(W * 0.45) : W;
      // Stacked, the timeline gets its share of the lines by what it holds.
      const th = side
        ? topH
        : Math.max(
            3,
            Math.min(topH - 3, Math.round((topH * (timelineLines(s) + 2)) / (timelineLines(s) + metricsLines(s) + 4))),
          );
      body = (
        <Box flexDirection="column">
          <Box flexDirection={side ? "row" : "column"}>
            <TimelinePanel
              timeline={s.timeline}
              width={tw}
              height={th}
              {...(s.server.modelsDir ? { baseDir: s.server.modelsDir } : {})}
            />
            <MetricsPanel
              metrics={s.metrics}
              width={side ? W - tw : W}
              height={side ? topH : topH - th}
              {...(scrapeIntervalMs ? { intervalMs: scrapeIntervalMs } : {})}
            />
          </Box>
          {logsH > 0 ? (
            <LogsPanel
              lines={logs}
              total={s.logs.length}
              filter={s.ui.logFilter}
              scroll={0}
              width={W}
              height={logsH}
              title="Triton log (l for more)"
            />
          ) : null}
        </Box>
      );
    }
  }
  return (
    <Box flexDirection="column" width={W}>
      <ServerPanel server={s.server} metrics={s.metrics?.view} now={s.now} width={W} />
      <ModelsPanel
        models={models}
        total={s.models.length}
        selected={selected?.name}
        filter={s.ui.modelFilter}
        width={W}
        height={modelsH}
      />
      {body}
      <StatusBar ui={s.ui} now={s.now} width={W} />
    </Box>
  );
}

/** Lines the timeline would fill, to size the overview's panels. */
function timelineLines(s: DashboardState): number {
  let n = 0;
  for (const e of s.timeline.slice(0, 30))
    n += 1 + (e.phase === "refused" ? Math.min(3, 1 + (e.diagnostics?.length ?? 0)) : e.phase === "failed" ? 1 : 0);
  return Math.max(1, n);
}

function metricsLines(s: DashboardState): number {
  const v = s.metrics?.view;
  if (!v) return 1;
  return 1 + v.models.length + Math.max(1, v.gpus.length) + (v.summaries ? 0 : 1) + (s.metrics?.error ? 1 : 0);
}
