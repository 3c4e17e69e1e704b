#!/usr/bin/env bash
# Interleaved rounds: main (913b9bf) vs the Adam flush, fresh networks and two trained runs' states.
set -u
cd /tmp
export GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 ADMPO_MINBENCH_SAC=250
for round in 1 2 3 4; do
  for st in fresh mbpo admpo; do
    case $st in fresh) ck="";; mbpo) ck=/root/admpo-runs/online-cpu-332ba9f/hopper-mbpo-0/checkpoint.ckpt;; admpo) ck=/root/admpo-runs/online-cpu-332ba9f/hopper-admpo-0/checkpoint.ckpt;; esac
    for b in main flush; do
      echo "round $round state $st build $b: $(ADMPO_MINBENCH_SAC_CKPT=$ck ./sac-$b.test -test.run 'TestMinBenchSACUpdate$' -test.v 2>&1 | grep 'ms:')"
    done
  done
done
