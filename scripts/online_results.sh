#!/usr/bin/env bash
# Reproduces docs/results-online.md: ADMPO-ON, MBPO and SAC runs, then the
# learning curves.
# Usage: scripts/online_results.sh [RUNS_DIR]   (default runs/online, or runs/online-PRESET)
#   PRESET  quick (default: the 4000-step smoke matrix on inverted-pendulum and
#           hopper) or cpu / paper (the paper's budget: hopper, 50k learning steps)
#   ENVS, SEEDS, ALGOS select a part of the matrix (defaults: the preset's tasks,
#           seeds 0-2, admpo mbpo sac); EXTRA adds flags to every fresh run.
#   EVIDENCE=1 copies each finished run's config.json, progress.csv and .jsonl to
#           docs/results/online/ENV-ALGO-SEED/ (on by default for cpu and paper);
#           TAG=NAME puts it under docs/results/online/NAME/ instead (e.g. the build
#           of a table's runs, so that one table keeps one build).
#   ADMPO_BIN another admpo binary (e.g. a copy, so rebuilding bin/ cannot
#           touch running jobs); NO_PLOT=1 leaves docs/ plots alone.
#   REPO    the checkout whose docs/ receive evidence and plots (default: this
#           script's own; set it when running a copy of the script kept outside
#           the checkout, so that git operations there cannot change a running
#           script).
# Finished runs are skipped and interrupted ones resumed (--resume continues
# exactly), so parts can run in parallel (each run takes a lock) or one after
# another; two single-threaded jobs side by side on two cores, e.g.
#   PRESET=cpu SEEDS=0 scripts/online_results.sh & PRESET=cpu SEEDS=1 scripts/online_results.sh &
set -euo pipefail
source "$(dirname "$0")/run_lock.sh"
cd "$(dirname "$0")/.."
preset=${PRESET:-quick}
if [ "$preset" = quick ]; then
  out=${1:-runs/online}; envs=${ENVS:-inverted-pendulum hopper}; evidence=${EVIDENCE:-}; suffix=
else
  out=${1:-runs/online-$preset}; envs=${ENVS:-hopper}; evidence=${EVIDENCE:-1}; suffix=-$preset
fi
[ -n "${NO_BUILD:-}${ADMPO_BIN:-}" ] || make -s build
bin=${ADMPO_BIN:-bin/admpo}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
repo=$(realpath "${REPO:-.}")
mkdir -p "$out" "$repo/docs"
for env in $envs; do
  for seed in ${SEEDS:-0 1 2}; do
    for algo in ${ALGOS:-admpo mbpo sac}; do
      dir="$out/$env-$algo-$seed"
      if [ ! -f "$dir/policy.onnx" ]; then
        run_lock "$dir" || continue  # another instance runs it
        if [ -f "$dir/checkpoint.ckpt" ]; then
          "$bin" train online --resume "$dir" >> "$dir.log" 2>&1 || true
        else
          rm -rf "$dir"
          "$bin" train online --env "$env" --algo "$algo" --preset "$preset" --seed "$seed" ${EXTRA:-} --out "$dir" > "$dir.log" 2>&1 || true
        fi
        run_unlock "$dir"
        [ -f "$dir/policy.onnx" ] || { echo "$(date +%T) stopped $dir (see $dir.log; rerun to resume)"; continue; }
        echo "$(date +%T) finished $dir: $(grep 'eval return' "$dir.log" | tail -1)"
      fi
      if [ -n "$evidence" ]; then
        ev=$repo/docs/results/online/${TAG:+$TAG/}$env-$algo-$seed
        mkdir -p "$ev" && cp "$dir/config.json" "$dir/progress.csv" "$dir/progress.jsonl" "$ev/"
        [ ! -f "$dir/builds.txt" ] || cp "$dir/builds.txt" "$ev/"  # the builds that ran it
      fi
    done
  done
  [ -n "${NO_PLOT:-}" ] || "$bin" plot --runs "$out/$env-*" --out "$repo/docs/online-$env$suffix.png" \
    --title "$env ($preset preset)" || true
done
