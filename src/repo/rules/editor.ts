/**
 * Codes of the language server outside lint, area `editor`: what the running server said of the
 * model open in the editor (lsp/verdict.ts) and a config whose model folder is gone
 * (lsp/workspace.ts). `triton-dev lsp` alone reports them.
 */
import { codes, type RuleArea } from "./rule.js";

export const EDITOR_CODES = codes({
  "triton-load-failed": {
    severity: "error",
    description: "the running Triton could not load the model (its reason, at the file and line it names)",
  },
  "triton-refused": {
    severity: "warning",
    description: "the model's last save was refused by `up`, so the server keeps serving the last good version",
  },
  "triton-skipped": {
    severity: "warning",
    description: "the running server does not serve the model (skipped by `up`, with the reason)",
  },
  "model-folder-missing": {
    severity: "error",
    description: "the config open in the editor belongs to a model folder that no longer exists",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    editor: typeof EDITOR_CODES;
  }
}

export const EDITOR: RuleArea<typeof EDITOR_CODES> = {
  area: "editor",
  codes: EDITOR_CODES,
  rules: [],
  reportedBy: "lsp/verdict.ts (the running server's verdict) and lsp/workspace.ts",
  commands: ["lsp"],
};
