/**
 * What envs/ finds in a model's requirements.txt or environment, shaped as repo/diagnostics.ts
 * `Diagnostic` (lint, `up` and the editor show it as one) with envs' own codes, so envs, below
 * lint, imports nothing of it. Each code is described in repo/rules/ (requirements.ts, serving.ts,
 * python.ts); a code missing there fails to compile where lint or staging takes these as diagnostics.
 */
import type { GrammarCode } from "./requirements.js";

export type EnvCode =
  | GrammarCode
  | "requirements-unreadable"
  | "requirements-index"
  | "requirements-outside-model"
  | "requirements-conflict"
  | "requirements-install-failed"
  | "python-import-missing";

export interface EnvFinding {
  severity: "error" | "warning";
  /** Absolute path of the file (or folder) the finding is about. */
  file: string;
  line: number;
  column: number;
  message: string;
  /** What to do about it, one sentence. */
  hint?: string;
  model?: string;
  code: EnvCode;
}
