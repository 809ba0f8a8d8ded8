#!/usr/bin/env bash
# On the GPU machine: TorchScript ResNet-50 served by the local runtime through its adapter
# (PyTorch in the python backend, the instance on the GPU) against torch's own forward on the same
# card (bench/gpu/torchscript-adapter.py), for each way the adapter passes tensors (numpy round trip,
# DLPack inputs, DLPack inputs and outputs), over HTTP and over CUDA shared memory, in one run.
# Needs .devcarry/ (bench/gpu/prepare-carry.sh) and torch with CUDA in the machine's python3:
# `setup --with-site-packages` lets the models see it.
# Results go to $OUT (or ./gpu-results).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/gpu-results}"; mkdir -p "$out"
mkdir -p /tmp/tdnode/bin
[ -x /tmp/tdnode/bin/node ] || { python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.devcarry/node.xz'), open('/tmp/tdnode/bin/node','wb'))"; chmod +x /tmp/tdnode/bin/node; }
export PATH=/tmp/tdnode/bin:$PATH
export TRITON_DEV_HOME=/tmp/tdh TRITON_DEV_PYTHON="$(command -v python3)" PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.devcarry $PWD/.devnumpy /tmp/tdkeep/.devnumpy"
td() { node .devcarry/triton-dev.mjs "$@"; }
log() { echo "=== $* ($(date +%T))"; }
log machine; nvidia-smi --query-gpu=name,memory.total --format=csv
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" || exit 1
[ -f "$TRITON_DEV_HOME/.bench-setup-done" ] || { log setup; td setup --with-site-packages || exit 1; touch "$TRITON_DEV_HOME/.bench-setup-done"; }
repo=$(mktemp -d /tmp/ts-adapter-XXXX)
log make; python3 bench/gpu/torchscript-adapter.py make "$repo" || exit 1
log lint; td lint "$repo" --runtime local | tee "$out/torchscript-lint.txt"
log up; td up --detach --models "$repo" --http-port 8000 --grpc-port 8001 --metrics-port 8002 --timeout 600 || { td status; td down; exit 1; }
td status | tee "$out/torchscript-status.txt"
staged=$(td status --json | python3 -c "import json, sys; print(json.load(sys.stdin)['repository'])")
tslog="$staged/../tritonserver.log"
# Each model's instance and where the python backend lets its inputs be (the staged FORCE_CPU_ONLY_INPUT_TENSORS).
grep -E "resnet50_ts[a-z_]*_0.*(GPU|CPU) device|FORCE_CPU_ONLY_INPUT_TENSORS is off|Forcing CPU only input tensors" "$tslog" | cut -c1-300 | head -12
grep -h -E "TRITON_DEV_TORCH_TENSORS|FORCE_CPU_ONLY_INPUT_TENSORS" "$staged"/resnet50_ts*/config.pbtxt | head -6
# The CUDA shared memory API answers only the run's key, which the run folder holds (mode 0600).
export TRITON_DEV_KEY_FILE="$staged/../key/repository.key"
log measure; timeout "${BUDGET:-300}" python3 bench/gpu/torchscript-adapter.py measure http://127.0.0.1:8000 "$repo" | tee "$out/torchscript-adapter.txt"
grep -i -E "traceback|error" "$tslog" | grep -i resnet50_ts | tail -8 | cut -c1-600
log down; td down
# The default where Triton sees no GPU: a KIND_AUTO instance on the CPU reads its inputs as it would
# on a CPU-only machine, and answers as torch does there.
auto=$(mktemp -d /tmp/ts-auto-XXXX)
log cpu; python3 bench/gpu/torchscript-adapter.py make-auto "$auto" || exit 1
CUDA_VISIBLE_DEVICES= td up --detach --models "$auto" --http-port 8000 --grpc-port 8001 --metrics-port 8002 --timeout 600 | tail -3
staged=$(td status --json | python3 -c "import json, sys; print(json.load(sys.stdin)['repository'])")
grep -E "resnet50_ts_auto_0.*(GPU|CPU) device|FORCE_CPU_ONLY_INPUT_TENSORS is off|Forcing CPU only input tensors" "$staged/../tritonserver.log" | cut -c1-300 | head -4
python3 bench/gpu/torchscript-adapter.py check http://127.0.0.1:8000 "$auto" | tee "$out/torchscript-cpu-check.txt"
td down
log done
