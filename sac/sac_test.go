package sac

import (
	"encoding/json"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/cpukern/cpukerntest"
	"github.com/admpo/admpo/internal/pyref"
	"github.com/admpo/admpo/models"
)

// sacTorchScript is an independent PyTorch implementation of the SAC update
// documented on SAC, run on the same weights, batches and noise.
const sacTorchScript = `
import json, math, sys, torch
import torch.nn.functional as F
from torch.distributions import Normal
from torch.distributions.transforms import TanhTransform
torch.set_num_threads(1)
d = json.load(sys.stdin)

def net(layers):
    return [(torch.nn.Parameter(torch.tensor(W, dtype=torch.float32).reshape(i, o)),
             torch.nn.Parameter(torch.tensor(B, dtype=torch.float32))) for (i, o, W, B) in layers]

def fwd(layers, x):
    for k, (W, B) in enumerate(layers):
        x = x @ W + B
        if k + 1 < len(layers):
            x = torch.relu(x)
    return x

actor, c1, c2 = net(d["actor"]), net(d["critic1"]), net(d["critic2"])
t1, t2 = net(d["target1"]), net(d["target2"])
A = d["act_dim"]
scale = torch.tensor(d["scale"]); bias = torch.tensor(d["bias"])
lo, hi = d["logstd_min"], d["logstd_max"]

def sample(obs, eps):
    out = fwd(actor, obs)
    mean, raw = out[:, :A], out[:, A:]
    log_std = lo + 0.5 * (hi - lo) * (torch.tanh(raw) + 1)
    std = log_std.exp()
    x = mean + std * eps
    y = torch.tanh(x)
    logp = Normal(mean, std).log_prob(x) - TanhTransform().log_abs_det_jacobian(x, y)
    return y * scale + bias, logp.sum(1)

def q(layers, obs, act):
    return fwd(layers, torch.cat([obs, act], 1)).squeeze(1)

params = lambda layers: [p for wb in layers for p in wb]
log_alpha = torch.tensor([d["log_alpha"]], requires_grad=True)
aopt = torch.optim.Adam(params(actor), lr=d["actor_lr"])
copt = torch.optim.Adam(params(c1) + params(c2), lr=d["critic_lr"])
alopt = torch.optim.Adam([log_alpha], lr=d["alpha_lr"])
T = lambda v: torch.tensor(v, dtype=torch.float32)
stats = []
for u in d["updates"]:
    n = len(u["rew"])
    obs, act, nobs = T(u["obs"]).reshape(n, -1), T(u["act"]).reshape(n, -1), T(u["next_obs"]).reshape(n, -1)
    rew, term = T(u["rew"]), T(u["term"])
    alpha = log_alpha.detach().exp()
    with torch.no_grad():
        na, nlogp = sample(nobs, T(u["eps_next"]).reshape(n, A))
        nq = torch.min(q(t1, nobs, na), q(t2, nobs, na)) - alpha * nlogp
        y = rew + d["gamma"] * (1 - term) * nq
    closs = F.mse_loss(q(c1, obs, act), y) + F.mse_loss(q(c2, obs, act), y)
    copt.zero_grad(); closs.backward(); copt.step()
    a, logp = sample(obs, T(u["eps"]).reshape(n, A))
    aloss = (alpha * logp - torch.min(q(c1, obs, a), q(c2, obs, a))).mean()
    aopt.zero_grad(); aloss.backward(); aopt.step()
    alloss = -(log_alpha * (logp.detach() + d["target_entropy"])).mean()
    alopt.zero_grad(); alloss.backward(); alopt.step()
    with torch.no_grad():
        for src, dst in ((c1, t1), (c2, t2)):
            for p, tp in zip(params(src), params(dst)):
                tp.mul_(1 - d["tau"]).add_(d["tau"] * p)
    stats.append([closs.item(), aloss.item(), alloss.item()])
flat = lambda layers: [[W.detach().reshape(-1).tolist(), B.detach().tolist()] for W, B in layers]
json.dump({"stats": stats, "log_alpha": log_alpha.item(), "actor": flat(actor), "critic1": flat(c1),
           "critic2": flat(c2), "target1": flat(t1), "target2": flat(t2)}, sys.stdout)
`

func sacLayers(m *models.MLP) [][]any {
	var out [][]any
	for _, l := range m.Layers {
		out = append(out, []any{l.In, l.Out, l.W, l.B})
	}
	return out
}

func sacRand(n int, rng *rand.Rand) []float32 {
	v := make([]float32, n)
	fillNormal(v, rng)
	return v
}

// TestSACUpdateVsTorch runs two SAC updates on fixed weights, batches and
// noise and compares the losses, the entropy coefficient and every updated
// weight (actor, critics, target critics) with the PyTorch script above, on
// every CPU kernel path (the PyTorch run is the same for all).
func TestSACUpdateVsTorch(t *testing.T) {
	pyref.Need(t, "torch")
	var torchOut map[string]json.RawMessage
	cpukerntest.ForEachPath(t, func(t *testing.T) { sacUpdateVsTorch(t, &torchOut) })
}

