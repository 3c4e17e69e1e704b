#!/usr/bin/env bash
# Reproduces docs/results-offline.md: generated D4RL-style data sets for hopper
# and walker2d, then ADMPO-OFF, MOPO and BC over 3 seeds at the quick preset
# with 20 epochs, learning curves, summary tables and model diagnoses.
# Usage: scripts/offline_results.sh [WORK_DIR]   (default runs/offline)
# ENVS, KINDS, ALGOS and SEEDS select a part of the matrix (defaults: hopper
# walker2d; medium medium-replay random medium-expert; admpo mopo bc; 0 1 2).
# TAG with EXTRA runs a variant beside the main matrix: EXTRA's flags are added
# to every run, which goes to runs/ENV-KIND-TAG/ (plot docs/offline-ENV-KIND-TAG.png),
# e.g. the paper-size ADM ablation:
#   TAG=bigadm ALGOS=admpo EXTRA="--adm-hidden 200 --adm-layers 3 --adm-res-blocks 4" scripts/offline_results.sh
# NO_PLOT=1 leaves docs/ alone (for partial re-runs).
# Finished runs are skipped and interrupted ones resumed, so parts can run in
# parallel (each run takes a lock) or one after another.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-runs/offline}
[ -n "${NO_BUILD:-}${ADMPO_BIN:-}" ] || make -s build
root=$PWD
bin=${ADMPO_BIN:-$root/bin/admpo}   # ADMPO_BIN: another admpo binary
mkdir -p "$work/d" "$work/runs" docs
cd "$work"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
for env in ${ENVS:-hopper walker2d}; do
  stop=3300; [ "$env" = walker2d ] && stop=4500
  for kind in ${KINDS:-medium medium-replay random medium-expert}; do
    data=d/$env-$kind.hdf5
    if [ ! -f "$data" ]; then   # medium/expert kinds train the behaviour run d/behaviour-ENV-0 on first use
      "$bin" collect --env "$env" --kind "$kind" --size 30000 --seed 0 --train-steps 100000 --stop-return $stop \
        --train-dir "d/behaviour-$env-0" --out "$data" > "d/$env-$kind.log" 2>&1
    fi
    name=$env-$kind${TAG:+-$TAG}
    for seed in ${SEEDS:-0 1 2}; do
      for algo in ${ALGOS:-admpo mopo bc}; do
        dir=runs/$name/$algo-$seed
        if grep -qs '^done:' "$dir.log"; then continue; fi                                   # finished earlier
        if [ -f "$dir.lock" ] && kill -0 "$(cat "$dir.lock")" 2>/dev/null; then continue; fi  # another instance runs it
        mkdir -p "$(dirname "$dir")"; echo $$ > "$dir.lock"
        if [ -f "$dir/checkpoint.ckpt" ]; then
          "$bin" train offline --resume "$dir" >> "$dir.log" 2>&1
        else
          rm -rf "$dir"
          "$bin" train offline --dataset "$data" --algo "$algo" --seed "$seed" --epochs 20 ${EXTRA:-} --out "$dir" > "$dir.log" 2>&1
        fi
        rm -f "$dir.lock"
        [ "$algo" = bc ] || "$bin" train offline --diagnose "$dir" --diagnose-starts 1000 > "$dir.diagnosis.txt" 2>&1
        echo "$(date +%T) finished $dir: $(grep -a 'normalised score' "$dir.log" | tail -1)"
      done
    done
    [ -n "${NO_PLOT:-}" ] || [ ! -d "runs/$name" ] || "$bin" plot --runs "runs/$name/*" --out "$root/docs/offline-$name.png" \
      --title "$name (quick preset, 20 epochs${EXTRA:+, $EXTRA})"
  done
done
