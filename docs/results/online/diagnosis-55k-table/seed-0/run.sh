#!/bin/bash
# 55k model diagnosis (run from /root/admpo-runs; results copied to docs/results/online/diagnosis-55k-table/seed-N/) of the seed-0 pair, ADM at 1e-3 (the table's run) (#34 item 3), as diag55k/ for seed 0.
cd /root/admpo-runs
A=online-ablation/hopper-admpo-0; M=online-cpu-697dd56/hopper-mbpo-0; O=diag55k-s0-lr1e3; B=/root/admpo-runs/admpo-177733b
export OPENBLAS_NUM_THREADS=1
d() { name=$1; run=$2; shift 2; nice -n 15 $B train online --diagnose $run "$@" --seed 0 > $O/$name.txt 2>&1; [ ! -f $run/diagnosis.json ] || mv $run/diagnosis.json $O/$name.json; }
d adm-own $A
d adm-on-mbpo $A --diagnose-buffer $M --diagnose-policy $M; mv $A/diagnosis-with-online-cpu-697dd56-hopper-mbpo-0.json $O/adm-on-mbpo.json
d ens-own $M
d ens-on-admpo $M --diagnose-buffer $A --diagnose-policy $A; mv $M/diagnosis-with-online-ablation-hopper-admpo-0.json $O/ens-on-admpo.json
echo done > $O/DONE
