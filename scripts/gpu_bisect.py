#!/usr/bin/env python3
"""Find the ONNX node that crashes (or mismatches on) ONNX Runtime's CUDA provider.

Driven by scripts/gpu_bisect.sh (read its header); needs python3 with onnx and
numpy only. For each target graph NAME (GRAPHS/NAME.onnx with inputs
GRAPHS/NAME.npz) it runs the full graph through infer.test's TestCUDAGraphFile
(CPU vs the test provider, 1e-4), then cuts the graph at node prefixes -- the
nodes 0..i in file order, with every tensor they make that a later node or the
graph's outputs need (and node i's own outputs) as outputs, so that each prefix
runs all of its nodes -- and searches, several cuts at a time, for the first
prefix that fails (crash, nonzero exit, timeout or mismatch). Each try runs in
its own process under `timeout`. It then prints the culprit node (op type,
attributes, inputs with dtypes and shapes), runs it alone (and the suspects:
Gather, GatherElements, TopK, Slice, ops on zero-size tensors) as one-node
graphs fed the values the CPU computed for them, and runs the full graph with a
few session options. The report goes to stdout and OUT/bisect.txt.
"""
import argparse
import concurrent.futures as cf
import os
import re
import shlex
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

T0 = time.time()
LOCK = threading.Lock()
REPORT = {}  # report lines by graph ("" for the run as a whole), in order
CTX = threading.local()  # CTX.key: the graph the calling thread works on


def say(*parts, key=None):
    line = " ".join(str(p) for p in parts)
    if key is None:
        key = getattr(CTX, "key", "")
    with LOCK:
        REPORT.setdefault(key, []).append(line)
        print(line, flush=True)


class Runner:
    """Runs TestCUDAGraphFile in a fresh process per try, at most par at once."""

    def __init__(self, a):
        self.a = a
        self.sem = threading.Semaphore(a.par)
        self.n = 0
        os.makedirs(os.path.join(a.work, "tries"), exist_ok=True)

    def left(self):
        return self.a.budget - (time.time() - T0)

    def run(self, tag, model, inputs, provider=None, opts="", alloc="", dump=None, env=None, wrap="", limit=0):  # noqa: PLR0913
        """Returns a dict: kind (ok, mismatch, crash, timeout, cuda-error,
        broken, cpu-only, skipped), secs, log (path), detail (one line)."""
        with self.sem:
            limit = min(limit or self.a.try_timeout, int(self.left()) - 2)
            if limit < 5:
                return {"kind": "skipped", "secs": 0, "log": "", "detail": "budget spent"}
            with LOCK:
                self.n += 1
                n = self.n
            log = os.path.join(self.a.work, "tries", "%03d-%s.log" % (n, re.sub(r"[^A-Za-z0-9_.-]", "_", tag)))
            e = dict(os.environ)
            e.update({"ADMPO_GPU_TEST": "1", "ADMPO_GPU_GRAPH": model, "ADMPO_GPU_GRAPH_INPUTS": inputs,
                      "ADMPO_GPU_GRAPH_PROVIDER": provider or self.a.provider, "ADMPO_GPU_GRAPH_OPTS": opts,
                      "ADMPO_GPU_GRAPH_ALLOC": alloc, "ADMPO_GPU_GRAPH_DUMP": dump or ""})
            e.update(env or {})
            cmd = "timeout -k 3 %d %s %s %s -test.run '^TestCUDAGraphFile$' -test.v -test.timeout %ds" % (
                limit, self.a.run, wrap, shlex.quote(self.a.infer_test), limit + 30)
            t = time.time()
            with open(log, "w") as f:
                f.write("$ %s\n# %s\n\n" % (cmd, " ".join("%s=%s" % (k, v) for k, v in sorted(e.items())
                                                          if k.startswith("ADMPO_") or k == "LD_LIBRARY_PATH")))
                f.flush()
                rc = subprocess.call(["bash", "-c", cmd], stdout=f, stderr=subprocess.STDOUT, env=e,
                                     cwd=self.a.work)
            secs = time.time() - t
            out = open(log, errors="replace").read()
        return classify(rc, out, secs, log)


