"""PyTorch timing of the ADM train step that BenchmarkADMTrainStep measures:
hopper dims 11/3, m = 5, batch 256, GRU 3x200, 4 ResBlocks (dropout 0.1),
one m-step unroll with the head on all m outputs, Gaussian NLL + bound
terms, Adam lr 3e-4. Usage: python3 adm_torch_bench.py [iters] [threads]."""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 30
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
torch.set_num_threads(threads)
torch.manual_seed(0)
obs, act, H, L, m, B = 11, 3, 200, 3, 5, 256
D = obs + 1


class ResBlock(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.lin, self.drop, self.ln = nn.Linear(h, h), nn.Dropout(0.1), nn.LayerNorm(h)

    def forward(self, x):
        y = self.lin(x)
        return self.ln(x + self.drop(y * torch.sigmoid(y)))


class ADM(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(obs + act, H, num_layers=L, batch_first=True)
        self.blocks = nn.Sequential(*[ResBlock(H) for _ in range(4)])
        self.out = nn.Linear(H, 2 * D)
        self.mx = nn.Parameter(torch.full((D,), 0.5))
        self.mn = nn.Parameter(torch.full((D,), -10.0))

    def forward(self, x):
        h, _ = self.gru(x)
        o = self.out(self.blocks(h))
        mu, lv = o[..., :D], o[..., D:]
        lv = self.mx - F.softplus(self.mx - lv)
        return mu, self.mn + F.softplus(lv - self.mn)


net = ADM()
opt = torch.optim.Adam(net.parameters(), lr=3e-4)
x = torch.randn(B, m, obs + act)
y = torch.randn(B, m, D)
w = torch.ones(B, m)


def step():
    mu, lv = net(x)
    per = ((mu - y) ** 2 * torch.exp(-lv) + lv).sum(-1)
    loss = (w * per).sum() / (D * w.sum()) + 0.01 * net.mx.sum() - 0.01 * net.mn.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


for _ in range(3):
    step()
ts = []
for _ in range(iters):
    t0 = time.perf_counter()
    step()
    ts.append(time.perf_counter() - t0)
ts.sort()
print(f"pytorch {torch.__version__} threads={threads}: median {1e3 * ts[len(ts) // 2]:.1f} ms, min {1e3 * ts[0]:.1f} ms per ADM train step")
