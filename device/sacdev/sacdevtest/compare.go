package sacdevtest

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/sac"
)

// Hopper's sizes with bounds whose scale and bias are not 1 and 0.
const (
	obsDim, actDim, batch = 11, 3, 256
)

var low, high = []float64{-1, -2, -0.5}, []float64{1, 1, 1.5}

func mlpWeights(m *models.MLP) [][]float32 {
	var ps [][]float32
	for _, l := range m.Layers {
		ps = append(ps, append([]float32(nil), l.W...), append([]float32(nil), l.B...))
	}
	return ps
}

// AgentWeights copies a sac.Agent's parameters.
func AgentWeights(a *sac.Agent) sacdev.Weights {
	return sacdev.Weights{Actor: mlpWeights(&a.Actor.Net), Critic1: mlpWeights(&a.Critic1.Net),
		Critic2: mlpWeights(&a.Critic2.Net), Target1: mlpWeights(&a.Target1.Net), Target2: mlpWeights(&a.Target2.Net),
		LogAlpha: a.LogAlpha[0]}
}

// ConfigOf is the learner's configuration of a sac.Agent.
func ConfigOf(a *sac.Agent) sacdev.Config {
	c := a.Cfg
	return sacdev.Config{ObsDim: a.Actor.ObsDim, ActDim: a.Actor.ActDim, Hidden: c.Hidden, Batch: c.BatchSize,
		Gamma: c.Gamma, Tau: c.Tau, ActorLR: c.ActorLR, CriticLR: c.CriticLR, AlphaLR: c.AlphaLR,
		AutoAlpha: c.AutoAlpha, TargetEntropy: c.TargetEntropy, ActorEvery: c.ActorEvery,
		LogStdMin: a.Actor.LogStdMin, LogStdMax: a.Actor.LogStdMax, Scale: a.Actor.Scale, Bias: a.Actor.Bias}
}

func normals(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// randomBatch draws a batch with actions inside the bounds and some
// terminal transitions.
func randomBatch(rng *rand.Rand) *buffer.Batch {
	b := buffer.NewBatch(batch, obsDim, actDim)
	copy(b.Obs, normals(rng, len(b.Obs)))
	copy(b.NextObs, normals(rng, len(b.NextObs)))
	copy(b.Rew, normals(rng, len(b.Rew)))
	for i := range b.Act {
		j := i % actDim
		b.Act[i] = float32(low[j] + (high[j]-low[j])*rng.Float64())
	}
	for i := range b.Terminal {
		if rng.Intn(8) == 0 {
			b.Terminal[i] = 1
		}
	}
	return b
}

func relClose(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	scaledClose(t, what, got, want, tol, math.Abs(want))
}

// scaledClose fails t unless got is within tol·scale of want.
func scaledClose(t *testing.T, what string, got, want, tol, scale float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol*scale) {
		t.Errorf("%s = %.9g, CPU %.9g (diff %.3g of %.3g)", what, got, want, math.Abs(got-want), scale)
	}
}

// compareWeights compares every tensor of got with want (see closeTo) and
// returns the largest relative difference.
func compareWeights(t *testing.T, when string, got, want sacdev.Weights, tol, outliers, abs float64) float64 {
	t.Helper()
	worst := 0.0
	names := []string{"actor", "critic1", "critic2", "target1", "target2"}
	for i, pair := range [][2][][]float32{{got.Actor, want.Actor}, {got.Critic1, want.Critic1},
		{got.Critic2, want.Critic2}, {got.Target1, want.Target1}, {got.Target2, want.Target2}} {
		for j := range pair[1] {
			w := devicetest.CloseTo(t, fmt.Sprintf("%s %s tensor %d", when, names[i], j), pair[0][j], pair[1][j], tol, outliers, abs)
			worst = max(worst, w)
		}
	}
	relClose(t, when+" log alpha", float64(got.LogAlpha), float64(want.LogAlpha), tol)
	return worst
}

// Options tunes Compare to a device.
type Options struct {
	// Tol bounds each weight's difference from the CPU's by Tol times its
	// tensor's largest value, and the losses and α relatively.
	Tol float64
	// Outliers is the fraction of a tensor's weights allowed past Tol, but
	// each within two Adam steps per update (2·lr·updates) plus Tol: Adam's
	// first steps move a weight by about lr·sign(g), so a gradient within
	// rounding of zero may step either way when sums run in another order
	// (cuBLAS, GPU reductions), or when a kernel rounds otherwise (emu's
	// squashed-Gaussian head against the CPU's float32 polynomials).
	Outliers float64
	// ActorEvery lists the actor_freq values to run (default 1 and 2).
	ActorEvery []int
	Updates    int // default 3
	// Hidden is the actor's and critics' hidden sizes (default sac's,
	// 256x256; the quick preset's are 128x128).
	Hidden []int
}

