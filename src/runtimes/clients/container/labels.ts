/**
 * The labels on every container, network and volume triton-dev creates in a Docker daemon, whichever
 * runtime created it: nothing without them is ever stopped or removed.
 */
export const LABEL = {
  tool: "dev.triton-dev.tool",
  runId: "dev.triton-dev.run-id",
  repository: "dev.triton-dev.repository",
  runsDir: "dev.triton-dev.runs-dir",
  settings: "dev.triton-dev.settings",
  role: "dev.triton-dev.role",
} as const;
export const TOOL = "triton-dev";
export type Role = "triton" | "prometheus" | "grafana" | "network" | "backend-probe";