func sacUpdateVsTorch(t *testing.T, torchOut *map[string]json.RawMessage) {
	const obsDim, batch = 5, 16
	low, high := []float64{-1, 0}, []float64{1, 2}
	cfg := DefaultConfig(2)
	cfg.Hidden, cfg.BatchSize, cfg.Seed = []int{32, 32}, batch, 3
	cfg.ActorLR, cfg.CriticLR, cfg.AlphaLR, cfg.Tau, cfg.InitAlpha = 1e-3, 2e-3, 5e-3, 0.05, 0.3
	cfg.TargetEntropy = -1.5
	s, err := New(obsDim, low, high, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(4))
	// Targets differ from the critics so that Polyak averaging shows.
	for _, c := range []*models.Critic{s.Target1, s.Target2} {
		for _, l := range c.Net.Layers {
			for i := range l.W {
				l.W[i] += float32(0.05 * rng.NormFloat64())
			}
		}
	}
	input := map[string]any{"act_dim": 2, "scale": s.Actor.Scale, "bias": s.Actor.Bias,
		"logstd_min": s.Actor.LogStdMin, "logstd_max": s.Actor.LogStdMax,
		"actor": sacLayers(&s.Actor.Net), "critic1": sacLayers(&s.Critic1.Net), "critic2": sacLayers(&s.Critic2.Net),
		"target1": sacLayers(&s.Target1.Net), "target2": sacLayers(&s.Target2.Net),
		"log_alpha": s.LogAlpha[0], "actor_lr": cfg.ActorLR, "critic_lr": cfg.CriticLR, "alpha_lr": cfg.AlphaLR,
		"gamma": cfg.Gamma, "tau": cfg.Tau, "target_entropy": cfg.TargetEntropy}
	// Marshal the initial weights now: the updates change them in place.
	initial, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	var updates []map[string]any
	var got [][3]float64
	for u := 0; u < 2; u++ {
		b := buffer.NewBatch(batch, obsDim, 2)
		copy(b.Obs, sacRand(batch*obsDim, rng))
		copy(b.NextObs, sacRand(batch*obsDim, rng))
		copy(b.Rew, sacRand(batch, rng))
		for i := range b.Act {
			b.Act[i] = float32(rng.Float64()*2 - 1)
		}
		for i := range b.Terminal {
			if rng.Intn(4) == 0 {
				b.Terminal[i] = 1
			}
		}
		epsNext, eps := sacRand(batch*2, rng), sacRand(batch*2, rng)
		copy(s.targetG.Eps.Data, epsNext)
		copy(s.actorG.Eps.Data, eps)
		st, err := s.update(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, [3]float64{st.CriticLoss, st.ActorLoss, st.AlphaLoss})
		updates = append(updates, map[string]any{"obs": b.Obs, "act": b.Act, "next_obs": b.NextObs,
			"rew": b.Rew, "term": b.Terminal, "eps_next": epsNext, "eps": eps})
	}
	var full map[string]any
	if err := json.Unmarshal(initial, &full); err != nil {
		t.Fatal(err)
	}
	full["updates"] = updates

	var want struct {
		Stats    [][3]float64
		LogAlpha float64
	}
	if *torchOut == nil {
		raw := map[string]json.RawMessage{}
		pyref.RunJSON(t, sacTorchScript, full, &raw)
		*torchOut = raw
	}
	raw := *torchOut
	if err := json.Unmarshal(raw["stats"], &want.Stats); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw["log_alpha"], &want.LogAlpha); err != nil {
		t.Fatal(err)
	}
	for u := range got {
		for k, name := range []string{"critic loss", "actor loss", "alpha loss"} {
			if w := want.Stats[u][k]; math.Abs(got[u][k]-w) > 1e-5*(1+math.Abs(w)) {
				t.Errorf("update %d %s = %v, torch %v", u, name, got[u][k], w)
			}
		}
	}
	if d := math.Abs(float64(s.LogAlpha[0]) - want.LogAlpha); d > 1e-6 {
		t.Errorf("log alpha %v, torch %v", s.LogAlpha[0], want.LogAlpha)
	}
	nets := map[string]*models.MLP{"actor": &s.Actor.Net, "critic1": &s.Critic1.Net, "critic2": &s.Critic2.Net,
		"target1": &s.Target1.Net, "target2": &s.Target2.Net}
	for name, m := range nets {
		var layers [][2][]float64
		if err := json.Unmarshal(raw[name], &layers); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for li, l := range m.Layers {
			for k, vals := range [][]float32{l.W, l.B} {
				for i, v := range vals {
					worst = math.Max(worst, math.Abs(float64(v)-layers[li][k][i]))
				}
			}
		}
		t.Logf("%s: worst weight difference %.3g", name, worst)
		if worst > 2e-6 {
			t.Errorf("%s weights differ from torch by up to %g", name, worst)
		}
	}
}

