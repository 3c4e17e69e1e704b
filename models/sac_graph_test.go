package models

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
)

// sacNaiveSample is an independent float64 actor: it returns the action and
// the log-density of tanh(x), using log N((x-u)/σ) and log(1 - tanh(x)²)
// directly (not the softplus form of the graph).
func sacNaiveSample(a *Actor, obs, eps []float64) (act []float64, logp float64) {
	out := gmNaiveMLP(&a.Net, obs)
	ad := a.ActDim
	act = make([]float64, ad)
	for j := 0; j < ad; j++ {
		u, t := out[j], out[ad+j]
		lo, hi := float64(a.LogStdMin), float64(a.LogStdMax)
		logStd := lo + 0.5*(hi-lo)*(math.Tanh(t)+1)
		std := math.Exp(logStd)
		x := u + std*eps[j]
		z := (x - u) / std
		logp += -0.5*z*z - logStd - 0.5*math.Log(2*math.Pi)
		y := math.Tanh(x)
		logp -= math.Log(1 - y*y)
		act[j] = float64(a.Scale[j])*y + float64(a.Bias[j])
	}
	return act, logp
}

func sacRandVec(n int, scale float64, rng *rand.Rand) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

// TestActorSampleFiniteDiff checks ActorNodes.Sample's actions and
// log-densities against the naive float64 actor, and the gradients of
// sum(logp·c1) + sum(action·c2) with respect to every actor weight against
// central finite differences of the naive actor.
func TestActorSampleFiniteDiff(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	const batch, obsDim = 4, 3
	low, high := []float64{-1, 0}, []float64{1, 3}
	actor := NewActor(obsDim, low, high, []int{6, 5}, rng)
	ad := actor.ActDim
	g, err := newSACGraph(obsDim, ad, batch)
	if err != nil {
		t.Fatal(err)
	}
	obs := NewGraphInput(g, "obs", batch, obsDim)
	eps := NewGraphInput(g, "eps", batch, ad)
	copy(obs.Data, sacRandVec(batch*obsDim, 1, rng))
	copy(eps.Data, sacRandVec(batch*ad, 1, rng))
	c1 := NewGraphInput(g, "c1", batch)
	c2 := NewGraphInput(g, "c2", batch, ad)
	copy(c1.Data, sacRandVec(batch, 1, rng))
	copy(c2.Data, sacRandVec(batch*ad, 1, rng))
	an := NewActorNodes(g, "actor", actor)
	action, logp, err := an.Sample(obs.Node, eps.Node)
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(logp, c1.Node)))),
		G.Must(G.Sum(G.Must(G.HadamardProd(action, c2.Node))))))
	if _, err := G.Grad(cost, an.Params()...); err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	row := func(v []float32, r, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(v[r*n+i])
		}
		return out
	}
	naiveCost := func() float64 {
		s := 0.0
		for r := 0; r < batch; r++ {
			a, lp := sacNaiveSample(actor, row(obs.Data, r, obsDim), row(eps.Data, r, ad))
			s += lp * float64(c1.Data[r])
			for j := range a {
				s += a[j] * float64(c2.Data[r*ad+j])
			}
		}
		return s
	}
	gotA, gotL := sacValues(action), sacValues(logp)
	for r := 0; r < batch; r++ {
		a, lp := sacNaiveSample(actor, row(obs.Data, r, obsDim), row(eps.Data, r, ad))
		if math.Abs(float64(gotL[r])-lp) > 1e-5*(1+math.Abs(lp)) {
			t.Errorf("logp[%d] = %v, naive %v", r, gotL[r], lp)
		}
		for j := range a {
			if math.Abs(float64(gotA[r*ad+j])-a[j]) > 1e-5*(1+math.Abs(a[j])) {
				t.Errorf("action[%d,%d] = %v, naive %v", r, j, gotA[r*ad+j], a[j])
			}
		}
	}
	checkNaiveGrads(t, "actor", an.Params(), naiveCost, 1e-3, 2e-4)
}

