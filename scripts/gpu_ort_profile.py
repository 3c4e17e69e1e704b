#!/usr/bin/env python3
"""Sums ONNX Runtime profiling traces (admpo bench rollout --ort-profile PREFIX
writes one per session, PREFIX-N_<date>_<time>.json) into a Markdown table:
where a roll-out's time goes inside ONNX Runtime, operator by operator.

  python3 scripts/gpu_ort_profile.py TRACE.json [TRACE.json ...]

A trace is a JSON array of Chrome-trace events. Per session: "model_run"
events (cat "Session") are whole Run calls; "<node>_kernel_time" events (cat
"Node") are one node's execution, with args op_name and provider. The table
sums the kernel times per (operator, provider) over every trace given, with
the count and the share of all kernel time, and prints the Run total beside
the kernel total: where the kernels' sum is far below the Run total, the time
is outside the nodes (copies, allocation, waits). With the CUDA provider a
node's time is its host side (launches, and waits where the node syncs, e.g.
a copy to the host), not its GPU time.

Exit 2 on a file that is not such a trace (named in the message)."""
import json
import sys


def die(msg):
    print(f"gpu_ort_profile: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as fh:
            events = json.load(fh)
    except (OSError, ValueError) as err:
        die(f"{path}: not a readable JSON trace: {err}")
    if not isinstance(events, list):
        die(f"{path}: not a trace (want a JSON array of events)")
    return events


def summarise(paths):
    ops = {}
    runs = kernels = 0.0
    nruns = 0
    for path in paths:
        for e in load(path):
            if not isinstance(e, dict):
                continue
            cat, name, dur = e.get("cat"), e.get("name", ""), e.get("dur", 0)
            if cat == "Session" and name == "model_run":
                runs += dur
                nruns += 1
            elif cat == "Node" and name.endswith("_kernel_time"):
                args = e.get("args", {})
                key = (args.get("op_name", "?"), args.get("provider", "?"))
                c = ops.setdefault(key, [0, 0.0])
                c[0] += 1
                c[1] += dur
                kernels += dur
    return ops, runs, nruns, kernels


def main(argv):
    if not argv:
        die("usage: gpu_ort_profile.py TRACE.json [TRACE.json ...]")
    ops, runs, nruns, kernels = summarise(argv)
    print(f"traces {len(argv)}; Run calls {nruns}, {runs / 1e3:,.1f} ms in all; node kernel time "
          f"{kernels / 1e3:,.1f} ms ({100 * kernels / runs if runs else 0:.1f}% of the Runs)")
    print()
    print("| operator | provider | nodes run | ms | % of kernel time | µs per node |")
    print("|---|---|---|---|---|---|")
    for (op, prov), (n, d) in sorted(ops.items(), key=lambda kv: -kv[1][1]):
        print(f"| {op} | {prov} | {n} | {d / 1e3:,.2f} | {100 * d / kernels if kernels else 0:.1f} | {d / n:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
