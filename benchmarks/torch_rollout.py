#!/usr/bin/env python3
"""PyTorch baseline for `admpo bench rollout`: ADM-Roll with the same model
sizes and the same work per transition as admpo's two engines (infer.ADMDirect
on the packed graph, infer.ADMIncremental on the step graph), timed on a CPU or
a CUDA device. float32, torch.no_grad, random weights (output layer scaled by
0.01 as in admpo's benchmark, so that no row ends).

Work per roll-out step and chunk of rows (every start row holds a full window of
m states and m-1 actions, N(0, 0.5^2) and U[-1, 1], as infer.BenchRollout's):
  policy   the SAC actor (obs -> 256 -> 256 -> 2 act, ReLU, tanh-squashed
           Gaussian, bounds [-1, 1]) on the current states, fresh N(0, 1) noise.
  direct   one plan per row with k drawn uniformly from 1..m (ADMPO-ON), or
           every k = 1..m per row (ADMPO-OFF, U^ADM): the plans sorted by k,
           step j of the 3x200 GRU run on the prefix of plans with k > j
           (the start state's layer-0 projection computed once, step 1 without
           recurrent products), then 4 ResBlocks (Linear, Swish, residual,
           LayerNorm) and the output layer once per plan, outputs back in plan
           order (the packed ONNX graph, onnx.ADMPacked).
  incremental  each row caches the GRU state of its m plans; a step advances
           all m by one GRU step with the new action (the newest from the zero
           state, without recurrent products) and runs the head on all m
           (ADMPO-ON and -OFF alike); the start windows' actions are replayed
           once per chunk (m-1 GRU steps of the shrinking set of plans, head
           included), as infer.ADMIncremental does.
  then     next = s + mean delta + exp(lv/2)·N(0,1), reward likewise, minus
           U^ADM = sqrt(mean over state dims of the variance over k of the m
           predicted next-state means) with U^ADM; the window shifts; every
           transition (obs, act, reward, next obs, done, U) is copied to host
           memory at the end of the chunk, where admpo's transitions live.
Rows whose next state is not finite are flagged done but keep rolling (admpo
drops them; with these weights none occurs).

--compile runs the same engines with the policy, the GRU cell and the head
compiled by torch.compile (dynamic shapes, so the shrinking prefixes of the
direct engine do not recompile): the element-wise gate, Swish, LayerNorm and
soft-clamp arithmetic fused into fewer kernels, the compiled PyTorch that issue
33 asks to record beside eager. Needs torch >= 2 (torch.compile); the
compilation happens in the warm-up and is reported as "compile seconds".

Timing: a 256-row, 1-step roll-out warms each engine up, then the best of
--repeats roll-outs counts, with torch.cuda.synchronize() before and after each.
Prints a table, or with --json one JSON object. Test on the CPU with
/usr/bin/python3 (Debian's python3-torch); on a GPU host run --device cuda."""
import argparse
import json
import math
import platform
import sys
import time

import torch

STYLES = ((False, "ADMPO-ON (no penalty)"), (True, "ADMPO-OFF (U^ADM)"))


def ints(s):
    return [int(x) for x in s.split(",") if x]


