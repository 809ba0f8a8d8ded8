#!/usr/bin/env bash
# Brings a Docker daemon with the GPU passed through to a GPU machine that has no container
# runtime and no network (the device machine: Ubuntu 24.04, driver under /usr/local/nvidia, no
# docker, containerd, runc or iptables), the way NVIDIA supports it today:
#   - Debian 12's docker.io 20.10, containerd 1.6 and runc 1.1 binaries (carried, xz);
#   - the NVIDIA Container Toolkit v1.20.2 built from its Go module: `nvidia-ctk cdi generate`
#     writes a CDI spec for the driver found under DRIVER_ROOT, `nvidia-container-runtime` in CDI
#     mode is registered with the daemon as the `nvidia` runtime, and `nvidia-container-runtime-hook`
#     on dockerd's PATH makes Docker 20.10 accept `--gpus` (DeviceRequests); in CDI mode the
#     runtime removes that hook again and injects the spec's devices, libraries and hooks.
#
#   carry [.devgpu]:  bash bench/gpu/docker-daemon-on-gpu.sh [start|smoke|stop]
#
# .devgpu comes from bench/gpu/prepare-docker-gpu.sh. Everything is unpacked under GPUD
# (default /tmp/gpud) and kept while the machine is: a later call needs no carry (start is
# idempotent). The daemon runs in its own session, so it outlives the call. Its data root is a
# tmpfs (the machine's root may be overlayfs, which overlay2 cannot stack on).
# `smoke` runs nvidia-smi in a container of an image made from this machine's /usr.
set -uo pipefail
cd "$(dirname "$0")/../.."
carry="${CARRY:-.devgpu}"
G="${GPUD:-/tmp/gpud}"
DRIVER_ROOT="${DRIVER_ROOT:-/usr/local/nvidia}"
out="${OUT:-$PWD/gpu-results}"
mkdir -p "$out" "$G"
log() { echo "=== $* ($(date +%T))"; }
unxz_to() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" "$1"; }
export PATH="$G/bin:$PATH"
sock=/var/run/docker.sock

api_ping() { python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(2)
try:
    s.connect(sys.argv[1]); s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n"); sys.exit(0 if b" 200 " in s.recv(200) else 1)
except OSError:
    sys.exit(1)
PY
}

