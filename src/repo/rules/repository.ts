import { codes, type RuleArea } from "./rule.js";

/**
 * The repository's folders: which of them are models, whether Triton can serve them by their names,
 * and the model-file rule (repo/model-files.ts): what of a model's folder can be given to Triton.
 */
export const REPOSITORY_CODES = codes({
  "repository-empty": { severity: "error", description: "a model repository with no model folder" },
  "model-name-unsafe": { severity: "error", description: "a model folder name Triton cannot serve safely" },
  "model-link-not-directory": {
    severity: "warning",
    description: "an entry of the repository that links to a file, not a model folder",
  },
  "model-link-dangling": { severity: "warning", description: "an entry of the repository that links to nothing" },
  "model-files-dangling-link": { severity: "error", description: "a link in a model folder that leads nowhere" },
  "model-files-link-loop": { severity: "error", description: "a link in a model folder that leads back to itself" },
  "model-files-link-outside": {
    severity: "error",
    description: "a link in a model folder that leads out of the repository",
  },
  "model-files-special-file": { severity: "error", description: "a device, socket or pipe in a model folder" },
  "model-files-unreadable": { severity: "error", description: "a file or folder of a model that cannot be read" },
  "model-files-too-deep": { severity: "error", description: "a model folder nested deeper than the limit" },
  "model-files-too-many-entries": {
    severity: "error",
    description: "a model folder with more files and folders than the limit",
  },
  "model-files-too-large": { severity: "error", description: "a model folder with more bytes than the limit" },
});

declare module "./codes.js" {
  interface CodeTables {
    repository: typeof REPOSITORY_CODES;
  }
}

export const REPOSITORY: RuleArea<typeof REPOSITORY_CODES> = {
  area: "repository",
  codes: REPOSITORY_CODES,
  rules: [],
  reportedBy: "lint.ts, which walks the repository's folders and each model's files",
};
