#!/usr/bin/env bash
# Builds a Triton image of the NGC layout from this machine's own filesystem and triton-dev's
# managed environment, for a machine where nothing can be pulled (the GPU machine): the system's
# /usr, /etc and libraries, its Python with the packages the models import (PyTorch too), and Triton
# 2.51 from the environment `triton-dev setup` made, laid out as nvcr.io/nvidia/tritonserver has it
# (/opt/tritonserver/bin/tritonserver on PATH, the python backend under /opt/tritonserver/backends,
# the entrypoint script). The NVIDIA driver is not in the image: the container toolkit injects it.
#
#   TRITON_DEV_HOME=... bash bench/gpu/host-image.sh [TAG]     (prints TAG)
#
# Needs: docker (CLI and daemon), python3, GNU tar; a managed environment in TRITON_DEV_HOME.
# HOST_IMAGE_EXCLUDE (space-separated tar patterns) leaves out what no model here imports.
set -euo pipefail
tag="${1:-triton-dev-host/tritonserver:local}"
home="${TRITON_DEV_HOME:?TRITON_DEV_HOME: the managed environment triton-dev setup made}"
marker="$home/environment.json"
[ -f "$marker" ] || { echo "host-image: no managed environment at $home (run triton-dev setup)" >&2; exit 1; }

# What the environment says: its venv and site-packages (Triton, numpy 1.x), the copied python
# backend, the Python it was made from (and its libpython's folder), the site-packages it inherits.
# The stub's embedded Python ignores PYTHONPATH and finds its packages through the venv's python3
# on PATH, as the local runtime runs it: the venv goes into the image at its path, first on PATH.
eval "$(python3 - "$marker" <<'PY'
import json, shlex, sys
e = json.load(open(sys.argv[1]))
print("site=" + shlex.quote(e["sitePackages"]))
print("venv=" + shlex.quote(e["venv"]))
print("backend=" + shlex.quote(e["backendDir"]))
print("pylibdir=" + shlex.quote(e["python"]["libDir"]))
print("pyexe=" + shlex.quote(e["python"]["executable"]))
print("inherited=" + shlex.quote(":".join(e.get("inheritedSitePackages", []))))
PY
)"
triton="$site/pytriton/tritonserver"
for f in "$triton/bin/tritonserver" "$backend/python/triton_python_backend_stub" "$backend/python/libtriton_python.so" "$site/nvidia_pytriton.libs"; do
  [ -e "$f" ] || { echo "host-image: missing $f" >&2; exit 1; }
done
prefix="$(python3 -c 'import os,sys; print(os.path.realpath(sys.argv[1]))' "$(dirname "$(dirname "$pyexe")")")"

ctx="$(mktemp -d /tmp/host-image-XXXXXX)"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/opt/tritonserver/bin" "$ctx/opt/tritonserver/lib" "$ctx/opt/tritonserver/backends" "$ctx/opt/nvidia" \
  "$ctx/tmp" "$ctx/var/tmp" "$ctx/root" "$ctx/run"
# The python backend makes its folders under /tmp: an image's scratch folders, as any image has them.
chmod 1777 "$ctx/tmp" "$ctx/var/tmp"
chmod 700 "$ctx/root"
cp "$triton/bin/tritonserver" "$ctx/opt/tritonserver/bin/"
find "$site/nvidia_pytriton.libs" -maxdepth 1 -type f -exec cp {} "$ctx/opt/tritonserver/lib/" \;
cp -r "$backend/python" "$ctx/opt/tritonserver/backends/python"
rm -rf "$ctx/opt/tritonserver/backends/python/__pycache__"
printf '#!/bin/bash\nset -e\nexec "$@"\n' >"$ctx/opt/nvidia/nvidia_entrypoint.sh"
chmod 755 "$ctx/opt/nvidia/nvidia_entrypoint.sh" "$ctx/opt/tritonserver/bin/tritonserver"

# The system's folders, the Python's prefix when it lives elsewhere, the environment's and the
# inherited site-packages: each once, relative to /, only those that exist.
rel=()
add() {
  local p
  p="$(python3 -c 'import os,sys; print(os.path.realpath(sys.argv[1]))' "$1" 2>/dev/null)" || return 0
  [ -e "$p" ] || return 0
  for r in "${rel[@]}"; do case "$p/" in "/$r/"*) return 0 ;; esac; done
  rel+=("${p#/}")
}
for d in /usr /etc "$prefix" "$pylibdir" "$venv"; do add "$d"; done
IFS=: read -r -a inh <<<"$inherited"
for d in "${inh[@]}"; do [ -n "$d" ] && add "$d"; done
# The merged-/usr links (bin -> usr/bin ...) as links, or the folders where they are folders.
for l in bin sbin lib lib64; do [ -e "/$l" ] && rel+=("$l"); done
excludes=(--exclude=usr/share/doc --exclude=usr/share/man --exclude=usr/share/info --exclude=__pycache__)
for x in ${HOST_IMAGE_EXCLUDE:-}; do excludes+=("--exclude=$x"); done

pypath="$site${inherited:+:$inherited}"
echo "host-image: $tag from / (${rel[*]}) and Triton of $site" >&2
started=$(date +%s)
tar --one-file-system -c "${excludes[@]}" -C / "${rel[@]}" -C "$ctx" opt/tritonserver opt/nvidia tmp var/tmp root run 2>/dev/null |
  docker import \
    -c "ENV PATH=$venv/bin:/opt/tritonserver/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    -c "ENV VIRTUAL_ENV=$venv" \
    -c "ENV LD_LIBRARY_PATH=/opt/tritonserver/lib:$pylibdir" \
    -c "ENV PYTHONPATH=$pypath" \
    -c "ENV PYTHONDONTWRITEBYTECODE=1" \
    -c "WORKDIR /opt/tritonserver" \
    -c 'ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]' \
    -c 'CMD ["tritonserver", "--help"]' \
    - "$tag" >/dev/null
echo "host-image: imported in $(($(date +%s) - started)) s, $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.1f GB", $1/1e9}')" >&2
echo "$tag"
