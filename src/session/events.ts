import type { RepositoryIndexEntry } from "../triton/http-client.js";
import type { Endpoints, RuntimeEvent, RuntimeKind, StopOutcome } from "../runtimes/driver.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import type { EditEvent } from "../reload/events.js";

/** Everything `up` reports while it works; printed as plain lines or JSON, later shown by the TUI. */
export type SessionEvent =
  | { type: "runtime"; runtime: RuntimeKind; why: string }
  | { type: "lint"; model: string; diagnostics: Diagnostic[]; staged: boolean }
  | { type: "skipped"; model: string; reason: string; diagnostics: Diagnostic[] }
  | { type: "staged"; models: string[]; repository: string }
  /** A staged model served through the python backend running its backend's library (reload/adapters/). */
  | { type: "adapted"; model: string; servedAs: string }
  | { type: "watching"; modelsDir: string; mode: "poll" | "explicit" }
  | EditEvent
  | { type: "starting"; runtime: RuntimeKind; pid: number | undefined; logFile: string }
  /** `attached`: a dashboard opened on a running server, where elapsedMs is its uptime, not its start. */
  | {
      type: "ready";
      endpoints: Endpoints;
      models: RepositoryIndexEntry[];
      elapsedMs: number;
      attached?: boolean;
      /** Models of the repository `up` did not stage (refused, skipped), counted in the ready line. */
      notServed?: Array<{ model: string; why: "refused" | "skipped"; reason: string }>;
    }
  | { type: "server-exited"; code: number | null; signal: string | null; lastLines: string[] }
  /** Setup, image pulls, containers, a runtime's start steps, hints: what the runtime's driver reports. */
  | RuntimeEvent
  | { type: "stopping"; reason: string }
  /** `stop`: what the server's stop did (how long, which unloads it waited for). */
  | { type: "stopped"; stop?: StopOutcome };