// TestSACActAndSchedules checks Act and ActBatch against a naive float64
// actor forward (deterministic: Scale·tanh(u)+Bias; stochastic: the same
// noise as a seeded generator), the cosine actor learning-rate decay against
// its closed form, and that a fixed α stays fixed.
func TestSACActAndSchedules(t *testing.T) {
	const obsDim = 4
	low, high := []float64{-2, 0, -1}, []float64{2, 1, 3}
	cfg := DefaultConfig(3)
	cfg.Hidden, cfg.BatchSize, cfg.AutoAlpha, cfg.ActorLRDecayUpdates = []int{16, 16}, 8, false, 4
	s, err := New(obsDim, low, high, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(5))
	naive := func(obs []float32, eps []float64) []float64 {
		h := make([]float64, len(obs))
		for i, v := range obs {
			h[i] = float64(v)
		}
		for li, l := range s.Actor.Net.Layers {
			out := make([]float64, l.Out)
			for o := range out {
				v := float64(l.B[o])
				for i := 0; i < l.In; i++ {
					v += h[i] * float64(l.W[i*l.Out+o])
				}
				if li+1 < len(s.Actor.Net.Layers) {
					v = math.Max(v, 0)
				}
				out[o] = v
			}
			h = out
		}
		act := make([]float64, 3)
		for j := range act {
			logStd := -5 + 3.5*(math.Tanh(h[3+j])+1)
			act[j] = float64(s.Actor.Scale[j])*math.Tanh(h[j]+math.Exp(logStd)*eps[j]) + float64(s.Actor.Bias[j])
		}
		return act
	}
	const n = 19 // more than two ActBatch chunks
	obs := sacRand(n*obsDim, rng)
	batchDet := make([]float32, n*3)
	if err := s.ActBatch(obs, n, true, nil, batchDet); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < n; r++ {
		det, err := s.Act(obs[r*obsDim:(r+1)*obsDim], true, nil)
		if err != nil {
			t.Fatal(err)
		}
		stoch, err := s.Act(obs[r*obsDim:(r+1)*obsDim], false, rand.New(rand.NewSource(int64(r))))
		if err != nil {
			t.Fatal(err)
		}
		noise := rand.New(rand.NewSource(int64(r)))
		eps := []float64{float64(float32(noise.NormFloat64())), float64(float32(noise.NormFloat64())), float64(float32(noise.NormFloat64()))}
		wantDet, wantStoch := naive(obs[r*obsDim:(r+1)*obsDim], []float64{0, 0, 0}), naive(obs[r*obsDim:(r+1)*obsDim], eps)
		for j := 0; j < 3; j++ {
			if math.Abs(float64(det[j])-wantDet[j]) > 1e-5 || math.Abs(float64(batchDet[r*3+j])-wantDet[j]) > 1e-5 {
				t.Errorf("row %d deterministic action %d: Act %v ActBatch %v, naive %v", r, j, det[j], batchDet[r*3+j], wantDet[j])
			}
			if math.Abs(float64(stoch[j])-wantStoch[j]) > 1e-5 {
				t.Errorf("row %d sampled action %d: %v, naive %v", r, j, stoch[j], wantStoch[j])
			}
			if float64(stoch[j]) < low[j] || float64(stoch[j]) > high[j] {
				t.Errorf("row %d action %d = %v outside [%v,%v]", r, j, stoch[j], low[j], high[j])
			}
		}
	}

	b := buffer.NewBatch(cfg.BatchSize, obsDim, 3)
	copy(b.Obs, sacRand(len(b.Obs), rng))
	copy(b.NextObs, sacRand(len(b.NextObs), rng))
	alpha0 := s.Alpha()
	for u := 0; u < 6; u++ {
		if _, err := s.Update(b); err != nil {
			t.Fatal(err)
		}
		st, err := s.LastStats()
		if err != nil {
			t.Fatal(err)
		}
		want := cfg.ActorLR * 0.5 * (1 + math.Cos(math.Pi*math.Min(float64(u), 4)/4))
		if math.Abs(st.ActorLR-want) > 1e-12 {
			t.Errorf("update %d actor lr %v, want %v", u, st.ActorLR, want)
		}
		if st.Alpha != float64(alpha0) || math.Abs(st.Alpha-0.2) > 1e-6 {
			t.Errorf("update %d: fixed alpha moved to %v", u, st.Alpha)
		}
	}
}

// BenchmarkSACUpdate times one SAC update at Hopper's sizes (obs 11, act 3,
// 256x256, batch 256). Run with OPENBLAS_CORETYPE set for the machine (see
// internal/blas).
func BenchmarkSACUpdate(b *testing.B) {
	tm, err := BenchUpdate(b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(tm.Target, "target-ms")
	b.ReportMetric(tm.Critic, "critic-ms")
	b.ReportMetric(tm.Actor, "actor-ms")
	b.ReportMetric(tm.Total, "total-ms")
}
