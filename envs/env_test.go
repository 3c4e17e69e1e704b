package envs

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// randomAction draws a uniform action inside the env's bounds.
func randomAction(e *Env, rng *rand.Rand) []float64 {
	a := make([]float64, e.Task.ActDim)
	for i := range a {
		a[i] = e.low[i] + rng.Float64()*(e.high[i]-e.low[i])
	}
	return a
}

func mustMake(t *testing.T, name string) *Env {
	t.Helper()
	e, err := Make(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// trajectory runs n random steps (resetting on episode ends) and returns all observations.
func trajectory(t *testing.T, name string, seed int64, n int) []float64 {
	e := mustMake(t, name)
	rng := rand.New(rand.NewSource(seed))
	out := append([]float64(nil), e.Reset(seed)...)
	for i := 0; i < n; i++ {
		st, err := e.Step(randomAction(e, rng))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st.Obs...)
		out = append(out, st.Reward)
		if st.Terminated || st.Truncated {
			out = append(out, e.ResetNext()...)
		}
	}
	return out
}

func TestSeedDeterminism(t *testing.T) {
	for _, name := range Names() {
		a := trajectory(t, name, 7, 300)
		b := trajectory(t, name, 7, 300)
		c := trajectory(t, name, 8, 300)
		if len(a) != len(b) {
			t.Fatalf("%s: same seed gave different lengths %d, %d", name, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: same seed differs at value %d: %v vs %v", name, i, a[i], b[i])
			}
		}
		same := len(a) == len(c)
		for i := 0; same && i < len(a); i++ {
			same = a[i] == c[i]
		}
		if same {
			t.Errorf("%s: seeds 7 and 8 gave identical trajectories", name)
		}
	}
}

func TestObservationLayout(t *testing.T) {
	want := map[string]struct {
		skip int
		clip float64
	}{"hopper": {1, 10}, "walker2d": {1, 10}, "halfcheetah": {1, 0}, "ant": {2, 0}, "humanoid": {2, 0}, "inverted-pendulum": {0, 0}}
	for name, w := range want {
		e := mustMake(t, name)
		e.Reset(3)
		rng := rand.New(rand.NewSource(3))
		for i := 0; i < 50; i++ {
			st, err := e.Step(randomAction(e, rng))
			if err != nil {
				t.Fatal(err)
			}
			qp, qv := e.QPos(), e.QVel()
			exp := append([]float64(nil), qp[w.skip:]...)
			for _, v := range qv {
				if w.clip > 0 {
					v = math.Max(-w.clip, math.Min(w.clip, v))
				}
				exp = append(exp, v)
			}
			if len(st.Obs) != len(exp) || len(exp) != e.Task.ObsDim {
				t.Fatalf("%s: obs has %d values, want %d (ObsDim %d)", name, len(st.Obs), len(exp), e.Task.ObsDim)
			}
			for j := range exp {
				if st.Obs[j] != exp[j] {
					t.Fatalf("%s: obs[%d] = %v, want %v", name, j, st.Obs[j], exp[j])
				}
			}
			if st.Terminated || st.Truncated {
				break
			}
		}
	}
	// Spot checks of the documented meaning of the first entries.
	e := mustMake(t, "hopper")
	obs := e.Reset(0)
	if math.Abs(obs[0]-1.25) > 0.01 {
		t.Errorf("hopper obs[0] (torso z) = %v, want ≈1.25 at reset", obs[0])
	}
	a := mustMake(t, "ant")
	if obs := a.Reset(0); math.Abs(obs[0]-0.75) > 0.11 {
		t.Errorf("ant obs[0] (torso z) = %v, want ≈0.75 at reset", obs[0])
	}
}

func TestRewardTerms(t *testing.T) {
	// x is the root slide joint for the planar tasks and the free joint's x for ant.
	for _, name := range []string{"hopper", "walker2d", "halfcheetah", "ant"} {
		e := mustMake(t, name)
		e.Reset(11)
		rng := rand.New(rand.NewSource(11))
		for i := 0; i < 200; i++ {
			before := e.QPos()[0]
			a := randomAction(e, rng)
			a[0] *= 1.5 // partly out of bounds: the cost uses the clipped action
			st, err := e.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			after := e.QPos()[0]
			dt := e.Dt()
			wantFwd := e.Task.Forward * (after - before) / dt
			var sq float64
			for j, v := range a {
				v = math.Max(e.low[j], math.Min(e.high[j], v))
				sq += v * v
			}
			wantCtrl := e.Task.CtrlCost * sq
			if math.Abs(st.Info.ForwardReward-wantFwd) > 1e-9*math.Max(1, math.Abs(wantFwd)) {
				t.Fatalf("%s: forward reward %v, want %v", name, st.Info.ForwardReward, wantFwd)
			}
			if math.Abs(st.Info.CtrlCost-wantCtrl) > 1e-12 {
				t.Fatalf("%s: ctrl cost %v, want %v", name, st.Info.CtrlCost, wantCtrl)
			}
			if want := wantFwd + e.Task.Healthy - wantCtrl; math.Abs(st.Reward-want) > 1e-9 {
				t.Fatalf("%s: reward %v, want %v", name, st.Reward, want)
			}
			if st.Terminated || st.Truncated {
				e.ResetNext()
			}
		}
	}
	dts := map[string]float64{"hopper": 0.008, "walker2d": 0.008, "halfcheetah": 0.05, "ant": 0.05, "humanoid": 0.015, "inverted-pendulum": 0.04}
	for name, dt := range dts {
		if got := mustMake(t, name).Dt(); math.Abs(got-dt) > 1e-12 {
			t.Errorf("%s: dt %v, want %v", name, got, dt)
		}
	}
}

func TestHealthThresholds(t *testing.T) {
	up := math.Nextafter
	type tc struct {
		name   string
		index  int // qpos index varied
		value  float64
		health bool
	}
	cases := []tc{
		{"hopper", 1, 0.7, false}, {"hopper", 1, up(0.7, 1), true},
		{"hopper", 2, 0.2, false}, {"hopper", 2, up(0.2, 0), true},
		{"hopper", 2, -0.2, false}, {"hopper", 2, up(-0.2, 0), true},
		{"hopper", 3, 100, false}, {"hopper", 3, up(100, 0), true},
		{"walker2d", 1, 0.8, false}, {"walker2d", 1, up(0.8, 1), true},
		{"walker2d", 1, 2.0, false}, {"walker2d", 1, up(2.0, 0), true},
		{"walker2d", 2, 1, false}, {"walker2d", 2, up(1, 0), true},
		{"walker2d", 2, -1, false}, {"walker2d", 2, up(-1, 0), true},
		{"ant", 2, 0.2, true}, {"ant", 2, up(0.2, 0), false},
		{"ant", 2, 1.0, true}, {"ant", 2, up(1.0, 2), false},
		{"humanoid", 2, 1.0, false}, {"humanoid", 2, up(1.0, 2), true},
		{"humanoid", 2, 2.0, false}, {"humanoid", 2, up(2.0, 0), true},
		{"inverted-pendulum", 1, 0.2, true}, {"inverted-pendulum", 1, up(0.2, 1), false},
		{"inverted-pendulum", 1, -0.2, true}, {"inverted-pendulum", 1, up(-0.2, -1), false},
	}
	for _, c := range cases {
		e := mustMake(t, c.name)
		e.Reset(0)
		qp, qv := e.QPos(), e.QVel()
		qp[c.index] = c.value
		if got := e.Task.isHealthy(qp, qv); got != c.health {
			t.Errorf("%s: qpos[%d]=%v healthy=%v, want %v", c.name, c.index, c.value, got, c.health)
		}
		// The model-side termination rule agrees at the same threshold.
		if err := e.SetState(qp, qv); err != nil {
			t.Fatal(err)
		}
		obs := e.Observation()
		o32 := make([]float32, len(obs))
		for i, v := range obs {
			o32[i] = float32(v)
		}
		if float64(float32(c.value)) != c.value {
			continue // float32 cannot represent the value one ulp off the threshold
		}
		if got := e.Task.Done(o32); got == c.health {
			t.Errorf("%s: Done at qpos[%d]=%v is %v, want %v", c.name, c.index, c.value, got, !c.health)
		}
	}
	e := mustMake(t, "halfcheetah")
	e.Reset(0)
	qp := e.QPos()
	qp[1] = -50
	if !e.Task.isHealthy(qp, e.QVel()) || e.Task.Done(make([]float32, 17)) {
		t.Error("halfcheetah must never terminate")
	}
	nan := float32(math.NaN())
	if !tasks["hopper"].Done([]float32{1.2, 0, 0, 0, 0, 0, nan, 0, 0, 0, 0}) {
		t.Error("hopper Done must fire on NaN")
	}
}

// TestDoneOnModelStates checks the termination rule that model roll-outs
// apply to predicted observations on states written by hand either side of
// Gymnasium's thresholds, clear of float32 rounding (TestHealthThresholds
// checks Done at the simulator's own boundary values only where float32
// represents them, which 0.7, 0.2 and 0.8 are not): hopper healthy while
// z > 0.7, |angle| < 0.2 and every |obs[1:]| < 100; walker2d while
// 0.8 < z < 2 and |angle| < 1.
func TestDoneOnModelStates(t *testing.T) {
	obs := func(n int, set map[int]float32) []float32 {
		o := make([]float32, n)
		o[0] = 1.25 // a healthy height for both robots
		for i, v := range set {
			o[i] = v
		}
		return o
	}
	cases := []struct {
		task string
		set  map[int]float32
		done bool
	}{
		{"hopper", nil, false},
		{"hopper", map[int]float32{0: 0.71}, false},
		{"hopper", map[int]float32{0: 0.69}, true},
		{"hopper", map[int]float32{0: 0.65}, true},
		{"hopper", map[int]float32{0: 5}, false}, // no upper height bound
		{"hopper", map[int]float32{1: 0.19}, false},
		{"hopper", map[int]float32{1: 0.21}, true},
		{"hopper", map[int]float32{1: -0.19}, false},
		{"hopper", map[int]float32{1: -0.21}, true},
		{"hopper", map[int]float32{4: 99}, false},
		{"hopper", map[int]float32{4: 101}, true},
		{"hopper", map[int]float32{10: -101}, true},
		{"walker2d", nil, false},
		{"walker2d", map[int]float32{0: 0.81}, false},
		{"walker2d", map[int]float32{0: 0.79}, true},
		{"walker2d", map[int]float32{0: 1.99}, false},
		{"walker2d", map[int]float32{0: 2.01}, true},
		{"walker2d", map[int]float32{1: 0.99}, false},
		{"walker2d", map[int]float32{1: 1.01}, true},
		{"walker2d", map[int]float32{1: -0.99}, false},
		{"walker2d", map[int]float32{1: -1.01}, true},
	}
	for _, c := range cases {
		task := tasks[c.task]
		o := obs(task.ObsDim, c.set)
		if got := task.Done(o); got != c.done {
			t.Errorf("%s: Done(%v) = %v, want %v", c.task, o, got, c.done)
		}
	}
}

// TestTerminationAgreesWithEnv checks the batch termination functions used
// in model roll-outs against the env's own termination on real transitions.
func TestTerminationAgreesWithEnv(t *testing.T) {
	const n = 10000
	for _, name := range Names() {
		e := mustMake(t, name)
		rng := rand.New(rand.NewSource(5))
		e.Reset(5)
		obs := make([]float32, 0, n*e.Task.ObsDim)
		var want []bool
		terms := 0
		for len(want) < n {
			a := randomAction(e, rng)
			if name != "halfcheetah" && rng.Intn(4) == 0 {
				for i := range a { // bang-bang actions reach the unhealthy states more often
					a[i] = e.high[i] * float64(2*rng.Intn(2)-1)
				}
			}
			st, err := e.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range st.Obs {
				obs = append(obs, float32(v))
			}
			want = append(want, st.Terminated)
			if st.Terminated {
				terms++
			}
			if st.Terminated || st.Truncated {
				e.ResetNext()
			}
		}
		got := make([]bool, n)
		if err := e.Task.DoneBatch(obs, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: transition %d: Done=%v, env terminated=%v, obs %v", name, i, got[i], want[i],
					obs[i*e.Task.ObsDim:(i+1)*e.Task.ObsDim])
			}
		}
		if name != "halfcheetah" && terms == 0 {
			t.Errorf("%s: no terminal transition in %d steps: the test proves nothing", name, n)
		}
		t.Logf("%s: %d transitions, %d terminal, all agree", name, n, terms)
	}
	if err := tasks["hopper"].DoneBatch(make([]float32, 10), make([]bool, 1)); err == nil {
		t.Error("DoneBatch accepted a wrong-sized batch")
	}
}

