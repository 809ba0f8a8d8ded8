import type { RepositoryIndexEntry } from "../triton/http-client.js";
import type { Endpoints, RuntimeKind } from "../runtimes/runtime.js";
import type { SetupProgress } from "../runtimes/local/environment.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import type { EditEvent } from "../repo/reload-events.js";

/** Everything `up` reports while it works; printed as plain lines or JSON, later shown by the TUI. */
export type SessionEvent =
  | { type: "setup"; progress: SetupProgress }
  | { type: "lint"; model: string; diagnostics: Diagnostic[]; staged: boolean }
  | { type: "skipped"; model: string; reason: string; diagnostics: Diagnostic[] }
  | { type: "staged"; models: string[]; repository: string }
  | { type: "watching"; modelsDir: string; mode: "poll" | "explicit" }
  | EditEvent
  | { type: "starting"; runtime: RuntimeKind; pid: number | undefined; logFile: string }
  | { type: "ready"; endpoints: Endpoints; models: RepositoryIndexEntry[]; elapsedMs: number }
  | { type: "server-exited"; code: number | null; signal: string | null; lastLines: string[] }
  | { type: "stopping"; reason: string }
  | { type: "stopped" };
