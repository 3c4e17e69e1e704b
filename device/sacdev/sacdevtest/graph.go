package sacdevtest

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/sacdev"
	"github.com/admpo/admpo/sac"
)

// CompareGraph runs two learners on d from the same weights, one recording
// its update as a device graph (Config.Graph) and one without, through six
// updates with a new batch each and a new actor learning rate from the
// fourth: weights, optimiser state and statistics must agree within tol of
// each tensor's largest value (0 on emu: the same kernels in the same order).
func CompareGraph(t *testing.T, d device.Device, tol float64) {
	t.Helper()
	agent, err := sac.New(obsDim, low, high, sac.DefaultConfig(actDim))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	var ls [2]*sacdev.Learner
	for i := range ls {
		cfg := ConfigOf(agent)
		cfg.Graph = i == 1
		if ls[i], err = sacdev.New(d, cfg); err != nil {
			t.Fatal(err)
		}
		defer ls[i].Close()
		if err := ls[i].SetWeights(AgentWeights(agent)); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(11))
	for u := 1; u <= 6; u++ {
		b := randomBatch(rng)
		batch := sacdev.Batch{Obs: b.Obs, Act: b.Act, Rew: b.Rew, Terminal: b.Terminal, NextObs: b.NextObs,
			EpsNext: normals(rng, len(b.Act)), Eps: normals(rng, len(b.Act))}
		for _, l := range ls {
			if u == 4 {
				l.SetActorLR(1e-4)
			}
			if err := l.Upload(batch); err != nil {
				t.Fatal(err)
			}
			if err := l.Update(); err != nil {
				t.Fatalf("update %d: %v", u, err)
			}
		}
		var st [2]sacdev.Stats
		for i, l := range ls {
			if st[i], err = l.Stats(); err != nil {
				t.Fatal(err)
			}
		}
		for _, x := range []struct {
			name      string
			got, want float64
		}{{"critic loss", st[1].CriticLoss, st[0].CriticLoss}, {"actor loss", st[1].ActorLoss, st[0].ActorLoss},
			{"alpha", st[1].Alpha, st[0].Alpha}, {"log pi", st[1].LogPi, st[0].LogPi}} {
			if math.Abs(x.got-x.want) > tol*math.Max(1, math.Abs(x.want)) {
				t.Errorf("update %d: %s with the graph %v, without %v", u, x.name, x.got, x.want)
			}
		}
	}
	var w [2]sacdev.Weights
	var o [2]sacdev.Optim
	for i, l := range ls {
		if w[i], err = l.Weights(); err != nil {
			t.Fatal(err)
		}
		if o[i], err = l.Optim(); err != nil {
			t.Fatal(err)
		}
	}
	if o[0].ActorT != o[1].ActorT || o[0].CriticT != o[1].CriticT || o[0].AlphaT != o[1].AlphaT || o[0].Updates != o[1].Updates {
		t.Errorf("step counts with the graph %d/%d/%d/%d, without %d/%d/%d/%d", o[1].ActorT, o[1].CriticT, o[1].AlphaT,
			o[1].Updates, o[0].ActorT, o[0].CriticT, o[0].AlphaT, o[0].Updates)
	}
	sets := map[string][2][][]float32{
		"actor": {w[0].Actor, w[1].Actor}, "critic 1": {w[0].Critic1, w[1].Critic1}, "critic 2": {w[0].Critic2, w[1].Critic2},
		"target 1": {w[0].Target1, w[1].Target1}, "target 2": {w[0].Target2, w[1].Target2},
		"actor m": {o[0].ActorM, o[1].ActorM}, "critic v": {o[0].CriticV, o[1].CriticV},
		"log alpha": {{{w[0].LogAlpha}}, {{w[1].LogAlpha}}},
	}
	for name, s := range sets {
		for j := range s[0] {
			largest, diff := 0.0, 0.0
			for k, v := range s[0][j] {
				largest = math.Max(largest, math.Abs(float64(v)))
				diff = math.Max(diff, math.Abs(float64(s[1][j][k])-float64(v)))
			}
			if diff > tol*math.Max(largest, 1e-30) {
				t.Errorf("%s tensor %d: largest difference %g with the graph (largest value %g)", name, j, diff, largest)
			}
		}
	}
}

// BenchGraphUpdate is BenchUpdate with the update recorded as a device
// graph once and replayed (Config.Graph).
func BenchGraphUpdate(b *testing.B, d device.Device) {
	benchUpdate(b, d, true)
}
