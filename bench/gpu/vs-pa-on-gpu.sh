#!/usr/bin/env bash
# bench/vs-perf-analyzer.mjs on the GPU machine (16 cores, quiet), with the carried node, CLI bundle
# and perf_analyzer. Two calls of the device tool, the second right after the first (while the
# machine is warm, /tmp survives), because everything does not fit one call's 64 MiB:
#   1. carry [.devnumpy, .devpa]:  bash bench/gpu/vs-pa-on-gpu.sh stage
#   2. carry [.devcarry]:          bash bench/gpu/vs-pa-on-gpu.sh [BENCH ARGS...]
# .devcarry and .devnumpy come from bench/gpu/prepare-carry.sh; .devpa holds perf_analyzer (xz),
# libcudart.so.12 and libb64.so.0d (see bench/README.md). TASKSET=0-1 pins server and clients to
# two cores, to rebuild the 2-core machine's contention on the same hardware. The streamed rows are
# cases like the others: `--cases text_streamer:4` (a decoupled model: both tools stream it over
# gRPC); genai-perf's rows (text_streamer_genai) need PyPI, which that machine cannot reach, and
# are reported as skipped. `--vs FILE` (a bundle of the build before a change, in $keep) measures
# before and after in the same rounds. To check the script elsewhere: KEEP=DIR holding
# triton-dev.mjs (`npm run bundle`) and a perf_analyzer wrapper, BENCH_HOME=a set-up home,
# SKIP_SETUP=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
keep="${KEEP:-/tmp/tdkeep}"
out="${OUT:-$PWD/gpu-results}"; mkdir -p "$out"
if [ "${1:-}" = stage ]; then
  mkdir -p $keep/lib && cp -r .devnumpy $keep/ && cp .devpa/*.so* $keep/lib/ || exit 1
  python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.devpa/perf_analyzer.xz'), open('$keep/perf_analyzer.bin','wb'))"
  chmod +x $keep/perf_analyzer.bin
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/perf_analyzer.bin "$@"\n' $keep $keep > $keep/perf_analyzer; chmod +x $keep/perf_analyzer
  $keep/perf_analyzer --version 2>&1 | head -3; ls -la $keep $keep/lib; nproc; exit 0
fi
[ -x $keep/perf_analyzer ] || { echo "stage first (call 1)"; exit 2; }
mkdir -p /tmp/tdnode/bin
[ -x /tmp/tdnode/bin/node ] || [ ! -f .devcarry/node.xz ] || { python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.devcarry/node.xz'), open('/tmp/tdnode/bin/node','wb'))"; chmod +x /tmp/tdnode/bin/node; }
export PATH=/tmp/tdnode/bin:$PATH
export TRITON_DEV_HOME="${BENCH_HOME:-/tmp/tdh}" TRITON_DEV_PYTHON="$(command -v python3)" PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.devcarry $keep/.devnumpy"
# Kept in /tmp, so a later call on the warm machine needs no carry at all.
[ -f .devcarry/triton-dev.mjs ] && cp .devcarry/triton-dev.mjs $keep/
export TRITON_DEV_CLI="${TRITON_DEV_CLI:-$keep/triton-dev.mjs}" PERF_ANALYZER=$keep/perf_analyzer
echo "=== machine ($(date +%T))"; nproc; uname -r; node --version; python3 --version; grep -c ^processor /proc/cpuinfo
[ "${SKIP_SETUP:-}" = 1 ] || [ -f "$TRITON_DEV_HOME/.bench-setup-done" ] || { time node "$TRITON_DEV_CLI" setup --with-site-packages && touch "$TRITON_DEV_HOME/.bench-setup-done"; } || exit 1
tag="${TAG:-gpu$(nproc)}"
pin=(); [ -n "${TASKSET:-}" ] && pin=(taskset -c "$TASKSET") && tag="${TAG:-gpu-pinned-$TASKSET}"
echo "=== bench $tag ($(date +%T))"
timeout -s INT "${BUDGET:-540}" "${pin[@]}" node bench/vs-perf-analyzer.mjs --out "$out/vs-perf-analyzer-$tag.json" "$@" 2>&1 | tee "$out/vs-perf-analyzer-$tag.txt"
pgrep -a tritonserver && echo "tritonserver still running" || true
echo "=== done ($(date +%T))"
