#!/usr/bin/env bash
# Packs what one run on a GPU host needs (a host without Go or network): the
# admpo_cuda build of admpo and of infer's tests, the shared libraries they
# link (ldd, glibc and the NVIDIA driver's libraries excepted), ONNX Runtime
# 1.29.0 for CUDA 13 from `make setup-gpu`, benchmarks/torch_rollout.py and
# scripts/gpu_check.sh, as one tar compressed with xz -9, split into chunks of
# at most 55 MiB: .gpu/c1/part, .gpu/c2/part, ... (one chunk per folder).
#
# On the GPU host, from the folder holding .gpu/:
#   mkdir -p /tmp/g && cat .gpu/c*/part | xz -d | tar x -C /tmp/g && bash /tmp/g/gpu_check.sh
#
# Needs `make setup`, `make setup-gpu` and the CUDA toolkit headers for the
# admpo_cuda build (`make setup-cuda-toolkit`). Runs with nice; about 5 minutes
# on 2 cores, mostly xz.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'gpu-pack: %s\n' "$*"; }
die() { printf 'gpu-pack: error: %s\n' "$*" >&2; exit 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

CHUNK=$((55 * 1024 * 1024))
out=.gpu
pay=$out/payload
cache="${ADMPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/admpo}"
ortdir="$cache/onnxruntime-gpu-1.29.0"
for f in libonnxruntime.so.1 libonnxruntime_providers_cuda.so libonnxruntime_providers_shared.so; do
  [ -f "$ortdir/$f" ] || die "$ortdir/$f is missing: run \`make setup-gpu\`"
done

rm -rf "$out"
mkdir -p "$pay/lib/fallback" "$pay/ort"
GO=${GO:-go}
ver=$(git describe --always --dirty 2>/dev/null || echo unknown)
say "building admpo ($ver) with -tags admpo_cuda"
# gorgonia.org/cu's cgo prints screens of deprecation warnings: keep them
# out of sight unless the build fails.
if ! nice -n 5 "$GO" build -tags admpo_cuda -ldflags "-s -w -X main.version=$ver" -o "$pay/admpo" ./cmd/admpo 2>"$out/build.log"; then
  cat "$out/build.log" >&2
  die "go build -tags admpo_cuda ./cmd/admpo failed (the CUDA headers: \`make setup-cuda-toolkit\`)"
fi
say "building infer's test binary with -tags admpo_cuda"
nice -n 5 "$GO" test -c -tags admpo_cuda -ldflags "-s -w" -o "$pay/infer.test" ./infer/

# Shared libraries: everything ldd lists but glibc's own and the driver's
# (libcuda, libnvidia-*: the GPU host's driver provides them). libstdc++ and
# libgcc_s go to lib/fallback: Debian bookworm's libstdc++ needs glibc 2.36,
# so gpu_check.sh uses them only where the host has none of its own.
declare -A seen=()
for bin in "$pay/admpo" "$pay/infer.test"; do
  ldd "$bin" | grep -q 'not found' && { ldd "$bin" | grep 'not found'; die "$bin has unresolved libraries"; }
  while read -r name path; do
    [ -n "$path" ] || continue
    case "$name" in
      linux-vdso*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libnsl.so.*|libanl.so.*|libmvec.so.*) continue ;;
      libcuda.so.*|libnvidia-*|libcudadebugger*) continue ;;
    esac
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=1
    dest="$pay/lib"
    case "$name" in libstdc++.so.*|libgcc_s.so.*) dest="$pay/lib/fallback" ;; esac
    cp -L "$path" "$dest/$name"
  done < <(ldd "$bin" | awk '/=>/ && $3 ~ /^\// {print $1, $3}')
done
say "libraries: $(find "$pay/lib" -maxdepth 1 -type f | wc -l) in lib/, $(find "$pay/lib/fallback" -type f -printf "%f ") in lib/fallback"

cp "$ortdir"/libonnxruntime.so.1 "$ortdir"/libonnxruntime_providers_cuda.so "$ortdir"/libonnxruntime_providers_shared.so "$pay/ort/"
cp benchmarks/torch_rollout.py scripts/gpu_check.sh "$pay/"
chmod +x "$pay/gpu_check.sh" "$pay/admpo" "$pay/infer.test"
echo "admpo $ver, packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)" >"$pay/INFO"
(cd "$pay" && find . -type f ! -name MANIFEST -print0 | sort -z | xargs -0 sha256sum) >"$out/MANIFEST"
mv "$out/MANIFEST" "$pay/MANIFEST"
say "payload: $(du -sh "$pay" | cut -f1) in $(find "$pay" -type f | wc -l) files"

say "compressing (xz -9 -T2) and splitting into chunks of at most 55 MiB"
tar -C "$pay" -cf - . | nice -n 5 xz -9 -T2 -c | split -b "$CHUNK" -d -a 2 - "$out/chunk."
i=0
for f in "$out"/chunk.*; do
  i=$((i + 1))
  mkdir -p "$out/c$i"
  mv "$f" "$out/c$i/part"
done
[ "$i" -le 9 ] || die "$i chunks: more than 9 breaks the order of the shell's c*/part glob"
(cd "$out" && cat c*/part | xz -t) || die "the chunks do not decompress"
total=0
for d in "$out"/c*/; do
  s=$(stat -c %s "$d/part")
  total=$((total + s))
  printf 'gpu-pack: %s  %d bytes (%s MiB)  sha256 %s\n' "${d%/}/part" "$s" "$(mib "$s")" "$(sha256sum "$d/part" | cut -c1-16)"
done
printf 'gpu-pack: %d chunks, %d bytes (%s MiB) in all\n' "$i" "$total" "$(mib "$total")"
say "on the GPU host: mkdir -p /tmp/g && cat .gpu/c*/part | xz -d | tar x -C /tmp/g && bash /tmp/g/gpu_check.sh"
