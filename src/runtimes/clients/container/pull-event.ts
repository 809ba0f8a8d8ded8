/** How an image pull reads, for every runtime that pulls through the Docker daemon (docker, and kind for its nodes). */
import type { DriverEvent, RuntimeKind } from "../../driver.js";
import { bytes as short } from "../../../events/size.js";
import type { PullUpdate } from "./image.js";

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
