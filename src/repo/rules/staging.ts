/**
 * Codes of `up` (and its watcher), area `staging`: a model lint passed that could not be copied
 * into the run's staging repository (reload/stage.ts `stagingDiagnostic`, `staging-<problem>`).
 * Shown in `up`'s output, the run's timeline, `status` and the dashboard; lint never reports them.
 */
import { codes, type RuleArea } from "./rule.js";

export const STAGING_CODES = codes({
  "staging-dangling-link": { severity: "error", description: "a symbolic link in the model folder leads nowhere" },
  "staging-link-loop": { severity: "error", description: "a symbolic link in the model folder leads back to itself" },
  "staging-link-outside": {
    severity: "error",
    description: "a symbolic link in the model folder leads outside it, which the staged copy does not follow",
  },
  "staging-special-file": {
    severity: "error",
    description: "a device, socket or FIFO in the model folder, which is not copied",
  },
  "staging-too-deep": { severity: "error", description: "the model folder nests deeper than staging copies" },
  "staging-too-many-entries": {
    severity: "error",
    description: "the model folder holds more files than staging copies",
  },
  "staging-too-large": { severity: "error", description: "the model folder is larger than staging copies" },
  "staging-unreadable": { severity: "error", description: "a file of the model could not be read while it was copied" },
  "staging-no-space": { severity: "error", description: "no space left (or over quota) for the staged copy" },
  "staging-name-too-long": {
    severity: "error",
    description: "a path of the staged copy is longer than the system allows",
  },
  "staging-read-only": { severity: "error", description: "the staging folder is on a read-only filesystem" },
  "staging-vanished": { severity: "error", description: "a file of the model went away while it was copied" },
  "staging-io-error": { severity: "error", description: "the disk reported an I/O error while the model was copied" },
  "staging-copy-failed": { severity: "error", description: "the model could not be copied into the staging folder" },
  "staging-name-unsafe": {
    severity: "error",
    description: "a model name Triton cannot serve safely, refused before anything is copied",
  },
  "staging-environment": {
    severity: "error",
    description: "the python model's environment could not be built or found, or lacks an import it needs",
  },
  "staging-backend-adapter": {
    severity: "error",
    description: "the adapter that serves the backend through the python backend could not be written",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    staging: typeof STAGING_CODES;
  }
}

export const STAGING: RuleArea<typeof STAGING_CODES> = {
  area: "staging",
  codes: STAGING_CODES,
  rules: [],
  reportedBy: "reload/stage.ts stagingDiagnostic, for a model lint passed that could not be staged",
  commands: ["up", "status"],
};
