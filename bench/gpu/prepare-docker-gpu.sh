#!/usr/bin/env bash
# Builds what bench/gpu/docker-daemon-on-gpu.sh and docker-on-gpu.sh need on a GPU machine that has
# no container runtime and no network, in git-ignored folders of the checkout, each small enough to
# travel in one call of the device tool (64 MiB):
#   .devgpu/      Debian 12's dockerd 20.10, containerd 1.6 (with its runc shim), runc 1.1 and
#                 docker-proxy (docker-bins.tar.xz, with libdevmapper and libseccomp for a system
#                 that lacks them), the docker CLI (docker-cli.xz), and the NVIDIA Container
#                 Toolkit v1.20.2 built from its Go module: nvidia-ctk, nvidia-container-runtime,
#                 nvidia-container-runtime-hook, nvidia-cdi-hook (ctk-bins.tar.xz; cgo, for NVML).
#   .devgpu2/     the CLI bundle (xz), the nvidia-pytriton wheel slimmed to Python 3.12, numpy 1.x
#                 (bench/gpu/prepare-carry.sh's pieces) and kind v0.33.0 (xz, for kind-on-gpu.sh).
#   .devgpu3/     node (xz).
# Each folder also gets a copy of the bench/gpu scripts (bench/), for a checkout that lacks them.
# Needs: apt-get (Debian 12's archive), go and gcc, the Go module proxy, npm, pip, xz.
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${1:-3.12}"
work="${WORK:-$(mktemp -d /tmp/prepare-docker-gpu-XXXXXX)}"
mkdir -p .devgpu .devgpu2 .devgpu3 "$work/debs" "$work/root" "$work/stage/bin" "$work/stage/lib" "$work/ctk/bin"
for d in /.devgpu/ /.devgpu2/ /.devgpu3/; do grep -qx "$d" .git/info/exclude 2>/dev/null || echo "$d" >>.git/info/exclude; done

if [ ! -f .devgpu/docker-bins.tar.xz ]; then
  (cd "$work/debs" && apt-get download docker.io containerd runc)
  for f in "$work"/debs/*.deb; do dpkg -x "$f" "$work/root"; done
  cp "$work"/root/usr/sbin/{dockerd,docker-proxy,runc} "$work"/root/usr/bin/{containerd,containerd-shim-runc-v2} "$work/stage/bin/"
  for l in libdevmapper.so.1.02.1 libseccomp.so.2; do cp -L "/usr/lib/x86_64-linux-gnu/$l" "$work/stage/lib/"; done
  tar -C "$work/stage" -cf - bin lib | xz -9 -T0 >.devgpu/docker-bins.tar.xz
  xz -9 -T0 -c "$work/root/usr/bin/docker" >.devgpu/docker-cli.xz
fi
if [ ! -f .devgpu/ctk-bins.tar.xz ]; then
  for c in nvidia-ctk nvidia-container-runtime nvidia-container-runtime-hook nvidia-cdi-hook; do
    GOBIN="$work/ctk/bin" CGO_ENABLED=1 go install -ldflags='-s -w' "github.com/NVIDIA/nvidia-container-toolkit/cmd/$c@v1.20.2"
  done
  tar -C "$work/ctk" -cf - bin | xz -9 -T0 >.devgpu/ctk-bins.tar.xz
fi
npm run -s bundle
xz -9 -T0 -c bundle/triton-dev.mjs >.devgpu2/triton-dev.mjs.xz
[ -f .devgpu3/node.xz ] || xz -9 -T0 -c "$(command -v node)" >.devgpu3/node.xz
if [ ! -f .devgpu2/kind.xz ]; then
  GOBIN="$work/kind" CGO_ENABLED=0 go install -ldflags='-s -w' sigs.k8s.io/kind@v0.33.0
  xz -9 -T0 -c "$work/kind/kind" >.devgpu2/kind.xz
fi
if ! ls .devgpu2/nvidia_pytriton-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --platform manylinux_2_35_x86_64 -d "$work/whl" nvidia-pytriton==0.7.0
  python3 bench/gpu/slim-wheel.py "$work"/whl/nvidia_pytriton-*.whl .devgpu2 "$py"
fi
ls .devgpu2/numpy-1.*.whl >/dev/null 2>&1 || python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" \
  --implementation cp --platform manylinux_2_17_x86_64 -d .devgpu2 "numpy<2"
for d in .devgpu .devgpu2 .devgpu3; do mkdir -p "$d/bench" && cp bench/gpu/{docker-daemon-on-gpu.sh,docker-on-gpu.sh,host-image.sh,kind-on-gpu.sh} "$d/bench/"; done
du -sh .devgpu .devgpu2 .devgpu3
