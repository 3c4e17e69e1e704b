#!/usr/bin/env bash
# Installs everything admpo needs on a Debian machine. Idempotent: a second
# run checks and changes nothing.
#   - Debian packages: MuJoCo 2.2.2, OpenBLAS, HDF5, pkg-config, and (for the
#     cross-check tests) python3-torch, python3-onnx, python3-h5py, python3-numpy.
#   - ONNX Runtime 1.30.0 CPU library from the npm package onnxruntime-node,
#     checksum-verified and placed in the cache directory that the admpo
#     binaries search (see infer.CacheDir).
# Set ADMPO_SKIP_PYTHON=1 to skip the optional Python packages.
set -euo pipefail

ORT_VERSION=1.30.0
ORT_TGZ_SHA256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
ORT_LIB_SHA256=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
ORT_LIB_IN_TGZ=package/bin/napi-v6/linux/x64/libonnxruntime.so.1

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
# apt_install WHY ARGS...: apt-get update, then apt-get install ARGS, as root
# or through sudo (dies with "need root or sudo to WHY" where neither works).
apt_install() {
  local why=$1 sudo=""
  shift
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to $why"
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# --- Debian packages --------------------------------------------------------
pkgs=(libmujoco-dev libopenblas-dev libhdf5-dev pkg-config gcc make)
# Mesa's EGL and software OpenGL: `admpo eval --video` renders offscreen through them (loaded at run time).
pkgs+=(libegl1 libegl-mesa0 libgl1-mesa-dri)
[ "${ADMPO_SKIP_PYTHON:-0}" = 1 ] || pkgs+=(python3-torch python3-onnx python3-h5py python3-numpy)
# yamllint checks the Kubernetes manifest of `admpo sweep --k8s` in the tests (skipped without it).
[ "${ADMPO_SKIP_PYTHON:-0}" = 1 ] || pkgs+=(yamllint)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  apt_install "install: ${missing[*]}" "${missing[@]}"
else
  say "Debian packages present"
fi

# promtool (Debian package prometheus, without the node exporter it
# recommends) checks admpo serve's /metrics in the tests.
if [ "${ADMPO_SKIP_PROMTOOL:-0}" != 1 ] && ! command -v promtool >/dev/null; then
  say "installing promtool (Debian package prometheus)"
  apt_install "install prometheus (or set ADMPO_SKIP_PROMTOOL=1)" --no-install-recommends prometheus
fi

# --- ONNX Runtime -------------------------------------------------------------
cache="${ADMPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/admpo}"
dest="$cache/onnxruntime-$ORT_VERSION"
lib="$dest/libonnxruntime.so.1"
if [ -f "$lib" ] && echo "$ORT_LIB_SHA256  $lib" | sha256sum -c --status; then
  say "ONNX Runtime $ORT_VERSION present at $lib"
else
  command -v npm >/dev/null || die "npm is needed to fetch ONNX Runtime (apt-get install npm)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  say "fetching onnxruntime-node@$ORT_VERSION from the npm registry (~110 MB)"
  (cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null 2>&1) || die "npm pack onnxruntime-node@$ORT_VERSION failed"
  tgz="$tmp/onnxruntime-node-$ORT_VERSION.tgz"
  echo "$ORT_TGZ_SHA256  $tgz" | sha256sum -c --status || die "checksum mismatch for $tgz"
  tar -xzf "$tgz" -C "$tmp" "$ORT_LIB_IN_TGZ" || die "extracting $ORT_LIB_IN_TGZ failed"
  echo "$ORT_LIB_SHA256  $tmp/$ORT_LIB_IN_TGZ" | sha256sum -c --status || die "checksum mismatch for libonnxruntime.so.1"
  mkdir -p "$dest"
  cp "$tmp/$ORT_LIB_IN_TGZ" "$dest/.libonnxruntime.so.1.tmp"
  mv -f "$dest/.libonnxruntime.so.1.tmp" "$lib"   # atomic: never a half-written library
  say "ONNX Runtime $ORT_VERSION installed at $lib"
fi
say "done"
