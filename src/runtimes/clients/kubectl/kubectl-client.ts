import type { ResultPromise } from "execa";

/**
 * What the runtimes that run Triton in Kubernetes (kind, cluster) ask of kubectl: one command
 * against an explicit context, and long-running ones (port-forward, logs -f). The connection,
 * the run's deletion and its liveness take this; tools.ts `KubectlTools` implements it with execa.
 */
export interface KubectlClient {
  /** kubectl against one context; `--context` is always explicit, the user's current context is never used. */
  kubectl(context: string, args: string[], o?: RunOptions): Promise<string>;
  /** Starts a long-running tool; its output lines go to `onLine`. */
  spawn(tool: Tool, args: string[], onLine: (line: string, stream: "stdout" | "stderr") => void): Child;
}

export type Tool = "kind" | "kubectl" | "docker";

export interface RunOptions {
  input?: string;
  /** A file fed to stdin (node-gpu-setup.sh). */
  inputFile?: string;
  timeoutMs?: number;
  /** Each stderr line as it comes (kind's progress). */
  onStderrLine?: (line: string) => void;
}

export interface ChildExit {
  code: number | undefined;
  signal: string | undefined;
  stderr: string;
  /** It could not be started (ToolMissingError when the tool is not on PATH). */
  error?: Error;
}

/** A long-running kubectl (port-forward, logs -f). */
export interface Child {
  readonly pid: number | undefined;
  readonly process: ResultPromise;
  /** Resolves (never rejects) when it exited: its exit code, or the signal, or why it never started. */
  readonly exited: Promise<ChildExit>;
  kill(signal?: NodeJS.Signals): void;
}
