"""Independent PyTorch reference for the ADM tests (models/adm_graph_test.go).

Reads <dir>/in.json + <dir>/in.bin (named float32 tensors in admpo's layout:
weights [In, Out], GRU gate columns r, z, n), builds the same network from
torch.nn.GRU / nn.Linear / nn.LayerNorm in float64, and writes the mean and
soft-clamped log-variance of every k, the loss and the gradient of every
weight (converted back to admpo's layout) to <dir>/out.json + <dir>/out.bin.

With config key k > 0 it is the authors' one-k step instead: the GRU reads
the first k steps only, and the head, the targets and the loss are step k's.
"""
import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load(d, stem):
    man = json.load(open(f"{d}/{stem}.json"))
    raw = np.fromfile(f"{d}/{stem}.bin", dtype="<f4")
    out = {}
    for e in man["tensors"]:
        n = int(np.prod(e["shape"])) if e["shape"] else 1
        out[e["name"]] = raw[e["off"]:e["off"] + n].reshape(e["shape"]).astype(np.float64)
    return man["config"], out


def save(d, stem, tensors, extra):
    man = {"tensors": [], **extra}
    parts, off = [], 0
    for name, arr in tensors.items():
        a = np.asarray(arr, dtype="<f4")
        man["tensors"].append({"name": name, "shape": list(a.shape), "off": off})
        parts.append(a.ravel())
        off += a.size
    np.concatenate(parts).astype("<f4").tofile(f"{d}/{stem}.bin")
    json.dump(man, open(f"{d}/{stem}.json", "w"))


class ResBlock(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.lin = nn.Linear(h, h)
        self.ln = nn.LayerNorm(h, eps=1e-5)

    def forward(self, x):
        y = self.lin(x)
        y = y * torch.sigmoid(y)  # Swish; dropout is off in these tests
        return self.ln(x + y)


def main():
    d = sys.argv[1]
    cfg, T = load(d, "in")
    torch.set_default_dtype(torch.float64)
    obs, act, H, L, nb, m = cfg["obs"], cfg["act"], cfg["hidden"], cfg["layers"], cfg["blocks"], cfg["m"]
    D = obs + 1
    t = lambda a: torch.tensor(a, dtype=torch.float64)
    gru = nn.GRU(obs + act, H, num_layers=L, batch_first=True)
    with torch.no_grad():
        for l in range(L):
            getattr(gru, f"weight_ih_l{l}").copy_(t(T[f"gru{l}.Wi"].T))
            getattr(gru, f"weight_hh_l{l}").copy_(t(T[f"gru{l}.Wh"].T))
            getattr(gru, f"bias_ih_l{l}").copy_(t(T[f"gru{l}.Bi"]))
            getattr(gru, f"bias_hh_l{l}").copy_(t(T[f"gru{l}.Bh"]))
    blocks = nn.ModuleList([ResBlock(H) for _ in range(nb)])
    with torch.no_grad():
        for b, blk in enumerate(blocks):
            blk.lin.weight.copy_(t(T[f"block{b}.W"].T))
            blk.lin.bias.copy_(t(T[f"block{b}.B"]))
            blk.ln.weight.copy_(t(T[f"block{b}.gamma"]))
            blk.ln.bias.copy_(t(T[f"block{b}.beta"]))
    out = nn.Linear(H, 2 * D)
    with torch.no_grad():
        out.weight.copy_(t(T["out.W"].T))
        out.bias.copy_(t(T["out.B"]))
    mx = nn.Parameter(t(T["bounds.max"]))
    mn = nn.Parameter(t(T["bounds.min"]))

    start = t(T["start"])            # [B, obs]
    acts = t(T["acts"])              # [m, B, act]
    B = start.shape[0]
    seq = torch.cat([start.unsqueeze(1).expand(B, m, obs), acts.permute(1, 0, 2)], dim=2)
    seq = (seq - t(T["norm.mean"])) / t(T["norm.std"])
    k = cfg.get("k", 0)
    if k > 0:
        seq = seq[:, :k]             # the authors' k-step window
    hs, _ = gru(seq)                 # [B, m or k, H]
    h = hs if k == 0 else hs[:, k - 1:k]
    for blk in blocks:
        h = blk(h)
    o = out(h)                       # [B, m, 2D]
    mu, lv = o[..., :D], o[..., D:]
    lv = mx - F.softplus(mx - lv)
    lv = mn + F.softplus(lv - mn)
    y = t(T["target"]).permute(1, 0, 2)   # [B, m, D]
    w = t(T["weight"]).permute(1, 0)      # [B, m]
    if k > 0:
        y, w = y[:, k - 1:k], w[:, k - 1:k]
    per = ((mu - y) ** 2 * torch.exp(-lv) + lv).sum(-1)
    nll = (w * per).sum() / (D * w.sum())
    loss = nll + 0.01 * mx.sum() - 0.01 * mn.sum()
    loss.backward()

    res = {"mean": mu.detach().permute(1, 0, 2).numpy(), "logvar": lv.detach().permute(1, 0, 2).numpy()}
    for l in range(L):
        res[f"gru{l}.Wi"] = getattr(gru, f"weight_ih_l{l}").grad.T.numpy()
        res[f"gru{l}.Bi"] = getattr(gru, f"bias_ih_l{l}").grad.numpy()
        res[f"gru{l}.Wh"] = getattr(gru, f"weight_hh_l{l}").grad.T.numpy()
        res[f"gru{l}.Bh"] = getattr(gru, f"bias_hh_l{l}").grad.numpy()
    for b, blk in enumerate(blocks):
        res[f"block{b}.W"] = blk.lin.weight.grad.T.numpy()
        res[f"block{b}.B"] = blk.lin.bias.grad.numpy()
        res[f"block{b}.gamma"] = blk.ln.weight.grad.numpy()
        res[f"block{b}.beta"] = blk.ln.bias.grad.numpy()
    res["out.W"] = out.weight.grad.T.numpy()
    res["out.B"] = out.bias.grad.numpy()
    res["bounds.max"] = mx.grad.numpy()
    res["bounds.min"] = mn.grad.numpy()
    save(d, "out", res, {"loss": float(loss), "nll": float(nll)})


if __name__ == "__main__":
    main()
