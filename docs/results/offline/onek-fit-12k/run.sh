#!/usr/bin/env bash
# One-k vs all-k ADM fit on hopper-medium, seed 0, lr 3e-4, 12,000 Adam steps each (issue 34), build 2f84bac.
cd /root/admpo-runs/onek-fit
export GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1
for kind in onek allk; do
  flag=""; [ $kind = onek ] && flag=-onek
  [ -s $kind-s0.done ] && continue
  echo "$(date -u +%T) start $kind"
  /usr/bin/time -v ./admfitexp-2f84bac -data /root/admpo-runs/offline-cpu/d/hopper-medium.hdf5 -steps 12000 -every 1000 -seed 0 $flag > $kind-s0.txt 2> $kind-s0.time && date -u +%T > $kind-s0.done
  echo "$(date -u +%T) end $kind"
done
