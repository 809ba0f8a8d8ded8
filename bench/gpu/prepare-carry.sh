#!/usr/bin/env bash
# Build what the GPU machine needs (it has no network): the CLI as one file, the tune bench's
# pieces of the sources as one file, this node binary (xz), and the nvidia-pytriton wheel slimmed
# to the target Python. Writes .devcarry/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${1:-3.12}"
mkdir -p .devcarry
grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >> .git/info/exclude
npm run -s bundle
cp bundle/triton-dev.mjs .devcarry/
# What bench/tune-vs-exhaustive.mjs takes from the sources, for tune-on-gpu.sh (there is no dist/ there).
npx esbuild bench/gpu/tune-bench-lib.mjs --bundle --platform=node --format=esm --target=node20 --log-level=warning --outfile=.devcarry/tune-bench-lib.mjs
[ -f .devcarry/node.xz ] || xz -T2 -6 -c "$(command -v node)" > .devcarry/node.xz
if ! ls .devcarry/nvidia_pytriton-*.whl >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --platform manylinux_2_35_x86_64 -d "$tmp" nvidia-pytriton==0.7.0
  python3 bench/gpu/slim-wheel.py "$tmp"/nvidia_pytriton-*.whl .devcarry "$py"
  rm -rf "$tmp"
fi
# numpy 1.x for the stub (see environment.ts); it travels in a call of its own (size limit).
mkdir -p .devnumpy
grep -qx '/.devnumpy/' .git/info/exclude 2>/dev/null || echo '/.devnumpy/' >> .git/info/exclude
ls .devnumpy/numpy-1.*.whl >/dev/null 2>&1 || python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp --platform manylinux_2_17_x86_64 -d .devnumpy "numpy<2"
du -sh .devcarry .devnumpy
