#!/usr/bin/env bash
# Reproduces docs/results-offline.md: ADMPO-OFF, MOPO and BC on D4RL-style
# data sets, learning curves, summary tables and model diagnoses.
# Usage: scripts/offline_results.sh [WORK_DIR]   (default runs/offline, or runs/offline-PRESET)
#   PRESET  quick (default: the smoke matrix: small data sets from weak
#           behaviour runs trained here, 3 seeds, 20 epochs) or cpu / paper (the
#           D4RL-sized data sets that `admpo collect` regenerates from the shipped
#           behaviour policies, the preset's own epochs)
#   DATASETS (cpu/paper) the data sets ENV-KIND (default: hopper-medium
#           hopper-medium-replay walker2d-medium-replay halfcheetah-medium);
#   ENVS, KINDS (quick) select the matrix (defaults: hopper walker2d; medium
#           medium-replay random medium-expert); ALGOS and SEEDS for both
#           (defaults: admpo mopo bc; quick 0 1 2, cpu/paper 0 1).
#   EVIDENCE=1 copies each finished run's config.json, progress.csv, offline.csv,
#           model_fit.csv and diagnosis, and writes time.json (its last progress
#           record's env_step, wall_s and phase times; needs python3), to
#           docs/results/offline/NAME-ALGO-SEED/ (on by default for cpu and paper).
#   ADMPO_BIN another admpo binary (e.g. a copy, so rebuilding bin/ cannot
#           touch running jobs); NO_PLOT=1 leaves docs/ plots alone.
#   REPO    the checkout whose datasets/behaviour policies collect the data and
#           whose docs/ receive evidence and plots (default: this script's own;
#           set it when running a copy of the script kept outside the checkout).
# TAG with EXTRA runs a variant beside the main matrix: EXTRA's flags are added
# to every run, which goes to runs/NAME-TAG/ (plot docs/offline-NAME-TAG.png),
# e.g. the paper-size ADM ablation:
#   TAG=bigadm ALGOS=admpo EXTRA="--adm-hidden 200 --adm-layers 3 --adm-res-blocks 4" scripts/offline_results.sh
# Finished runs are skipped and interrupted ones resumed, so parts can run in
# parallel (each run takes a lock) or one after another; one OpenBLAS thread
# each, two side by side on two cores, e.g.
#   PRESET=cpu SEEDS=0 scripts/offline_results.sh & PRESET=cpu SEEDS=1 scripts/offline_results.sh &
set -euo pipefail
source "$(dirname "$0")/run_lock.sh"
cd "$(dirname "$0")/.."
preset=${PRESET:-quick}
if [ "$preset" = quick ]; then
  work=${1:-runs/offline}; evidence=${EVIDENCE:-}; seeds=${SEEDS:-0 1 2}
  datasets=; for env in ${ENVS:-hopper walker2d}; do
    for kind in ${KINDS:-medium medium-replay random medium-expert}; do datasets="$datasets $env-$kind"; done
  done
else
  work=${1:-runs/offline-$preset}; evidence=${EVIDENCE:-1}; seeds=${SEEDS:-0 1}
  datasets=${DATASETS:-hopper-medium hopper-medium-replay walker2d-medium-replay halfcheetah-medium}
fi
[ -n "${NO_BUILD:-}${ADMPO_BIN:-}" ] || make -s build
root=$PWD
bin=$(realpath "${ADMPO_BIN:-$root/bin/admpo}")   # ADMPO_BIN: another admpo binary
repo=$(realpath "${REPO:-$root}")
mkdir -p "$work/d" "$work/runs" "$repo/docs"
cd "$work"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
for ds in $datasets; do
  env=${ds%%-*}; kind=${ds#*-}
  data=d/$ds.hdf5
  if [ ! -f "$data" ]; then
    if [ "$preset" = quick ]; then   # medium/expert kinds train the behaviour run d/behaviour-ENV-0 on first use
      stop=3300; [ "$env" = walker2d ] && stop=4500
      "$bin" collect --env "$env" --kind "$kind" --size 30000 --seed 0 --train-steps 100000 --stop-return $stop \
        --train-dir "d/behaviour-$env-0" --out "$data" > "d/$ds.log" 2>&1
    else                             # D4RL's size from the shipped behaviour policies
      "$bin" collect --env "$env" --kind "$kind" --seed 0 --policies "$repo/datasets/behaviour" --out "$data" > "d/$ds.log" 2>&1 ||
        { echo "$(date +%T) no data set $ds (see $work/d/$ds.log)"; continue; }
    fi
  fi
  name=$ds${TAG:+-$TAG}
  for seed in $seeds; do
    for algo in ${ALGOS:-admpo mopo bc}; do
      dir=runs/$name/$algo-$seed
      if ! grep -qs '^done:' "$dir.log"; then
        run_lock "$dir" || continue  # another instance runs it
        if [ -f "$dir/checkpoint.ckpt" ]; then
          "$bin" train offline --resume "$dir" >> "$dir.log" 2>&1 || true
        else
          rm -rf "$dir"
          epochs=; [ "$preset" != quick ] || epochs="--epochs 20"
          "$bin" train offline --dataset "$data" --algo "$algo" --preset "$preset" --seed "$seed" $epochs ${EXTRA:-} \
            --out "$dir" > "$dir.log" 2>&1 || true
        fi
        run_unlock "$dir"
        grep -qs '^done:' "$dir.log" || { echo "$(date +%T) stopped $dir (see $work/$dir.log; rerun to resume)"; continue; }
        [ "$algo" = bc ] || "$bin" train offline --diagnose "$dir" --diagnose-starts 1000 > "$dir.diagnosis.txt" 2>&1
        echo "$(date +%T) finished $dir: $(grep -a 'normalised score' "$dir.log" | tail -1)"
      fi
      if [ -n "$evidence" ]; then
        ev=$repo/docs/results/offline/$name-$algo-$seed
        mkdir -p "$ev" && cp "$dir/config.json" "$dir/progress.csv" "$dir/offline.csv" "$ev/"
        [ ! -f "$dir/model_fit.csv" ] || cp "$dir/model_fit.csv" "$ev/"
        [ ! -f "$dir/builds.txt" ] || cp "$dir/builds.txt" "$ev/"  # the builds that ran it
        [ ! -f "$dir.diagnosis.txt" ] || cp "$dir.diagnosis.txt" "$ev/diagnosis.txt"
        # where the run's time went: its last progress record's env_step, wall_s and phase times
        if [ -s "$dir/progress.jsonl" ]; then
          if tail -n 1 "$dir/progress.jsonl" | python3 -c 'import json, sys
r = json.loads(sys.stdin.read()); print(json.dumps({k: r[k] for k in ("env_step", "wall_s", "time") if k in r}))' \
            > "$ev/time.json.tmp"; then mv "$ev/time.json.tmp" "$ev/time.json"; else rm -f "$ev/time.json.tmp"; fi
        fi
      fi
    done
  done
  [ -n "${NO_PLOT:-}" ] || [ ! -d "runs/$name" ] || "$bin" plot --runs "runs/$name/*" --out "$repo/docs/offline-$name${preset/quick/}.png" \
    --title "$name ($preset preset${EXTRA:+, $EXTRA})"
done