def classify(rc, out, secs, log):
    r = {"rc": rc, "secs": secs, "log": log}
    errs = re.findall(r"^GRAPHFILE ERROR (\S+): (.*)$", out, re.M)
    ran = "GRAPHFILE running on" in out
    if "GRAPHFILE RESULT match" in out and rc == 0:
        r.update(kind="ok", detail="match")
    elif "GRAPHFILE RESULT cpu-only" in out and rc == 0:
        r.update(kind="cpu-only", detail="cpu only")
    elif "GRAPHFILE RESULT mismatch" in out:
        bad = [l.split(" ", 2)[2] for l in out.splitlines() if l.startswith("GRAPHFILE output") and "MISMATCH" in l]
        r.update(kind="mismatch", detail="; ".join(bad)[:400])
    elif rc in (124, 137):
        r.update(kind="timeout", detail="timed out (%s)" % ("in Run" if ran else "before Run"))
    elif errs:
        stage, msg = errs[0]
        kind = "broken" if stage.startswith(("ref-", "read", "inputs", "init", "dump", "outputs")) else "cuda-error"
        r.update(kind=kind, detail="%s: %s" % (stage, msg[:300]))
    else:
        sig = re.search(r"^(SIG[A-Z]+: [^\n]*)\n(PC=[^\n]*)?", out, re.M) or re.search(r"^(\[signal [^\n]*\])()", out, re.M)
        where = "in Run" if ran else "before Run (session creation)"
        if "simulated crash" in out:
            where += ", simulated"
        r.update(kind="crash", detail="rc=%d %s%s" % (rc, where, (": " + " ".join(x for x in sig.groups() if x)) if sig else ""))
    return r


def failed(r):
    return r["kind"] in ("mismatch", "crash", "timeout", "cuda-error")


def fmt(r):
    return "%s (%s, %.1fs)" % (r["kind"], r.get("detail", ""), r["secs"])


class Graph:
    """One ONNX graph and the tools to cut it."""

    def __init__(self, path):
        self.path = path
        self.m = onnx.load(path)
        g = self.m.graph
        self.nodes = list(g.node)
        self.inits = {t.name: t for t in g.initializer}
        self.inputs = [i for i in g.input if i.name not in self.inits]
        self.outputs = {o.name: o for o in g.output}
        self.vinfo = {v.name: v for v in g.value_info}
        self.producer = {}
        for i, n in enumerate(self.nodes):
            for o in n.output:
                if o:
                    self.producer[o] = i
        # Topological order is what the prefix cuts rely on.
        have = set(self.inits) | {i.name for i in self.inputs}
        for i, n in enumerate(self.nodes):
            for x in n.input:
                if x and x not in have:
                    raise SystemExit("%s: node %d (%s) reads %r before it is made: not topologically sorted" %
                                     (path, i, n.name, x))
            have.update(o for o in n.output if o)
        self.types = {}
        try:
            inf = shape_inference.infer_shapes(self.m)
            for v in list(inf.graph.value_info) + list(inf.graph.output) + list(inf.graph.input):
                if v.type.tensor_type.elem_type:
                    self.types[v.name] = v.type.tensor_type.elem_type
        except Exception as e:  # noqa: BLE001 - reported, and missing types fail later with a name
            say("  (shape inference failed: %s)" % e)

    def label(self, i):
        n = self.nodes[i]
        return "node %d %s %r" % (i, n.op_type, n.name)

    def frontier(self, i):
        """Outputs of prefix 0..i: what later nodes or the graph outputs need, and node i's outputs."""
        later = set(self.outputs)
        for n in self.nodes[i + 1:]:
            later.update(x for x in n.input if x)
        outs = []
        for n in self.nodes[: i + 1]:
            for o in n.output:
                if o and (o in later or n is self.nodes[i]) and o not in outs:
                    outs.append(o)
        return outs

    def out_info(self, name):
        if name in self.outputs:
            return self.outputs[name]
        if name not in self.types:
            raise SystemExit("%s: no type known for %r (shape inference): cannot make it an output" % (self.path, name))
        return helper.make_tensor_value_info(name, self.types[name], None)

    def sub(self, outputs, path):
        """Writes the graph pruned to what outputs need; returns its node indices."""
        need, keep = set(outputs), set()
        for i in range(len(self.nodes) - 1, -1, -1):
            n = self.nodes[i]
            if any(o in need for o in n.output if o):
                keep.add(i)
                need.update(x for x in n.input if x)
        nodes = [self.nodes[i] for i in sorted(keep)]
        made = {o for n in nodes for o in n.output if o}
        g = helper.make_graph(
            nodes, "cut",
            [i for i in self.inputs if i.name in need],
            [self.out_info(o) for o in outputs],
            initializer=[t for name, t in self.inits.items() if name in need],
            value_info=[v for name, v in self.vinfo.items() if name in made])
        m = helper.make_model(g, opset_imports=self.m.opset_import, ir_version=self.m.ir_version,
                              producer_name="gpu_bisect")
        onnx.save(m, path)
        return sorted(keep)

    def single(self, i, vals, path, npz):
        """Writes node i alone, its inputs fed the captured values (rank-0
        values and initializers stay initializers); returns its inputs' description."""
        n = self.nodes[i]
        ins, inits, feed, desc = [], [], {}, []
        seen = set()
        for x in n.input:
            if not x or x in seen:
                continue
            seen.add(x)
            if x in self.inits:
                t = self.inits[x]
                a = numpy_helper.to_array(t)
                inits.append(t)
                desc.append("%s %s%s (initializer%s)" % (x, a.dtype, list(a.shape), ": " + str(a.ravel().tolist()) if a.size <= 4 else ""))
                continue
            a = vals[x]
            if a.ndim == 0:
                inits.append(numpy_helper.from_array(a, x))
                desc.append("%s %s[] = %s (made an initializer)" % (x, a.dtype, a.item()))
                continue
            ins.append(helper.make_tensor_value_info(x, helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype")
                                                     else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape)))
            feed[x] = a
            desc.append("%s %s%s%s" % (x, a.dtype, list(a.shape), describe_values(a)))
        outs = [self.out_info(o) for o in n.output if o]
        g = helper.make_graph([n], "single_" + n.op_type, ins, outs, initializer=inits)
        onnx.save(helper.make_model(g, opset_imports=self.m.opset_import, ir_version=self.m.ir_version,
                                    producer_name="gpu_bisect"), path)
        np.savez(npz, **feed)
        return desc


