import type { Diagnostic } from "../repo/diagnostics.js";

/** The life of one edit to one model, from the save to the served result. */
export type EditPhase =
  | "saved"
  | "validated"
  | "refused"
  | "unchanged"
  /** The model's requirements.txt is being built into an environment (not found cached); `reason` says what. */
  | "environment"
  | "staged"
  | "loading"
  | "ready"
  | "failed"
  | "removed"
  | "unloaded";

export interface EditEvent {
  type: "edit";
  /** Increments per edit across the run; every phase of one edit carries the same id. */
  id: number;
  model: string;
  phase: EditPhase;
  /** ms since epoch. */
  at: number;
  /** Time from the save to this phase. */
  sinceSavedMs: number;
  diagnostics?: Diagnostic[];
  /** Triton's reason (failed), or what happened next ("still serving the last good version"). */
  reason?: string;
  version?: string;
  /**
   * Set on a failed load with no earlier version to serve: the model was taken out of the
   * served repository (poll mode stops retrying it) until a fix is saved.
   */
  withdrawn?: boolean;
}

/** The last edit of a model, as `status --json` and the dashboard show it. */
export interface EditSummary {
  id: number;
  model: string;
  savedAt: string;
  outcome: EditPhase;
  latencyMs: number;
  phases: Array<{ phase: EditPhase; at: string; sinceSavedMs: number }>;
  reason?: string;
  diagnostics?: Diagnostic[];
  /** See EditEvent.withdrawn: Triton no longer lists the model, so `status` shows it from here. */
  withdrawn?: boolean;
}
