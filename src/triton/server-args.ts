/**
 * tritonserver's command line, built in one place for every place Triton runs: the local process,
 * the docker runtime's container and the Kubernetes Deployment (kind and `triton-dev manifests`).
 * Each passes where things are from Triton's point of view (paths inside the container, addresses
 * to bind); the flags that make it behave as triton-dev expects are the same everywhere.
 */

/** Triton's own ports, which it binds inside a container or pod unless told otherwise. */
export const TRITON_DEFAULT_PORTS = { http: 8000, grpc: 8001, metrics: 8002 } as const;

/**
 * The API categories (Triton 2.51's names, the same for HTTP and gRPC) that only the run's key
 * opens: each can read or change what another user's requests see. model-repository loads code
 * (a load request may carry its own model.py); shared-memory registers regions by name, so a
 * caller could point an inference's outputs into any /dev/shm object the server may open (the
 * python backend's own regions included, which crashes the server) or read inputs from it;
 * logging can turn on verbose logs or move the log file; trace can write traces of every request,
 * tensors included, to a file the caller names. What stays open (inference, metadata, health,
 * model-config, statistics) reads nothing that the caller's own requests, the model folder or
 * the metrics port do not already show.
 */
export const RESTRICTED_APIS = ["model-repository", "shared-memory", "logging", "trace"] as const;

/** The two restricted-API flags for a `header=value` (or its placeholder). */
export function restrictedApiArgs(key: string): string[] {
  const apis = RESTRICTED_APIS.join(",");
  return [`--http-restricted-api=${apis}:${key}`, `--grpc-restricted-protocol=${apis}:${key}`];
}

export interface ServerArgsInput {
  /** The model repository as Triton sees it. */
  repository: string;
  /** The backends folder, when it is not Triton's default (/opt/tritonserver/backends). */
  backendDir?: string;
  reload: "poll" | "explicit";
  pollSecs: number;
  /** Addresses and ports to bind; absent: Triton's defaults (every address, 8000/8001/8002). */
  listen?: { host: string; ports: { http: number; grpc: number; metrics: number } };
  /**
   * `header=value` restricting the RESTRICTED_APIS (Kubernetes passes `header=$(ENV)` for the
   * kubelet to expand); absent: they are open.
   */
  repositoryKey?: string;
  /**
   * Info-level log lines: poll mode's outcomes (loaded, failed) are read from the log. Off for
   * a Deployment rendered for a real cluster, where nobody follows the log for us.
   */
  logInfo?: boolean;
  /** How long Triton waits for models to unload and stubs to end when asked to stop. */
  exitTimeoutSecs?: number;
  /** false: --disable-auto-complete-config (absent: Triton's default, on). */
  autoCompleteConfig?: boolean;
  /** Flags the user asked for, after ours. */
  extra?: readonly string[];
}

export function serverArgs(o: ServerArgsInput): string[] {
  const l = o.listen;
  return [
    `--model-repository=${o.repository}`,
    ...(o.backendDir ? [`--backend-directory=${o.backendDir}`] : []),
    `--model-control-mode=${o.reload}`,
    ...(o.reload === "poll" ? [`--repository-poll-secs=${o.pollSecs}`] : ["--load-model=*"]),
    ...(l
      ? [
          `--http-address=${l.host}`,
          `--http-port=${l.ports.http}`,
          `--grpc-address=${l.host}`,
          `--grpc-port=${l.ports.grpc}`,
          `--metrics-address=${l.host}`,
          `--metrics-port=${l.ports.metrics}`,
        ]
      : []),
    "--allow-metrics=true",
    // Latency summaries (quantiles): the dashboard's p99 queue latency and the article's p95
    // compute latency need them, since Triton exports no latency histograms.
    "--metrics-config=summary_latencies=true",
    // One broken model must not take the whole server (and every other model) down while the
    // user iterates.
    "--exit-on-error=false",
    ...(o.exitTimeoutSecs !== undefined ? [`--exit-timeout-secs=${o.exitTimeoutSecs}`] : []),
    ...(o.repositoryKey ? restrictedApiArgs(o.repositoryKey) : []),
    ...(o.logInfo ? ["--log-info=true"] : []),
    // The python backend spends a fixed second of every model load on auto-complete (a stub
    // started only to call auto_complete_config, then a 1 s sleep); `up` turns it off when no
    // model of the repository needs it.
    ...(o.autoCompleteConfig === false ? ["--disable-auto-complete-config"] : []),
    ...(o.extra ?? []),
  ];
}
