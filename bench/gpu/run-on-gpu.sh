#!/usr/bin/env bash
# On the GPU machine: set up the local runtime from .devcarry/, start Triton on models/, and run
# the article's comparisons with triton-dev's own commands. Results go to $OUT (or ./gpu-results).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/gpu-results}"; mkdir -p "$out"
mkdir -p /tmp/tdnode/bin
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open('.devcarry/node.xz'), open('/tmp/tdnode/bin/node','wb'))"
chmod +x /tmp/tdnode/bin/node
export PATH=/tmp/tdnode/bin:$PATH
# numpy may have come in an earlier call (vs-pa-on-gpu.sh stage keeps it in /tmp/tdkeep).
export TRITON_DEV_HOME=/tmp/tdh TRITON_DEV_PYTHON="$(command -v python3)" PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.devcarry $PWD/.devnumpy /tmp/tdkeep/.devnumpy"
# Kept for a later call of vs-pa-on-gpu.sh on the warm machine, which then needs no carry.
mkdir -p /tmp/tdkeep && cp .devcarry/triton-dev.mjs /tmp/tdkeep/
td() { node .devcarry/triton-dev.mjs "$@"; }
log() { echo "=== $* ($(date +%T))"; }
log machine; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; node --version; python3 --version
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())"
log setup; time td setup --with-site-packages ${FORCE_SETUP:+--force} || exit 1
touch "$TRITON_DEV_HOME/.bench-setup-done"
log doctor; td doctor
log up; time td up --detach --models models --timeout 600; td status | tee "$out/status.txt"
log ensemble-on-gpu
python3 - <<'PY' | tee "$out/ensemble.txt"
import json, urllib.error, urllib.request
body = {"inputs": [{"name": "RAW_TEXT", "shape": [2, 1], "datatype": "BYTES",
                    "data": ["this movie was wonderful, i loved it, a great and beautiful film", "terrible, boring and awful. i hated it, the worst film"]}]}
try:
    r = json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8000/v2/models/sentiment_pipeline/infer", json.dumps(body).encode())))
    print("sentiment_pipeline on GPU instances:", r["outputs"][0]["data"])
except urllib.error.HTTPError as e:
    print("sentiment_pipeline failed:", e.code, e.read().decode()[:2000])
PY
grep -i -E "stub|error|bert_tokenizer|unhealthy|traceback" "$(ls -td $TRITON_DEV_HOME/state/runs/*/ | head -1)tritonserver.log" | grep -v "ModelInstanceInitialize: bert" | tail -25 | cut -c1-600
grep -E "sentiment_classifier_0_.*(GPU|CPU) device" "$(ls -td $TRITON_DEV_HOME/state/runs/*/ | head -1)tritonserver.log" | head -4
interval="${INTERVAL:-2000}"
# Each comparison is bounded; SIGINT makes perf print what it measured so far.
[ -z "${SKIP_FORWARD:-}" ] && log forward-cost && python3 bench/gpu/forward-cost.py | tee "$out/forward-cost.txt"
[ -n "${HOST_PATH:-}" ] && log host-path && timeout 150 python3 bench/gpu/host-path.py --batches 30 --procs "${HOST_PATH_PROCS:-1,2}" --variants "${HOST_PATH_VARIANTS:-concat,pinned,direct,model}" | tee "$out/host-path.txt"
[ -n "${ONLY_CHECKS:-}" ] && { td down; exit 0; }
[ -z "${SKIP_BATCHING:-}" ] && log perf-batching && \
timeout -s INT "${BUDGET_BATCHING:-260}" node .devcarry/triton-dev.mjs perf resnet50_fp16 --concurrency-range "${SWEEP_BATCHING:-1,4,16,32,64}" --measurement-interval "$interval" --compare batching -f "$out/batching.csv" | tee "$out/batching.txt"
log perf-instances
timeout -s INT "${BUDGET_INSTANCES:-170}" node .devcarry/triton-dev.mjs perf resnet50_fp16 --concurrency-range "${SWEEP_INSTANCES:-1,16,64}" --measurement-interval "$interval" --compare "instances=${INSTANCES:-1,3}" -f "$out/instances.csv" | tee "$out/instances.txt"
# The same server without the transport of 600 KB request bodies: inputs in system shared memory.
[ -n "${SHM:-}" ] && log perf-shm && \
timeout -s INT "${BUDGET_SHM:-100}" node .devcarry/triton-dev.mjs perf resnet50_fp16 --concurrency-range "${SWEEP_SHM:-16,64}" --measurement-interval "$interval" --shared-memory system -f "$out/shm.csv" | tee "$out/shm.txt"
log down; td down
tail -40 "$(ls -td $TRITON_DEV_HOME/state/runs/*/ | head -1)tritonserver.log" > "$out/tritonserver-tail.log"
log done