def describe_values(a):
    if a.size == 0:
        return " (empty)"
    if a.dtype.kind in "iub":
        v = a.ravel()
        return " = %s" % v.tolist() if v.size <= 6 else " (min %d, max %d)" % (v.min(), v.max())
    return ""


def attrs(n):
    out = []
    for at in n.attribute:
        v = helper.get_attribute_value(at)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        out.append("%s=%s" % (at.name, v))
    return ", ".join(out) or "none"


def bisect(a, R, name):
    """Runs every check on GRAPHS/name.onnx; returns the smallest graph seen
    to crash (model, inputs), or None."""
    CTX.key = name
    path, npz = os.path.join(a.graphs, name + ".onnx"), os.path.join(a.graphs, name + ".npz")
    if not (os.path.exists(path) and os.path.exists(npz)):
        say("== %s: %s or its .npz is missing: skipped" % (name, path))
        return
    G = Graph(path)
    d = os.path.join(a.work, name)
    os.makedirs(d, exist_ok=True)
    N = len(G.nodes)
    say("== %s: %d nodes, inputs %s" % (name, N, ", ".join(i.name for i in G.inputs)))
    # The full graph on the test provider and, at once, every intermediate on the CPU.
    allp, alln = os.path.join(d, "all.onnx"), os.path.join(d, "all_values.npz")
    every = [o for n in G.nodes for o in n.output if o and (o in G.types or o in G.outputs)]
    G.sub(every, allp)
    with cf.ThreadPoolExecutor(2) as ex:
        f_full = ex.submit(R.run, name + "-full", path, npz)
        f_dump = ex.submit(R.run, name + "-cpu-values", allp, npz, provider="none", dump=alln)
        full, dump = f_full.result(), f_dump.result()
    say("%s: full graph on %s: %s" % (name, a.provider, fmt(full)))
    vals = {}
    if dump["kind"] == "cpu-only" and os.path.exists(alln):
        with np.load(alln) as z:
            vals = {k: z[k] for k in z.files}
        with np.load(npz) as z:
            vals.update({k: z[k] for k in z.files})
    else:
        say("%s: the CPU run of every intermediate failed: %s (log %s)" % (name, fmt(dump), dump["log"]))
    culprit = None
    if failed(full):
        culprit = search(a, R, G, d, name, npz, N)
    elif full["kind"] == "skipped":
        say("%s: skipped: the budget is spent" % name)
        return None
    elif full["kind"] == "broken":
        say("%s: the graph does not run on the CPU either: %s" % (name, full.get("detail")))
        return
    else:
        say("%s: nothing to bisect (the full graph %s)%s" % (name, full["kind"], "" if a.provider == "cpu" else
            ": the engine's crash does not reproduce with this graph and these inputs in a process of its own"
            " (ADMPO_GPU_TEST=1 ADMPO_GPU_ENGINES=incremental|direct ADMPO_GPU_FORM=packed infer.test -test.run"
            " '^TestCUDARollout$' is the in-engine repro)"))
    # The culprit alone, its ancestors only, and the suspects, each as its own process.
    jobs = []
    if culprit is not None and vals:
        show_node(G, culprit, vals, name)
        anc = os.path.join(d, "culprit_ancestors.onnx")
        G.sub([o for o in G.nodes[culprit].output if o], anc)
        jobs.append(("culprit %s, with all its ancestors (the graph pruned to its outputs)" % G.label(culprit),
                     name + "-ancestors", anc, npz))
    picks = suspects(G, vals) if vals else []
    if culprit is not None and culprit not in [p for p, _ in picks]:
        picks.insert(0, (culprit, "the culprit"))
    for i, why in picks:
        p, z = os.path.join(d, "single_%03d.onnx" % i), os.path.join(d, "single_%03d.npz" % i)
        try:
            desc = G.single(i, vals, p, z)
        except Exception as e:  # noqa: BLE001 - one bad suspect must not stop the rest
            say("%s: %s: cannot build its one-node graph: %s" % (name, G.label(i), e))
            continue
        jobs.append(("%s alone (%s): %s [%s]" % (G.label(i), why, attrs(G.nodes[i]), "; ".join(desc)),
                     "%s-single-%03d" % (name, i), p, z))
    if jobs:
        say("%s: one-node graphs (captured CPU values as inputs) and the culprit's ancestors:" % name)
        with cf.ThreadPoolExecutor(a.par) as ex:
            rs = list(ex.map(lambda j: R.run(j[1], j[2], j[3]), jobs))
        for (what, _, _, _), r in zip(jobs, rs):
            say("  %-9s %s%s" % (r["kind"], what, "" if r["kind"] in ("ok", "skipped") else "  -> " + r.get("detail", "")))
    if failed(full):
        variants(a, R, name, path, npz, d)
    # The smallest graph seen to crash, for the native backtrace.
    crashing = [(j[2], j[3]) for j, r in zip(jobs, rs if jobs else []) if r["kind"] == "crash"]
    crashing.sort(key=lambda c: os.path.getsize(c[0]))
    return (crashing + [(path, npz)])[0] if full["kind"] == "crash" else None


