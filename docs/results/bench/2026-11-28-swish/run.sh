#!/usr/bin/env bash
# Interleaved rounds: the ensemble train step (7x 4x200 swish, batch 256, hopper) with ops' former Go
# swish loops (models-goswish.test: d1ccdcb) and with the C kernels (models-swish.test), hashes of
# the parameters after the steps to compare bit for bit.
cd /tmp
export GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 ADMPO_MINBENCH_ENS=40 ADMPO_MINBENCH_HASH=1
for round in 1 2 3; do
  for b in goswish swish; do
    echo "round $round build $b: $(./models-$b.test -test.run TestMinBenchEnsembleStep -test.v 2>&1 | grep -E 'ms:|fnv' | tr '\n' ' ')"
  done
done
