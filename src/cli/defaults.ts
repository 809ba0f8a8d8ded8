// Values the command definitions show in --help (and use as defaults) before any command runs.
// The runtimes' defaults come from runtimes/kinds.ts, which imports nothing. The others are
// copies: the modules that own them pull in YAML or the HTTP client, which would make every
// `triton-dev --help` load them; test/cli/defaults.test.ts checks that each copy still equals
// its original.

export { DEFAULT_CLUSTER, DEFAULT_IMAGE } from "../runtimes/kinds.js";
/** src/k8s/manifests.ts DEFAULT_NAME */
export const DEFAULT_MANIFEST_NAME = "triton-inference-server";
/** src/k8s/manifests.ts REPOSITORY_KEY_SECRET_KEY */
export const REPOSITORY_KEY_SECRET_KEY = "key";
/** src/triton/http-client.ts REPOSITORY_KEY_HEADER */
export const REPOSITORY_KEY_HEADER = "triton-dev-key";
