#!/usr/bin/env bash
# Records fixed-seed short runs and their fingerprints, so a refactor can show
# that behaviour did not change (issue: one clear house): online admpo, mbpo
# and sac on inverted-pendulum and hopper, a small random hopper data set, a
# behaviour SAC run, and offline admpo (also with MC dropout in its roll-outs),
# mopo and bc on that data set. Every
# run is cut short (hundreds of steps) but goes through each phase: warm-up,
# model fits, roll-outs, policy updates, evaluations, checkpoints and exports.
#
# Usage: scripts/fingerprint_runs.sh OUT_DIR   (writes OUT_DIR/fingerprints.txt)
#   then: diff docs/results/refactor/fingerprints.txt OUT_DIR/fingerprints.txt
# The recorded file was made on main before the refactor; a difference names
# the run, the file and, for a checkpoint, the section. Floating-point results
# depend on the CPU's kernels, so compare recordings made on the same machine
# type (scripts/fingerprint_runs.sh on the old commit gives the baseline).
# ADMPO_BIN picks the binary (default: make build, bin/admpo). ~5-10 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/fingerprint_runs.sh OUT_DIR}
[ -n "${ADMPO_BIN:-}" ] || make -s build
bin=$(realpath "${ADMPO_BIN:-bin/admpo}")
fp=$(mktemp -d)/fingerprint && go build -o "$fp" ./scripts/fingerprint
export OPENBLAS_NUM_THREADS=1
rm -rf "$out/runs" && mkdir -p "$out/runs"
r=$out/runs
export FINGERPRINT_ROOT=$(cd "$r" && pwd)
short_online="--preset quick --seed 0 --warmup 250 --steps 500 --model-every 250 --eval-every 250 --rollout-batch 400 --model-max-epochs 3 --updates-per-step 2 --tensorboard=false"
for env in inverted-pendulum hopper; do
  for algo in admpo mbpo sac; do
    echo "$(date +%T) online $env $algo"
    "$bin" train online --env "$env" --algo "$algo" $short_online --out "$r/on-$env-$algo" > "$r/on-$env-$algo.log" 2>&1
  done
done
echo "$(date +%T) collect"
# relative paths: the data files record their command line
(cd "$r" && "$bin" collect --env hopper --kind random --size 3000 --seed 0 --workers 2 --out data/hopper-random.hdf5 > collect.log 2>&1
 "$bin" collect --env hopper --kind expert --seed 0 --train-dir behaviour --train-steps 1500 --train-warmup 500 \
  --train-eval-every 500 --size 2000 --workers 2 --out data/hopper-expert.hdf5 > behaviour.log 2>&1)
short_offline="--preset quick --seed 0 --epochs 2 --steps-per-epoch 100 --rollout-every 50 --rollout-batch 200 --model-max-epochs 3 --eval-episodes 2 --tensorboard=false"
for algo in admpo mopo bc; do
  echo "$(date +%T) offline $algo"
  "$bin" train offline --dataset "$r/data/hopper-random.hdf5" --algo "$algo" $short_offline --out "$r/off-$algo" > "$r/off-$algo.log" 2>&1
done
# The cpu and paper presets roll the ADM out with MC dropout (the quick preset does not): one run with it.
echo "$(date +%T) offline admpo --rollout-dropout"
"$bin" train offline --dataset "$r/data/hopper-random.hdf5" --algo admpo $short_offline --rollout-dropout --out "$r/off-admpo-dropout" > "$r/off-admpo-dropout.log" 2>&1
for d in "$r"/on-* "$r"/off-*; do
  [ -d "$d" ] || continue
  "$bin" export --run "$d" --out "$d/bundle" > /dev/null 2>&1 || echo "export $d failed"
done
{
  for d in "$r"/on-* "$r"/behaviour "$r"/off-*; do
    [ -d "$d" ] || continue
    "$fp" "$d"
    [ ! -d "$d/bundle" ] || "$fp" "$d/bundle" | sed "s|  bundle/|  $(basename "$d")/bundle/|"
  done
  # HDF5 files carry object modification times: hash their datasets' contents (h5py)
  /usr/bin/python3 - "$r/data" <<'PY'
import hashlib, sys, h5py
for name in ("hopper-random.hdf5", "hopper-expert.hdf5"):
    with h5py.File(f"{sys.argv[1]}/{name}", "r") as f:
        items = []
        f.visititems(lambda k, v: items.append(k) if isinstance(v, h5py.Dataset) else None)
        for k in sorted(items):
            v = f[k][()]
            b = v.tobytes() if hasattr(v, "tobytes") else repr(v).encode()
            print(hashlib.sha256(b).hexdigest() + "  data/" + name + ":" + k)
PY
} > "$out/fingerprints.txt"
echo "$(date +%T) wrote $out/fingerprints.txt ($(wc -l < "$out/fingerprints.txt") lines)"
