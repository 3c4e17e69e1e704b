package envs

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// probeValues are the values either side of every threshold b: b itself
// as float32 (rounded to nearest) and its float32 neighbours, the float32s
// nearest b from below and above (exactly at a representable threshold
// these are b), values clear of float32 rounding (b ± 1e-3·max(1, |b|)),
// and all of these for -b (abs ranges), plus 0 and the non-finite values.
func probeValues(thresholds []float64) []float32 {
	var p []float32
	inf32 := float32(math.Inf(1))
	for _, b := range thresholds {
		for _, b := range []float64{b, -b} {
			f := float32(b)
			d := 1e-3 * math.Max(1, math.Abs(b))
			p = append(p, f, math.Nextafter32(f, inf32), math.Nextafter32(f, -inf32),
				atMost32(b), -atMost32(-b), float32(b-d), float32(b+d))
		}
	}
	return append(p, 0, float32(math.NaN()), inf32, -inf32)
}

// specThresholds lists the bounds a task's DoneSpec names, so that probes
// also sit at the spec's own thresholds (a wrong one is then probed from
// both sides too).
func specThresholds(task *Task) []float64 {
	var b []float64
	for _, r := range task.DoneSpec.Ranges {
		if r.HasLo {
			b = append(b, float64(r.Lo))
		}
		if r.HasHi {
			b = append(b, float64(r.Hi))
		}
	}
	return b
}

// gymThresholds are the Gymnasium tasks' bounds as written in tasks.go,
// independent of any spec.
var gymThresholds = []float64{0.7, 0.2, 100, 0.8, 2.0, 1, 1.0}

// checkSpecMatchesDone holds task.DoneSpec.Eval to task.Done on
// observations the task's env produces (each dimension set in turn to every
// probe value) and on random ones built from env values, probe values and
// noise. It returns the counts of done and not-done observations seen.
func checkSpecMatchesDone(t *testing.T, task *Task, e *Env, thresholds []float64) (done, alive int) {
	t.Helper()
	if task.Done == nil || task.DoneSpec == nil {
		t.Fatalf("%s: Done %v, DoneSpec %v: want both", task.Name, task.Done != nil, task.DoneSpec != nil)
	}
	if err := task.DoneSpec.Validate(task.ObsDim); err != nil {
		t.Fatalf("%s: %v", task.Name, err)
	}
	check := func(o []float32) {
		want := task.Done(o)
		if got := task.DoneSpec.Eval(o); got != want {
			t.Fatalf("%s: DoneSpec.Eval(%v) = %v, Done %v", task.Name, o, got, want)
		}
		if want {
			done++
		} else {
			alive++
		}
	}
	probes := probeValues(append(append([]float64(nil), thresholds...), specThresholds(task)...))
	// Bases from the env: reset observations (healthy) and states along
	// random trajectories (some unhealthy).
	var bases [][]float32
	rng := rand.New(rand.NewSource(3))
	for seed := int64(0); seed < 3; seed++ {
		bases = append(bases, Float32(e.Reset(seed)))
		for i := 0; i < 60; i++ {
			st, err := e.Step(randomAction(e, rng))
			if err != nil {
				t.Fatal(err)
			}
			if i%20 == 19 {
				bases = append(bases, Float32(st.Obs))
			}
			if st.Terminated || st.Truncated {
				break
			}
		}
	}
	for _, b := range bases {
		check(b)
		o := make([]float32, len(b))
		for j := range b {
			for _, p := range probes {
				copy(o, b)
				o[j] = p
				check(o)
			}
		}
	}
	for n := 0; n < 20000; n++ {
		b := bases[rng.Intn(len(bases))]
		o := append([]float32(nil), b...)
		for j := range o {
			switch rng.Intn(8) {
			case 0:
				o[j] = probes[rng.Intn(len(probes))]
			case 1:
				o[j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(5)-2)))
			case 2:
				o[j] += float32(rng.NormFloat64() * 0.05)
			}
		}
		check(o)
	}
	return done, alive
}

