#!/usr/bin/env bash
# Compares the training engine of two revisions on a loaded machine: builds
# the sac and models test binaries of OLD_REV and NEW_REV (from git archive;
# NEW_REV's env-gated TestMinBenchSACUpdate / TestMinBenchADMTrainStep are
# copied into OLD_REV when it lacks them), then runs them in interleaved
# rounds on one thread and prints, per round, the fastest, 20th-percentile and
# median time of a SAC update (Hopper's sizes) and of an ADM train step, and
# last whether both revisions leave the same weights bit for bit on every
# kernel path (a hash after a few updates / steps).
# The fastest of many steps is what other processes spoil least: use it where
# scripts/bench_engine.sh's medians drift with the load.
# Usage: scripts/bench_engine_min.sh OLD_REV NEW_REV [ROUNDS] [SAC_UPDATES] [ADM_STEPS]
#   (defaults 4 rounds, 300 updates, 15 steps; BIN=dir keeps the binaries, and
#   REUSE=1 runs those already in BIN without building)
set -euo pipefail
old=${1:?usage: scripts/bench_engine_min.sh OLD_REV NEW_REV [ROUNDS] [SAC_UPDATES] [ADM_STEPS]}
new=${2:?usage: scripts/bench_engine_min.sh OLD_REV NEW_REV [ROUNDS] [SAC_UPDATES] [ADM_STEPS]}
rounds=${3:-4} nsac=${4:-300} nadm=${5:-15}
root=$(git rev-parse --show-toplevel)
bin=${BIN:-$(mktemp -d)}
mkdir -p "$bin"
for side in old new; do
  rev=${!side}
  if [ -n "${REUSE:-}" ] && [ -x "$bin/sac-$side.test" ] && [ -x "$bin/models-$side.test" ]; then continue; fi
  src=$(mktemp -d)
  git -C "$root" archive "$rev" | tar -x -C "$src"
  for f in sac/bench_min_test.go models/adm_bench_min_test.go; do
    [ -e "$src/$f" ] || git -C "$root" show "$new:$f" > "$src/$f"
  done
  (cd "$src" && go test -c -o "$bin/sac-$side.test" ./sac && go test -c -o "$bin/models-$side.test" ./models)
  rm -rf "$src"
done
one() { GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 "$@" 2>&1 | grep -E 'ms: min|fnv64a' || true; }
echo "old $old, new $new; $(date -u); $(uptime)"
for r in $(seq "$rounds"); do
  for side in old new; do
    echo -n "round $r $side: "; ADMPO_MINBENCH_SAC=$nsac one "$bin/sac-$side.test" -test.run TestMinBenchSACUpdate
  done
done
for r in $(seq "$rounds"); do
  for side in old new; do
    echo -n "round $r $side: "; ADMPO_MINBENCH_ADM=$nadm one "$bin/models-$side.test" -test.run TestMinBenchADMTrainStep
  done
done
for k in generic avx2 avx512; do
  for side in old new; do
    s=$(ADMPO_CPU_KERNELS=$k ADMPO_MINBENCH_HASH=1 ADMPO_MINBENCH_SAC=5 one "$bin/sac-$side.test" -test.run TestMinBenchSACUpdate | grep fnv64a)
    a=$(ADMPO_CPU_KERNELS=$k ADMPO_MINBENCH_HASH=1 ADMPO_MINBENCH_ADM=2 one "$bin/models-$side.test" -test.run TestMinBenchADMTrainStep | grep fnv64a)
    echo "$k $side: $s; $a"
  done
done
echo "binaries in $bin; $(uptime)"