start() {
  log "unpack"
  for a in docker-bins ctk-bins; do
    if [ -f "$carry/$a.tar.xz" ] && [ ! -f "$G/.$a" ]; then unxz_to "$carry/$a.tar.xz" | tar -C "$G" -x && touch "$G/.$a"; fi
  done
  if [ -f "$carry/docker-cli.xz" ] && [ ! -x "$G/bin/docker" ]; then unxz_to "$carry/docker-cli.xz" >"$G/bin/docker" && chmod +x "$G/bin/docker"; fi
  # kind nodes are privileged containers: the kind fixture's runc wrapper drops the capabilities
  # this machine's bounding set lacks (kind-on-gpu.sh uses it as the runtime kind-node-runc).
  [ -f test/fixtures/kind-node/runc-wrapper ] && install -m 755 test/fixtures/kind-node/runc-wrapper "$G/bin/kind-node-runc-wrapper"
  [ -x "$G/bin/dockerd" ] && [ -x "$G/bin/nvidia-container-runtime" ] || { echo "no binaries: carry .devgpu (prepare-docker-gpu.sh)" >&2; return 2; }
  # Debian's dockerd links libdevmapper, runc libseccomp: used only where this system lacks them.
  mkdir -p "$G/libx"
  for l in "$G"/lib/*; do ldconfig -p | grep -qE "^[[:space:]]+$(basename "$l") " || cp "$l" "$G/libx/"; done
  ls "$G/libx" | sed 's/^/  carried library used: /'
  export LD_LIBRARY_PATH="$G/libx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "versions"
  dockerd --version; containerd --version; runc --version | head -1; nvidia-ctk --version | head -1
  if api_ping; then log "dockerd already answers"; return 0; fi

  log "NVIDIA Container Toolkit: CDI spec for the driver under $DRIVER_ROOT"
  mkdir -p /var/run/cdi /etc/nvidia-container-runtime
  LD_LIBRARY_PATH="$DRIVER_ROOT/lib64:$LD_LIBRARY_PATH" nvidia-ctk cdi generate --driver-root "$DRIVER_ROOT" --dev-root / \
    --nvidia-cdi-hook-path "$G/bin/nvidia-cdi-hook" --output /var/run/cdi/nvidia.yaml 2>&1 | tail -5
  nvidia-ctk cdi list 2>&1 | tail -5
  cat >/etc/nvidia-container-runtime/config.toml <<EOF
[nvidia-container-runtime]
debug = "$G/nvidia-container-runtime.log"
log-level = "info"
mode = "cdi"
runtimes = ["$G/bin/runc"]

[nvidia-container-runtime.modes.cdi]
default-kind = "nvidia.com/gpu"
spec-dirs = ["/etc/cdi", "/var/run/cdi"]

[nvidia-container-runtime-hook]
path = "$G/bin/nvidia-container-runtime-hook"

[nvidia-ctk]
path = "$G/bin/nvidia-ctk"
EOF

  log "dockerd"
  mkdir -p /var/lib/docker /etc/docker
  mountpoint -q /var/lib/docker || mount -t tmpfs -o size="${DOCKER_TMPFS:-100g}" tmpfs /var/lib/docker
  # No iptables here: published ports go through docker-proxy on the bridge.
  KIND_NODE_REAL_RUNC="$G/bin/runc" setsid dockerd --iptables=false --ip-masq=false --storage-driver overlay2 \
    --add-runtime "nvidia=$G/bin/nvidia-container-runtime" --add-runtime "kind-node-runc=$G/bin/kind-node-runc-wrapper" \
    --userland-proxy-path "$G/bin/docker-proxy" >"$G/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do api_ping && break; sleep 0.5; done
  if ! api_ping; then
    echo "dockerd did not answer; its log:" >&2
    tail -40 "$G/dockerd.log" >&2
    return 1
  fi
  docker info 2>/dev/null | grep -E "Server Version|Storage Driver|Cgroup|Runtimes|Default Runtime|Kernel Version|Operating System" || true
}

smoke() {
  log "smoke: an image of this machine's /usr, nvidia-smi in a container (--gpus all, --runtime nvidia)"
  if ! docker image inspect gpud-smoke >/dev/null 2>&1; then
    tar -C / --one-file-system -c bin sbin lib lib64 usr/bin usr/sbin usr/lib/x86_64-linux-gnu etc 2>/dev/null |
      docker import - gpud-smoke >/dev/null
  fi
  docker run --rm --runtime nvidia --gpus all gpud-smoke nvidia-smi -L
  docker run --rm --runtime nvidia --gpus all gpud-smoke sh -c 'ls /dev/nvidia*; ldconfig -p | grep -E "libcuda.so|libnvidia-ml.so" | head -3'
  log "smoke: the same through CDI-mode env alone (--runtime nvidia -e NVIDIA_VISIBLE_DEVICES=all, no --gpus)"
  docker run --rm --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=all gpud-smoke nvidia-smi -L
  log "what an image of this machine would hold"
  python3 -c 'import sys, sysconfig; print(sys.version.split()[0], sys.executable, sysconfig.get_paths()["purelib"])'
  python3 -c 'import torch, numpy; print("torch", torch.__version__, torch.__file__, "numpy", numpy.__version__)' 2>&1 | tail -1
  env | grep -E "^(PYTHON|LD_LIBRARY|PATH)" | cut -c1-300
  timeout 60 du -sh --one-file-system /usr /opt /etc /usr/local/lib/python3* /usr/local/cuda* 2>/dev/null | head -12
  mount | grep -E " / | /tmp | /usr/local/nvidia" | head -3
}

stop() {
  local pid
  pid=$(cat /var/run/docker.pid 2>/dev/null) || return 0
  docker ps -aq | xargs -r docker rm -f >/dev/null 2>&1
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  umount /var/lib/docker 2>/dev/null || true
}

case "${1:-start}" in
  start) start ;;
  smoke) start && smoke ;;
  stop) stop ;;
  *) echo "usage: $0 [start|smoke|stop]" >&2; exit 2 ;;
esac
