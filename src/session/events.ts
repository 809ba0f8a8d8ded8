import type { RepositoryIndexEntry } from "../triton/http-client.js";
import type { Endpoints, RuntimeKind } from "../runtimes/runtime.js";
import type { SetupProgress } from "../runtimes/local/environment.js";

/** Everything `up` reports while it works; printed as plain lines or JSON, later shown by the TUI. */
export type SessionEvent =
  | { type: "setup"; progress: SetupProgress }
  | { type: "staged"; models: string[]; repository: string }
  | { type: "starting"; runtime: RuntimeKind; pid: number | undefined; logFile: string }
  | { type: "ready"; endpoints: Endpoints; models: RepositoryIndexEntry[]; elapsedMs: number }
  | { type: "server-exited"; code: number | null; signal: string | null; lastLines: string[] }
  | { type: "stopping"; reason: string }
  | { type: "stopped" };
