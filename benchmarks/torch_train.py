#!/usr/bin/env python3
"""PyTorch baselines for `admpo bench train`: the same computations as admpo's
Gorgonia code, timed on the CPU (default) or a CUDA device. Prints one JSON object.

  sac: one SAC update (twin critics + targets, actor, automatic alpha, Polyak)
       with 256x256 ReLU networks, batch 256.
  adm: one ADM train step: 3x200 GRU unrolled m steps from the repeated start
       state, 4 ResBlocks + Linear head on every step's output, Gaussian NLL
       with soft-clamped log-variance, Adam.
Run with /usr/bin/python3 (Debian's python3-torch).

--device cuda times the same steps on the GPU (torch.cuda.synchronize() before
the clock starts and after each step; TF32 off, as admpo's use_tf32=0) and adds
"device", "cuda device" and "cuda" to the JSON. Second columns, each flag-gated:
--cuda-graph (each step captured once as a CUDA graph with capturable Adam,
then replayed: keys critic_ms_cuda_graph, actor_ms_cuda_graph,
adm_step_ms_cuda_graph) and --compile (torch.compile of each step: *_compile,
and compile_s, the first calls' seconds). A variant that fails is reported
under "errors" with its keys null; the eager columns stand."""
import argparse, json, math, statistics, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F


def timeit(fn, iters, warmup=5, sync=None):
    """Median ms of fn over iters calls after warmup; sync (a CUDA device's
    synchronize) runs before the clock starts and inside each timed call."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def cuda_graphed(fn, warmup=3):
    """Captures fn (one whole step: forward, backward, optimizer steps) as a
    CUDA graph after warm-up calls on a side stream; returns its replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


class Runner:
    """How the steps run: mode eager, cuda_graph or compile, on device dev."""

    def __init__(self, dev, mode="eager"):
        self.dev, self.mode = dev, mode
        self.sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None
        self.compile_s = 0.0

    def adam(self, params):
        if self.mode == "cuda_graph":
            return torch.optim.Adam(params, lr=3e-4, capturable=True)
        return torch.optim.Adam(params, lr=3e-4)

    def time(self, step, iters):
        fn = step
        if self.mode == "cuda_graph":
            fn = cuda_graphed(step)
        elif self.mode == "compile":
            fn = torch.compile(step)
            t0 = time.perf_counter()
            fn()
            if self.sync:
                self.sync()
            self.compile_s += time.perf_counter() - t0
        return timeit(fn, iters, sync=self.sync)


def mlp(i, o, h=256):
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, o))


def bench_sac(obs, act, batch, iters, run=None):
    run = run or Runner(torch.device("cpu"))
    dev = run.dev
    actor = mlp(obs, 2 * act).to(dev)
    q1, q2 = mlp(obs + act, 1).to(dev), mlp(obs + act, 1).to(dev)
    t1, t2 = mlp(obs + act, 1).to(dev), mlp(obs + act, 1).to(dev)
    t1.load_state_dict(q1.state_dict()); t2.load_state_dict(q2.state_dict())
    log_alpha = torch.zeros(1, requires_grad=True, device=dev)
    qopt = run.adam(list(q1.parameters()) + list(q2.parameters()))
    aopt = run.adam(actor.parameters())
    alopt = run.adam([log_alpha])
    o, a, r = torch.randn(batch, obs), torch.rand(batch, act) * 2 - 1, torch.randn(batch, 1)
    o2, d = torch.randn(batch, obs), torch.zeros(batch, 1)
    o, a, r, o2, d = (x.to(dev) for x in (o, a, r, o2, d))

    def sample(x):
        out = actor(x)
        mu, t = out[:, :act], out[:, act:]
        logstd = -5 + 0.5 * 7 * (torch.tanh(t) + 1)
        std = logstd.exp()
        u = mu + std * torch.randn_like(mu)
        a = torch.tanh(u)
        logp = (-0.5 * ((u - mu) / std) ** 2 - logstd - 0.5 * math.log(2 * math.pi)).sum(1, keepdim=True)
        logp -= (2 * (math.log(2) - u - F.softplus(-2 * u))).sum(1, keepdim=True)
        return a, logp

    def critic_step():
        with torch.no_grad():
            a2, lp2 = sample(o2)
            x2 = torch.cat([o2, a2], 1)
            y = r + 0.99 * (1 - d) * (torch.min(t1(x2), t2(x2)) - log_alpha.exp() * lp2)
        x = torch.cat([o, a], 1)
        loss = F.mse_loss(q1(x), y) + F.mse_loss(q2(x), y)
        qopt.zero_grad(); loss.backward(); qopt.step()

    def actor_step():
        a1, lp = sample(o)
        x = torch.cat([o, a1], 1)
        loss = (log_alpha.exp().detach() * lp - torch.min(q1(x), q2(x))).mean()
        aopt.zero_grad(); loss.backward(); aopt.step()
        aloss = -(log_alpha * (lp.detach() - act)).mean()
        alopt.zero_grad(); aloss.backward(); alopt.step()
        with torch.no_grad():
            for net, tgt in ((q1, t1), (q2, t2)):
                for p, tp in zip(net.parameters(), tgt.parameters()):
                    tp.mul_(0.995).add_(0.005 * p)

    return {"critic_ms": run.time(critic_step, iters), "actor_ms": run.time(actor_step, iters)}