// Compare runs sac.Agent and a Learner on d from identical weights, batches
// and noise for opt.Updates updates at hopper's sizes (11 observations, 3
// actions with bounds whose scale and bias are not 1 and 0, 256x256,
// batch 256, some terminal transitions) and fails t where, after any
// update, a weight, log α, the losses or the mean Q-values differ beyond
// opt.
func Compare(t *testing.T, d device.Device, opt Options) {
	every := opt.ActorEvery
	if len(every) == 0 {
		every = []int{1, 2}
	}
	for _, e := range every {
		name := fmt.Sprintf("actor_every=%d", e)
		if opt.Hidden != nil {
			name += fmt.Sprintf("/hidden=%v", opt.Hidden)
		}
		t.Run(name, func(t *testing.T) { compare(t, d, opt, e) })
	}
}

func compare(t *testing.T, d device.Device, opt Options, actorEvery int) {
	updates := opt.Updates
	if updates == 0 {
		updates = 3
	}
	cfg := sac.DefaultConfig(actDim)
	cfg.ActorEvery = actorEvery
	if opt.Hidden != nil {
		cfg.Hidden = opt.Hidden
	}
	agent, err := sac.New(obsDim, low, high, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	l, err := sacdev.New(d, ConfigOf(agent))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetWeights(AgentWeights(agent)); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	maxLR := max(cfg.ActorLR, cfg.CriticLR, cfg.AlphaLR)
	for u := 1; u <= updates; u++ {
		b := randomBatch(rng)
		// sac.Agent.Update draws the next actions' noise, then the actor's.
		seed := int64(100 + u)
		agent.SetRand(rand.New(rand.NewSource(seed)))
		nr := rand.New(rand.NewSource(seed))
		epsNext, eps := normals(nr, batch*actDim), normals(nr, batch*actDim)
		if _, err := agent.Update(b); err != nil {
			t.Fatal(err)
		}
		want, err := agent.LastStats()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Upload(sacdev.Batch{Obs: b.Obs, Act: b.Act, Rew: b.Rew, Terminal: b.Terminal,
			NextObs: b.NextObs, EpsNext: epsNext, Eps: eps}); err != nil {
			t.Fatal(err)
		}
		if err := l.Update(); err != nil {
			t.Fatal(err)
		}
		got, err := l.Stats()
		if err != nil {
			t.Fatal(err)
		}
		when := fmt.Sprintf("update %d", u)
		if got.ActorUpdated != want.ActorUpdated {
			t.Fatalf("%s: actor updated %v, CPU %v", when, got.ActorUpdated, want.ActorUpdated)
		}
		tol := opt.Tol
		relClose(t, when+" critic loss", got.CriticLoss, want.CriticLoss, tol)
		relClose(t, when+" mean Q1", got.Q1, want.Q1, tol)
		relClose(t, when+" mean Q2", got.Q2, want.Q2, tol)
		relClose(t, when+" alpha", got.Alpha, want.Alpha, tol)
		// Both report the last actor step's actor numbers after an update
		// that skipped it.
		relClose(t, when+" actor loss", got.ActorLoss, want.ActorLoss, tol)
		relClose(t, when+" alpha loss", got.AlphaLoss, want.AlphaLoss, tol)
		// log π is a mean of per-sample log-probabilities of order 1 whose
		// signs cancel (small networks: a mean near 0), so its rounding is
		// relative to 1, not to the mean.
		scaledClose(t, when+" log pi", got.LogPi, want.LogPi, tol, max(math.Abs(want.LogPi), 1))
		w, err := l.Weights()
		if err != nil {
			t.Fatal(err)
		}
		worst := compareWeights(t, when, w, AgentWeights(agent), tol, opt.Outliers, 2*maxLR*float64(u))
		t.Logf("%s: critic loss %.7f (CPU %.7f), actor loss %.7f (CPU %.7f), alpha %.7f (CPU %.7f); "+
			"largest weight difference %.3g of its tensor's largest weight",
			when, got.CriticLoss, want.CriticLoss, got.ActorLoss, want.ActorLoss, got.Alpha, want.Alpha, worst)
	}
}
