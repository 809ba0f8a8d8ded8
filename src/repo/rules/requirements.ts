/**
 * Lint rules, area `requirements`: what a python model's requirements.txt may ask of pip. The
 * checks live in envs/requirements-check.ts, because `up` refuses the same lines before pip runs;
 * lint.ts reports them for each python model that builds its environment from the file.
 */
import { codes, type RuleArea } from "./rule.js";

export const REQUIREMENTS_CODES = codes({
  "requirements-index": {
    severity: "error or warning",
    description: "an index, find-links or trusted-host option your own pip configuration does not set",
  },
  "requirements-outside-model": {
    severity: "error or warning",
    description: "a -r/-c file, path or file: URL in requirements.txt that leaves the model folder",
  },
  "requirements-editable": {
    severity: "error or warning",
    description: "an editable (-e) install in requirements.txt",
  },
  "requirements-install-location": {
    severity: "error or warning",
    description: "an install-location option (--target, --prefix, --root, --user, --src) in requirements.txt",
  },
});

export const REQUIREMENTS: RuleArea<typeof REQUIREMENTS_CODES> = {
  area: "requirements",
  codes: REQUIREMENTS_CODES,
  rules: [],
  reportedBy:
    "envs/requirements-check.ts through lint.ts (an error where the runtime installs the file, a warning where it does not)",
};
