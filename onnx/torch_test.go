package onnx_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/pyref"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// torchScript rebuilds the ADM from its weights with torch.nn.GRU (PyTorch's
// own gate order and equations), runs each row for its length k and prints
// next_obs_mean, reward_mean and logvar as flat lists.
const torchScript = `
import json, sys, torch
torch.set_default_dtype(torch.float64)
d = json.load(open(sys.argv[1]))
c = d["cfg"]; O, A, H, M = c["ObsDim"], c["ActDim"], c["Hidden"], c["M"]
def t(v, *shape): return torch.tensor(v, dtype=torch.float64).reshape(*shape)
gru = torch.nn.GRU(O + A, H, num_layers=len(d["gru"]))
with torch.no_grad():
    for l, g in enumerate(d["gru"]):
        getattr(gru, "weight_ih_l%d" % l).copy_(t(g["Wi"], g["In"], 3 * H).T)
        getattr(gru, "weight_hh_l%d" % l).copy_(t(g["Wh"], H, 3 * H).T)
        getattr(gru, "bias_ih_l%d" % l).copy_(t(g["Bi"], 3 * H))
        getattr(gru, "bias_hh_l%d" % l).copy_(t(g["Bh"], 3 * H))
B = len(d["lengths"])
obs = t(d["obs"], B, O); acts = t(d["actions"], M, B, A)
mean, std = t(d["norm_mean"], O + A), t(d["norm_std"], O + A)
def lin(x, l): return x @ t(l["W"], l["In"], l["Out"]) + t(l["B"], l["Out"])
res = {"next": [], "reward": [], "logvar": []}
with torch.no_grad():
    for b in range(B):
        k = min(max(d["lengths"][b], 1), M)
        x = torch.cat([obs[b].expand(k, O), acts[:k, b]], dim=1)
        y, _ = gru(((x - mean) / std).unsqueeze(1))
        h = y[-1, 0]
        for blk in d["blocks"]:
            z = lin(h, blk["Lin"]); z = z * torch.sigmoid(z)
            n = blk["Norm"]
            h = torch.nn.functional.layer_norm(h + z, (H,), t(n["Gamma"], H), t(n["Beta"], H), n["Eps"])
        out = lin(h, d["out"])
        mu, lv = out[:O + 1], out[O + 1:]
        mx, mn = t(d["max"], O + 1), t(d["min"], O + 1)
        lv = mx - torch.nn.functional.softplus(mx - lv)
        lv = mn + torch.nn.functional.softplus(lv - mn)
        res["next"] += (obs[b] + mu[:O]).tolist(); res["reward"].append(mu[O].item()); res["logvar"] += lv.tolist()
print(json.dumps(res))
`

// TestADMMatchesPyTorch compares both ADM graph forms on ONNX Runtime with
// torch.nn.GRU and torch's layer_norm/softplus on the same weights.
func TestADMMatchesPyTorch(t *testing.T) {
	pyref.Need(t, "torch")
	ortskip.IfMissing(t)
	cfg := models.ADMConfig{ObsDim: 5, ActDim: 3, Hidden: 32, Layers: 3, ResBlocks: 2, M: 5}
	m := randADM(t, 21, cfg)
	tc := newADMCase(m, 20, 22)
	in := map[string]any{
		"cfg": m.Cfg, "gru": m.GRU, "blocks": m.Blocks, "out": m.Out,
		"norm_mean": m.Norm.Mean, "norm_std": m.Norm.Std, "max": m.Bounds.Max, "min": m.Bounds.Min,
		"obs": tc.obs, "actions": tc.actions, "lengths": tc.lengths,
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "adm.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := pyref.Run(t, torchScript, p)
	var want struct{ Next, Reward, Logvar []float64 }
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatalf("torch output: %v\n%s", err, out)
	}
	// The torch results replace the Go reference's; check compares ORT with them.
	tc.wantNext, tc.wantR, tc.wantLV = want.Next, want.Reward, want.Logvar
	for _, form := range []onnx.ADMForm{onnx.ADMUnrolled, onnx.ADMGRUOp} {
		t.Run(form.String(), func(t *testing.T) { tc.check(t, onnx.ADMOptions{Form: form}) })
	}
}
