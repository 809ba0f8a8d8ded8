import { Text } from "ink";
import { memo } from "react";
import type { MetricsView } from "../../metrics/history.js";
import { bytes, cut, pct, uptime } from "../format.js";
import type { ServerInfo } from "../state.js";
import { toneColor, useTheme } from "../theme.js";
import { Line, Panel } from "./panel.js";

export interface ServerPanelProps {
  server: ServerInfo;
  metrics: MetricsView | undefined;
  now: number;
  width: number;
}

export const SERVER_PANEL_HEIGHT = 5;

function Flag({ on, label }: { on: boolean | undefined; label: string }) {
  const theme = useTheme();
  return (
    <Text
      color={toneColor(theme, on === undefined ? "dim" : on ? "ok" : "bad")}
    >{`${on ? "●" : "○"} ${label}${on === undefined ? " ?" : on ? "" : " ✗"}`}</Text>
  );
}

/** Beside the ready flag: what readiness waits for, or how many listed models are not served (not counted). */
export function readyNote(s: ServerInfo): string | undefined {
  if (s.ready === false && s.waitingFor?.length) return s.waitingFor.join("; ");
  if (s.ready && s.notServed?.length) return `${s.notServed.length} not served`;
  return undefined;
}

/** Runtime, endpoints, health, uptime and the GPU: what is running and whether it answers. */
export const ServerPanel = memo(function ServerPanel({ server: s, metrics, now, width }: ServerPanelProps) {
  const theme = useTheme();
  const inner = width - 2;
  const name = `Triton${s.tritonVersion ? ` ${s.tritonVersion}` : ""}`;
  const where = [
    s.runtime ? `${s.runtime} runtime` : undefined,
    s.container ? `container ${s.container}` : s.pid ? `pid ${s.pid}` : undefined,
    s.reload ? `${s.reload} reload` : undefined,
  ]
    .filter(Boolean)
    .join(", ");
  const up =
    s.startedAt && (s.phase === "running" || s.phase === "starting") ? `up ${uptime(now - s.startedAt)}` : s.phase;
  const ep = s.endpoints;
  const endpoints = ep
    ? `HTTP ${ep.http}   gRPC ${ep.grpc}   metrics ${ep.metrics}/metrics${s.monitoring ? `   Grafana ${s.monitoring.grafana}   Prometheus ${s.monitoring.prometheus}` : ""}`
    : (s.message ?? "starting…");
  const gpus = metrics?.gpus ?? [];
  let gpuLine: string;
  if (gpus.length > 0) {
    gpuLine = gpus
      .map((g, i) =>
        `GPU${gpus.length > 1 ? i : ""} ${s.gpuNames[i] ?? ""} util ${pct(g.utilization)} mem ${bytes(g.memoryUsedBytes)}/${bytes(g.memoryTotalBytes)}`.replace(
          / {2,}/g,
          " ",
        ),
      )
      .join("  ");
  } else if (s.gpuNames.length > 0) {
    gpuLine = `GPU ${s.gpuNames.join(", ")} (Triton reports no GPU metrics)`;
  } else {
    gpuLine = s.gpuCount ? `${s.gpuCount} NVIDIA GPU(s) (no utilisation reported)` : "GPU none: CPU only";
  }
  // Host memory only: CPU use moves every scrape and would redraw an idle screen (the `m` view has it).
  const cpu = metrics?.cpu
    ? `   host memory ${bytes(metrics.cpu.memoryUsedBytes)}/${bytes(metrics.cpu.memoryTotalBytes)}`
    : "";
  const message = s.phase !== "running" && ep && s.message ? s.message : undefined;
  return (
    <Panel
      title="Server"
      extra={s.modelsDir ? cut(s.modelsDir, Math.max(10, Math.floor(inner / 3))) : undefined}
      width={width}
      height={SERVER_PANEL_HEIGHT}
    >
      <Line>
        <Text bold>{name}</Text>
        {where ? ` (${where})  ` : "  "}
        <Flag on={s.live} label="live" />
        {"  "}
        <Flag on={s.ready} label="ready" />
        {readyNote(s) ? <Text color={toneColor(theme, "dim")}>{` (${cut(readyNote(s)!, 48)})`}</Text> : null}
        {"  "}
        <Text color={toneColor(theme, s.phase === "running" ? undefined : s.phase === "exited" ? "bad" : "warn")}>
          {up}
        </Text>
      </Line>
      <Line>
        {message ? <Text color={toneColor(theme, s.phase === "exited" ? "bad" : "warn")}>{message}</Text> : endpoints}
      </Line>
      <Line>
        {gpuLine}
        <Text color={toneColor(theme, "dim")}>{cpu}</Text>
      </Line>
    </Panel>
  );
});
