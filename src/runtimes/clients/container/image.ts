import type Docker from "dockerode";
import { UserError } from "../../../errors.js";
import { daemonMessage, statusOf } from "./client.js";

/** One event of the daemon's pull stream (the JSON lines `docker pull` renders). */
export interface PullMessage {
  status?: string;
  id?: string;
  progress?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

export type LayerPhase = "waiting" | "downloading" | "verifying" | "downloaded" | "extracting" | "done";

export interface LayerProgress {
  id: string;
  phase: LayerPhase;
  /** Bytes of the current phase (download or extraction) and its total, when the daemon says. */
  current?: number;
  total?: number;
}

export interface PullSnapshot {
  image: string;
  layers: LayerProgress[];
  /** Layers finished (pulled or already present). */
  done: number;
  /** Bytes downloaded so far and the total known so far, over all layers. */
  downloaded: number;
  size: number;
  finished: boolean;
}

function phaseOf(status: string): LayerPhase | undefined {
  const s = status.toLowerCase();
  if (s.startsWith("pulling fs layer") || s.startsWith("waiting")) return "waiting";
  if (s.startsWith("downloading")) return "downloading";
  if (s.startsWith("verifying checksum")) return "verifying";
  if (s.startsWith("download complete")) return "downloaded";
  if (s.startsWith("extracting")) return "extracting";
  if (s.startsWith("pull complete") || s.startsWith("already exists")) return "done";
  return undefined;
}

/** Folds the pull stream into per-layer progress, as the progress display needs it. */
export class PullProgress {
  private readonly layers = new Map<string, LayerProgress>();
  private readonly downloadTotals = new Map<string, number>();
  private readonly downloadDone = new Map<string, number>();
  finished = false;

  constructor(readonly image: string) {}

  /** The layer the message changed, and whether its phase changed (undefined: nothing to show). */
  update(m: PullMessage): { layer: LayerProgress; phaseChanged: boolean } | undefined {
    if (!m.status || !m.id) return undefined;
    const phase = phaseOf(m.status);
    if (!phase) return undefined;
    const prev = this.layers.get(m.id);
    const next: LayerProgress = { id: m.id, phase };
    if (m.progressDetail?.total) {
      next.current = m.progressDetail.current ?? 0;
      next.total = m.progressDetail.total;
    }
    if (phase === "downloading" && next.total) {
      this.downloadTotals.set(m.id, next.total);
      this.downloadDone.set(m.id, next.current ?? 0);
    }
    if (phase === "downloaded" || phase === "extracting" || phase === "done") {
      const t = this.downloadTotals.get(m.id);
      if (t !== undefined) this.downloadDone.set(m.id, t);
    }
    this.layers.set(m.id, next);
    if (prev && prev.phase === next.phase && prev.current === next.current) return undefined;
    return { layer: next, phaseChanged: !prev || prev.phase !== next.phase };
  }

  snapshot(): PullSnapshot {
    const layers = [...this.layers.values()];
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    return {
      image: this.image,
      layers,
      done: layers.filter((l) => l.phase === "done").length,
      downloaded: sum(this.downloadDone),
      size: sum(this.downloadTotals),
      finished: this.finished,
    };
  }
}

export type PullUpdate = PullSnapshot & { changed?: LayerProgress; phaseChanged?: boolean };

export async function imageId(docker: Docker, ref: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw err;
  }
}

/** A pull failure, told apart so the message can say what to do. */
export function pullError(ref: string, err: unknown, purpose = "Triton"): UserError {
  const msg = daemonMessage(err);
  const offline =
    /dial tcp|no such host|i\/o timeout|connection refused|network is unreachable|TLS handshake timeout|Client\.Timeout|temporary failure in name resolution/i.test(
      msg,
    );
  const denied = /unauthorized|authentication required|denied/i.test(msg);
  const missing = /manifest unknown|not found|does not exist/i.test(msg);
  const registry = ref.includes("/") && /[.:]/.test(ref.split("/")[0]!) ? ref.split("/")[0]! : "Docker Hub";
  const hint = offline
    ? `This machine cannot reach ${registry}. Pull or load the image where it can (\`docker pull ${ref}\`, or \`docker save\` there and \`docker load\` here), then run again.`
    : denied
      ? `Log in to the registry first (\`docker login ${registry === "Docker Hub" ? "" : registry}\`${registry === "nvcr.io" ? " with the user $oauthtoken and an NGC API key" : ""}), or choose another image.`
      : missing
        ? "Check the image name and tag."
        : `See \`docker pull ${ref}\` for the daemon's own account.`;
  return new UserError(`could not pull the ${purpose} image ${ref}: ${msg}`, { hint, cause: err });
}

export interface EnsureImageOptions {
  /** Called with per-layer progress while pulling, at each change of a layer. */
  onProgress?: (s: PullUpdate) => void;
  /** Pull even when present (a moving tag); default: use what the daemon has. */
  pull?: boolean;
  purpose?: string;
}

/** The image's id, pulling it first when the daemon does not have it. */
export async function ensureImage(
  docker: Docker,
  ref: string,
  o: EnsureImageOptions = {},
): Promise<{ id: string; pulled: boolean }> {
  if (!o.pull) {
    const id = await imageId(docker, ref);
    if (id) return { id, pulled: false };
  }
  const progress = new PullProgress(ref);
  try {
    const stream = await docker.pull(ref);
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        stream,
        (err) => (err ? reject(err) : resolve()),
        (m: PullMessage) => {
          if (m.error) {
            reject(
              Object.assign(new Error(m.errorDetail?.message ?? m.error), {
                json: { message: m.errorDetail?.message ?? m.error },
              }),
            );
            return;
          }
          const u = progress.update(m);
          if (u) o.onProgress?.({ ...progress.snapshot(), changed: u.layer, phaseChanged: u.phaseChanged });
        },
      );
    });
  } catch (err) {
    throw pullError(ref, err, o.purpose);
  }
  progress.finished = true;
  o.onProgress?.(progress.snapshot());
  const id = await imageId(docker, ref);
  if (!id)
    throw new UserError(`the daemon reported ${ref} pulled, but does not list it`, {
      hint: `Try \`docker pull ${ref}\`.`,
    });
  return { id, pulled: true };
}