func TestActionChecks(t *testing.T) {
	e := mustMake(t, "hopper")
	e.Reset(1)
	if _, err := e.Step([]float64{0, math.NaN(), 0}); err == nil {
		t.Error("NaN action accepted")
	}
	if _, err := e.Step([]float64{0, 0}); err == nil {
		t.Error("short action accepted")
	}
	// Out-of-bounds actions act exactly like the clipped ones.
	a, b := mustMake(t, "hopper"), mustMake(t, "hopper")
	a.Reset(2)
	b.Reset(2)
	for i := 0; i < 5; i++ {
		sa, _ := a.Step([]float64{3, -7, 0.5})
		sb, _ := b.Step([]float64{1, -1, 0.5})
		for j := range sa.Obs {
			if sa.Obs[j] != sb.Obs[j] {
				t.Fatalf("clipped action differs at step %d obs[%d]", i, j)
			}
		}
	}
	// Steps after the episode ended are refused until Reset.
	e.Reset(1)
	for {
		st, err := e.Step([]float64{1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		if st.Terminated || st.Truncated {
			break
		}
	}
	if _, err := e.Step([]float64{0, 0, 0}); err == nil {
		t.Error("step after the episode end accepted")
	}
}

func TestTruncationAt1000(t *testing.T) {
	e := mustMake(t, "halfcheetah")
	e.Reset(0)
	for i := 1; i <= MaxEpisodeSteps; i++ {
		st, err := e.Step(make([]float64, 6))
		if err != nil {
			t.Fatal(err)
		}
		if st.Truncated != (i == MaxEpisodeSteps) || st.Terminated {
			t.Fatalf("step %d: truncated=%v terminated=%v", i, st.Truncated, st.Terminated)
		}
	}
}

// TestMatchesReferenceModels steps admpo's own MJCF files side by side with
// the Gymnasium reference models (when ../shared/reference/mujoco is present)
// and requires identical physics.
func TestMatchesReferenceModels(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "reference", "mujoco")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("reference models not found at %s", dir)
	}
	for _, name := range Names() {
		task := tasks[name]
		refXML, err := os.ReadFile(filepath.Join(dir, task.Model))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := loadSim(task.Model, refXML)
		if err != nil {
			t.Fatal(err)
		}
		e := mustMake(t, name)
		ours := e.sim
		if ours.nq != ref.nq || ours.nv != ref.nv || ours.nu != ref.nu || ours.nbody != ref.nbody || ours.timestep != ref.timestep {
			t.Fatalf("%s: sizes differ: ours nq %d nv %d nu %d nbody %d dt %v, reference %d %d %d %d %v", name,
				ours.nq, ours.nv, ours.nu, ours.nbody, ours.timestep, ref.nq, ref.nv, ref.nu, ref.nbody, ref.timestep)
		}
		for b := range ref.bodyMass {
			if math.Abs(ref.bodyMass[b]-ours.bodyMass[b]) > 1e-12*math.Max(1, ref.bodyMass[b]) {
				t.Fatalf("%s: body %d mass %v, reference %v", name, b, ours.bodyMass[b], ref.bodyMass[b])
			}
		}
		rng := rand.New(rand.NewSource(9))
		e.Reset(9)
		copy(ref.qpos, ours.qpos)
		copy(ref.qvel, ours.qvel)
		ref.forward()
		for i := 0; i < 300*task.FrameSkip; i++ {
			for j := range ours.ctrl {
				ours.ctrl[j] = e.low[j] + rng.Float64()*(e.high[j]-e.low[j])
				ref.ctrl[j] = ours.ctrl[j]
			}
			ours.step(1)
			ref.step(1)
		}
		for j := range ref.qpos {
			if d := math.Abs(ref.qpos[j] - ours.qpos[j]); d > 1e-9 {
				t.Fatalf("%s: qpos[%d] after 300 steps: ours %v, reference %v", name, j, ours.qpos[j], ref.qpos[j])
			}
		}
		for j := range ref.qvel {
			if d := math.Abs(ref.qvel[j] - ours.qvel[j]); d > 1e-8*math.Max(1, math.Abs(ref.qvel[j])) {
				t.Fatalf("%s: qvel[%d] after 300 steps: ours %v, reference %v", name, j, ours.qvel[j], ref.qvel[j])
			}
		}
		ref.close()
	}
}

func TestSnapshotRestoreContinuesExactly(t *testing.T) {
	a := mustMake(t, "walker2d")
	a.Reset(4)
	rng := rand.New(rand.NewSource(4))
	for i := 0; i < 30; i++ {
		if st, _ := a.Step(randomAction(a, rng)); st.Terminated {
			a.ResetNext()
		}
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	acts := make([][]float64, 200)
	for i := range acts {
		acts[i] = randomAction(a, rng)
	}
	run := func(e *Env) []float64 {
		var out []float64
		for _, act := range acts {
			st, err := e.Step(act)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, st.Obs...)
			out = append(out, st.Reward, float64(e.Steps()))
			if st.Terminated || st.Truncated {
				out = append(out, e.ResetNext()...) // draws reset noise from the restored source
			}
		}
		return out
	}
	want := run(a)
	b := mustMake(t, "walker2d")
	b.Reset(99)
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	got := run(b)
	if len(got) != len(want) {
		t.Fatalf("restored run has %d values, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("restored run differs at %d: %v vs %v", i, got[i], want[i])
		}
	}
}