class ResBlock(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.lin, self.norm, self.drop = nn.Linear(h, h), nn.LayerNorm(h), nn.Dropout(0.1)

    def forward(self, x):
        y = self.lin(x)
        return self.norm(x + self.drop(y * torch.sigmoid(y)))


def bench_adm(obs, act, m, batch, hidden, layers, iters, run=None):
    run = run or Runner(torch.device("cpu"))
    dev = run.dev
    d = obs + 1
    gru = nn.GRU(obs + act, hidden, layers).to(dev)
    head = nn.Sequential(*[ResBlock(hidden) for _ in range(4)], nn.Linear(hidden, 2 * d)).to(dev)
    maxlv = nn.Parameter(torch.full((d,), 0.5, device=dev)); minlv = nn.Parameter(torch.full((d,), -10.0, device=dev))
    opt = run.adam(list(gru.parameters()) + list(head.parameters()) + [maxlv, minlv])
    s, acts, y = torch.randn(batch, obs), torch.randn(m, batch, act), torch.randn(m, batch, d)
    s, acts, y = s.to(dev), acts.to(dev), y.to(dev)

    def step():
        x = torch.cat([s.unsqueeze(0).expand(m, batch, obs), acts], 2)
        out, _ = gru(x)
        o = head(out.reshape(m * batch, hidden))
        mu, lv = o[:, :d], o[:, d:]
        lv = maxlv - F.softplus(maxlv - lv)
        lv = minlv + F.softplus(lv - minlv)
        t = y.reshape(m * batch, d)
        loss = (((mu - t) ** 2) * torch.exp(-lv)).mean() + lv.mean() + 0.01 * maxlv.sum() - 0.01 * minlv.sum()
        opt.zero_grad(); loss.backward(); opt.step()

    return {"adm_step_ms": run.time(step, iters)}


def variant(res, name, a, dev):
    """Adds the *_NAME columns of one variant (cuda_graph or compile): the SAC
    update and the ADM step each on its own, a failing one null with its error
    under res["errors"][NAME]."""
    run = Runner(dev, name)
    errs = []
    parts = [("sac", ["critic_ms", "actor_ms"], lambda: bench_sac(a.obs, a.act, a.batch, a.iters, run)),
             ("adm", ["adm_step_ms"], lambda: bench_adm(a.obs, a.act, a.m, a.batch, a.hidden, a.layers, a.iters, run))]
    for part, keys, bench in parts:
        out = {}
        try:
            if name == "cuda_graph" and dev.type != "cuda":
                raise RuntimeError("CUDA graphs need --device cuda")
            if name == "compile" and not hasattr(torch, "compile"):
                raise RuntimeError("torch %s has no torch.compile" % torch.__version__)
            torch.manual_seed(0)
            out = bench()
        except Exception as e:  # a failing variant is reported, not fatal
            msg = str(e).strip().splitlines()
            errs.append("%s: %s: %s" % (part, type(e).__name__, msg[0][:300] if msg else ""))
            print("torch_train: %s variant of %s failed: %r" % (name, part, e), file=sys.stderr)
        for k in keys:
            res["%s_%s" % (k, name)] = out.get(k)
    if errs:
        res.setdefault("errors", {})[name] = "; ".join(errs)
    if name == "compile":
        res["compile_s"] = round(run.compile_s, 2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--obs", type=int, default=11)
    p.add_argument("--act", type=int, default=3)
    p.add_argument("--m", type=int, default=5)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--hidden", type=int, default=200)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--cuda-graph", action="store_true", help="also time each step replayed as a CUDA graph")
    p.add_argument("--compile", action="store_true", help="also time each step under torch.compile")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("torch_train: --device cuda but torch.cuda.is_available() is False")
        torch.backends.cuda.matmul.allow_tf32 = False  # full float32, as admpo's use_tf32=0
        torch.backends.cudnn.allow_tf32 = False
    elif dev.type != "cpu":
        sys.exit("torch_train: --device %s: want cpu or cuda" % a.device)
    torch.manual_seed(0)
    res = {"torch": torch.__version__, "threads": a.threads}
    if dev.type == "cuda":
        res.update({"device": str(dev), "cuda device": torch.cuda.get_device_name(dev), "cuda": str(torch.version.cuda)})
    run = Runner(dev)
    res.update(bench_sac(a.obs, a.act, a.batch, a.iters, run))
    res.update(bench_adm(a.obs, a.act, a.m, a.batch, a.hidden, a.layers, a.iters, run))
    if a.cuda_graph:
        variant(res, "cuda_graph", a, dev)
    if a.compile:
        variant(res, "compile", a, dev)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
