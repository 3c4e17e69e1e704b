#!/usr/bin/env bash
# Reproduces docs/results-online.md: quick-preset runs of ADMPO-ON, MBPO and
# SAC on inverted-pendulum and hopper, 3 seeds each, then the learning curves.
# Usage: scripts/online_results.sh [RUNS_DIR]   (default runs/online)
# ENVS and SEEDS select a part of the matrix (defaults: both tasks, seeds 0-2);
# finished runs are skipped and interrupted ones resumed, so parts can run in
# parallel or one after another.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/online}
[ -n "${NO_BUILD:-}" ] || make -s build
mkdir -p "$out" docs
for env in ${ENVS:-inverted-pendulum hopper}; do
  for seed in ${SEEDS:-0 1 2}; do
    for algo in admpo mbpo sac; do
      dir="$out/$env-$algo-$seed"
      if [ -f "$dir/policy.onnx" ]; then continue; fi         # finished earlier
      if [ -f "$dir.lock" ] && kill -0 "$(cat "$dir.lock")" 2>/dev/null; then continue; fi  # another instance runs it
      echo $$ > "$dir.lock"
      if [ -f "$dir/checkpoint.ckpt" ]; then
        bin/admpo train online --resume "$dir" >> "$dir.log" 2>&1
      else
        rm -rf "$dir"
        bin/admpo train online --env "$env" --algo "$algo" --preset quick --seed "$seed" --out "$dir" > "$dir.log" 2>&1
      fi
      rm -f "$dir.lock"
      echo "$(date +%T) finished $dir: $(grep 'eval return' "$dir.log" | tail -1)"
    done
  done
  bin/admpo plot --runs "$out/$env-*" --out "docs/online-$env.png" --title "$env (quick preset, 3 seeds)"
done