// TestDoneSpecMatchesDone: every built-in task's DoneSpec, and its shipped
// task file's, decides every observation as its Done does, on either side
// of every threshold and on NaN and ±Inf in each dimension.
func TestDoneSpecMatchesDone(t *testing.T) {
	for _, name := range Names() {
		ft, err := LoadBuiltinTaskFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			how  string
			task *Task
		}{{"Go", tasks[name]}, {"task file", ft}} {
			e := mustMakeTask(t, c.task)
			done, alive := checkSpecMatchesDone(t, c.task, e, gymThresholds)
			never := name == "halfcheetah"
			if c.task.DoneSpec.Never() != never {
				t.Errorf("%s (%s): DoneSpec.Never() = %v", name, c.how, !never)
			}
			if alive == 0 || (done == 0) != never {
				t.Errorf("%s (%s): %d done, %d not: the probes miss a side", name, c.how, done, alive)
			}
			t.Logf("%s (%s): spec agrees on %d done, %d not", name, c.how, done, alive)
		}
	}
}

// TestTaskFileDoneSpec: task files' termination rules with every kind of
// bound (min, max, above, below; float32-representable or not; beyond
// float32's range and infinite), on observation slices, clipped
// velocities, with and without finite, and "none", map to specs that agree
// with their Done; a rule on a value outside the observation has neither.
func TestTaskFileDoneSpec(t *testing.T) {
	y, x := hopperFile(t)
	i := strings.Index(y, "termination:")
	j := strings.Index(y, "reset_noise:")
	for _, c := range []struct {
		term       string
		thresholds []float64
	}{
		{"termination:\n  healthy:\n    - {obs: \"0\", min: 0.7, max: 1.9}\n    - {qvel: \"0:3\", above: -0.3, below: 9.99}\n" +
			"    - {obs: \"-2:\", min: -1.0e300, below: 3.0e38}\n    - {joint: rooty, above: 0.1, max: .inf}\n",
			[]float64{0.7, 1.9, 0.3, 9.99, 10, 1e300, 3e38, 0.1}},
		{"termination:\n  finite: true\n  healthy:\n    - {obs: \"1:\", min: -0.25, max: 0.5}\n    - {qpos: \"1\", above: 1.0e-40, below: 3.5e38}\n",
			[]float64{0.25, 0.5, 1e-40, 3.5e38}},
		{"termination:\n  finite: true\n", nil},
		{"termination: none\n", nil},
	} {
		yy := y[:i] + c.term + y[j:]
		ft, err := LoadTaskFile(writeTask(t, yy, map[string]string{"hopper.xml": x}))
		if err != nil {
			t.Fatalf("%s: %v", c.term, err)
		}
		done, alive := checkSpecMatchesDone(t, ft, mustMakeTask(t, ft), append(c.thresholds, gymThresholds...))
		never := strings.Contains(c.term, "none")
		if ft.DoneSpec.Never() != never || alive == 0 || (done == 0) != never {
			t.Errorf("%q: Never %v, %d done, %d not", c.term, ft.DoneSpec.Never(), done, alive)
		}
	}
	y = strings.Replace(y, "{joint: rootz, above: 0.7}", "{joint: rootx, below: 0.05}", 1)
	ft, err := LoadTaskFile(writeTask(t, y, map[string]string{"hopper.xml": x}))
	if err != nil {
		t.Fatal(err)
	}
	if ft.Done != nil || ft.DoneSpec != nil {
		t.Error("a rule on rootx (left out of the observation) gave an observation rule")
	}
}

// TestBound32: a converted bound decides every float32 as the float64
// comparison does, for bounds float32 represents and others, beyond its
// range and infinite.
func TestBound32(t *testing.T) {
	bs := []float64{0.7, 0.2, -0.2, 0.1, 1, 100, 1e-40, 1e-46, 3e38, 3.4028235677973366e38, 3.5e38, 1e300, math.Inf(1), 0}
	xs := probeValues(bs)
	for _, b := range append(bs, func() []float64 {
		var n []float64
		for _, b := range bs {
			n = append(n, -b)
		}
		return n
	}()...) {
		for _, lower := range []bool{true, false} {
			for _, incl := range []bool{true, false} {
				f, fi := bound32(b, lower, incl)
				for _, x := range xs {
					v := float64(x)
					var want, got bool
					if lower {
						want = b < v || incl && b == v
						got = f < x || fi && f == x
					} else {
						want = v < b || incl && v == b
						got = x < f || fi && x == f
					}
					if got != want {
						t.Fatalf("bound %v (lower %v, incl %v) -> %v, %v: x %v gives %v, float64 %v", b, lower, incl, f, fi, x, got, want)
					}
				}
			}
		}
	}
}
