#!/usr/bin/env bash
# `up --runtime docker --gpus all` on the GPU machine, beside the local runtime, in one run:
# the proof that the GPU passes into triton-dev's container, and the side-by-side figures.
#
#   carry [.devgpu]:  bash bench/gpu/docker-on-gpu.sh [stage]
#
# With the device tool, three calls, each right after the last while the machine is kept (its /tmp
# and the daemon survive); a folder's scripts are copied in first (cp .devgpuN/bench/*.sh bench/gpu/):
#   1. carry [.devgpu]:   bash bench/gpu/docker-daemon-on-gpu.sh smoke
#   2. carry [.devgpu2]:  bash bench/gpu/docker-on-gpu.sh stage; bash bench/gpu/kind-on-gpu.sh
#   3. carry [.devgpu3]:  CARRY=.devgpu3 bash bench/gpu/docker-on-gpu.sh
#
# Before it, in the same machine's lease: bench/gpu/docker-daemon-on-gpu.sh start (Docker 20.10
# with the NVIDIA runtime in CDI mode; it is started here when it is not running). .devgpu comes
# from bench/gpu/prepare-docker-gpu.sh (node, the CLI bundle, the slimmed nvidia-pytriton wheel,
# numpy 1.x, the Docker and NVIDIA Container Toolkit binaries). The image is built here from this
# machine's filesystem (bench/gpu/host-image.sh): nothing can be pulled on that machine.
#
# For each runtime in turn (one server at a time, each its own copy of models/ plus `gpu_offset`, a
# small model on the GPU whose constant an edit changes): `up --detach` timed to READY; the
# evidence that the GPU model runs on the GPU (Triton's log lines, the model's statistics,
# nvidia-smi's processes, and for docker the container's runtime and device request and nvidia-smi
# inside it); EDITS saves of gpu_offset's model.py, each timed to the edited value served; `perf`
# on resnet50_fp16 at CONCURRENCY (64, the sample's) with GPU utilisation; `down`, then what is
# left (containers, processes). The table (docker/local ratios) goes to $OUT/docker-vs-local.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
here="$PWD"
carry="${CARRY:-.devgpu}"
keep="${KEEP:-/tmp/tdkeep}"
out="${OUT:-$PWD/gpu-results}"
mkdir -p "$out" "$keep" /tmp/tdnode/bin
t00=$(date +%s)
# At most 8 files come back from the device machine: one log of everything, the table, the GPU
# samples during each perf, Triton's log of the container and the daemon's and runtime's logs.
exec > >(tee -a "$out/run.log") 2>&1
log() { echo "=== $* ($(date +%T), $(($(date +%s) - t00)) s in)"; }
unxz_to() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" "$1"; }

# What the carried folders hold is kept in $keep (and node in /tmp/tdnode) while the machine is:
# the pieces may come in separate calls (`stage` copies and stops), as the 64 MiB limit needs.
for c in .devgpu .devgpu2 .devgpu3 $carry; do
  [ -d "$c" ] || continue
  for f in "$c"/*.whl; do [ -f "$f" ] && cp "$f" "$keep/"; done
  [ -f "$c/triton-dev.mjs.xz" ] && unxz_to "$c/triton-dev.mjs.xz" >"$keep/triton-dev.mjs"
  [ -f "$c/triton-dev.mjs" ] && cp "$c/triton-dev.mjs" "$keep/"
  [ -f "$c/node.xz" ] && [ ! -x /tmp/tdnode/bin/node ] && unxz_to "$c/node.xz" >/tmp/tdnode/bin/node && chmod +x /tmp/tdnode/bin/node
done
if [ "${1:-}" = stage ]; then ls -la "$keep" /tmp/tdnode/bin; exit 0; fi
[ -x /tmp/tdnode/bin/node ] || { echo "no node: carry node.xz (prepare-docker-gpu.sh)" >&2; exit 2; }
export PATH="/tmp/tdnode/bin:${GPUD:-/tmp/gpud}/bin:$PATH"
export TRITON_DEV_HOME="${TRITON_DEV_HOME:-/tmp/tdh}" TRITON_DEV_PYTHON="${TRITON_DEV_PYTHON:-$(command -v python3)}"
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$keep"
cli="${TRITON_DEV_CLI:-$keep/triton-dev.mjs}"
conc="${CONCURRENCY:-64}"
edits="${EDITS:-3}"
td() { node "$cli" "$@"; }

log machine
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
uname -r
nproc; node --version; python3 --version

log "docker daemon"
bash bench/gpu/docker-daemon-on-gpu.sh start || exit 1
log "managed environment (the local runtime's, and the image's Triton)"
if [ ! -f "$TRITON_DEV_HOME/.bench-setup-done" ]; then
  td setup --with-site-packages 2>&1 | tail -5
  [ "${PIPESTATUS[0]}" = 0 ] || exit 1
  touch "$TRITON_DEV_HOME/.bench-setup-done"
fi
log "image from this machine's filesystem"
image="${IMAGE:-triton-dev-host/tritonserver:local}"
docker image inspect "$image" >/dev/null 2>&1 ||
  HOST_IMAGE_EXCLUDE="${HOST_IMAGE_EXCLUDE-*/jaxlib */jax_cuda13_plugin */jax_cuda13_pjrt */jax_plugins */cupy */cupy_backends */tensorflow */tensorstore */pyarrow */cv2 */opencv_python_headless.libs */onnxruntime usr/local/cuda*/nsight* usr/local/cuda*/extras}" \
    bash bench/gpu/host-image.sh "$image" || exit 1

