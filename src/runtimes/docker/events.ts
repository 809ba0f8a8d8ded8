/** How docker's own events read (its pulls read as clients/container/pull-event.ts words them, as kind's do). */
import type { DriverEvent, RuntimeKind } from "../driver.js";
import { describeGpuPath, type GpuPath } from "./gpu-path.js";

export interface ContainerReport {
  action: "created" | "reattached";
  name: string;
  id: string;
  image: string;
  /** Why the run's earlier container was replaced. */
  replaced?: string;
}

/** The container this run uses. */
export function containerEvent(c: ContainerReport): DriverEvent {
  return {
    type: "container",
    runtime: "docker",
    ...c,
    reads: {
      line:
        c.action === "reattached"
          ? `reattached to the running container ${c.name} (${c.id.slice(0, 12)}, ${c.image}): same settings as before`
          : `created container ${c.name} (${c.id.slice(0, 12)}, ${c.image})${c.replaced ? `, replacing ours because ${c.replaced}` : ""}`,
      status: `${c.action === "reattached" ? "reattached to" : "created"} container ${c.name}`,
    },
    server: { container: c.name },
  };
}

/** Prometheus and Grafana started beside the server (`--monitoring`). */
export function monitoringEvent(m: { prometheus: string; grafana: string }): DriverEvent {
  return {
    type: "monitoring",
    runtime: "docker",
    prometheus: m.prometheus,
    grafana: m.grafana,
    reads: { line: `monitoring: Prometheus ${m.prometheus}  Grafana ${m.grafana} (dashboard "Triton (triton-dev)")` },
    server: { monitoring: { prometheus: m.prometheus, grafana: m.grafana } },
  };
}

/** The way GPUs reach the container (--gpus), and why that way: `up` says it before the container starts. */
export function gpuPathEvent(runtime: RuntimeKind, p: GpuPath): DriverEvent {
  return {
    type: "gpus",
    runtime,
    path: p.kind,
    why: p.why,
    reads: { line: `GPUs ${describeGpuPath(p)}` },
  };
}
