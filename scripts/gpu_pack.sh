#!/usr/bin/env bash
# Packs what one run on a GPU host needs (a host without Go or network) in two
# parts, so that a rebuilt admpo travels without the large libraries again:
#   .gpu/base/cN/part  the static part: ONNX Runtime 1.29.0 for CUDA 13 (from
#                      `make setup-gpu`) and the shared libraries the binaries
#                      link (ldd, glibc and the NVIDIA driver's libraries
#                      excepted), one tar compressed with xz -9 and split into
#                      chunks of at most GPU_CHUNK_MIB (default 50) MiB, one
#                      chunk per folder. Rebuilt only when its contents change
#                      (their sha256 list is kept in .gpu/base/CONTENTS).
#   .gpu/admpo/part    the admpo part (a few MiB): the admpo_cuda builds of
#                      admpo, infer's tests and, where the package exists,
#                      device/cuda's tests; scripts/gpu_*.sh (but this one) and gpu_*.py;
#                      benchmarks/torch_*.py; the folders named in
#                      GPU_PACK_EXTRA (relative to the repository).
# Both unpack into the same folder; gpu_check.sh runs from there.
#
# The device tool carries at most 64 MiB a call (working tree included), so
# the chunks go over on back-to-back calls (a warm machine keeps /tmp): call i
# carries .gpu/base/ci and runs `mkdir -p /tmp/gx && cp .gpu/base/ci/part
# /tmp/gx/base.i`; the last call carries the last chunk and .gpu/admpo too and
# runs the line this script prints at its end. A later call in the same lease
# with a rebuilt admpo part carries .gpu/admpo alone. The tracked replay files
# (datasets/behaviour/*.bin.gz, ~38 MiB) must be set aside for those calls:
# `scripts/gpu_pack.sh --set-aside` before, `scripts/gpu_pack.sh --restore`
# after (git index and .git/info/exclude only; the files stay in place).
#
# Needs `make setup`, `make setup-gpu` and the CUDA toolkit headers for the
# admpo_cuda build (`make setup-cuda-toolkit`). Runs with nice; the admpo
# part takes about a minute on 2 cores, the static part (once) about 5, mostly xz.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'gpu-pack: %s\n' "$*"; }
die() { printf 'gpu-pack: error: %s\n' "$*" >&2; exit 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# --set-aside / --restore: keep the replay files out of what a device call
# sends (untracked and ignored for the while), and put them back.
replays=(datasets/behaviour/*.bin.gz)
exclude=$(git rev-parse --git-path info/exclude)
mark='# gpu_pack.sh --set-aside (undo: scripts/gpu_pack.sh --restore)'
case "${1:-}" in
  --set-aside)
    mkdir -p "$(dirname "$exclude")"
    grep -qxF "$mark" "$exclude" 2>/dev/null || printf '%s\n/datasets/behaviour/*.bin.gz\n' "$mark" >>"$exclude"
    git rm -q --cached -- "${replays[@]}"
    say "set aside (untracked, ignored): ${replays[*]}; undo with scripts/gpu_pack.sh --restore"
    exit 0 ;;
  --restore)
    if [ -f "$exclude" ]; then
      awk -v m="$mark" '$0 == m { skip = 1; next } skip && $0 == "/datasets/behaviour/*.bin.gz" { skip = 0; next } { skip = 0; print }' "$exclude" >"$exclude.tmp"
      mv "$exclude.tmp" "$exclude"
    fi
    git add -- "${replays[@]}"
    git diff --cached --quiet -- "${replays[@]}" || die "the restored replay files differ from HEAD: check git status"
    say "restored: ${replays[*]}"
    exit 0 ;;
  "") ;;
  *) die "unknown argument $1 (want none, --set-aside or --restore)" ;;
esac

CHUNK=$((${GPU_CHUNK_MIB:-50} * 1024 * 1024))
out=.gpu
cache="${ADMPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/admpo}"
ortdir="$cache/onnxruntime-gpu-1.29.0"
for f in libonnxruntime.so.1 libonnxruntime_providers_cuda.so libonnxruntime_providers_shared.so; do
  [ -f "$ortdir/$f" ] || die "$ortdir/$f is missing: run \`make setup-gpu\`"
done

stage=$out/stage
rm -rf "$stage" "$out/admpo" "$out/payload" "$out"/c[0-9]*
mkdir -p "$stage/admpo" "$stage/base/lib/fallback" "$stage/base/ort"
pay=$stage/admpo
GO=${GO:-go}
ver=$(git describe --always --dirty 2>/dev/null || echo unknown)
# gorgonia.org/cu's cgo prints screens of deprecation warnings: keep them
# out of sight unless a build fails.
build() { # build WHAT COMMAND...
  local what=$1
  shift
  say "building $what with -tags admpo_cuda"
  if ! nice -n 5 "$@" 2>"$out/build.log"; then
    cat "$out/build.log" >&2
    die "$what: build failed (the CUDA headers: \`make setup-cuda-toolkit\`)"
  fi
}
build "admpo ($ver)" "$GO" build -tags admpo_cuda -ldflags "-s -w -X main.version=$ver" -o "$pay/admpo" ./cmd/admpo
build "infer's test binary" "$GO" test -c -tags admpo_cuda -ldflags "-s -w" -o "$pay/infer.test" ./infer/
bins=("$pay/admpo" "$pay/infer.test")
if [ -d device/cuda ]; then
  build "device/cuda's test binary" "$GO" test -c -tags admpo_cuda -ldflags "-s -w" -o "$pay/device.test" ./device/cuda/
  bins+=("$pay/device.test")
fi

# Shared libraries: everything ldd lists but glibc's own and the driver's
# (libcuda, libnvidia-*: the GPU host's driver provides them). libstdc++ and
# libgcc_s go to lib/fallback: Debian bookworm's libstdc++ needs glibc 2.36,
# so gpu_check.sh uses them only where the host has none of its own.
declare -A seen=()
for bin in "${bins[@]}"; do
  ldd "$bin" | grep -q 'not found' && { ldd "$bin" | grep 'not found'; die "$bin has unresolved libraries"; }
  while read -r name path; do
    [ -n "$path" ] || continue
    case "$name" in
      linux-vdso*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libnsl.so.*|libanl.so.*|libmvec.so.*) continue ;;
      libcuda.so.*|libnvidia-*|libcudadebugger*) continue ;;
    esac
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=1
    dest="$stage/base/lib"
    case "$name" in libstdc++.so.*|libgcc_s.so.*) dest="$stage/base/lib/fallback" ;; esac
    cp -L "$path" "$dest/$name"
  done < <(ldd "$bin" | awk '/=>/ && $3 ~ /^\// {print $1, $3}')
done
cp "$ortdir"/libonnxruntime.so.1 "$ortdir"/libonnxruntime_providers_cuda.so "$ortdir"/libonnxruntime_providers_shared.so "$stage/base/ort/"

for f in scripts/gpu_*.sh scripts/gpu_*.py benchmarks/torch_*.py; do
  [ "$f" = scripts/gpu_pack.sh ] || [ ! -f "$f" ] || cp "$f" "$pay/"
done
for d in ${GPU_PACK_EXTRA:-}; do
  [ -d "$d" ] || die "GPU_PACK_EXTRA: $d is not a folder"
  mkdir -p "$pay/$(dirname "$d")"
  cp -r "$d" "$pay/$d"
done
chmod +x "$pay"/*.sh "${bins[@]}"
echo "admpo $ver, packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)" >"$pay/INFO"

# MANIFEST (in the admpo part) lists both parts' files: gpu_check.sh checks them.
(cd "$stage/base" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$stage/base.sums"
(cd "$pay" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$stage/admpo.sums"
cat "$stage/base.sums" "$stage/admpo.sums" >"$pay/MANIFEST"
say "admpo part: $(du -sh "$pay" | cut -f1) in $(find "$pay" -type f | wc -l) files; libraries: $(find "$stage/base/lib" -maxdepth 1 -type f | wc -l) in lib/"

mkdir -p "$out/admpo"
tar -C "$pay" -cf - . | nice -n 5 xz -6 -T2 -c >"$out/admpo/part"
s=$(stat -c %s "$out/admpo/part")
say "$out/admpo/part  $s bytes ($(mib "$s") MiB)"

if [ -f "$out/base/CONTENTS" ] && cmp -s "$stage/base.sums" "$out/base/CONTENTS" && [ -f "$out/base/c1/part" ]; then
  say "static part unchanged: keeping $out/base"
else
  say "static part: compressing $(du -sh "$stage/base" | cut -f1) (xz -9 -T2, a few minutes) into chunks of at most $(mib "$CHUNK") MiB"
  rm -rf "$out/base"
  mkdir -p "$out/base"
  tar -C "$stage/base" -cf - . | nice -n 5 xz -9 -T2 -c | split -b "$CHUNK" -d -a 2 - "$out/base/chunk."
  i=0
  for f in "$out"/base/chunk.*; do
    i=$((i + 1))
    mkdir -p "$out/base/c$i"
    mv "$f" "$out/base/c$i/part"
  done
  [ "$i" -le 9 ] || die "$i chunks: more than 9 breaks the order of the shell's c*/part glob"
  (cd "$out/base" && cat c*/part | xz -t) || die "the chunks do not decompress"
  cp "$stage/base.sums" "$out/base/CONTENTS"
fi
rm -rf "$stage"
n=0
for d in "$out"/base/c*/; do
  n=$((n + 1))
  s=$(stat -c %s "$d/part")
  printf 'gpu-pack: %s  %d bytes (%s MiB)\n' "${d%/}/part" "$s" "$(mib "$s")"
done
say "device calls (set the replay files aside first: scripts/gpu_pack.sh --set-aside):"
for i in $(seq 1 $((n - 1))); do
  say "  call $i: carry [\".gpu/base/c$i\"]: mkdir -p /tmp/gx && cp .gpu/base/c$i/part /tmp/gx/base.$i"
done
say "  call $n: carry [\".gpu/base/c$n\", \".gpu/admpo\"]: mkdir -p /tmp/gx && cp .gpu/base/c$n/part /tmp/gx/base.$n && bash .gpu/admpo/unpack.sh"
say "  (unpack.sh is a copy of: mkdir -p /tmp/g && cat /tmp/gx/base.* | xz -d | tar x -C /tmp/g && xz -d <.gpu/admpo/part | tar x -C /tmp/g && bash /tmp/g/gpu_check.sh)"
cat >"$out/admpo/unpack.sh" <<'EOF'
# Unpacks the static part (chunks copied to /tmp/gx by earlier calls) and the
# admpo part into /tmp/g, then runs the GPU check. From the repository root.
set -u
mkdir -p /tmp/g
if [ ! -f /tmp/g/ort/libonnxruntime_providers_cuda.so ]; then
  cat /tmp/gx/base.* | xz -d | tar x -C /tmp/g || { echo "unpack.sh: the static part does not unpack (all chunks copied?)"; ls -l /tmp/gx; exit 3; }
fi
xz -d <.gpu/admpo/part | tar x -C /tmp/g || { echo "unpack.sh: the admpo part does not unpack"; exit 3; }
bash /tmp/g/gpu_check.sh
EOF
