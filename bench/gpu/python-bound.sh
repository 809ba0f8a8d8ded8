#!/usr/bin/env bash
# What the python backend itself allows at the GPU sample's shapes: a model with resnet50_fp16's
# input, output, batching and instances whose execute does no work (it views each request's input
# and answers zeros), measured as the sample is (concurrency 64, inputs in system shared memory,
# then over HTTP, then with more instances). Its throughput bounds every python-backend model of
# these shapes on this machine, resnet50_fp16 included: the share of the GPU ceiling that no
# model code can pass. Runs after run-on-gpu.sh's setup on the warm machine (or here, on CPU).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/gpu-results}"; mkdir -p "$out"
if [ -x /tmp/tdnode/bin/node ]; then export PATH=/tmp/tdnode/bin:$PATH; fi
cli="${TRITON_DEV_CLI:-$( [ -f /tmp/tdkeep/triton-dev.mjs ] && echo /tmp/tdkeep/triton-dev.mjs || echo dist/cli/main.js)}"
export TRITON_DEV_HOME="${TRITON_DEV_HOME:-/tmp/tdh}"
td() { node "$cli" "$@"; }
repo=$(mktemp -d /tmp/pb-probe-XXXX)
mkdir -p "$repo/pb_probe/1"
cat > "$repo/pb_probe/config.pbtxt" <<'CFG'
name: "pb_probe"
backend: "python"
max_batch_size: 256
input [ { name: "input_1" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "predictions" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [ { count: 3 kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 8, 16, 32, 64 ]
  max_queue_delay_microseconds: 5000
}
CFG
cat > "$repo/pb_probe/1/model.py" <<'PY'
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """resnet50_fp16's interface with no work: what the python backend costs per request."""

    def initialize(self, args):
        self.zeros = np.zeros((1, 1000), dtype=np.float32)

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "input_1").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("predictions", self.zeros[: x.shape[0]])]))
        return out
PY
conc="${CONCURRENCY:-64}"; interval="${INTERVAL:-2000}"
echo "=== up ($(date +%T))"
td up --detach --models "$repo" --http-port 8100 --grpc-port 8101 --metrics-port 8102 --timeout 300 || { td down; exit 1; }
echo "=== shm, instances 3 ($(date +%T))"
timeout -s INT "${BUDGET_SHM:-90}" node "$cli" perf pb_probe --concurrency-range "$conc" --measurement-interval "$interval" --shared-memory system | tee "$out/python-bound-shm.txt"
echo "=== http, instances 3 and 6 ($(date +%T))"
timeout -s INT "${BUDGET_HTTP:-150}" node "$cli" perf pb_probe --concurrency-range "$conc" --measurement-interval "$interval" --compare "instances=3,6" | tee "$out/python-bound-http.txt"
td down
rm -rf "$repo"
echo "=== done ($(date +%T))"
