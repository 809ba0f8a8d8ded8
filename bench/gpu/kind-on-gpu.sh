#!/usr/bin/env bash
# How far kind with the GPU gets on the GPU machine, rung by rung, after
# bench/gpu/docker-daemon-on-gpu.sh started Docker there (same lease). Each rung prints what it
# ran and what came back; the first that fails is where a machine like this one stops.
#   1. the kind CLI (v0.33.0, carried as kind.xz in .devgpu2) talks to the daemon;
#   2. a privileged container, which every kind node is: with runc alone, then with
#      test/fixtures/kind-node/runc-wrapper (registered as kind-node-runc by the daemon script),
#      which drops the capabilities this VM's bounding set lacks; and the GPU in it;
#   3. `kind create cluster` with kind-config/cluster-gpu.yaml (the kind runtime's GPU cluster: the
#      worker's NVIDIA volume-mount device request), which first needs the node image.
#   carry [.devgpu2]:  bash bench/gpu/kind-on-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
carry="${CARRY:-.devgpu2}"
G="${GPUD:-/tmp/gpud}"
export PATH="$G/bin:$PATH"
log() { echo "=== kind: $* ($(date +%T))"; }
if [ ! -x "$G/bin/kind" ] && [ -f "$carry/kind.xz" ]; then
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$carry/kind.xz" "$G/bin/kind"
  chmod +x "$G/bin/kind"
fi
command -v kind >/dev/null || { log "no kind binary (carry kind.xz)"; exit 2; }
log "rung 1: the kind CLI and the daemon"
kind version && kind get clusters 2>&1 | head -3
log "rung 2: a privileged container (every kind node is one)"
echo "- runc: $(docker run --rm --privileged gpud-smoke true 2>&1 | tail -1 | cut -c1-400 || true)"
if docker info 2>/dev/null | grep -q kind-node-runc; then
  docker run --rm --privileged --runtime kind-node-runc gpud-smoke sh -c 'echo "- kind-node-runc: runs; $(grep CapBnd /proc/self/status)"' 2>&1 | tail -2
  docker run --rm --privileged --runtime nvidia --gpus all gpud-smoke sh -c 'echo "- nvidia runtime, privileged: $(nvidia-smi -L 2>&1 | head -1)"' 2>&1 | tail -2
fi
log "rung 3: kind create cluster with the GPU cluster config (kind-config/cluster-gpu.yaml)"
cfg=$(mktemp /tmp/kind-gpu-XXXXXX.yaml)
mkdir -p /tmp/kind-gpu-state
sed -e 's#/path/to/triton-dev-state#/tmp/kind-gpu-state#' -e 's#^name: triton-dev#name: tdgpu#' kind-config/cluster-gpu.yaml >"$cfg"
node_image="${KIND_NODE_IMAGE:-kindest/node:v1.34.3}"
echo "node image: $node_image (present here: $(docker image inspect "$node_image" >/dev/null 2>&1 && echo yes || echo no))"
timeout 180 kind create cluster --name tdgpu --config "$cfg" --image "$node_image" --retain=false 2>&1 | tail -8
echo "kind create cluster exit: ${PIPESTATUS[0]}"
kind delete cluster --name tdgpu >/dev/null 2>&1
echo "containers of cluster tdgpu left: $(docker ps -aq --filter label=io.x-k8s.kind.cluster=tdgpu | wc -l)"
rm -f "$cfg"
