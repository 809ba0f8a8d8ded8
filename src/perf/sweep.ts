/**
 * What one sweep measured: the type that the tables (report.ts) and the streaming columns
 * (stream-report.ts) both read, apart from either, so neither leads back to the other.
 */
import type { LevelKind, LevelResult } from "./profile.js";
import type { Protocol } from "./protocol.js";

/** One sweep over one served model (the model itself, or one variant of it). */
export interface SweepResult {
  /** The model the user asked about. */
  model: string;
  /** The model the load went to: the model itself or a staged variant. */
  servedModel: string;
  /** `-x`: the one version measured (absent: the version Triton picked). */
  version?: string;
  /** What this sweep stands for in a comparison ("dynamic batching", "instances=3"). */
  label?: string;
  engine: "builtin" | "perf_analyzer";
  protocol: Protocol;
  endpoint: string;
  kind: LevelKind;
  distribution?: "constant" | "poisson";
  batchSize: number;
  /** Inputs sent through registered system shared memory (absent: in the request bodies). */
  sharedMemory?: "system";
  measurementIntervalMs: number;
  startedAt: string;
  finishedAt: string;
  levels: LevelResult[];
  /** A stateful model: its requests went as sequences of this many (+/- the variation). */
  sequence?: { length: number; variationPct: number; rateSequences?: number; iterative?: boolean };
  /** A decoupled model: the stream its requests went over; its levels carry `stream`. */
  streaming?: "ModelStreamInfer" | "generate_stream";
  /**
   * Whose model it was: the model repository of the `up` run measured (its folder), or the server
   * given with -u. History compares a run only with earlier ones of the same repository.
   */
  repository?: string;
  /**
   * What the requests carried: `random`, `zero` or the --input-data file, with the --shape sizes
   * and --request-parameter values; history compares only runs that sent the same.
   */
  inputs?: string;
  /** Why the sweep ended before its last level, when it did. */
  stopped?: { reason: "interrupted" | "server-gone" | "failing" | "variant"; message: string; hint?: string };
}
