import { UsageError } from "../errors.js";

/**
 * The options every container runtime takes (docker, kind, cluster): `--gpus` and `--shm-size`,
 * parsed and worded once, and the size as a Kubernetes quantity for the pods' /dev/shm.
 */

/** The python backend's /dev/shm when `--shm-size` is not given. */
export const DEFAULT_SHM_BYTES = 1024 ** 3;

/** `--gpus`: none, all, a count, or explicit device ids ("0,2" or "device=0,2"). */
export type GpuRequest =
  { kind: "none" } | { kind: "all" } | { kind: "count"; count: number } | { kind: "devices"; ids: string[] };

export function parseGpus(value: string): GpuRequest {
  const v = value.trim().toLowerCase();
  if (v === "none" || v === "0" || v === "") return { kind: "none" };
  if (v === "all" || v === "-1") return { kind: "all" };
  if (/^\d+$/.test(v)) return { kind: "count", count: Number(v) };
  const list = v.replace(/^"?device=/, "").replace(/"$/, "");
  const ids = list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (ids.length > 0 && ids.every((id) => /^(\d+|gpu-[0-9a-f-]+|mig-[0-9a-z/-]+)$/i.test(id)))
    return { kind: "devices", ids };
  throw new UsageError(`--gpus must be all, none, a number of GPUs, or device ids like 0,1; got '${value}'`, {
    hint: "For example --gpus all (every GPU), --gpus 1 (one GPU), --gpus device=0,2 or --gpus none (CPU only).",
  });
}

export function formatGpus(g: GpuRequest): string {
  switch (g.kind) {
    case "none":
      return "none";
    case "all":
      return "all";
    case "count":
      return String(g.count);
    case "devices":
      return `device=${g.ids.join(",")}`;
  }
}

const SIZE_UNITS: Record<string, number> = { "": 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** Docker's size syntax (`1g`, `512m`, `2gb`, plain bytes). */
export function parseSize(value: string, flag = "--shm-size"): number {
  const m = /^(\d+(?:\.\d+)?)\s*([bkmgt]?)i?b?$/i.exec(value.trim());
  const n = m ? Math.round(Number(m[1]) * SIZE_UNITS[m[2]!.toLowerCase()]!) : NaN;
  if (!Number.isFinite(n) || n <= 0) {
    throw new UsageError(`${flag} must be a size like 1g, 512m or 2048k; got '${value}'`, {
      hint: "Triton's python backend needs at least 1 MB per model instance; the default is 1g.",
    });
  }
  return n;
}

export function formatSize(bytes: number): string {
  for (const [unit, f] of [
    ["g", 1024 ** 3],
    ["m", 1024 ** 2],
    ["k", 1024],
  ] as const) {
    if (bytes >= f && bytes % f === 0) return `${bytes / f}${unit}`;
  }
  return `${bytes}b`;
}

/** Kubernetes' quantity for a byte count: whole MiB (1 GiB -> "1024Mi"). */
export function shmQuantity(bytes: number): string {
  return `${Math.max(1, Math.ceil(bytes / 1024 ** 2))}Mi`;
}