class Model:
    """Random ADM and actor weights of admpo's benchmark sizes."""

    def __init__(self, od, ad, m, hidden, layers, blocks, dev, gen):
        def w(i, o, scale=1.0):
            return (torch.randn(i, o, generator=gen) * (scale / math.sqrt(i))).to(dev)

        def b(o):
            return (torch.randn(o, generator=gen) * 0.01).to(dev)

        self.od, self.ad, self.m, self.H, self.L = od, ad, m, hidden, layers
        H = hidden
        self.mean = (torch.randn(od + ad, generator=gen) * 0.1).to(dev)
        self.std = (torch.rand(od + ad, generator=gen) + 0.5).to(dev)
        self.wi = [w(od + ad if l == 0 else H, 3 * H) for l in range(layers)]
        self.wh = [w(H, 3 * H) for _ in range(layers)]
        self.bi = [b(3 * H) for _ in range(layers)]
        self.bh = [b(3 * H) for _ in range(layers)]
        self.wi_obs, self.wi_act = self.wi[0][:od], self.wi[0][od:]
        self.blk = [(w(H, H), b(H), torch.ones(H, device=dev), torch.zeros(H, device=dev)) for _ in range(blocks)]
        self.wout, self.bout = w(H, 2 * (od + 1), 0.01), b(2 * (od + 1))
        self.lvmax = torch.full((od + 1,), 0.5, device=dev)
        self.lvmin = torch.full((od + 1,), -10.0, device=dev)
        self.actor = [(w(od, 256), b(256)), (w(256, 256), b(256)), (w(256, 2 * ad), b(2 * ad))]

    # --- policy ---------------------------------------------------------------
    def act(self, obs, noise):
        x = obs
        for i, (wt, bs) in enumerate(self.actor):
            x = torch.addmm(bs, x, wt)
            if i < len(self.actor) - 1:
                x = torch.relu(x)
        mu, t = x[:, : self.ad], x[:, self.ad:]
        logstd = -5 + 0.5 * 7 * (torch.tanh(t) + 1)
        return torch.tanh(mu + torch.exp(logstd) * noise)  # scale 1, bias 0

    # --- ADM pieces -----------------------------------------------------------
    def norm_obs(self, s):
        return (s - self.mean[: self.od]) / self.std[: self.od]

    def norm_act(self, a):
        return (a - self.mean[self.od:]) / self.std[self.od:]

    def cell(self, gi, l, h):
        """One GRU cell (gates r, z, n; reset applied after the recurrent
        product); h None is the zero state (no recurrent product)."""
        H = self.H
        gh = self.bh[l].expand_as(gi) if h is None else torch.addmm(self.bh[l], h, self.wh[l])
        r = torch.sigmoid(gi[:, :H] + gh[:, :H])
        z = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        return (1 - z) * n if h is None else (1 - z) * n + z * h

    def head(self, x, s):
        """ResBlocks and output layer on top states x, for start states s:
        next-state mean, reward mean and soft-clamped log-variance."""
        for wt, bs, g, be in self.blk:
            u = torch.addmm(bs, x, wt)
            x = torch.nn.functional.layer_norm(x + u * torch.sigmoid(u), (self.H,), g, be, 1e-5)
        o = torch.addmm(self.bout, x, self.wout)
        d = self.od + 1
        mean, lv = o[:, :d], o[:, d:]
        lv = self.lvmax - torch.nn.functional.softplus(self.lvmax - lv)
        lv = self.lvmin + torch.nn.functional.softplus(lv - self.lvmin)
        return s + mean[:, : self.od], mean[:, self.od], lv

    def packed(self, s, acts, k):
        """The packed direct graph: plans with start states s [n, od],
        actions acts [m, n, ad] (zeros past k) and lengths k [n] in 1..m."""
        n = s.shape[0]
        ks, order = torch.sort(k, descending=True, stable=True)
        s_o, a_o = s[order], acts[:, order]
        counts = [(ks > j).sum().item() for j in range(self.m)]  # prefix sizes
        ps = torch.addmm(self.bi[0], self.norm_obs(s_o), self.wi_obs)  # once per plan
        top = torch.empty(n, self.H, device=s.device)
        h = [None] * self.L
        for j in range(self.m):
            nj = counts[j]
            if nj == 0:
                break
            x = ps[:nj] + self.norm_act(a_o[j, :nj]) @ self.wi_act
            for l in range(self.L):
                if l > 0:
                    x = torch.addmm(self.bi[l], x, self.wi[l])
                x = self.cell(x, l, None if j == 0 else h[l][:nj])
                h[l] = x
            top[:nj] = x  # rows ending at step j keep it
        nxt, rew, lv = self.head(top, s_o)
        inv = torch.empty_like(order)
        inv[order] = torch.arange(n, device=s.device)
        return nxt[inv], rew[inv], lv[inv]

    def step(self, hin, s, a):
        """The step graph on pairs: hin [L, n0, H] continues the first n0
        pairs, the others start from zero; s [n, od] start states, a [n, ad]."""
        n0 = hin.shape[1]
        x = torch.addmm(self.bi[0], torch.cat([self.norm_obs(s), self.norm_act(a)], 1), self.wi[0])
        hout = []
        for l in range(self.L):
            if l > 0:
                x = torch.addmm(self.bi[l], x, self.wi[l])
            xc = self.cell(x[:n0], l, hin[l]) if n0 > 0 else x[:0, : self.H]
            xf = self.cell(x[n0:], l, None)
            x = torch.cat([xc, xf], 0)
            hout.append(x)
        nxt, rew, lv = self.head(x, s)
        return torch.stack(hout), nxt, rew, lv


