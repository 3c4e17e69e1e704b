#!/usr/bin/python3
"""Per-block statistics of offline runs, recomputed from their offline.csv.

For each run (a run directory or its offline.csv) prints one markdown table
with a column per block of epochs (100 by default; the last block may be
shorter):

  score          mean D4RL normalised score of the block's evaluations
  >= HI / < LO   share of the block's epochs scoring at least HI / below LO
  penalty/reward the block's mean roll-out penalty (beta U) over its mean
                 roll-out reward, and the critics' mean Q

These are the tables of docs/results-offline.md ("The offline budget
runs"). Standard library only:

  /usr/bin/python3 scripts/offline_epoch_stats.py [--block 100] [--hi 80] [--lo 20] RUN...
"""
import argparse
import csv
import os
import statistics
import sys

NEEDED = ("epoch", "score_mean", "rollout_reward_mean", "rollout_penalty_mean", "q_mean")


def read_rows(path):
    if os.path.isdir(path):
        path = os.path.join(path, "offline.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no epochs")
    missing = [c for c in NEEDED if c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (not an offline.csv?)")
    return path, rows


def blocks(rows, size):
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def table(rows, size, hi, lo):
    heads, score, shares, pq = [], [], [], []
    for b in blocks(rows, size):
        s = [float(r["score_mean"]) for r in b]
        pen = statistics.mean(float(r["rollout_penalty_mean"]) for r in b)
        rew = statistics.mean(float(r["rollout_reward_mean"]) for r in b)
        q = statistics.mean(float(r["q_mean"]) for r in b)
        heads.append(f'{b[0]["epoch"]}-{b[-1]["epoch"]}')
        score.append(f"{statistics.mean(s):.1f}")
        shares.append(f"{sum(x >= hi for x in s) / len(s):.2f} / {sum(x < lo for x in s) / len(s):.2f}")
        pq.append(f"{pen / rew:.3f}, {q:.0f}" if rew else f"-, {q:.0f}")
    out = ["| epochs | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|",
           "| score | " + " | ".join(score) + " |",
           f"| epochs >= {hi:g} / < {lo:g} | " + " | ".join(shares) + " |",
           "| penalty / reward, Q | " + " | ".join(pq) + " |"]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories or offline.csv files")
    ap.add_argument("--block", type=int, default=100, help="epochs per column (default 100)")
    ap.add_argument("--hi", type=float, default=80, help="score counted as reaching the paper's level (default 80)")
    ap.add_argument("--lo", type=float, default=20, help="score counted as a failing epoch (default 20)")
    a = ap.parse_args()
    if a.block < 1:
        ap.error("--block must be at least 1")
    for run in a.runs:
        try:
            path, rows = read_rows(run)
        except (OSError, ValueError) as e:
            print(f"offline_epoch_stats: {e}", file=sys.stderr)
            return 1
        print(f"{path}: {len(rows)} epochs\n")
        print(table(rows, a.block, a.hi, a.lo))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
