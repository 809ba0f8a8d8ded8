/** The edit applied to a config's text, every result parsed again and checked against the plan. */
import { equals } from "@bufbuild/protobuf";
import { REPORT_URL_HINT, describeCause } from "../../errors.js";
import { DiagnosticError } from "../diagnostics.js";
import { ModelConfigSchema } from "../gen/model_config_pb.js";
import { parseModelConfig } from "../parse.js";
import { plan } from "./plan.js";
import { ConfigEditError, type ConfigEdits } from "./types.js";

function guarded<T>(file: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof ConfigEditError) throw err;
    throw new ConfigEditError(`could not edit ${file}: ${describeCause(err)}; it was not changed`, "internal", {
      file,
      hint: REPORT_URL_HINT,
      cause: err,
    });
  }
}

/**
 * The text with the edits applied; `file` names the config in errors (ConfigEditError, a UserError
 * with file:line:col).
 */
export function applyConfigEdits(text: string, edits: ConfigEdits, file = "config.pbtxt"): string {
  return guarded(file, () => {
    const p = plan(text, edits, file);
    if (p.rewrite.empty) return text;
    let out = p.rewrite.apply(text);
    // A file without a final line break keeps none: a cut of its last field leaves the breaks before it.
    if (text !== "" && !text.endsWith("\n")) out = out.replace(/(?:\r?\n)+$/, "");
    const check = parseModelConfig(out, file);
    if (!check.parsed || !equals(ModelConfigSchema, check.parsed.config, p.expected)) {
      const d = check.diagnostics[0];
      throw new ConfigEditError(
        `could not edit ${file}: the edited text would not mean exactly the edit${d ? ` (${d.line}:${d.column}: ${d.message})` : ""}; it was not changed`,
        "internal",
        { file, hint: REPORT_URL_HINT, cause: d ? new DiagnosticError(check.diagnostics) : undefined },
      );
    }
    return out;
  });
}

/** Which fields of `edits` would change `text` (for the diff and the "changed only" report). */
export function describeConfigEdits(
  text: string,
  edits: ConfigEdits,
): Array<{ field: string; before: string | undefined; after: string | undefined }> {
  return guarded("config.pbtxt", () => plan(text, edits, "config.pbtxt").changes);
}
