package experiments

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/envs"
)

// recordedStep is one transition as a data set stores it (float32).
type recordedStep struct {
	obs, act, next []float32
}

// recordTransitions runs uniform random actions in a fresh env and records
// n transitions in float32, as collect.Dataset does.
func recordTransitions(t *testing.T, task string, n int, seed int64) []recordedStep {
	t.Helper()
	env, err := envs.Make(task)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	rng := rand.New(rand.NewSource(seed))
	lo, hi := env.ActionLow(), env.ActionHigh()
	obs := env.Reset(seed)
	a := make([]float64, env.Task.ActDim)
	var out []recordedStep
	for len(out) < n {
		for i := range a {
			a[i] = lo[i] + rng.Float64()*(hi[i]-lo[i])
		}
		st, err := env.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recordedStep{obs: envs.Float32(obs), act: envs.Float32(a), next: envs.Float32(st.Obs)})
		obs = st.Obs
		if st.Terminated || st.Truncated {
			obs = env.ResetNext()
		}
	}
	return out
}

// TestTrueStepReproducesRecordedTransitions sets the simulator to every
// recorded observation (x = 0, while the recording had the real x) and steps
// the recorded action: the result must equal the recorded next observation
// up to the float32 rounding of the stored state (~1e-7 relative, grown by
// a few contact-rich physics steps), for every task the experiments use.
// Observations with a clipped velocity are skipped, and must be the only
// ones skipped.
func TestTrueStepReproducesRecordedTransitions(t *testing.T) {
	tol := map[string]struct{ max, mean float64 }{
		"hopper": {2e-5, 2e-6}, "walker2d": {1e-4, 5e-6}, "halfcheetah": {2e-3, 1e-5}}
	for _, task := range []string{"hopper", "walker2d", "halfcheetah"} {
		rec := recordTransitions(t, task, 3000, 7)
		ts, err := NewTrueStepper(task)
		if err != nil {
			t.Fatal(err)
		}
		var worst, sum float64
		checked, skipped := 0, 0
		for _, r := range rec {
			if !ts.Restorable(r.obs) {
				if !clipped(r.obs, task) {
					t.Fatalf("%s: observation %v is not restorable but has no clipped velocity", task, r.obs)
				}
				skipped++
				continue
			}
			got, ok, err := ts.Step(r.obs, r.act)
			if err != nil || !ok {
				t.Fatalf("%s: true step: ok %v, %v", task, ok, err)
			}
			var e float64
			for i, v := range got {
				e = math.Max(e, math.Abs(v-float64(r.next[i])))
			}
			worst = math.Max(worst, e)
			sum += e
			checked++
		}
		ts.Close()
		mean := sum / float64(checked)
		t.Logf("%s: %d steps checked, %d skipped (clipped velocity); max |error| %.3g, mean %.3g", task, checked, skipped, worst, mean)
		if checked < 500 {
			t.Errorf("%s: only %d restorable steps", task, checked)
		}
		if worst > tol[task].max || mean > tol[task].mean {
			t.Errorf("%s: restored steps differ from the recorded next observations by up to %.3g (mean %.3g), tolerance %.0e (%.0e)",
				task, worst, mean, tol[task].max, tol[task].mean)
		}
	}
}

// clipped tells whether a hopper or walker2d observation has a velocity at
// the ±10 clip (observation index >= qpos size - 1).
func clipped(obs []float32, task string) bool {
	nq := map[string]int{"hopper": 6, "walker2d": 9}[task]
	if nq == 0 {
		return false
	}
	for _, v := range obs[nq-1:] {
		if math.Abs(float64(v)) >= 10 {
			return true
		}
	}
	return false
}

// TestTrueStepperRejects checks the skip rule on hand-made observations:
// a velocity at the clip or a NaN makes a hopper observation
// unrestorable; large positions are fine; halfcheetah never clips.
func TestTrueStepperRejects(t *testing.T) {
	ts, err := NewTrueStepper("hopper")
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	obs := []float32{1.25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if !ts.Restorable(obs) {
		t.Fatal("the resting hopper observation must be restorable")
	}
	for i, v := range map[int]float32{5: 10, 10: -10, 7: float32(math.NaN())} {
		o := append([]float32(nil), obs...)
		o[i] = v
		if ts.Restorable(o) {
			t.Errorf("observation with obs[%d] = %v must not be restorable", i, v)
		}
		if _, _, err := ts.Step(o, []float32{0, 0, 0}); err == nil {
			t.Errorf("stepping an unrestorable observation (obs[%d] = %v) must fail", i, v)
		}
	}
	o := append([]float32(nil), obs...)
	o[4] = 50 // a joint angle, not a velocity
	if !ts.Restorable(o) {
		t.Error("a large joint angle is restorable")
	}
	hc, err := NewTrueStepper("halfcheetah")
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	big := make([]float32, 17)
	big[10] = 30
	if !hc.Restorable(big) {
		t.Error("halfcheetah does not clip velocities: |v| = 30 is restorable")
	}
	act := make([]float32, 6)
	if _, ok, err := hc.Step(big, act); err != nil || !ok {
		t.Errorf("a fast but sane halfcheetah state: ok %v, error %v", ok, err)
	}
	// MuJoCo rejects velocities beyond 1e10 (it warns and resets): no true
	// next state, and the next, sane call must not inherit the warning.
	big[10] = 1e12
	if _, ok, err := hc.Step(big, act); err != nil || ok {
		t.Errorf("a 1e12 velocity: ok %v, error %v; want ok false", ok, err)
	}
	big[10] = 30
	if _, ok, err := hc.Step(big, act); err != nil || !ok {
		t.Errorf("after a flagged step, a sane state: ok %v, error %v", ok, err)
	}
}
