#!/usr/bin/env bash
# CI from a cold machine, on this one: `.ci/run` on a fresh clone of this checkout's HEAD with every
# cache it uses empty (the test fixtures' cache, Go's build and module caches, npm's and pip's
# caches, and a Docker daemon on a fresh data root), while one core is kept busy by another process,
# as on a shared machine. Prints when the tests started and the run's wall time; the run's log is
# $OUT/ci.log. Debian's packages are not removed: on a new machine `.ci/run` installs them first.
# Needs root (dockerd), about 15 GB of disk, and no other Docker daemon running. Usage:
#   bash bench/cold-ci.sh [OUT folder, default /tmp/triton-dev-cold-ci]
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-/tmp/triton-dev-cold-ci}"
if docker info >/dev/null 2>&1; then
  echo "a Docker daemon already answers: stop it first (this run starts one on a fresh data root)" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"/{cache,gocache,gomod,npm,pip,docker}
git clone -q "$src" "$out/clone"
cd "$out/clone"
export TRITON_DEV_TEST_CACHE="$out/cache" GOCACHE="$out/gocache" GOMODCACHE="$out/gomod" \
  npm_config_cache="$out/npm" PIP_CACHE_DIR="$out/pip" CI=true
yes >/dev/null &
busy=$!
dockerd --storage-driver=vfs --data-root "$out/docker" \
  --add-runtime "kind-node-runc=$PWD/test/fixtures/kind-node/runc-wrapper" --default-runtime kind-node-runc \
  >"$out/dockerd.log" 2>&1 &
dockerd_pid=$!
finish() {
  kill "$busy" 2>/dev/null || true
  kill "$dockerd_pid" 2>/dev/null && wait "$dockerd_pid" 2>/dev/null || true
}
trap finish EXIT
for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
start=$(date +%s)
echo "cold CI of $(git log --oneline -1) started $(date -u +%T)"
rc=0
bash .ci/run >"$out/ci.log" 2>&1 || rc=$?
tests=$(sed -E 's/\x1b\[[0-9;]*m//g' "$out/ci.log" | grep -E "^ +(Start at|Duration|Test Files|Tests) " || true)
echo "$tests"
echo "rc=$rc wall=$(($(date +%s) - start)) s (log: $out/ci.log)"
exit "$rc"
