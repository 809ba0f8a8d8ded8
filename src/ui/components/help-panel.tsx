import { memo } from "react";
import { Line, Panel } from "./panel.js";

export const KEYS: Array<[string, string]> = [
  ["?", "this help (any key closes it)"],
  ["↑ ↓  j k", "select a model"],
  ["enter", "details of the selected model: config, edits, every diagnostic"],
  ["/", "filter the models (or the log, in the log view); enter keeps it, esc clears it"],
  ["l", "Triton's log (PgUp/PgDn scroll)"],
  ["m", "metrics: throughput, queue latency, GPU"],
  ["p", "quick perf check of the selected model (p again cancels)"],
  ["r", "reload the selected model: validate, stage, load"],
  ["esc", "back to the overview"],
  ["q  Ctrl-C", "quit, stopping the Triton this run started"],
];

export const HelpPanel = memo(function HelpPanel({ width, height }: { width: number; height: number }) {
  return (
    <Panel title="Keys" width={width} height={height}>
      {KEYS.map(([k, d]) => (
        <Line key={k}>
          {`  ${k.padEnd(12)}${d}`}
        </Line>
      ))}
    </Panel>
  );
});
