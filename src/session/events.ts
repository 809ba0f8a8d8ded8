import type { RepositoryIndexEntry } from "../triton/http-client.js";
import type { Endpoints, RuntimeKind } from "../runtimes/runtime.js";
import type { SetupProgress } from "../runtimes/local/environment.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import type { EditEvent } from "../reload/events.js";
import type { LayerProgress, PullSnapshot } from "../runtimes/docker/image.js";
import type { KindStep } from "../runtimes/kind/kind-runtime.js";

/** Everything `up` reports while it works; printed as plain lines or JSON, later shown by the TUI. */
export type SessionEvent =
  | { type: "runtime"; runtime: RuntimeKind; why: string }
  | { type: "setup"; progress: SetupProgress }
  | { type: "lint"; model: string; diagnostics: Diagnostic[]; staged: boolean }
  | { type: "skipped"; model: string; reason: string; diagnostics: Diagnostic[] }
  | { type: "staged"; models: string[]; repository: string }
  | { type: "watching"; modelsDir: string; mode: "poll" | "explicit" }
  | EditEvent
  | { type: "starting"; runtime: RuntimeKind; pid: number | undefined; logFile: string }
  /** `attached`: a dashboard opened on a running server, where elapsedMs is its uptime, not its start. */
  | { type: "ready"; endpoints: Endpoints; models: RepositoryIndexEntry[]; elapsedMs: number; attached?: boolean }
  | { type: "server-exited"; code: number | null; signal: string | null; lastLines: string[] }
  /** Docker: image pull progress, one event per change of a layer. */
  | ({ type: "pull"; changed?: LayerProgress; phaseChanged?: boolean } & PullSnapshot)
  /** Docker: the Triton container this run uses. */
  | { type: "container"; action: "created" | "reattached"; name: string; id: string; image: string; replaced?: string }
  | { type: "monitoring"; prometheus: string; grafana: string }
  /** kind: the cluster, image load, objects, pod and port-forward, step by step. */
  | { type: "kind"; step: KindStep; message: string }
  /** Advice for a problem Triton reported in its log (e.g. /dev/shm too small). */
  | { type: "hint"; message: string }
  | { type: "stopping"; reason: string }
  | { type: "stopped" };
