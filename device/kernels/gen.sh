#!/usr/bin/env bash
# Compiles the kernel sources to kernels.ptx, or to the file given as the
# first argument (run by `make ptx`; needs nvcc, from `make setup-gpu
# CUDA_TOOLKIT=1`). The first lines record the sources' sha256, computed as
# kernels.SourceHash does, and the nvcc that made it.
#
# compute_80 (Ampere) PTX: the driver JIT-compiles it for any later GPU
# (H100/H200 are sm_90), an A100 can run it too, and the kernels use nothing
# newer. No -lineinfo: it writes the sources' absolute paths into the PTX.
# No fast-math, so sqrtf and division are IEEE-rounded as on the CPU.
set -euo pipefail
out=$(realpath -m "${1:-$(dirname "$0")/kernels.ptx}")
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
ARCH=compute_80
hash=$(
  for f in $(LC_ALL=C ls *.cu kernel.h | LC_ALL=C sort); do
    printf '%s\n%d\n' "$f" "$(stat -c %s "$f")"
    cat "$f"
  done | sha256sum | cut -d' ' -f1
)
ver=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/\1 \2/p')
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$NVCC" -ptx -arch=$ARCH -o "$tmp" all.cu
{
  echo "// admpo-sources-sha256: $hash"
  echo "// nvcc $ver -ptx -arch=$ARCH all.cu (device/kernels/gen.sh)"
  cat "$tmp"
} > "$out"
echo "$out: $(grep -c '^.visible .entry' "$out") kernels, sources $hash"
