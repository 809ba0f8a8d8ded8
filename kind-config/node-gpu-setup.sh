#!/usr/bin/env bash
# Prepares a kind node for GPU pods: installs the NVIDIA container toolkit inside the node and
# registers its runtime with the node's containerd (the handler the `nvidia` RuntimeClass names).
# Run it inside the worker node's container:
#
#   docker exec -i triton-dev-worker bash -s < kind-config/node-gpu-setup.sh
#
# Safe to run again: what is already in place is left alone, and containerd is restarted only
# when its configuration changed.
#
# Environment:
#   NVIDIA_CONTAINER_TOOLKIT_VERSION  install this version (e.g. 1.17.8-1) instead of the newest
#   CONTAINERD_CONFIG                 the node's containerd config (default /etc/containerd/config.toml)
set -euo pipefail

say() { printf 'node-gpu-setup: %s\n' "$*"; }
fail() {
  printf 'node-gpu-setup: error: %s\n' "$1" >&2
  [ -n "${2:-}" ] && printf 'node-gpu-setup:   hint: %s\n' "$2" >&2
  exit 1
}

CONTAINERD_CONFIG=${CONTAINERD_CONFIG:-/etc/containerd/config.toml}
KEYRING=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
SOURCES=/etc/apt/sources.list.d/nvidia-container-toolkit.list
REPO=https://nvidia.github.io/libnvidia-container

[ "$(id -u)" = 0 ] || fail "this script must run as root inside the kind node" \
  "Run it with: docker exec -i NODE bash -s < node-gpu-setup.sh"
[ -f "$CONTAINERD_CONFIG" ] || fail "$CONTAINERD_CONFIG does not exist: this does not look like a kind node" \
  "Run it inside the worker node's container (docker ps shows it as <cluster>-worker), not on the host."

# The host's NVIDIA runtime puts the GPUs into the node because of the /dev/null extraMount in
# cluster-gpu.yaml. Without them there is nothing to set up, and the device plugin would find
# nothing either: say so now rather than let a pod wait for a GPU forever.
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  fail "no NVIDIA GPU device in this node (/dev/nvidia0 and the like are missing)" \
    "Create the cluster from cluster-gpu.yaml, and on the host make the NVIDIA runtime Docker's default with accept-nvidia-visible-devices-as-volume-mounts=true (see kind-config/README.md); then recreate the cluster."
fi
say "GPU devices present: $(ls /dev/nvidia[0-9]* | tr '\n' ' ')"

if command -v nvidia-ctk >/dev/null 2>&1; then
  say "NVIDIA container toolkit already installed ($(nvidia-ctk --version 2>/dev/null | head -n1))"
else
  say "installing the NVIDIA container toolkit from NVIDIA's apt repository"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || fail "apt-get update failed" "The node needs to reach its Debian mirrors; check the host's network and proxy settings."
  apt-get install -y -qq --no-install-recommends ca-certificates curl gpg >/dev/null \
    || fail "could not install curl and gpg in the node" "See apt-get's message above."
  curl -fsSL "$REPO/gpgkey" | gpg --batch --yes --dearmor -o "$KEYRING" \
    || fail "could not download NVIDIA's signing key from $REPO/gpgkey" "The node needs to reach nvidia.github.io over HTTPS."
  curl -fsSL "$REPO/stable/deb/nvidia-container-toolkit.list" \
    | sed "s#deb https://#deb [signed-by=$KEYRING] https://#g" > "$SOURCES" \
    || fail "could not download NVIDIA's apt source list" "The node needs to reach nvidia.github.io over HTTPS."
  apt-get update -qq || fail "apt-get update failed after adding NVIDIA's repository" "See apt-get's message above."
  pkg=nvidia-container-toolkit
  if [ -n "${NVIDIA_CONTAINER_TOOLKIT_VERSION:-}" ]; then
    pkg="nvidia-container-toolkit=$NVIDIA_CONTAINER_TOOLKIT_VERSION nvidia-container-toolkit-base=$NVIDIA_CONTAINER_TOOLKIT_VERSION libnvidia-container-tools=$NVIDIA_CONTAINER_TOOLKIT_VERSION libnvidia-container1=$NVIDIA_CONTAINER_TOOLKIT_VERSION"
  fi
  # shellcheck disable=SC2086 # one word per package
  apt-get install -y -qq --no-install-recommends $pkg >/dev/null \
    || fail "could not install $pkg" "See apt-get's message above; NVIDIA_CONTAINER_TOOLKIT_VERSION must name a version the repository has."
  say "installed $(nvidia-ctk --version 2>/dev/null | head -n1)"
fi

before=$(sha256sum "$CONTAINERD_CONFIG")
# --config-source=file: start from the node's own config file, so what kind wrote there stays.
nvidia-ctk runtime configure --runtime=containerd --config-source=file --config="$CONTAINERD_CONFIG" >/dev/null \
  || fail "nvidia-ctk could not add the nvidia runtime to $CONTAINERD_CONFIG" "See nvidia-ctk's message above."
after=$(sha256sum "$CONTAINERD_CONFIG")

if [ "$before" = "$after" ]; then
  say "containerd already has the nvidia runtime; nothing to restart"
else
  say "added the nvidia runtime to $CONTAINERD_CONFIG; restarting containerd"
  systemctl restart containerd || fail "containerd did not restart" "Look at: journalctl -u containerd (inside the node)."
  for _ in $(seq 1 30); do
    if ctr --address /run/containerd/containerd.sock version >/dev/null 2>&1; then break; fi
    sleep 1
  done
  ctr --address /run/containerd/containerd.sock version >/dev/null 2>&1 \
    || fail "containerd is not answering 30 s after its restart" "Look at: journalctl -u containerd (inside the node)."
fi
say "done: pods with runtimeClassName: nvidia can use this node's GPUs"
