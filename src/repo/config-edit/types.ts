/** What the editor is asked to change, what it reports it changed, and why it refused. */
import { UserError } from "../../errors.js";

/** What tune may change in a config.pbtxt; everything not named here stays byte for byte. */
export interface ConfigEdits {
  maxBatchSize?: number;
  /**
   * undefined: dynamic_batching left as it is; false: the block removed; an object: these fields
   * set inside the block (created when absent), every other field of the block (priority levels,
   * queue policy, comments) kept. `preferredBatchSize: []` removes preferred_batch_size.
   */
  dynamicBatching?: false | { preferredBatchSize?: number[]; maxQueueDelayMicroseconds?: number };
  /**
   * Instance counts per kind: the count of the first instance_group entry of that kind is set
   * (a `count:` inserted when the entry has none); a kind with no entry gets a new entry
   * `{ count: N kind: KIND }` (appended to the existing instance_group list, or a new
   * `instance_group [...]` at the end of the file).
   */
  instanceCounts?: Array<{ kind: "KIND_CPU" | "KIND_GPU"; count: number }>;
}

export interface ConfigEditChange {
  /**
   * The field: `max_batch_size`, `dynamic_batching.preferred_batch_size`, or per kind (as the edits
   * name them) `instance_group[KIND_CPU].count`, the count of that kind's first entry.
   */
  field: string;
  /** The value before, in text format; undefined when the file does not write it. */
  before: string | undefined;
  /** The value after; undefined when the edit removes it. */
  after: string | undefined;
}

/**
 * Why a config was not edited:
 * - `syntax`: the file is not a valid model configuration (the message names file:line:col);
 * - `conflict`: the edit cannot be made in this config (dynamic batching beside sequence batching);
 * - `invalid-edit`: the edit itself is out of range (a count of 0);
 * - `changed`: the file is no longer the text the edit was computed from;
 * - `io`: the file could not be read or written;
 * - `unsafe-folder`: the file is a link into a folder another user owns or can write, or the
 *   folder changed under the write: nothing is written there;
 * - `internal`: the result would not have meant exactly the edit (our fault; nothing was written).
 */
export type ConfigEditReason = "syntax" | "conflict" | "invalid-edit" | "changed" | "io" | "unsafe-folder" | "internal";

/** A config.pbtxt that was not edited; the file is left exactly as it was. */
export class ConfigEditError extends UserError {
  override name = "ConfigEditError";
  constructor(
    message: string,
    readonly reason: ConfigEditReason,
    options: { hint?: string; cause?: unknown; file?: string; line?: number; column?: number } = {},
  ) {
    super(message, { hint: options.hint, cause: options.cause });
    this.file = options.file;
    this.line = options.line;
    this.column = options.column;
  }
  readonly file: string | undefined;
  readonly line: number | undefined;
  readonly column: number | undefined;
}
