/**
 * Two kinds of error, told apart by type (never by message text):
 * - UserError: something the user can fix; `hint` says what to do next.
 * - BugError: our fault; the CLI asks the user to report it.
 * The underlying error is kept as `cause`.
 */
export class TritonDevError extends Error {
  override name = "TritonDevError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface UserErrorOptions {
  /** What the user should do next. */
  hint?: string;
  cause?: unknown;
  /** Process exit code the CLI uses for this error (default 1). */
  exitCode?: number;
}

export class UserError extends TritonDevError {
  override name = "UserError";
  readonly hint: string | undefined;
  readonly exitCode: number;
  constructor(message: string, options: UserErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? 1;
  }
}

/** Command-line usage mistakes: exit code 2, like most CLIs. */
export class UsageError extends UserError {
  override name = "UsageError";
  constructor(message: string, options: Omit<UserErrorOptions, "exitCode"> = {}) {
    super(message, { ...options, exitCode: 2 });
  }
}

/** Triton did not come up: it exited during start, or was not ready in time. */
export class ServerStartError extends UserError {
  override name = "ServerStartError";
}

export class BugError extends TritonDevError {
  override name = "BugError";
}

export const REPORT_URL_HINT =
  "This is a bug in triton-dev. Please report it with the command you ran and the output of `TRITON_DEV_LOG=debug triton-dev ...`.";

export function describeCause(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
