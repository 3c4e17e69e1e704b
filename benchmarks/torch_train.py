#!/usr/bin/env python3
"""PyTorch baselines for `admpo bench train`: the same computations as admpo's
Gorgonia code, timed on the CPU. Prints one JSON object.

  sac: one SAC update (twin critics + targets, actor, automatic alpha, Polyak)
       with 256x256 ReLU networks, batch 256.
  adm: one ADM train step: 3x200 GRU unrolled m steps from the repeated start
       state, 4 ResBlocks + Linear head on every step's output, Gaussian NLL
       with soft-clamped log-variance, Adam.
Run with /usr/bin/python3 (Debian's python3-torch)."""
import argparse, json, math, statistics, time

import torch
import torch.nn as nn
import torch.nn.functional as F


def timeit(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def mlp(i, o, h=256):
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, o))


def bench_sac(obs, act, batch, iters):
    actor = mlp(obs, 2 * act)
    q1, q2 = mlp(obs + act, 1), mlp(obs + act, 1)
    t1, t2 = mlp(obs + act, 1), mlp(obs + act, 1)
    t1.load_state_dict(q1.state_dict()); t2.load_state_dict(q2.state_dict())
    log_alpha = torch.zeros(1, requires_grad=True)
    qopt = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=3e-4)
    aopt = torch.optim.Adam(actor.parameters(), lr=3e-4)
    alopt = torch.optim.Adam([log_alpha], lr=3e-4)
    o, a, r = torch.randn(batch, obs), torch.rand(batch, act) * 2 - 1, torch.randn(batch, 1)
    o2, d = torch.randn(batch, obs), torch.zeros(batch, 1)

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

    return {"critic_ms": timeit(critic_step, iters), "actor_ms": timeit(actor_step, iters)}


class ResBlock(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.lin, self.norm, self.drop = nn.Linear(h, h), nn.LayerNorm(h), nn.Dropout(0.1)

    def forward(self, x):
        y = self.lin(x)
        return self.norm(x + self.drop(y * torch.sigmoid(y)))


def bench_adm(obs, act, m, batch, hidden, layers, iters):
    d = obs + 1
    gru = nn.GRU(obs + act, hidden, layers)
    head = nn.Sequential(*[ResBlock(hidden) for _ in range(4)], nn.Linear(hidden, 2 * d))
    maxlv = nn.Parameter(torch.full((d,), 0.5)); minlv = nn.Parameter(torch.full((d,), -10.0))
    opt = torch.optim.Adam(list(gru.parameters()) + list(head.parameters()) + [maxlv, minlv], lr=3e-4)
    s, acts, y = torch.randn(batch, obs), torch.randn(m, batch, act), torch.randn(m, batch, d)

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

    return {"adm_step_ms": timeit(step, iters)}


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
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    res = {"torch": torch.__version__, "threads": a.threads}
    res.update(bench_sac(a.obs, a.act, a.batch, a.iters))
    res.update(bench_adm(a.obs, a.act, a.m, a.batch, a.hidden, a.layers, a.iters))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
