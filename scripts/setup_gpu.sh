#!/usr/bin/env bash
# Installs the GPU pieces of admpo. Never part of `make setup`; idempotent: a
# second run checks and changes nothing.
#   - ONNX Runtime 1.29.0 built for CUDA 13: the core library from the npm
#     package com.github.asus4.onnxruntime@0.4.9 and the CUDA execution provider
#     (libonnxruntime_providers_cuda.so, libonnxruntime_providers_shared.so) from
#     com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9, both archives and all
#     libraries checksum-verified, placed in $cache/onnxruntime-gpu-1.29.0.
#   - With --cuda-toolkit (make setup-gpu CUDA_TOOLKIT=1, or make
#     setup-cuda-toolkit): Debian bookworm's CUDA 11.8 toolkit from the non-free
#     component (nvidia-cuda-toolkit, nvidia-cuda-dev, ~2.8 GB), needed only for
#     `go build -tags cuda`. With --cuda-toolkit-only the ONNX Runtime part is
#     skipped.
set -euo pipefail

GPU_ORT_VERSION=1.29.0
NPM_VERSION=0.4.9
CORE_PKG=com.github.asus4.onnxruntime
CUDA_PKG=com.github.asus4.onnxruntime.linux-x64-gpu
# sha256 of the .tgz archives that `npm pack` fetches.
CORE_TGZ_SHA256=e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d
CUDA_TGZ_SHA256=2b459e0c17f340c92970c10ed86de4f37a3009f93c14053e6ad4334cbb6be412
# The archive checksums were observed on 2026-11-24 and match the registry's
# dist.integrity (sha512); the library checksums are those in GPU.md. The
# core is stored under its SONAME, libonnxruntime.so.1, as scripts/setup.sh
# stores ONNX Runtime 1.30.0; libonnxruntime_providers_shared.so is the one
# shipped beside the CUDA provider (the core package's copy differs).
# name in the cache | npm package | path in its archive | sha256
LIBS=(
  "libonnxruntime.so.1|$CORE_PKG|package/Plugins/Linux/x64/libonnxruntime.so|5715f06d8992ca8eeeddcce43df3a7d38f97d537052126f558e912cb312460ca"
  "libonnxruntime_providers_cuda.so|$CUDA_PKG|package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so|56cf3254b118ad837ccc4ed8f6d1b23504bbf7ef91b34cbc0b289cb7f10b3037"
  "libonnxruntime_providers_shared.so|$CUDA_PKG|package/Plugins/Linux/x64/libonnxruntime_providers_shared.so|c6a12593396095f5670160e284c35d1700b7708cf3037b7042e2a5200ccae772"
)

say() { printf 'setup-gpu: %s\n' "$*"; }
die() { printf 'setup-gpu: error: %s\n' "$*" >&2; exit 1; }

toolkit=0
ort=1
for a in "$@"; do
  case "$a" in
    --cuda-toolkit) toolkit=1 ;;
    --cuda-toolkit-only) toolkit=1; ort=0 ;;
    *) die "unknown argument $a (want --cuda-toolkit or --cuda-toolkit-only)" ;;
  esac
done

SUDO=""
need_root() {
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to $1"
    SUDO=sudo
  fi
}

# --- CUDA toolkit from Debian non-free ---------------------------------------
install_toolkit() {
  local pkgs=(nvidia-cuda-toolkit nvidia-cuda-dev) missing=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "CUDA toolkit present ($(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
    return
  fi
  need_root "install ${missing[*]}"
  local src=/etc/apt/sources.list.d/admpo-non-free.sources
  if [ ! -f "$src" ]; then
    say "enabling Debian bookworm non-free in $src"
    $SUDO tee "$src" >/dev/null <<'EOF'
# Written by admpo's scripts/setup_gpu.sh for the CUDA toolkit (nvidia-cuda-toolkit, nvidia-cuda-dev).
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  $SUDO apt-get update -qq
  say "installing ${missing[*]} (~2.8 GB)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  say "CUDA toolkit installed ($(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
}

# --- ONNX Runtime for CUDA 13 --------------------------------------------------
cache="${ADMPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/admpo}"
dest="$cache/onnxruntime-gpu-$GPU_ORT_VERSION"

lib_ok() { [ -f "$dest/$1" ] && echo "$2  $dest/$1" | sha256sum -c --status; }

install_ort() {
  local entry name pkg inner sum todo=()
  for entry in "${LIBS[@]}"; do
    IFS='|' read -r name pkg inner sum <<<"$entry"
    lib_ok "$name" "$sum" || todo+=("$entry")
  done
  if [ ${#todo[@]} -eq 0 ]; then
    say "ONNX Runtime $GPU_ORT_VERSION for CUDA 13 present in $dest"
    return
  fi
  command -v npm >/dev/null || die "npm is needed to fetch ONNX Runtime (apt-get install npm)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  local fetched="" tgz want
  mkdir -p "$dest"
  for entry in "${todo[@]}"; do
    IFS='|' read -r name pkg inner sum <<<"$entry"
    tgz="$tmp/$pkg-$NPM_VERSION.tgz"
    if [[ " $fetched " != *" $pkg "* ]]; then
      say "fetching $pkg@$NPM_VERSION from the npm registry"
      (cd "$tmp" && npm pack --silent "$pkg@$NPM_VERSION" >/dev/null 2>&1) || die "npm pack $pkg@$NPM_VERSION failed"
      want=$CORE_TGZ_SHA256
      [ "$pkg" = "$CUDA_PKG" ] && want=$CUDA_TGZ_SHA256
      echo "$want  $tgz" | sha256sum -c --status || die "checksum mismatch for $tgz (want $want)"
      fetched+=" $pkg"
    fi
    tar -xzf "$tgz" -C "$tmp" "$inner" || die "extracting $inner from $pkg failed"
    echo "$sum  $tmp/$inner" | sha256sum -c --status || die "checksum mismatch for $name (want $sum)"
    cp "$tmp/$inner" "$dest/.$name.tmp"
    mv -f "$dest/.$name.tmp" "$dest/$name"   # atomic: never a half-written library
    rm -f "$tmp/$inner"
    say "installed $dest/$name"
  done
}

[ "$ort" = 1 ] && install_ort
[ "$toolkit" = 1 ] && install_toolkit
say "done"
