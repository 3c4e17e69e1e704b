#!/usr/bin/env bash
# Trains the behaviour SAC runs that make the D4RL-quality data sets
# (issue: offline at D4RL quality): one run per task, SAC with one update per
# env step (D4RL's setting), a deterministic evaluation and an ONNX snapshot
# every 5000 env steps, the whole replay buffer in the checkpoint (medium-replay
# is that buffer up to the medium snapshot). Each run stops at STEPS (1M) env steps or
# once a deterministic evaluation reaches the task's stop return (D4RL
# normalised 110: the expert band, >= 90, is checked on data collected with
# sampled actions, whose returns run 10-20% below the deterministic ones; the
# hopper run of 2026-11-25 had deterministic 3021-3111 with data scores 78-81).
# When a run finishes, 20k transitions of its expert policy are collected as a
# check of the band.
#
# Usage: scripts/behaviour_policies.sh [RUNS_DIR]   (default runs/behaviour)
# ENVS selects tasks (default: hopper walker2d halfcheetah); EVAL_EVERY the env
# steps between evaluations and snapshots (default 5000: D4RL's medium band is
# narrow, and a fast learner such as hopper can cross it within 5000 steps; the
# training does not depend on it, so a rerun with EVAL_EVERY=1000 in another
# RUNS_DIR follows the same run with finer snapshots). Resumable: a
# finished run is reused, an interrupted one continues from its checkpoint.
# SEED picks the SAC seed (default 0; run directories are ENV-SEED): a task
# whose seed-0 run learns slowly (walker2d) can be run again with another seed.
# STEPS is the env step budget (default 1000000); a run that used its whole
# budget below the stop return continues when rerun with a larger STEPS.
# Run two at a time on two cores, e.g.
#   ENVS=hopper scripts/behaviour_policies.sh & ENVS=walker2d scripts/behaviour_policies.sh &
set -euo pipefail
source "$(dirname "$0")/run_lock.sh"
cd "$(dirname "$0")/.."
out=${1:-runs/behaviour}
bin=${ADMPO_BIN:-bin/admpo}
[ -n "${NO_BUILD:-}" ] || make -s build
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1
for env in ${ENVS:-hopper walker2d halfcheetah}; do
  case $env in
    hopper) stop=3560 ;;        # D4RL normalised 110
    walker2d) stop=5051 ;;      # D4RL normalised 110
    halfcheetah) stop=13377 ;;  # D4RL normalised 110
    *) stop=0 ;;
  esac
  seed=${SEED:-0}
  dir="$out/$env-$seed"
  run_lock "$dir" || continue  # another instance runs it
  "$bin" collect --env "$env" --kind expert --seed "$seed" --train-dir "$dir" --train-steps "${STEPS:-1000000}" --train-eval-every "${EVAL_EVERY:-5000}" \
    --stop-return "$stop" --size 20000 --out "$out/$env-$seed-expert-check.hdf5" >> "$dir.log" 2>&1 || echo "$env: exit $?"
  run_unlock "$dir"
  echo "$(date +%T) $env: $(grep -E 'deterministic return|wrote' "$dir.log" | tail -2 | tr '\n' ' ')"
done
