/**
 * The byte-preserving editor of config.pbtxt: `triton-dev tune --apply` writes the fields it chose
 * into the user's own file, and everything else (comments, order, layout, separators, `<...>`
 * delimiters, line endings) stays byte for byte.
 *
 * Edits are placed on the positions of the real parser (textproto.ts), so strings, comments and
 * the shapes protobuf text format allows (a repeated field as several blocks, as a list, or both)
 * are read as Triton reads them. Every result is parsed again and compared with the edit applied to
 * the parsed message: an edit that would mean anything else is refused, never written.
 *
 * The parts, by what each answers: what may be asked and why an edit is refused (`types.ts`);
 * where text goes as the file writes it (`layout.ts`); what each edited field changes and what the
 * result must mean (`plan.ts`); the text edited and checked (`apply.ts`); the user's file written
 * with its backup (`file.ts`); `perf --compare`'s textual edits of configs that may not parse
 * (`top-level.ts`). Other modules import them from here.
 */
export type { ConfigEditChange, ConfigEditReason, ConfigEdits } from "./config-edit/types.js";
export { ConfigEditError } from "./config-edit/types.js";
export { applyConfigEdits, describeConfigEdits } from "./config-edit/apply.js";
export {
  type AppliedConfigEdits,
  type ApplyToFileOptions,
  applyConfigEditsToFile,
  backupName,
} from "./config-edit/file.js";
export { findTopLevelField, removeField, renameConfig, setField } from "./config-edit/top-level.js";
