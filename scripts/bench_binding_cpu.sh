#!/usr/bin/env bash
# CPU roll-out throughput before and after the incremental engine's I/O
# binding (issue 33), side by side in one script on one machine:
#   bash scripts/bench_binding_cpu.sh OLD_ADMPO NEW_ADMPO [ROWS] [ROUNDS]
# OLD_ADMPO is a binary without --binding (e.g. main's), NEW_ADMPO one with
# it. Each round runs, in turn, OLD (direct and incremental), NEW with
# --binding off (auto on the CPU) and NEW with --binding on, at ROWS start
# rows (default 10000), each `admpo bench rollout --provider cpu --json`
# with --repeats 2; the rounds interleave so that a change of the machine's
# load hits every variant alike. Prints one line per variant, style and
# round: transitions/s and per CPU-second (the rate that a shared
# machine's load disturbs less).
set -euo pipefail
old=$1 new=$2 rows=${3:-10000} rounds=${4:-2}
tmp=$(mktemp -d)
for r in $(seq 1 "$rounds"); do
  nice -n 10 "$old" bench rollout --provider cpu --engines direct,incremental --rows "$rows" --repeats 2 --json >"$tmp/old-$r.json"
  nice -n 10 "$new" bench rollout --provider cpu --engines direct,incremental --binding off --rows "$rows" --repeats 2 --json >"$tmp/off-$r.json"
  nice -n 10 "$new" bench rollout --provider cpu --engines incremental --binding on --rows "$rows" --repeats 2 --json >"$tmp/on-$r.json"
done
python3 - "$tmp" <<'PYEOF'
import glob, json, os, sys
names = {"old": "before (main)", "off": "after, --binding off (auto)", "on": "after, --binding on"}
order = list(names)
rows = []
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    v, r = os.path.basename(f)[:-5].split("-")
    t = json.load(open(f))
    c = t["columns"]
    i = {k: c.index(k) for k in ("style", "engine", "rows", "transitions/s", "per CPU-second")}
    for row in t["rows"]:
        rows.append((row[i["style"]], row[i["engine"]], order.index(v), int(r), row[i["rows"]], row[i["transitions/s"]], row[i["per CPU-second"]]))
print("| style | engine | variant | round | rows | transitions/s | per CPU-second |")
print("|---|---|---|---|---|---|---|")
for style, engine, v, r, n, tps, cpu in sorted(rows):
    print(f"| {style} | {engine} | {names[order[v]]} | {r} | {n} | {tps:,.0f} | {cpu:,.0f} |")
PYEOF
rm -rf "$tmp"
