#!/usr/bin/env bash
# Compares two admpo builds' training engines side by side on this machine:
# `admpo bench train` of the baseline build (OLD) and of the new one (NEW), one
# thread each, under each OPENBLAS_CORETYPE given, and prints the new build's
# times, GFLOP/s and share of the product peak with its speed-up over the
# baseline (GOMAXPROCS=1, so its element-wise loops stay on one thread too).
# PyTorch (one thread) runs once, with the new build.
# Usage: scripts/bench_engine.sh OLD_BIN NEW_BIN [ITERS]   (CORETYPES="Haswell SkylakeX" by default;
#   KERNELS="auto avx2" forces the new build's kernel paths; OUT=dir keeps the JSON)
# Run it on an otherwise idle machine (pause long runs with kill -STOP/-CONT).
set -euo pipefail
old=${1:?usage: scripts/bench_engine.sh OLD_BIN NEW_BIN [ITERS]}
new=${2:?usage: scripts/bench_engine.sh OLD_BIN NEW_BIN [ITERS]}
iters=${3:-30}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
torch=--torch-threads=1
for ct in ${CORETYPES:-Haswell SkylakeX}; do
  GOMAXPROCS=1 OPENBLAS_CORETYPE=$ct OPENBLAS_NUM_THREADS=1 "$old" bench train --iters "$iters" --no-torch --json > "$out/old-$ct.json"
  for k in ${KERNELS:-auto}; do
    OPENBLAS_CORETYPE=$ct OPENBLAS_NUM_THREADS=1 "$new" bench train --iters "$iters" --threads 1 --kernels "$k" $torch --json > "$out/new-$ct-$k.json"
    torch=--no-torch
  done
done
/usr/bin/python3 - "$out" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
def rows(path):
    t = json.load(open(path))
    return t, {r[0]: r for r in t["rows"]}
torch = None
print(f"{'OPENBLAS_CORETYPE':>17} {'kernels':>8} {'computation':<58} {'old ms':>8} {'new ms':>8} {'speed-up':>8} {'GFLOP/s':>8} {'% peak':>7} {'PyTorch':>8}")
for p in sorted(glob.glob(os.path.join(d, "new-*.json"))):
    _, ct, k = os.path.basename(p)[:-5].split("-", 2)
    t, new = rows(p)
    _, old = rows(os.path.join(d, f"old-{ct}.json"))
    for name, r in new.items():
        if name not in old:
            continue
        o = old[name][1]
        torch = r[4] if r[4] is not None else torch
        g = f"{r[2]:8.1f}" if r[2] is not None else f"{'-':>8}"
        pk = f"{r[3]:6.0f}%" if r[3] is not None else f"{'-':>7}"
        tt = f"{r[4]:8.2f}" if r[4] is not None else f"{'-':>8}"
        print(f"{ct:>17} {k:>8} {name:<58} {o:8.2f} {r[1]:8.2f} {o / r[1]:7.2f}x {g} {pk} {tt}")
    print(f"{'':>17} {'':>8} peak: {t['environment'].get('product peak, 1 thread', '?')}")
PY
echo "JSON in $out"
