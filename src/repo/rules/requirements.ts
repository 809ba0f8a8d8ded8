/**
 * Lint rules, area `requirements`: what a python model's requirements.txt may ask of pip. The
 * checks live in envs/requirements-check.ts, because `up` refuses the same lines before pip runs;
 * lint.ts reports them for each python model that builds its environment from the file.
 */
import { codes, type RuleArea } from "./rule.js";

export const REQUIREMENTS_CODES = codes({
  "requirements-syntax": {
    severity: "error or warning",
    description:
      "a requirements.txt line outside the grammar triton-dev accepts (an abbreviated option, an odd line break)",
  },
  "requirements-encoding": {
    severity: "error or warning",
    description:
      "a requirements.txt that is not UTF-8 (a UTF-16/32 byte order mark, a coding declaration, invalid bytes)",
  },
  "requirements-direct-reference": {
    severity: "error or warning",
    description: "a path, URL or `name @ URL` in place of a package name in requirements.txt",
  },
  "requirements-unreadable": {
    severity: "error or warning",
    description:
      "a requirements.txt (or a file it includes) that is not a regular file, is too large or cannot be read",
  },
  "requirements-index": {
    severity: "error or warning",
    description: "an index, find-links or trusted-host option your own pip configuration does not set",
  },
  "requirements-outside-model": {
    severity: "error or warning",
    description:
      "a -r/-c file in requirements.txt, or requirements.txt itself through a link, outside the model folder",
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

declare module "./codes.js" {
  interface CodeTables {
    requirements: typeof REQUIREMENTS_CODES;
  }
}

export const REQUIREMENTS: RuleArea<typeof REQUIREMENTS_CODES> = {
  area: "requirements",
  codes: REQUIREMENTS_CODES,
  rules: [],
  reportedBy:
    "envs/requirements-check.ts through lint.ts (an error where the runtime installs the file, a warning where it does not)",
};
