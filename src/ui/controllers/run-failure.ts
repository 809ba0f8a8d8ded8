import { UserError } from "../../errors.js";

/** What a panel shows when a run it started fails: the user's error with its hint, or what failed. */
export function describeRunFailure(err: unknown, what: string): string {
  return err instanceof UserError
    ? `${err.message}${err.hint ? `\nhint: ${err.hint}` : ""}`
    : `${what} failed: ${(err as Error)?.message ?? String(err)}`;
}
