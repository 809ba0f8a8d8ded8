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

/**
 * Ctrl-C (or SIGTERM, or `q`) while `up` was starting: what had started is stopped again. Exit code
 * 130, as a shell reports a command ended by Ctrl-C.
 */
export class StartInterruptedError extends UserError {
  override name = "StartInterruptedError";
  constructor(why: string, options: Omit<UserErrorOptions, "exitCode"> = {}) {
    super(`stopped during start (${why}); nothing of this run is left running`, { ...options, exitCode: 130 });
  }
}

/** Names what went to a server and what was expected back, for the errors about its answer. */
export interface ServerExchange {
  /** Who was asked, as the user knows it: "Triton at http://127.0.0.1:8000". */
  server: string;
  /** What was asked: "GET /v2/models/m", "gRPC ModelInfer". */
  request: string;
  /** What a working server answers: "the model's metadata as JSON". */
  expected: string;
}

const SERVER_FAULT_HINT =
  "Check that the address is the server you mean and that it is running (`triton-dev status` for a run of ours); a proxy or port-forward in between may have failed.";

/**
 * A server we talk to (Triton, its metrics endpoint, or a proxy or port-forward in between)
 * broke off, stalled, or answered what no such server sends. Said in one line naming the server,
 * the request and what was expected: the user can act on it (the address, the server), and it is
 * never a crash. `ServerConnectionError` and `ServerResponseError` tell the two cases apart.
 */
export class ServerFaultError extends UserError {
  override name = "ServerFaultError";
  readonly server: string;
  readonly request: string;
  readonly expected: string;
  /** What went wrong, alone: "cut its answer off after 100 bytes (connection reset)". */
  readonly fault: string;
  constructor(exchange: ServerExchange, fault: string, options: Omit<UserErrorOptions, "exitCode"> = {}) {
    super(`${exchange.server} ${fault} (${exchange.request}, expecting ${exchange.expected})`, {
      hint: options.hint ?? SERVER_FAULT_HINT,
      cause: options.cause,
    });
    this.server = exchange.server;
    this.request = exchange.request;
    this.expected = exchange.expected;
    this.fault = fault;
  }
}

/** The exchange did not complete: refused, reset, closed before the whole answer, or out of time. */
export class ServerConnectionError extends ServerFaultError {
  override name = "ServerConnectionError";
}

/** The server answered, but with what cannot be its answer: over our size limit, or not parseable. */
export class ServerResponseError extends ServerFaultError {
  override name = "ServerResponseError";
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

/** What a filesystem error means, said about the path it happened to. */
export interface FsErrorExplanation {
  /** The errno code (ENOSPC, ELOOP, ...), when the error has one. */
  code: string | undefined;
  /** Follows the path it is about: `${path} ${is}` ("... is a symbolic link that loops"). */
  is: string;
  hint: string;
}

const FS_ERRORS: Record<string, (into: string | undefined) => [is: string, hint: string]> = {
  ELOOP: () => [
    "is a symbolic link that loops (following it leads back to itself)",
    "Point the link at a real file or folder, or remove it.",
  ],
  ENAMETOOLONG: () => [
    "has a name or path too long for the filesystem",
    "Shorten the model's folder, file or link names.",
  ],
  ENOSPC: (into) => [
    into
      ? `could not be copied into ${into}: no space left on its disk`
      : "could not be written: no space left on its disk",
    "Free some space on that disk (`df -h` shows it; `triton-dev down` keeps only the last three runs), or point TRITON_DEV_STATE_DIR at a larger disk.",
  ],
  EDQUOT: (into) => [
    into
      ? `could not be copied into ${into}: the disk quota is used up`
      : "could not be written: the disk quota is used up",
    "Free some space within your quota, or point TRITON_DEV_STATE_DIR at another disk.",
  ],
  EROFS: (into) => [
    into ? `could not be copied into ${into}: it is on a read-only filesystem` : "is on a read-only filesystem",
    "Point TRITON_DEV_STATE_DIR at a writable folder.",
  ],
  EACCES: () => ["cannot be read: permission denied", "Make it readable for the user running triton-dev."],
  EPERM: () => ["cannot be read: operation not permitted", "Make it readable for the user running triton-dev."],
  EIO: () => [
    "cannot be read: the disk reported an input/output error",
    "Check the disk it is on (`dmesg` says more).",
  ],
  EMFILE: () => ["cannot be opened: this process has too many files open", "Raise the open-file limit (`ulimit -n`)."],
  ENFILE: () => [
    "cannot be opened: the system has too many files open",
    "Close some programs, or raise the system's open-file limit.",
  ],
  ENOENT: () => ["vanished while it was being read", "Save again once the folder is complete."],
  ENOTDIR: () => ["vanished while it was being read", "Save again once the folder is complete."],
};

/**
 * The one table of what a filesystem error means to the user, for files they wrote and the state
 * folder triton-dev copies them into (`into`, for a copy). `link`: the path is a symbolic link,
 * so ENOENT means it points at nothing rather than that it vanished.
 */
export function explainFsError(err: unknown, options: { link?: boolean; into?: string } = {}): FsErrorExplanation {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT" && options.link)
    return { code, is: "is a symbolic link to nothing", hint: "Point the link at a file that exists, or remove it." };
  const known = code ? FS_ERRORS[code] : undefined;
  if (known) {
    const [is, hint] = known(options.into);
    return { code, is, hint };
  }
  return {
    code,
    is: `cannot be read (${describeCause(err)})`,
    hint: "Check the file and the disk it is on.",
  };
}

/**
 * Errno codes that only the machine or the user's files cause, never our code: those of the disk
 * and the process (a write has no path to name), and with a path, those of a file.
 */
const MACHINE_CODES: Record<string, string> = {
  ENOSPC: "no space left on the disk",
  EDQUOT: "the disk quota is used up",
  EROFS: "the filesystem is read-only",
  EIO: "the disk reported an input/output error",
  EMFILE: "this process has too many files open",
  ENFILE: "the system has too many files open",
};
const FILE_CODES = new Set(["EACCES", "EPERM", "ELOOP", "ENAMETOOLONG"]);

/**
 * A filesystem error the machine or the user's files caused, met where no caller turned it into a
 * UserError: said as one (what and where) instead of as a crash. Undefined for anything else.
 */
export function fsUserError(err: unknown): UserError | undefined {
  const e = err as NodeJS.ErrnoException | undefined;
  if (!(e instanceof Error) || !e.code) return undefined;
  const { is, hint } = explainFsError(e);
  if (typeof e.path === "string" && (FILE_CODES.has(e.code) || e.code in MACHINE_CODES))
    return new UserError(`${e.path} ${is}`, { hint, cause: e });
  const bare = MACHINE_CODES[e.code];
  if (bare)
    return new UserError(`${e.syscall ? `a ${e.syscall} failed` : "a file operation failed"}: ${bare}`, {
      hint,
      cause: e,
    });
  return undefined;
}