def backtrace(a, R, name, model, npz):
    """Runs one crashing graph under the debugger; reports where it faults."""
    wrap = "%s -q -batch -nx -ex 'set pagination off' -ex 'set confirm off' " \
           "-ex 'handle SIGURG SIGPIPE SIGPROF SIGCHLD SIGUSR1 nostop noprint pass' " \
           "-ex run -ex bt -ex 'x/4i $pc' -ex 'info registers' --args" % shlex.quote(a.gdb)
    r = R.run(name + "-gdb", model, npz, wrap=wrap, limit=max(a.try_timeout, 60))
    out = open(r["log"], errors="replace").read() if r.get("log") else ""
    lines = [l for l in out.splitlines() if re.match(r"(#\d+ |=> | +0x[0-9a-f]+ <|Thread .* received signal|Program received signal|r[a-z0-9]+ +0x)", l)]
    say("%s: native backtrace of %s under %s (%s):" % (name, os.path.basename(model), os.path.basename(a.gdb), r["kind"]), key=name)
    if not lines:
        say("    no signal caught; log %s" % r.get("log"), key=name)
    for l in lines[:40]:
        say("    " + l[:240], key=name)


def search(a, R, G, d, name, npz, N):
    """k-ary search for the first failing prefix; returns its last node's index."""
    lo, hi, rounds, tries = -1, N - 1, 0, 0
    results = {}
    while hi - lo > 1:
        if R.left() < 10:
            say("%s: budget spent while searching: the culprit is one of nodes %d..%d" % (name, lo + 1, hi))
            return None
        k = min(a.par, hi - lo - 1)
        pts = sorted({lo + (hi - lo) * j // (k + 1) for j in range(1, k + 1)} - {lo, hi})
        paths = {}
        for p in pts:
            paths[p] = os.path.join(d, "prefix_%03d.onnx" % p)
            G.sub(G.frontier(p), paths[p])
        with cf.ThreadPoolExecutor(len(pts)) as ex:
            rs = dict(zip(pts, ex.map(lambda p: R.run("%s-prefix-%03d" % (name, p), paths[p], npz), pts)))
        rounds, tries = rounds + 1, tries + len(pts)
        results.update(rs)
        brk = [p for p in pts if rs[p]["kind"] in ("broken", "skipped")]
        if brk:
            r = rs[brk[0]]
            say("%s: prefix %d could not be tested: %s (log %s)" % (name, brk[0], fmt(r), r["log"]))
            return None
        bad = [p for p in pts if failed(rs[p])]
        if bad:
            hi = bad[0]
            lo = max([lo] + [p for p in pts if p < hi])
            late_ok = [p for p in pts if p > hi and not failed(rs[p])]
            if late_ok:
                say("%s: note: prefixes %s pass although prefix %d fails (not monotone)" % (name, late_ok, hi))
        else:
            lo = max(pts)
    say("%s: search: %d rounds, %d tries; first failing prefix ends at %s: %s" %
        (name, rounds, tries, G.label(hi), fmt(results.get(hi, {"kind": "full graph", "secs": 0, "detail": "the full graph"}))))
    if lo >= 0:
        say("%s: the prefix before it (ends at %s) passes: %s" % (name, G.label(lo), fmt(results[lo])))
    else:
        say("%s: it is the graph's first node" % name)
    return hi


def show_node(G, i, vals, name):
    n = G.nodes[i]
    say("%s: CULPRIT %s: %s(%s) -> %s; attributes: %s" % (name, G.label(i), n.op_type, ", ".join(n.input),
                                                         ", ".join(n.output), attrs(n)))
    for x in n.input:
        if not x:
            continue
        if x in G.inits:
            a = numpy_helper.to_array(G.inits[x])
            src = "initializer"
        elif x in vals:
            a = vals[x]
            src = "graph input" if x in {g.name for g in G.inputs} else "made by " + G.label(G.producer[x])
        else:
            say("    input %s: no value captured" % x)
            continue
        say("    input %s: %s%s%s (%s)" % (x, a.dtype, list(a.shape), describe_values(a), src))
    for o in n.output:
        if o in vals:
            say("    output %s on the CPU: %s%s%s" % (o, vals[o].dtype, list(vals[o].shape), describe_values(vals[o])))


def suspects(G, vals):
    """The nodes worth running alone: the first of each suspect kind."""
    picks, kinds = [], set()

    def add(i, kind):
        if kind not in kinds and i not in [p for p, _ in picks]:
            kinds.add(kind)
            picks.append((i, kind))

    for i, n in enumerate(G.nodes):
        dyn = [x for x in n.input[1:] if x and x not in G.inits]
        if n.op_type == "Gather":
            ix = n.input[1]
            dt = vals[ix].dtype if ix in vals else numpy_helper.to_array(G.inits[ix]).dtype
            add(i, "Gather, %s indices, %s" % (dt, "data-dependent" if dyn else "constant"))
        elif n.op_type in ("GatherElements", "TopK", "ScatterElements", "NonZero"):
            add(i, n.op_type)
        elif n.op_type == "Slice" and dyn:
            add(i, "Slice with data-dependent bounds")
            if any(o in vals and vals[o].size == 0 for o in n.output):
                add(i, "Slice with an empty result")
        for x in n.input:
            if x and x not in G.inits and x in vals and vals[x].size == 0:
                add(i, "%s on a zero-size input" % n.op_type)
                break
    return picks[:10]


def variants(a, R, name, path, npz, d):
    """The full graph again with session options that might avoid the
    failure, and with inputs that take the data-dependent paths differently."""
    vs = [("graph optimisation off (opt=0)", {"opts": "opt=0"}),
          ("memory pattern off (mempattern=0)", {"opts": "mempattern=0"}),
          ("outputs allocated by ONNX Runtime (alloc=ort)", {"alloc": "ort"}),
          ("CUDA arena grows by what is asked (arena_extend_strategy=kSameAsRequested)",
           {"env": {"ADMPO_CUDA_EP_OPTIONS": "use_tf32=0,arena_extend_strategy=kSameAsRequested"}}),
          ("no CPU fallback (session.disable_cpu_ep_fallback=1)", {"opts": "nofallback"})]
    with np.load(npz) as z:
        feed = {k: z[k] for k in z.files}
    rows = next((v.shape[0] for v in feed.values() if v.ndim and v.size and v.dtype == np.float32), 1)
    alt = []
    for k, v in feed.items():
        if v.size == 0 and v.ndim:
            shape = [s if s else rows for s in v.shape]
            alt.append(("input %s non-empty: zeros %s instead of %s" % (k, shape, list(v.shape)), {k: np.zeros(shape, v.dtype)}))
        if k == "lengths" and v.size:
            alt.append(("every row's length %d (no row ends early)" % v.max(), {k: np.full_like(v, v.max())}))
            alt.append(("every row's length 1", {k: np.ones_like(v)}))
    for j, (what, repl) in enumerate(alt):
        z = os.path.join(d, "inputs_variant_%d.npz" % j)
        np.savez(z, **{**feed, **repl})
        vs.append((what, {"inputs": z}))
    vs.append(("verbose log (node placements)", {"opts": "verbose"}))

    def one(v):
        kw = dict(v[1])
        z = kw.pop("inputs", npz)
        tag = re.sub(r"[^a-z0-9]+", "_", v[0].lower())[:40]
        return R.run("%s-variant-%s" % (name, tag), path, z, **kw)

    with cf.ThreadPoolExecutor(a.par) as ex:
        rs = list(ex.map(one, vs))
    say("%s: the full graph with other session options or inputs:" % name)
    for (what, _), r in zip(vs, rs):
        say("  %-9s %s%s" % (r["kind"], what, "" if r["kind"] == "ok" else "  -> " + r.get("detail", "")))
    log = rs[-1]["log"]
    if log and os.path.exists(log):
        keep, ep = [], ""
        for l in open(log, errors="replace"):
            if "MemcpyTransformer" in l and "modified" in l:
                keep.append(l.split("]", 1)[-1].strip())
            if "VerifyEachNodeIsAssignedToAnEp" not in l:
                continue
            t = l.split("]", 1)[-1].strip()
            m = re.search(r"placed on \[(\w+)\]", t)
            if m:
                ep = m.group(1)
                keep.append(t)
            elif t != "Node placements" and ep != "CUDAExecutionProvider":
                keep.append("  " + t)
        if keep:
            say("  node placements and copies (verbose log; %d lines, first 40):" % len(keep))
            for l in keep[:40]:
                say("    " + l[:200])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--infer-test", required=True)
    p.add_argument("--graphs", required=True)
    p.add_argument("--targets", required=True, help="space-separated graph names")
    p.add_argument("--controls", default="", help="graphs expected to pass (run once each)")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--run", default="", help="wrapper prefix for each try (bash words)")
    p.add_argument("--provider", default="cuda")
    p.add_argument("--budget", type=float, default=95)
    p.add_argument("--try-timeout", type=int, default=25)
    p.add_argument("--par", type=int, default=6)
    p.add_argument("--gdb", default="", help="debugger (cuda-gdb or gdb) for a native backtrace of a crash")
    a = p.parse_args()
    R = Runner(a)
    say("gpu_bisect: provider %s, budget %.0fs, %d processes at once, %ds per try; targets %s" %
        (a.provider, a.budget, a.par, a.try_timeout, a.targets))
    for c in a.controls.split():
        path = os.path.join(a.graphs, c + ".onnx")
        if os.path.exists(path):
            r = R.run(c + "-control", path, os.path.join(a.graphs, c + ".npz"))
            say("control %s (expected to match): %s" % (c, fmt(r)))
            if r["kind"] != "ok":
                say("  the control fails: the runner or the host is broken, not (only) the graphs; log %s" % r["log"])
                say("  log tail: " + " | ".join(open(r["log"], errors="replace").read().splitlines()[-8:])[:1500])
    targets = a.targets.split()
    crashing = {}
    # Two graphs at a time, in the order given: the first ones get the budget first.
    with cf.ThreadPoolExecutor(2) as ex:
        fs = [ex.submit(bisect, a, R, t) for t in targets]
        for t, f in zip(targets, fs):
            try:
                c = f.result()
                if c:
                    crashing[t] = c
            except SystemExit as e:
                say("== %s: stopped: %s" % (t, e), key=t)
            except Exception as e:  # noqa: BLE001 - report and go on with the other graphs
                say("== %s: stopped by an error in gpu_bisect.py: %r" % (t, e), key=t)
    if a.gdb and crashing:
        with cf.ThreadPoolExecutor(a.par) as ex:
            list(ex.map(lambda t: backtrace(a, R, t, *crashing[t]), list(crashing)[:2]))
    say("gpu_bisect: %d tries in %.0fs; logs under %s" % (R.n, time.time() - T0, a.work))
    with open(os.path.join(a.out, "bisect.txt"), "w") as f:
        for k in [""] + [k for k in REPORT if k]:
            f.write("\n".join(REPORT.get(k, [])) + "\n\n")


if __name__ == "__main__":
    main()
