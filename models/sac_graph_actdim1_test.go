package models

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// This file checks SAC's graphs for every batch size and action dimension,
// one included (Gorgonia's G.Slice used to squeeze the size-1 dimensions
// away: a panic for batch 1 with one action dimension, silently broken
// shapes for larger batches), against a naive float64 actor and critic
// written here.

// ad1Forward is a plain float64 ReLU MLP.
func ad1Forward(m *MLP, x []float64) []float64 {
	h := x
	for li, l := range m.Layers {
		out := make([]float64, l.Out)
		for o := range out {
			s := float64(l.B[o])
			for i, v := range h {
				s += v * float64(l.W[i*l.Out+o])
			}
			if li+1 < len(m.Layers) && s < 0 {
				s = 0
			}
			out[o] = s
		}
		h = out
	}
	return h
}

// ad1Actor returns the squashed action and log-density of the naive actor,
// with log(1 - tanh²x) computed as -2·log(cosh x) = -2(|x| + log1p(e^{-2|x|}) - log 2).
func ad1Actor(a *Actor, obs, eps []float64) ([]float64, float64) {
	out := ad1Forward(&a.Net, obs)
	ad := a.ActDim
	act, logp := make([]float64, ad), 0.0
	lo, hi := float64(a.LogStdMin), float64(a.LogStdMax)
	for j := 0; j < ad; j++ {
		logStd := lo + (hi-lo)*(math.Tanh(out[ad+j])+1)/2
		x := out[j] + math.Exp(logStd)*eps[j]
		ax := math.Abs(x)
		logp += -eps[j]*eps[j]/2 - logStd - math.Log(2*math.Pi)/2 + 2*(ax+math.Log1p(math.Exp(-2*ax))-math.Ln2)
		act[j] = float64(a.Scale[j])*math.Tanh(x) + float64(a.Bias[j])
	}
	return act, logp
}

func ad1Critic(c *Critic, obs, act []float64) float64 {
	return ad1Forward(&c.Net, append(append([]float64(nil), obs...), act...))[0]
}

func ad1Rows(v []float32, r, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(v[r*n+i])
	}
	return out
}

func ad1Bounds(ad int) (low, high []float64) {
	for j := 0; j < ad; j++ {
		low, high = append(low, -3+0.5*float64(j)), append(high, 3+float64(j))
	}
	return low, high
}

func ad1Close(got float32, want, tol float64) bool {
	return math.Abs(float64(got)-want) <= tol*(1+math.Abs(want))
}