// TestSACGraphLosses checks the critic and actor graphs' losses and the
// values they hand out (Q1, logπ) against a naive float64 computation on the
// same weights, inputs and noise.
func TestSACGraphLosses(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	const batch, obsDim = 5, 4
	low, high := []float64{-2, -1}, []float64{2, 1}
	actor := NewActor(obsDim, low, high, []int{8, 8}, rng)
	c1 := NewCritic(obsDim, 2, []int{8, 8}, rng)
	c2 := NewCritic(obsDim, 2, []int{8, 8}, rng)
	obs := sacRandVec(batch*obsDim, 1, rng)
	act := sacRandVec(batch*2, 0.5, rng)
	eps := sacRandVec(batch*2, 1, rng)
	y := sacRandVec(batch, 1, rng)
	const alpha = 0.37
	q := func(c *Critic, o []float32, a []float64, r int) float64 {
		in := make([]float64, 0, obsDim+2)
		for _, v := range o[r*obsDim : (r+1)*obsDim] {
			in = append(in, float64(v))
		}
		return gmNaiveMLP(&c.Net, append(in, a...))[0]
	}

	loss, q1 := runCriticGraph(t, c1, c2, batch, obs, act, y)
	want := 0.0
	for r := 0; r < batch; r++ {
		a := []float64{float64(act[2*r]), float64(act[2*r+1])}
		d1, d2 := q(c1, obs, a, r)-float64(y[r]), q(c2, obs, a, r)-float64(y[r])
		want += (d1*d1 + d2*d2) / batch
		if math.Abs(float64(q1[r])-q(c1, obs, a, r)) > 1e-5 {
			t.Errorf("Q1[%d] = %v, naive %v", r, q1[r], q(c1, obs, a, r))
		}
	}
	if math.Abs(float64(loss)-want) > 1e-5*(1+want) {
		t.Errorf("critic loss %v, naive %v", loss, want)
	}

	ag, aloss, logp := runActorGraph(t, actor, c1, c2, batch, obs, eps, alpha)
	defer ag.Close()
	want = 0
	for r := 0; r < batch; r++ {
		o := make([]float64, obsDim)
		for i := range o {
			o[i] = float64(obs[r*obsDim+i])
		}
		a, lp := sacNaiveSample(actor, o, []float64{float64(eps[2*r]), float64(eps[2*r+1])})
		if math.Abs(float64(logp[r])-lp) > 1e-5*(1+math.Abs(lp)) {
			t.Errorf("actor graph logp[%d] = %v, naive %v", r, logp[r], lp)
		}
		want += (float64(float32(alpha))*lp - math.Min(q(c1, obs, a, r), q(c2, obs, a, r))) / batch
	}
	if math.Abs(float64(aloss)-want) > 1e-5*(1+math.Abs(want)) {
		t.Errorf("actor loss %v, naive %v", aloss, want)
	}
}

// runCriticGraph runs a new critic-loss graph of c1 and c2 once on (obs,
// act, y) and returns the loss and a copy of Q1.
func runCriticGraph(t *testing.T, c1, c2 *Critic, batch int, obs, act, y []float32) (float32, []float32) {
	t.Helper()
	cg, err := NewSACCriticGraph(c1, c2, batch)
	if err != nil {
		t.Fatalf("critic graph, batch %d: %v", batch, err)
	}
	defer cg.Close()
	copy(cg.Obs.Data, obs)
	copy(cg.Act.Data, act)
	copy(cg.Target.Data, y)
	loss, q1, _, err := cg.Run()
	if err != nil {
		t.Fatal(err)
	}
	return loss, append([]float32(nil), q1...)
}

// runActorGraph runs a new actor-loss graph once on (obs, eps) with entropy
// coefficient alpha and returns it (for the caller to close), the loss and
// the log-densities.
func runActorGraph(t *testing.T, actor *Actor, c1, c2 *Critic, batch int, obs, eps []float32, alpha float32) (*SACActorGraph, float32, []float32) {
	t.Helper()
	ag, err := NewSACActorGraph(actor, c1, c2, batch)
	if err != nil {
		t.Fatalf("actor graph, batch %d: %v", batch, err)
	}
	copy(ag.Obs.Data, obs)
	copy(ag.Eps.Data, eps)
	ag.SetAlpha(alpha)
	loss, logp, err := ag.Run()
	if err != nil {
		ag.Close()
		t.Fatal(err)
	}
	return ag, loss, logp
}
