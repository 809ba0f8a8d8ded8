import { UserError } from "../errors.js";

/** One line of `triton-dev doctor`. */
export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
  /** Not needed by every runtime (Docker, GPUs): reported, but does not fail `doctor`. */
  warn?: boolean;
}

/** A check that passes with `fn`'s detail, or fails with the UserError it throws (and its hint). */
export async function check(name: string, fn: () => Promise<string> | string): Promise<DoctorCheck> {
  try {
    return { name, ok: true, detail: await fn() };
  } catch (err) {
    if (err instanceof UserError)
      return { name, ok: false, detail: err.message, ...(err.hint ? { hint: err.hint } : {}) };
    throw err;
  }
}