def u_adm(means):
    """U^ADM from means [kn, n, od]: sqrt(mean_d population var_k)."""
    dev = means - means.mean(0)
    return torch.sqrt((dev * dev).mean(0).mean(1))


def roll_chunk(mod, S, A, horizon, penalty, engine, out, lo):
    """Roll a chunk out. S [m, n, od] window states (slot m-1 current), A [m,
    n, ad] actions (slot j taken at state j; slot m-1 set each step)."""
    m, n = S.shape[0], S.shape[1]
    od, ad, L, H, dev = mod.od, mod.ad, mod.L, mod.H, S.device
    rows = torch.arange(n, device=dev)
    if engine == "incremental":  # replay the start windows: slot j holds h after A[j..m-2]
        hc = torch.zeros(L, m, n, H, device=dev)
        for t in range(m - 1):
            nj = m - 1 - t  # slots j with j + t <= m - 2
            js = torch.arange(nj, device=dev)
            hin = hc[:, :nj].reshape(L, nj * n, H) if t > 0 else torch.zeros(L, 0, H, device=dev)
            s = S[:nj].reshape(nj * n, od)
            a = A[js + t].reshape(nj * n, ad)
            hout, _, _, _ = mod.step(hin, s, a)
            hc[:, :nj] = hout.reshape(L, nj, n, H)
    recs = []
    for step in range(horizon):
        cur = S[m - 1]
        act = mod.act(cur, torch.randn(n, ad, device=dev))
        A[m - 1] = act
        k = torch.randint(1, m + 1, (n,), device=dev)
        u = None
        if engine == "direct":
            if not penalty:
                s0 = S[m - k, rows]
                idx = (m - k).unsqueeze(0) + torch.arange(m, device=dev).unsqueeze(1)  # [m, n]
                acts = A[idx.clamp(max=m - 1), rows.unsqueeze(0)]
                acts = acts * (torch.arange(m, device=dev).unsqueeze(1) < k.unsqueeze(0)).unsqueeze(2)
                nxt, rew, lv = mod.packed(s0, acts, k)
            else:  # every k = 1..m per row: plan (kk, row), k-major
                kk = torch.arange(1, m + 1, device=dev).repeat_interleave(n)
                pr = rows.repeat(m)
                s0 = S[m - kk, pr]
                idx = (m - kk).unsqueeze(0) + torch.arange(m, device=dev).unsqueeze(1)
                acts = A[idx.clamp(max=m - 1), pr.unsqueeze(0)]
                acts = acts * (torch.arange(m, device=dev).unsqueeze(1) < kk.unsqueeze(0)).unsqueeze(2)
                na, ra, la = mod.packed(s0, acts, kk)
                na, ra, la = na.view(m, n, od), ra.view(m, n), la.view(m, n, od + 1)
                u = u_adm(na)
                pick = k - 1
                nxt, rew, lv = na[pick, rows], ra[pick, rows], la[pick, rows]
        else:  # incremental: all m plans advance by the new action; slot m-1 is fresh
            hin = hc[:, : m - 1].reshape(L, (m - 1) * n, H)
            s = S.reshape(m * n, od)
            a = act.repeat(m, 1)
            hout, na, ra, la = mod.step(hin, s, a)
            na, ra, la = na.view(m, n, od), ra.view(m, n), la.view(m, n, od + 1)
            if penalty:
                u = u_adm(na)
            pick = m - k  # slot m-k holds the k-step plan
            nxt, rew, lv = na[pick, rows], ra[pick, rows], la[pick, rows]
            hout = hout.view(L, m, n, H)
            hc = torch.cat([hout[:, 1:], torch.zeros(L, 1, n, H, device=dev)], 1)  # the window's shift
        nxt = nxt + torch.exp(0.5 * lv[:, :od]) * torch.randn(n, od, device=dev)
        rew = rew + torch.exp(0.5 * lv[:, od]) * torch.randn(n, device=dev)
        if u is None:
            u = torch.zeros(n, device=dev)
        else:
            rew = rew - u
        done = ~torch.isfinite(nxt).all(1)
        recs.append((cur.clone(), act.clone(), rew, nxt, done, u))
        S = torch.cat([S[1:], nxt.unsqueeze(0)], 0)
        A = torch.cat([A[1:], torch.zeros(1, n, ad, device=dev)], 0)
    for i, name in enumerate(("obs", "act", "rew", "next", "done", "u")):
        out[name][lo * horizon:(lo + n) * horizon].copy_(torch.stack([r[i] for r in recs], 1).reshape(n * horizon, -1).squeeze(-1))