log doctor
td doctor 2>&1 | grep -i -E "docker|nvidia|gpu|cdi" || true

# --- the models: the sample plus gpu_offset -------------------------------------------------------
offset_model() {
  cat <<PY
"""gpu_offset: Y = X + K computed on the GPU its instance was given (an edit changes K)."""
import numpy as np
import torch
import triton_python_backend_utils as pb_utils

K = $1


class TritonPythonModel:
    def initialize(self, args):
        self.device = torch.device("cuda", int(args["model_instance_device_id"]))
        self.k = torch.tensor(K, device=self.device)
        pb_utils.Logger.log_info(f"gpu_offset: K={K} on {self.device} ({torch.cuda.get_device_name(self.device)})")

    def execute(self, requests):
        out = []
        for r in requests:
            x = torch.from_numpy(pb_utils.get_input_tensor_by_name(r, "X").as_numpy()).to(self.device)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + self.k).cpu().numpy().astype(np.float32))]))
        return out
PY
}
make_models() {
  local d=$1
  rm -rf "$d" && mkdir -p "$d" && cp -r "$here/models/." "$d/"
  mkdir -p "$d/gpu_offset/1"
  cat >"$d/gpu_offset/config.pbtxt" <<'CFG'
name: "gpu_offset"
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]
CFG
  offset_model 1.0 >"$d/gpu_offset/1/model.py"
}
# Until gpu_offset serves X + want (bounded); prints the seconds it took from $2 (epoch ms).
until_served() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys, time, urllib.request
port, want, t0 = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]) / 1000
body = json.dumps({"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]}]}).encode()
last = None
while time.time() - t0 < 120:
    try:
        r = json.load(urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/gpu_offset/infer", body), timeout=10))
        last = r["outputs"][0]["data"][0]
        if last == want:
            print(f"{time.time() - t0:.2f}")
            sys.exit(0)
    except Exception as e:
        last = repr(e)[:200]
    time.sleep(0.1)
print(f"never served {want} (last: {last})", file=sys.stderr)
sys.exit(1)
PY
}
now_ms() { date +%s%3N; }
declare -A fig

side() {
  local name=$1; shift
  local dir=/tmp/dgpu-$name http=$2 grpc=$3 metrics=$4
  local rt=$1
  export TRITON_DEV_STATE_DIR="$dir/state"
  mkdir -p "$TRITON_DEV_STATE_DIR"
  make_models "$dir/models"
  local args=(--runtime "$rt" --models "$dir/models" --http-port "$http" --grpc-port "$grpc" --metrics-port "$metrics" --timeout 300)
  [ "$rt" = docker ] && args+=(--gpus all --image "$image")
  log "$name: up --detach ${args[*]}"
  local t0 rc
  t0=$(now_ms)
  td up --detach --json "${args[@]}" >"$dir/up.json" 2>"$dir/up.err"; rc=$?
  fig[$name.up]=$(python3 -c "print(f'{($(now_ms) - $t0) / 1000:.2f}')")
  grep -v '^{' "$dir/up.json" | tail -5
  python3 - "$dir/up.json" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for e in ev:
    if e.get("type") in ("gpus", "progress", "notice", "hint", "container") and ("gpu" in json.dumps(e).lower() or e.get("type") == "container"):
        print("event:", json.dumps(e)[:400])
ready = next((e for e in ev if e.get("type") == "ready"), {})
print("models:", ", ".join(f"{m['name']}={m['state']}" for m in ready.get("models", [])))
PY
  echo "$name: up exit $rc in ${fig[$name.up]} s"
  tail -5 "$dir/up.err"
  [ "$rc" = 0 ] || { td status; td down; return 1; }
  local run_dir logf
  run_dir=$(ls -td "$TRITON_DEV_STATE_DIR"/runs/*/ | head -1)
  logf="$run_dir/tritonserver.log"
  log "$name: the GPU model on the GPU"
  grep -E "(resnet50_fp16|gpu_offset).*(GPU device|CPU device)|gpu_offset: K=" "$logf" | cut -c1-300
  python3 - "$http" <<'PY'
import json, sys, urllib.request
port = int(sys.argv[1])
body = json.dumps({"inputs": [{"name": "input_1", "shape": [2, 3, 224, 224], "datatype": "FP32", "data": [0.5] * (2 * 3 * 224 * 224)}]}).encode()
r = json.load(urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/resnet50_fp16/infer", body), timeout=60))
print("resnet50_fp16 infer:", r["outputs"][0]["name"], r["outputs"][0]["shape"])
s = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/resnet50_fp16/stats", timeout=10))
for m in s["model_stats"]:
    print("stats:", m["name"], "v" + m["version"], "inference_count", m["inference_count"], "execution_count", m["execution_count"],
          "success", m["inference_stats"]["success"]["count"])
PY
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  if [ "$rt" = docker ]; then
    local cname
    cname=$(docker ps --filter label=dev.triton-dev.tool=triton-dev --filter label=dev.triton-dev.role=triton --format '{{.Names}}' | head -1)
    docker inspect -f 'container {{.Name}}: runtime {{.HostConfig.Runtime}}, device requests {{json .HostConfig.DeviceRequests}}, image {{.Config.Image}}' "$cname"
    docker exec "$cname" nvidia-smi -L 2>&1
    docker exec "$cname" sh -c 'ls /dev/nvidia*' 2>&1 | tr '\n' ' '; echo
    grep -a -i -E "cdi|inject|modif" "${GPUD:-/tmp/gpud}/nvidia-container-runtime.log" 2>/dev/null | tail -4 | cut -c1-300
  fi
  log "$name: $edits saves of gpu_offset, each timed to served"
  local i k s list=""
  for i in $(seq 1 "$edits"); do
    k=$((i + 1))
    t0=$(now_ms)
    offset_model "$k.0" >"$dir/models/gpu_offset/1/model.py.tmp" && mv "$dir/models/gpu_offset/1/model.py.tmp" "$dir/models/gpu_offset/1/model.py"
    s=$(until_served "$http" "$k" "$t0") || { echo "$name: edit $i not served"; s=""; }
    echo "$name: edit $i (K=$k) served in ${s:-?} s"
    list="$list ${s:-?}"
  done
  fig[$name.edits]="$list"
  grep -E "gpu_offset: K=" "$logf" | tail -2 | cut -c1-300
  log "$name: perf resnet50_fp16 at concurrency $conc"
  (nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -lms 1000 >"$out/nvidia-smi-$name.csv" 2>&1 &
   echo $! >"$dir/smi.pid")
  timeout -s INT "${PERF_BUDGET:-75}" node "$cli" perf resnet50_fp16 --concurrency-range "$conc" --measurement-interval "${INTERVAL:-2000}" \
    --no-history --json >"$dir/perf.json" 2>"$dir/perf.err"
  kill "$(cat "$dir/smi.pid")" 2>/dev/null
  tail -3 "$dir/perf.err"
  python3 - "$dir/perf.json" "$name" <<'PY' | tee "$dir/perf.txt"
import json, sys
try:
    rep = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[2], "perf: no JSON:", e); sys.exit(0)
def levels(o):
    if isinstance(o, dict):
        if "levels" in o and isinstance(o["levels"], list):
            yield from o["levels"]
        else:
            for v in o.values(): yield from levels(v)
    elif isinstance(o, list):
        for v in o: yield from levels(v)
for l in levels(rep):
    g = (l.get("gpu") or {}).get("gpus") or []
    gs = "; ".join(f"{x.get('name')}: util avg {x['utilizationAvg']*100:.0f}% max {x['utilizationMax']*100:.0f}%, mem {x['memoryUsedMaxBytes']/2**30:.1f} GiB" for x in g)
    print(f"{sys.argv[2]} perf: concurrency {l.get('concurrency', l.get('value'))}: {l['throughput']:.1f} infer/s, p50 {l['latency']['p50Us']/1000:.2f} ms, p99 {l['latency']['p99Us']/1000:.2f} ms; GPU {gs or 'none reported'}")
PY
  fig[$name.thr]=$(grep -o '[0-9.]* infer/s' "$dir/perf.txt" | tail -1 | cut -d' ' -f1)
  fig[$name.p50]=$(grep -o 'p50 [0-9.]* ms' "$dir/perf.txt" | tail -1 | cut -d' ' -f2)
  log "$name: down"
  t0=$(now_ms)
  td down 2>&1 | tail -3
  fig[$name.down]=$(python3 -c "print(f'{($(now_ms) - $t0) / 1000:.2f}')")
  sleep 2
  echo "$name: left after down: tritonserver processes: $(pgrep -a -x tritonserver | tr '\n' ';' || true); stub processes: $(pgrep -c -f triton_python_backend_stub || true); containers of ours: $(docker ps -aq --filter label=dev.triton-dev.tool=triton-dev | wc -l)"
  unset TRITON_DEV_STATE_DIR
}

side local local 8300 8301 8302
side docker docker 8310 8311 8312
cp "$(ls -td /tmp/dgpu-docker/state/runs/*/ 2>/dev/null | head -1)tritonserver.log" "$out/tritonserver-docker.log" 2>/dev/null
cp "${GPUD:-/tmp/gpud}/dockerd.log" "$out/dockerd.log" 2>/dev/null
cp "${GPUD:-/tmp/gpud}/nvidia-container-runtime.log" "$out/nvidia-container-runtime.log" 2>/dev/null

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='?']; print(f'{statistics.median(v):.2f}' if v else '-')" "$@"; }
ratio() { python3 -c "import sys; a,b=sys.argv[1:3]; print(f'{float(b)/float(a):.2f}' if a not in ('','-') and b not in ('','-') and float(a)>0 else '-')" "$1" "$2"; }
{
  echo "local vs docker (--gpus all, the nvidia runtime in CDI mode) on $card, same sample models + gpu_offset, one server at a time; $(date -u +%F)"
  printf '%-48s %10s %10s %14s\n' "" local docker docker/local
  printf '%-48s %10s %10s %14s\n' "up --detach to READY (s)" "${fig[local.up]:-}" "${fig[docker.up]:-}" "$(ratio "${fig[local.up]:-}" "${fig[docker.up]:-}")"
  lm=$(med ${fig[local.edits]:-}); dm=$(med ${fig[docker.edits]:-})
  printf '%-48s %10s %10s %14s\n' "save of gpu_offset to served, median (s)" "$lm" "$dm" "$(ratio "$lm" "$dm")"
  printf '%-48s %10s %10s %14s\n' "  each (s)" "$(echo ${fig[local.edits]:-} | tr ' ' ',')" "$(echo ${fig[docker.edits]:-} | tr ' ' ',')" ""
  printf '%-48s %10s %10s %14s\n' "perf resnet50_fp16 c=$conc throughput (infer/s)" "${fig[local.thr]:-}" "${fig[docker.thr]:-}" "$(ratio "${fig[local.thr]:-}" "${fig[docker.thr]:-}")"
  printf '%-48s %10s %10s %14s\n' "perf resnet50_fp16 c=$conc p50 (ms)" "${fig[local.p50]:-}" "${fig[docker.p50]:-}" "$(ratio "${fig[local.p50]:-}" "${fig[docker.p50]:-}")"
  printf '%-48s %10s %10s %14s\n' "down (s)" "${fig[local.down]:-}" "${fig[docker.down]:-}" "$(ratio "${fig[local.down]:-}" "${fig[docker.down]:-}")"
} | tee "$out/docker-vs-local.txt"
log done