// TestActorSampleGraphShapes builds the acting graph for batch 1 / act dim 1
// (the shapes of sac.Agent.Act on inverted-pendulum), batch 256 / act dim 1,
// batch 1 / act dim 3 and batch 3 / act dim 2, and compares the sampled and
// deterministic actions and the log-densities with the naive actor.
func TestActorSampleGraphShapes(t *testing.T) {
	const obsDim = 4
	rng := rand.New(rand.NewSource(21))
	for _, c := range []struct{ batch, ad int }{{1, 1}, {256, 1}, {1, 3}, {3, 2}} {
		low, high := ad1Bounds(c.ad)
		actor := NewActor(obsDim, low, high, []int{16, 16}, rng)
		g, err := NewActorSampleGraph(actor, c.batch)
		if err != nil {
			t.Fatalf("batch %d act %d: %v", c.batch, c.ad, err)
		}
		for _, det := range []bool{false, true} {
			copy(g.Obs.Data, sacRandVec(c.batch*obsDim, 1, rng))
			copy(g.Eps.Data, sacRandVec(c.batch*c.ad, 1, rng))
			if det {
				clear(g.Eps.Data)
			}
			act, logp, err := g.Run()
			if err != nil {
				t.Fatal(err)
			}
			if len(act) != c.batch*c.ad || len(logp) != c.batch {
				t.Fatalf("batch %d act %d: got %d actions and %d log-densities", c.batch, c.ad, len(act), len(logp))
			}
			for r := 0; r < c.batch; r++ {
				wa, wl := ad1Actor(actor, ad1Rows(g.Obs.Data, r, obsDim), ad1Rows(g.Eps.Data, r, c.ad))
				if !ad1Close(logp[r], wl, 1e-5) {
					t.Errorf("batch %d act %d det %v: logp[%d] = %v, naive %v", c.batch, c.ad, det, r, logp[r], wl)
				}
				for j := range wa {
					if !ad1Close(act[r*c.ad+j], wa[j], 1e-5) {
						t.Errorf("batch %d act %d det %v: action[%d,%d] = %v, naive %v", c.batch, c.ad, det, r, j, act[r*c.ad+j], wa[j])
					}
				}
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSACGraphsActDim1 runs the target, critic and actor graphs with one
// action dimension at batch 1 and 5 and compares their outputs with the
// naive networks, and the actor loss's weight gradients with central finite
// differences of the naive actor loss.
func TestSACGraphsActDim1(t *testing.T) {
	const obsDim, alpha = 4, 0.3
	rng := rand.New(rand.NewSource(22))
	for _, batch := range []int{1, 5} {
		low, high := ad1Bounds(1)
		actor := NewActor(obsDim, low, high, []int{6, 5}, rng)
		c1, c2 := NewCritic(obsDim, 1, []int{6, 5}, rng), NewCritic(obsDim, 1, []int{6, 5}, rng)
		obs, eps := sacRandVec(batch*obsDim, 1, rng), sacRandVec(batch, 1, rng)
		act, y := sacRandVec(batch, 1, rng), sacRandVec(batch, 1, rng)

		tg, err := NewSACTargetGraph(actor, c1, c2, batch)
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		copy(tg.NextObs.Data, obs)
		copy(tg.Eps.Data, eps)
		logp, q1, q2, err := tg.Run()
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < batch; r++ {
			o := ad1Rows(obs, r, obsDim)
			a, lp := ad1Actor(actor, o, ad1Rows(eps, r, 1))
			if !ad1Close(logp[r], lp, 1e-5) || !ad1Close(q1[r], ad1Critic(c1, o, a), 1e-5) || !ad1Close(q2[r], ad1Critic(c2, o, a), 1e-5) {
				t.Errorf("batch %d target row %d: logp %v q1 %v q2 %v, naive %v %v %v",
					batch, r, logp[r], q1[r], q2[r], lp, ad1Critic(c1, o, a), ad1Critic(c2, o, a))
			}
		}
		tg.Close()

		closs, _ := runCriticGraph(t, c1, c2, batch, obs, act, y)
		want := 0.0
		for r := 0; r < batch; r++ {
			o, a := ad1Rows(obs, r, obsDim), ad1Rows(act, r, 1)
			d1, d2 := ad1Critic(c1, o, a)-float64(y[r]), ad1Critic(c2, o, a)-float64(y[r])
			want += (d1*d1 + d2*d2) / float64(batch)
		}
		if !ad1Close(closs, want, 1e-5) {
			t.Errorf("batch %d: critic loss %v, naive %v", batch, closs, want)
		}

		ag, aloss, _ := runActorGraph(t, actor, c1, c2, batch, obs, eps, alpha)
		naiveLoss := func() float64 {
			s := 0.0
			for r := 0; r < batch; r++ {
				o := ad1Rows(obs, r, obsDim)
				a, lp := ad1Actor(actor, o, ad1Rows(eps, r, 1))
				s += (float64(float32(alpha))*lp - math.Min(ad1Critic(c1, o, a), ad1Critic(c2, o, a))) / float64(batch)
			}
			return s
		}
		if want := naiveLoss(); !ad1Close(aloss, want, 1e-5) {
			t.Errorf("batch %d: actor loss %v, naive %v", batch, aloss, want)
		}
		for _, p := range ag.Params {
			gv, err := p.Grad()
			if err != nil {
				t.Fatal(err)
			}
			got, vals := gv.Data().([]float32), p.Value().Data().([]float32)
			for j := range vals {
				old := vals[j]
				vals[j] = old + 1e-3
				up, fp := vals[j], naiveLoss()
				vals[j] = old - 1e-3
				down, fm := vals[j], naiveLoss()
				vals[j] = old
				fd := (fp - fm) / (float64(up) - float64(down))
				if !ad1Close(got[j], fd, 5e-4) {
					t.Errorf("batch %d: d loss/d %v[%d] = %v, finite difference %v", batch, p.Name(), j, got[j], fd)
				}
			}
		}
		ag.Close()
	}
}

// TestSACGraphConstructorsReturnErrors feeds the constructors sizes and
// weights that Gorgonia rejects (an empty batch, a weight slice shorter than
// its shape) and expects errors rather than panics.
func TestSACGraphConstructorsReturnErrors(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	low, high := ad1Bounds(1)
	actor := NewActor(4, low, high, []int{8}, rng)
	c := NewCritic(4, 1, []int{8}, rng)
	broken := NewActor(4, low, high, []int{8}, rng)
	broken.Net.Layers[0].W = broken.Net.Layers[0].W[:5]
	brokenC := NewCritic(4, 1, []int{8}, rng)
	brokenC.Net.Layers[1].W = brokenC.Net.Layers[1].W[:3]
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
		} else if !strings.Contains(err.Error(), "models:") {
			t.Errorf("%s: error %q lacks context", what, err)
		}
	}
	noPanic := func(what string, f func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panicked: %v", what, r)
			}
		}()
		check(what, f())
	}
	noPanic("sample graph batch 0", func() error { _, err := NewActorSampleGraph(actor, 0); return err })
	noPanic("sample graph, short W", func() error { _, err := NewActorSampleGraph(broken, 2); return err })
	noPanic("actor graph, short W", func() error { _, err := NewSACActorGraph(broken, c, c, 2); return err })
	noPanic("actor graph, short critic W", func() error { _, err := NewSACActorGraph(actor, brokenC, c, 2); return err })
	noPanic("target graph, short critic W", func() error { _, err := NewSACTargetGraph(actor, c, brokenC, 2); return err })
	noPanic("critic graph, short W", func() error { _, err := NewSACCriticGraph(brokenC, c, 2); return err })
	noPanic("critic graph batch 0", func() error { _, err := NewSACCriticGraph(c, c, 0); return err })
}
