/**
 * Codes of `up` outside lint, area `serving`: what `up` finds while it builds environments and
 * serves the models lint passed (envs/builder.ts, session/session.ts). Shown in `up`'s output,
 * the run's timeline, `status` and the dashboard; lint never reports them.
 */
import { codes, type RuleArea } from "./rule.js";

export const SERVING_CODES = codes({
  "requirements-conflict": {
    severity: "error",
    description: "a requirements.txt asks for what conflicts with the python backend's stub: refused before pip runs",
  },
  "requirements-install-failed": {
    severity: "error",
    description: "pip could not install a python model's requirements.txt",
  },
  "requirements-not-installed": {
    severity: "warning",
    description: "a runtime that runs the image's own Python serves the model without its requirements.txt",
  },
  "ensemble-step-not-served": {
    severity: "error",
    description: "an ensemble held out because a step it runs was refused or skipped",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    serving: typeof SERVING_CODES;
  }
}

export const SERVING: RuleArea<typeof SERVING_CODES> = {
  area: "serving",
  codes: SERVING_CODES,
  rules: [],
  reportedBy: "envs/builder.ts (environments) and session/session.ts (what `up` leaves out), after lint",
  commands: ["up", "status"],
};
