#!/usr/bin/env bash
# bench/tune-vs-exhaustive.mjs on the GPU machine (16 cores, one H200), in one device call of
# about 9 minutes: image_classifier on the CPU cores, then resnet50_fp16 on the GPU, each
# `triton-dev tune` against an exhaustive sweep (`perf --compare config=FILE` per candidate) of the
# bench's small space for that model, under the same measurement rule. Text and JSON go to $OUT.
#
#   carry [.devcarry, .devnumpy]:  bash bench/gpu/tune-on-gpu.sh [all|image_classifier|resnet50_fp16] [BENCH ARGS...]
#
# .devcarry and .devnumpy come from bench/gpu/prepare-carry.sh (.devcarry holds node, the CLI
# bundle, the tune bench's bundle and the nvidia-pytriton wheel). Should the two not fit one call's
# 64 MiB, stage numpy first and run right after, while the machine is warm (/tmp survives):
#   carry [.devnumpy]: bash bench/gpu/tune-on-gpu.sh stage
#   carry [.devcarry]: bash bench/gpu/tune-on-gpu.sh
# A later call on the warm machine needs no carry at all (node, bundles and numpy are kept in
# /tmp/tdkeep, the managed environment in /tmp/tdh), e.g. to run resnet50_fp16 alone with all of
# the call's time.
#
# Time: TOTAL (default 540 s) bounds the call; IC_BUDGET (default 200 s) bounds image_classifier and
# resnet50_fp16 gets what is left. At its budget a bench gets SIGINT: it ends the candidate under
# way, stops its server and writes what it measured, marked "partial". Also: WINDOW (ms, default
# 1000), TRIALS (windows at most, default 5), CONFIRM (rounds re-measuring tune's winner beside the
# exhaustive best, default 1), IC_CONCURRENCY (16), RESNET_CONCURRENCY (64),
# EXHAUSTIVE=perf|tune (how the exhaustive side is swept, default perf), SKIP_SETUP=1 (an
# environment set up already in $TRITON_DEV_HOME).
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
deadline=$((t0 + ${TOTAL:-540}))
keep="${KEEP:-/tmp/tdkeep}"
out="${OUT:-$PWD/gpu-results}"; mkdir -p "$out"
log() { echo "=== $* ($(date +%T), $(($(date +%s) - t0)) s in)"; }
if [ "${1:-}" = stage ]; then
  mkdir -p $keep && cp -r .devnumpy $keep/ && ls -la $keep/.devnumpy; exit 0
fi
part="${1:-all}"
case "$part" in all|image_classifier|resnet50_fp16) ;; *) echo "usage: $0 [stage|all|image_classifier|resnet50_fp16] [BENCH ARGS...]" >&2; exit 2 ;; esac
# Anything after the part goes to each bench (e.g. --space FILE, --confirm-rounds 3).
shift $(( $# > 0 ? 1 : 0 ))
extra=("$@")

# node, the CLI bundle and the bench's bundle: carried now, or kept by an earlier call.
mkdir -p $keep /tmp/tdnode/bin
if [ -f .devcarry/node.xz ] && [ ! -x /tmp/tdnode/bin/node ]; then
  python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.devcarry/node.xz'), open('/tmp/tdnode/bin/node','wb'))"
  chmod +x /tmp/tdnode/bin/node
fi
export PATH=/tmp/tdnode/bin:$PATH
for f in triton-dev.mjs tune-bench-lib.mjs; do [ -f .devcarry/$f ] && cp .devcarry/$f $keep/; done
[ -d .devnumpy ] && [ ! -d $keep/.devnumpy ] && cp -r .devnumpy $keep/
# Without a carried bundle (a check on a machine with a build), the bench uses dist/.
[ -f $keep/triton-dev.mjs ] && export TRITON_DEV_CLI="${TRITON_DEV_CLI:-$keep/triton-dev.mjs}"
[ -f $keep/tune-bench-lib.mjs ] && export TRITON_DEV_BENCH_LIB="${TRITON_DEV_BENCH_LIB:-$keep/tune-bench-lib.mjs}"
cli="${TRITON_DEV_CLI:-dist/cli/main.js}"
[ -f "$cli" ] || { echo "no CLI: carry .devcarry (bench/gpu/prepare-carry.sh) or run npm run build" >&2; exit 2; }

export TRITON_DEV_HOME="${TRITON_DEV_HOME:-/tmp/tdh}"
export TRITON_DEV_PYTHON="${TRITON_DEV_PYTHON:-$(command -v python3)}"
log machine
nproc; uptime; node --version; python3 --version
gpu=0; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null && gpu=1
if [ -z "${SKIP_SETUP:-}" ] && [ ! -f "$TRITON_DEV_HOME/.bench-setup-done" ]; then
  log setup
  PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.devcarry $keep/.devnumpy" node "$cli" setup --with-site-packages || exit 1
  touch "$TRITON_DEV_HOME/.bench-setup-done"
fi

# A bench killed past its grace leaves its server running: stop the ones our benches started (the
# state folder each names as it starts), and only those.
cleanup() {
  for d in $(cat "$out"/tune-vs-exhaustive-*.txt 2>/dev/null | grep -o 'state /tmp/triton-dev-bench-[A-Za-z0-9]*' | cut -d' ' -f2); do
    [ -f "$d/run.json" ] && TRITON_DEV_STATE_DIR="$d" node "$cli" down >/dev/null 2>&1 && echo "stopped the server left in $d"
  done
}
trap cleanup EXIT

grace=45
bench() {
  local model=$1 budget=$2; shift 2
  if [ "$budget" -lt 90 ]; then log "$model skipped: ${budget} s left of the call"; return; fi
  log "$model: tune against an exhaustive sweep, ${budget} s at most"
  timeout -s INT -k "$grace" "$budget" node bench/tune-vs-exhaustive.mjs --model "$model" \
    --window "${WINDOW:-1000}" --trials "${TRIALS:-5}" --exhaustive "${EXHAUSTIVE:-perf}" --confirm-rounds "${CONFIRM:-1}" \
    --out "$out/tune-vs-exhaustive-$model.json" "$@" "${extra[@]}" 2>&1 | tee "$out/tune-vs-exhaustive-$model.txt"
  log "$model: done (exit ${PIPESTATUS[0]})"
  cleanup
}
left() { echo $((deadline - $(date +%s) - grace)); }

if [ "$part" != resnet50_fp16 ]; then
  ic=${IC_BUDGET:-200}
  [ "$part" = image_classifier ] && ic=$(left)
  [ "$ic" -gt "$(left)" ] && ic=$(left)
  bench image_classifier "$ic" --concurrency "${IC_CONCURRENCY:-16}"
fi
if [ "$part" != image_classifier ]; then
  if [ "$gpu" = 1 ]; then bench resnet50_fp16 "$(left)" --concurrency "${RESNET_CONCURRENCY:-64}"
  else log "resnet50_fp16 skipped: no GPU here (nvidia-smi)"; fi
fi
log done
