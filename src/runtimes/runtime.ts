import type { RepositoryIndexEntry } from "../triton/http-client.js";

export type RuntimeKind = "local" | "docker" | "kind";
export type ReloadMode = "poll" | "explicit";

export interface Endpoints {
  http: string;
  grpc: string;
  metrics: string;
}

export interface Ports {
  http: number;
  grpc: number;
  metrics: number;
}

export interface RuntimeCapabilities {
  /** Backends this runtime can load, besides ensembles. */
  backends: string[];
  gpu: boolean;
}

export interface StartOptions {
  runId: string;
  runDir: string;
  /** The repository Triton serves (our staging copy, never the user's folder). */
  repository: string;
  ports: Ports;
  host: string;
  reload: ReloadMode;
  pollSecs: number;
  repositoryKey: { header: string; value: string };
  logFile: string;
  /** false: start Triton with --disable-auto-complete-config (absent: Triton's default, on). */
  autoCompleteConfig?: boolean;
}

/** A started server. `stop()` is safe to call twice. */
export interface ServerHandle {
  readonly pid: number | undefined;
  readonly endpoints: Endpoints;
  /** Resolves when the server process exits, with its exit code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(graceMs?: number): Promise<void>;
  /** Let this CLI exit while the server keeps running (a detached run). */
  release(): void;
}

export interface Runtime {
  readonly kind: RuntimeKind;
  capabilities(): RuntimeCapabilities;
  start(options: StartOptions): Promise<ServerHandle>;
}

export interface ModelStatus extends RepositoryIndexEntry {}
