// Values the command definitions show in --help (and use as defaults) before any command runs.
// They are copies: the modules that own them pull in YAML, the runtimes or the session, which
// would make every `triton-dev --help` load them. test/cli/defaults.test.ts checks that each
// copy still equals its original.

/** src/runtimes/docker/settings.ts DEFAULT_IMAGE */
export const DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:24.10-py3";
/** src/runtimes/kind/settings.ts DEFAULT_CLUSTER */
export const DEFAULT_CLUSTER = "triton-dev";
/** src/k8s/manifests.ts DEFAULT_NAME */
export const DEFAULT_MANIFEST_NAME = "triton-inference-server";
/** src/k8s/manifests.ts REPOSITORY_KEY_SECRET_KEY */
export const REPOSITORY_KEY_SECRET_KEY = "key";
/** src/session/session.ts REPOSITORY_KEY_HEADER */
export const REPOSITORY_KEY_HEADER = "triton-dev-key";
