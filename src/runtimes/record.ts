import type { z } from "zod";
import { UserError } from "../errors.js";

/**
 * A runtime's part of the run record, validated by its own schema; a record this version does not
 * understand names the field and how to clean up by hand.
 */
export function parseRuntimeRecord<T>(
  schema: z.ZodType<T>,
  value: unknown,
  runFile: string,
  o: { what: string; hint: string },
): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new UserError(
    `the run record ${runFile} names ${o.what} this version does not understand (field runtimeRecord.${issue?.path.join(".") || "?"}: ${issue?.message})`,
    { hint: o.hint },
  );
}