def rollout(mod, S0, A0, horizon, penalty, engine, chunk):
    """S0 [N, m, od], A0 [N, m-1, ad] start windows (device); returns the
    transitions in host memory."""
    N, m = S0.shape[0], S0.shape[1]
    od, ad = mod.od, mod.ad
    out = {k: torch.empty((N * horizon,) + sh, dtype=dt) for k, sh, dt in (
        ("obs", (od,), torch.float32), ("act", (ad,), torch.float32), ("rew", (), torch.float32),
        ("next", (od,), torch.float32), ("done", (), torch.bool), ("u", (), torch.float32))}
    chunk = chunk if chunk > 0 else N
    for lo in range(0, N, chunk):
        hi = min(lo + chunk, N)
        S = S0[lo:hi].transpose(0, 1).contiguous()
        A = torch.zeros(m, hi - lo, ad, device=S0.device)
        A[: m - 1] = A0[lo:hi].transpose(0, 1)
        roll_chunk(mod, S, A, horizon, penalty, engine, out, lo)
    return out


def check(mod, dev, m):
    """The two engines give the same transitions for the same seed (64 rows,
    H 3, chunks of 24): returns the largest difference over all outputs."""
    g = torch.Generator().manual_seed(5)
    S0 = (0.5 * torch.randn(64, m, mod.od, generator=g)).to(dev)
    A0 = (2 * torch.rand(64, m - 1, mod.ad, generator=g) - 1).to(dev)
    worst = 0.0
    for penalty, _ in STYLES:
        res = []
        for engine in ("direct", "incremental"):
            torch.manual_seed(7)
            res.append(rollout(mod, S0, A0, 3, penalty, engine, 24))
        for k in res[0]:
            a, b = res[0][k], res[1][k]
            d = float((a != b).any()) if a.dtype == torch.bool else float(((a - b).abs() / a.abs().clamp(min=1)).max())
            worst = max(worst, d)
    return worst


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--rows", type=ints, default=[10000, 50000], help="start rows (comma-separated)")
    p.add_argument("--horizon", type=int, default=5)
    p.add_argument("--m", type=int, default=5)
    p.add_argument("--obs", type=int, default=11)
    p.add_argument("--act", type=int, default=3)
    p.add_argument("--hidden", type=int, default=200)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--repeats", type=int, default=2, help="timed roll-outs per engine (the fastest counts)")
    p.add_argument("--chunk-rows", type=int, default=8192, help="start rows rolled out together (admpo's default 8192; 0: all)")
    p.add_argument("--engines", default="direct,incremental")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--check", action="store_true", help="first check that both engines give the same transitions (fails above 1e-4)")
    p.add_argument("--compile", action="store_true", help="torch.compile the policy, the GRU cell and the head (torch >= 2)")
    a = p.parse_args()
    if a.compile and not hasattr(torch, "compile"):
        print(f"torch_rollout: --compile: torch {torch.__version__} has no torch.compile (torch >= 2 has)", file=sys.stderr)
        sys.exit(2)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_rollout: --device cuda but torch.cuda.is_available() is False")
        torch.backends.cuda.matmul.allow_tf32 = False  # full float32, as admpo's use_tf32=0
        torch.backends.cudnn.allow_tf32 = False
    engines = [e for e in a.engines.split(",") if e]
    for e in engines:
        if e not in ("direct", "incremental"):
            sys.exit(f"torch_rollout: unknown engine {e!r} (direct, incremental)")
    gen = torch.Generator().manual_seed(1)
    mod = Model(a.obs, a.act, a.m, a.hidden, a.layers, a.blocks, dev, gen)
    if a.compile:
        # Instance attributes shadow the methods; dynamic shapes: the direct
        # engine's prefixes and the chunks' last rows vary in size.
        mod.act = torch.compile(mod.act, dynamic=True)
        mod.cell = torch.compile(mod.cell, dynamic=True)
        mod.head = torch.compile(mod.head, dynamic=True)
    env = {"torch": torch.__version__, "device": str(dev), "python": platform.python_version(),
           "threads": str(torch.get_num_threads()), "chunk rows": str(a.chunk_rows),
           "model": f"obs {a.obs}, act {a.act}, m {a.m}, GRU {a.layers}x{a.hidden}, {a.blocks} ResBlocks, actor 256x256",
           "compiled": "torch.compile of act, cell, head (dynamic shapes)" if a.compile else "no (eager)"}
    if dev.type == "cuda":
        env["cuda device"] = torch.cuda.get_device_name(dev)
        env["cuda"] = str(torch.version.cuda)
    rows_out = []
    if a.check:
        with torch.no_grad():
            worst = check(mod, dev, a.m)
        env["engine check"] = f"direct vs incremental, same seed: max difference {worst:.2e}"
        print(f"torch_rollout: {env['engine check']}", file=sys.stderr)
        if not worst <= 1e-4:
            sys.exit("torch_rollout: the direct and incremental engines disagree")
    compile_s = 0.0
    with torch.no_grad():
        for penalty, style in STYLES:
            for n in a.rows:
                g = torch.Generator().manual_seed(a.seed)
                S0 = (0.5 * torch.randn(n, a.m, a.obs, generator=g)).to(dev)
                A0 = (2 * torch.rand(n, a.m - 1, a.act, generator=g) - 1).to(dev)
                for engine in engines:
                    torch.manual_seed(a.seed)
                    w = min(n, 256)
                    t0 = time.perf_counter()
                    rollout(mod, S0[:w], A0[:w], 1, penalty, engine, a.chunk_rows)  # warm-up
                    if a.compile:
                        # A second, full-size warm-up: the compiled functions
                        # meet the timed sizes before the clock runs.
                        rollout(mod, S0, A0, 1, penalty, engine, a.chunk_rows)
                        sync(dev)
                        compile_s += time.perf_counter() - t0
                    best = None
                    for _ in range(max(a.repeats, 1)):
                        torch.manual_seed(a.seed + 1)
                        sync(dev)
                        t0 = time.perf_counter()
                        tr = rollout(mod, S0, A0, a.horizon, penalty, engine, a.chunk_rows)
                        sync(dev)
                        dt = time.perf_counter() - t0
                        best = dt if best is None else min(best, dt)
                    nt = n * a.horizon
                    if not torch.isfinite(tr["next"]).all():
                        print(f"torch_rollout: warning: {style} {engine} {n}: non-finite next states", file=sys.stderr)
                    rows_out.append([style, engine, n, a.horizon, nt / best, best])
    if a.compile:
        env["compile seconds"] = f"{compile_s:.1f} (the warm-ups, compilation included)"
    cols = ["style", "engine", "rows", "H", "transitions/s", "seconds"]
    if a.json:
        print(json.dumps({"title": "PyTorch ADM-Roll (benchmarks/torch_rollout.py): transitions/s", "environment": env,
                          "columns": cols, "rows": rows_out}, indent=2))
        return
    print("PyTorch ADM-Roll (benchmarks/torch_rollout.py): transitions/s (higher is better)")
    for k in sorted(env):
        print(f"  {k}: {env[k]}")
    print("  " + "  ".join(f"{c:>22}" for c in cols))
    for r in rows_out:
        print("  " + "  ".join(f"{v:>22.0f}" if isinstance(v, float) and v >= 10 else
                               f"{v:>22.3f}" if isinstance(v, float) else f"{v!s:>22}" for v in r))


if __name__ == "__main__":
    main()
