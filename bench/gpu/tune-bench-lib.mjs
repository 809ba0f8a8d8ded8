// What bench/tune-vs-exhaustive.mjs takes from the sources, as one module esbuild bundles into
// .devcarry/tune-bench-lib.mjs (prepare-carry.sh): the GPU machine has neither node_modules nor
// dist/. The bench reads it from $TRITON_DEV_BENCH_LIB; without it, from dist/.
export { applyConfigEdits } from "../../src/repo/config-edit.js";
export { allCandidates, candidateKey, editsBetween } from "../../src/tune/space.js";
export { isValid } from "../../src/tune/search.js";
export { loadStarted, unloadedVersion } from "../../src/triton/log-lines.js";
export { stripTritonPrefix } from "../../src/state/log-file.js";
