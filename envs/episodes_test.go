package envs

import (
	"errors"
	"math"
	"math/rand"
	"testing"
)

// TestEvaluateMatchesHandLoop checks Evaluate against the plain episode
// loop it replaces: same seeds, same random draws in the same order, same
// returns and lengths.
func TestEvaluateMatchesHandLoop(t *testing.T) {
	e := mustMake(t, "hopper")
	u := UniformActor{Low: e.ActionLow(), High: e.ActionHigh()}
	const episodes, seed = 3, 7
	var want []float64
	var wantLen []int
	rng := rand.New(rand.NewSource(seed))
	act := make([]float64, e.Task.ActDim)
	for ep := 0; ep < episodes; ep++ {
		e.Reset(seed + int64(ep))
		ret, n := 0.0, 0
		for {
			for i := range act {
				act[i] = u.Low[i] + rng.Float64()*(u.High[i]-u.Low[i])
			}
			st, err := e.Step(act)
			if err != nil {
				t.Fatal(err)
			}
			ret += st.Reward
			n++
			if st.Terminated || st.Truncated {
				break
			}
		}
		want, wantLen = append(want, ret), append(wantLen, n)
	}
	calls := 0
	r, err := Evaluate(e, u, EvalConfig{Episodes: episodes, RNG: rand.New(rand.NewSource(seed)),
		Seed: func(ep int) int64 { return seed + int64(ep) }, OnStep: func(int, *Env) error { calls++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for i := range want {
		if r.Returns[i] != want[i] || r.Lengths[i] != wantLen[i] {
			t.Errorf("episode %d: return %v length %d, want %v and %d", i, r.Returns[i], r.Lengths[i], want[i], wantLen[i])
		}
		steps += wantLen[i]
	}
	if calls != steps+episodes {
		t.Errorf("OnStep called %d times, want %d (every reset and step)", calls, steps+episodes)
	}
	stop := errors.New("stop")
	if _, err := Evaluate(e, u, EvalConfig{Episodes: 1, RNG: rng, OnStep: func(int, *Env) error { return stop }}); !errors.Is(err, stop) {
		t.Errorf("OnStep's error: %v", err)
	}
	if _, err := Evaluate(e, u, EvalConfig{}); err == nil {
		t.Error("0 episodes accepted")
	}
}

// TestSetFromObsReproducesSteps restores each state of an episode from its
// observation and checks that stepping the recorded action gives the
// recorded next observation; clipped hopper observations are refused.
func TestSetFromObsReproducesSteps(t *testing.T) {
	for _, task := range []string{"hopper", "halfcheetah", "ant"} {
		e, twin := mustMake(t, task), mustMake(t, task)
		u := UniformActor{Low: e.ActionLow(), High: e.ActionHigh()}
		var obs [][]float32
		var acts, next [][]float64
		_, _, err := Play(e, u, e.Reset(3), rand.New(rand.NewSource(3)), Hooks{
			BeforeStep: func(o []float32, a []float64) error {
				obs, acts = append(obs, o), append(acts, append([]float64(nil), a...))
				return nil
			},
			AfterStep: func(st Step, _ []float32) error { next = append(next, st.Obs); return nil },
		})
		if err != nil {
			t.Fatalf("%s: %v", task, err)
		}
		checked := 0
		for i := range obs {
			if !twin.Restorable(obs[i], 0) {
				continue
			}
			if err := twin.SetFromObs(obs[i]); err != nil {
				t.Fatalf("%s step %d: %v", task, i, err)
			}
			st, err := twin.Step(acts[i])
			if err != nil {
				t.Fatalf("%s step %d: %v", task, i, err)
			}
			for j, v := range st.Obs {
				if math.Abs(v-next[i][j]) > 2e-3 {
					t.Fatalf("%s step %d: restored state steps to %v, the episode went to %v", task, i, st.Obs, next[i])
				}
			}
			checked++
		}
		if checked < len(obs)/2 {
			t.Errorf("%s: only %d of %d states restored", task, checked, len(obs))
		}
	}
	e := mustMake(t, "hopper")
	obs := make([]float32, e.Task.ObsDim)
	obs[len(obs)-1] = 10
	if e.Restorable(obs, 0) || e.SetFromObs(obs) == nil {
		t.Error("a clipped hopper velocity was accepted")
	}
	obs[len(obs)-1] = 9.99995
	if !e.Restorable(obs, 0) || e.Restorable(obs, 1e-4) {
		t.Error("margin not applied")
	}
}
