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
  ["P", "input shapes for the check (NAME=2x3 ...), remembered for the model"],
  ["t", "tune the selected model's batching and instances (t again stops it with the best so far)"],
  ["r", "reload the selected model: validate, stage, load"],
  ["esc", "back to the overview"],
];

/** `q` stops the server only where this dashboard started it (`up`), not in `triton-dev dashboard`. */
export function keysFor(ownsServer: boolean): Array<[string, string]> {
  return [
    ...KEYS,
    [
      "q  Ctrl-C",
      ownsServer ? "quit, stopping the Triton this run started" : "quit; the detached Triton keeps running",
    ],
  ];
}

export const HelpPanel = memo(function HelpPanel({
  width,
  height,
  ownsServer,
}: {
  width: number;
  height: number;
  ownsServer: boolean;
}) {
  return (
    <Panel title="Keys" width={width} height={height}>
      {keysFor(ownsServer).map(([k, d]) => (
        <Line key={k}>{`  ${k.padEnd(12)}${d}`}</Line>
      ))}
    </Panel>
  );
});
