/** How docker's own events read (kind pulls through the same daemon and says its pulls the same way). */
import type { DriverEvent, RuntimeKind } from "../driver.js";
import type { PullUpdate } from "./image.js";

import { bytes as short } from "../../events/size.js";
import { describeGpuPath, type GpuPath } from "./gpu-path.js";

const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MB`;

/**
 * A pull: a plain line when a layer starts downloading and when one is done (not for every byte
 * count), and a status line the dashboard keeps current.
 */
export function pullEvent(runtime: RuntimeKind, p: PullUpdate): DriverEvent {
  const total = p.layers.length;
  const size = p.size > 0 ? `, ${short(p.downloaded)} of ${short(p.size)}` : "";
  const line = pullLine(p);
  return {
    type: "pull",
    runtime,
    ...p,
    reads: {
      ...(line !== undefined ? { line } : {}),
      status: p.finished ? `image ${p.image} ready` : `pulling ${p.image}: ${p.done}/${total} layers${size}`,
    },
  };
}

function pullLine(p: PullUpdate): string | undefined {
  if (p.finished) return `pulled ${p.image}: ${p.layers.length} layer(s), ${mb(p.size)} downloaded`;
  const l = p.changed;
  if (!l || !p.phaseChanged) return undefined;
  if (l.phase === "downloading")
    return `pull ${p.image}: layer ${l.id} downloading${l.total ? ` (${mb(l.total)})` : ""}`;
  if (l.phase === "done")
    return `pull ${p.image}: layer ${l.id} done (${p.done}/${p.layers.length} layers, ${mb(p.downloaded)}/${mb(p.size)})`;
  return undefined;
}

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
