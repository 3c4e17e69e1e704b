package collect

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/sac"
	"github.com/admpo/admpo/train"
)

// TestCollectWritesD4RLEpisodes collects random data, writes it, reads it
// back with datasets.ReadD4RL and checks the episode segmentation against
// the simulator: each episode is replayed from its recorded infos/qpos and
// infos/qvel with the recorded actions and must reproduce the observations,
// rewards and termination flags; timeouts fall exactly at 1000 steps.
func TestCollectWritesD4RLEpisodes(t *testing.T) {
	for _, x := range []struct {
		task string
		n    int
		lens []int // expected episode lengths (nil: not fixed)
	}{
		{"halfcheetah", 2300, []int{1000, 1000, 300}}, // never terminates: timeouts, then the cut
		{"hopper", 700, nil},                          // random hopper falls within tens of steps
	} {
		t.Run(x.task, func(t *testing.T) {
			env, err := envs.Make(x.task)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			u := envs.UniformActor{Low: env.ActionLow(), High: env.ActionHigh()}
			d, st, err := Dataset(Builtin(x.task), x.n, 11, Options{}, SharedActor(u))
			if err != nil {
				t.Fatal(err)
			}
			d.Meta = map[string]string{"env": x.task, "kind": "random"}
			path := filepath.Join(t.TempDir(), x.task+"-random.hdf5")
			if err := datasets.WriteD4RL(path, d); err != nil {
				t.Fatal(err)
			}
			r, err := datasets.ReadD4RL(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.N != x.n || r.ObsDim != env.Task.ObsDim || r.QPosDim != len(env.QPos()) || r.QVelDim != len(env.QVel()) ||
				r.Meta["kind"] != "random" {
				t.Fatalf("read back N %d obs %d qpos %d qvel %d meta %v", r.N, r.ObsDim, r.QPosDim, r.QVelDim, r.Meta)
			}
			eps := r.Episodes()
			if x.lens != nil {
				if len(eps) != len(x.lens) {
					t.Fatalf("%d episodes, want %d", len(eps), len(x.lens))
				}
				for i, e := range eps {
					if e.Len() != x.lens[i] || !e.Timeout || e.Terminal {
						t.Fatalf("episode %d: %+v, want length %d ending in a timeout", i, e, x.lens[i])
					}
				}
			}
			if len(eps) != st.Episodes+1 && len(eps) != st.Episodes {
				t.Fatalf("%d episodes read, collector counted %d complete", len(eps), st.Episodes)
			}
			od, ad := r.ObsDim, r.ActDim
			qp, qv := r.QPosDim, r.QVelDim
			var terms, sum float64
			q64 := func(v []float32) []float64 {
				o := make([]float64, len(v))
				for i, f := range v {
					o[i] = float64(f)
				}
				return o
			}
			for ei, e := range eps {
				if ei > 0 && approxEq(r.Obs[e.Start*od:(e.Start+1)*od], r.NextObs[(e.Start-1)*od:e.Start*od], 1e-6) {
					t.Fatalf("episode %d starts where the previous one ended: not a reset", ei)
				}
				if e.Timeout && e.End != r.N && e.Len() != envs.MaxEpisodeSteps {
					t.Fatalf("episode %d: timeout after %d steps", ei, e.Len())
				}
				var ret float64
				for i := e.Start; i < e.End; i++ {
					// Each row is replayed from its own recorded state, so
					// float32 rounding of the state cannot accumulate.
					env.Reset(0)
					if err := env.SetState(q64(r.QPos[i*qp:(i+1)*qp]), q64(r.QVel[i*qv:(i+1)*qv])); err != nil {
						t.Fatal(err)
					}
					if !approxEq(envs.Float32(env.Observation()), r.Obs[i*od:(i+1)*od], 1e-4) {
						t.Fatalf("row %d: observation differs from its recorded state", i)
					}
					s, err := env.Step(q64(r.Act[i*ad : (i+1)*ad]))
					if err != nil {
						t.Fatal(err)
					}
					if !approxEq(envs.Float32(s.Obs), r.NextObs[i*od:(i+1)*od], 2e-3) || math.Abs(s.Reward-float64(r.Rew[i])) > 2e-3 {
						t.Fatalf("row %d: next observation or reward differs from the replay", i)
					}
					if s.Terminated != r.Terminal[i] {
						t.Fatalf("row %d: terminal %v, the env says %v", i, r.Terminal[i], s.Terminated)
					}
					if r.Terminal[i] != (i == e.End-1 && e.Terminal) {
						t.Fatalf("row %d: a terminal inside an episode", i)
					}
					if i < e.End-1 && (r.Timeout[i] || !approxEq(r.NextObs[i*od:(i+1)*od], r.Obs[(i+1)*od:(i+2)*od], 0)) {
						t.Fatalf("row %d: the episode breaks before its end", i)
					}
					ret += float64(r.Rew[i])
				}
				if e.Terminal {
					terms++
				}
				if e.Terminal || e.Timeout && e.End != r.N {
					sum += ret
				}
			}
			if int(terms) != st.Terminals {
				t.Fatalf("%v terminal episodes, collector counted %d", terms, st.Terminals)
			}
			if st.Episodes > 0 && math.Abs(sum/float64(st.Episodes)-st.MeanReturn) > 1e-3*math.Max(1, math.Abs(st.MeanReturn)) {
				t.Fatalf("mean complete-episode return %v, collector says %v", sum/float64(st.Episodes), st.MeanReturn)
			}
		})
	}
}

func approxEq(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol {
			return false
		}
	}
	return true
}

// TestConcatKeepsEpisodesApart: medium-expert style concatenation ends every
// part at an episode boundary.
func TestConcatKeepsEpisodesApart(t *testing.T) {
	u := envs.UniformActor{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}
	a, _, err := Dataset(Builtin("hopper"), 50, 1, Options{}, SharedActor(u))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Dataset(Builtin("hopper"), 30, 2, Options{}, SharedActor(u))
	if err != nil {
		t.Fatal(err)
	}
	a.Timeout[a.N-1], a.Terminal[a.N-1] = false, false // as if cut without a flag
	c, err := Concat(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if c.N != 80 {
		t.Fatalf("N %d", c.N)
	}
	found := false
	for _, e := range c.Episodes() {
		if e.Start < 50 && e.End > 50 {
			t.Fatalf("episode %+v runs across the parts", e)
		}
		found = found || e.End == 50
	}
	if !found {
		t.Fatal("no episode ends at the end of the first part")
	}
}

// TestBehaviourSnapshots runs a tiny behaviour SAC run, resumes it after a
// "kill", and checks the snapshot choice: expert = best return, medium =
// closest to a third of it.
func TestBehaviourSnapshots(t *testing.T) {
	ortskip.IfMissing(t)
	dir := filepath.Join(t.TempDir(), "beh")
	bc := DefaultBehaviourConfig("hopper", 1, 400)
	bc.WarmUp, bc.EvalEvery, bc.EvalEpisodes, bc.Hidden = 100, 100, 1, []int{16, 16}
	ctx, cancel := context.WithCancel(context.Background())
	stopAt := 250
	_, err := TrainBehaviour(ctx, bc, dir, func(s train.Status) {
		if s.Step == stopAt {
			cancel()
		}
	})
	if err == nil {
		t.Fatal("a cancelled behaviour run reported success")
	}
	l, err := TrainBehaviour(context.Background(), bc, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Done || len(l.Snapshots) != 4 {
		t.Fatalf("snapshots %+v", l)
	}
	for i, s := range l.Snapshots {
		if s.Step != 100*(i+1) {
			t.Fatalf("snapshot %d at step %d", i, s.Step)
		}
	}
	again, err := ReadBehaviourLog(dir)
	if err != nil || len(again.Snapshots) != 4 {
		t.Fatalf("snapshots.json: %v %+v", err, again)
	}
	h := &BehaviourLog{Snapshots: []Snapshot{{Step: 1, EvalReturn: 10}, {Step: 2, EvalReturn: 400}, {Step: 3, EvalReturn: 1150},
		{Step: 4, EvalReturn: 3000}, {Step: 5, EvalReturn: 2900}}}
	best, _ := h.Best()
	med, _ := h.Medium(best.EvalReturn / 3)
	if best.Step != 4 || med.Step != 3 {
		t.Fatalf("best %+v medium %+v, want steps 4 and 3", best, med)
	}
}

// TestBehaviourExtends: a finished run that used its budget continues when
// asked for more env steps, and ends where a run given the larger budget
// from the start ends (the same snapshots, bit for bit); a smaller or equal
// budget reuses it, and a run stopped at its stop return is not extended.
func TestBehaviourExtends(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	bc := DefaultBehaviourConfig("hopper", 2, 300)
	bc.WarmUp, bc.EvalEvery, bc.EvalEpisodes, bc.Hidden = 100, 100, 1, []int{16, 16}
	ext := filepath.Join(tmp, "extended")
	if _, err := TrainBehaviour(context.Background(), bc, ext, nil); err != nil {
		t.Fatal(err)
	}
	l, err := TrainBehaviour(context.Background(), bc, ext, nil) // same budget: reused
	if err != nil || len(l.Snapshots) != 3 {
		t.Fatalf("rerun at the same budget: %v, %d snapshots, want the 3 of the finished run", err, len(l.Snapshots))
	}
	long := bc
	long.Steps = 500
	if l, err = TrainBehaviour(context.Background(), long, ext, nil); err != nil {
		t.Fatal(err)
	}
	if !l.Done || len(l.Snapshots) != 5 || l.Snapshots[4].Step != 500 {
		t.Fatalf("extended to 500 steps: %+v", l)
	}
	cfg, err := os.ReadFile(filepath.Join(ext, "config.json"))
	if err != nil || !strings.Contains(string(cfg), `"steps": 500`) {
		t.Fatalf("config.json after the extension does not record 500 steps: %v\n%s", err, cfg)
	}
	straight := filepath.Join(tmp, "straight")
	sl, err := TrainBehaviour(context.Background(), long, straight, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sl.Snapshots {
		a, errA := os.ReadFile(filepath.Join(straight, s.File))
		b, errB := os.ReadFile(filepath.Join(ext, l.Snapshots[i].File))
		if errA != nil || errB != nil || !bytes.Equal(a, b) || s.EvalReturn != l.Snapshots[i].EvalReturn {
			t.Fatalf("snapshot at step %d: the extended run differs from a run of 500 steps from the start (%v, %v; returns %v, %v)",
				s.Step, errA, errB, l.Snapshots[i].EvalReturn, s.EvalReturn)
		}
	}

	stopped := filepath.Join(tmp, "stopped")
	sc := bc
	sc.StopReturn = 1e-3 // the first evaluation reaches it (hopper earns 1 per step alive)
	if l, err = TrainBehaviour(context.Background(), sc, stopped, nil); err != nil || len(l.Snapshots) != 1 {
		t.Fatalf("stop-return run: %v %+v", err, l)
	}
	sc.Steps = 500
	if l, err = TrainBehaviour(context.Background(), sc, stopped, nil); err != nil || len(l.Snapshots) != 1 {
		t.Fatalf("a run stopped at its stop return was extended: %v %+v", err, l)
	}
}

// tinyActor exports a small untrained SAC actor for the task as ONNX.
func tinyActor(t *testing.T, task string, seed int64) []byte {
	t.Helper()
	env, err := envs.Make(task)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	sc := sac.DefaultConfig(env.Task.ActDim)
	sc.Hidden, sc.Seed = []int{8, 8}, seed
	s, err := sac.New(env.Task.ObsDim, env.ActionLow(), env.ActionHigh(), sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := onnx.ExportActor(s.Actor, map[string]string{"task": task})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCollectParallelDeterministic: the data depend on the seed only, not
// on the number of workers (bit-identical arrays with 1 and 3 workers, a
// stochastic ONNX actor); another seed gives other data; and the rows
// follow D4RL's episode rules (checked by a plain scan: next observation =
// next row's observation inside an episode, timeouts only at 1000 steps or
// at the cut).
func TestCollectParallelDeterministic(t *testing.T) {
	ortskip.IfMissing(t)
	actor := tinyActor(t, "halfcheetah", 3)
	const n = 2500
	a, sa, err := Dataset(Builtin("halfcheetah"), n, 7, Options{Workers: 1}, ONNXActors(actor, false))
	if err != nil {
		t.Fatal(err)
	}
	b, sb, err := Dataset(Builtin("halfcheetah"), n, 7, Options{Workers: 3}, ONNXActors(actor, false))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := Dataset(Builtin("halfcheetah"), n, 8, Options{Workers: 3}, ONNXActors(actor, false))
	if err != nil {
		t.Fatal(err)
	}
	bits := func(v []float32) []uint32 {
		o := make([]uint32, len(v))
		for i, x := range v {
			o[i] = math.Float32bits(x)
		}
		return o
	}
	for _, p := range []struct {
		name string
		x, y []float32
	}{{"obs", a.Obs, b.Obs}, {"act", a.Act, b.Act}, {"rew", a.Rew, b.Rew}, {"next", a.NextObs, b.NextObs},
		{"qpos", a.QPos, b.QPos}, {"qvel", a.QVel, b.QVel}} {
		if !slices.Equal(bits(p.x), bits(p.y)) {
			t.Fatalf("%s differs between 1 and 3 workers", p.name)
		}
	}
	if !slices.Equal(a.Terminal, b.Terminal) || !slices.Equal(a.Timeout, b.Timeout) || sa != sb {
		t.Fatal("flags or stats differ between 1 and 3 workers")
	}
	if slices.Equal(bits(a.Act), bits(c.Act)) {
		t.Fatal("seeds 7 and 8 gave the same actions")
	}
	od := a.ObsDim
	steps := 0
	for i := 0; i < n; i++ {
		steps++
		end := a.Terminal[i] || a.Timeout[i]
		if a.Timeout[i] && steps != envs.MaxEpisodeSteps && i != n-1 {
			t.Fatalf("row %d: timeout after %d steps", i, steps)
		}
		if !end && i < n-1 && !slices.Equal(bits(a.NextObs[i*od:(i+1)*od]), bits(a.Obs[(i+1)*od:(i+2)*od])) {
			t.Fatalf("row %d: next observation is not row %d's observation inside an episode", i, i+1)
		}
		if end {
			steps = 0
		}
	}
	if !a.Timeout[n-1] || sa.Episodes != 2 || sa.Timeouts != 2 {
		t.Fatalf("halfcheetah %d rows: last row timeout %v, %d episodes (%d timeouts), want the cut flagged and 2 full episodes",
			n, a.Timeout[n-1], sa.Episodes, sa.Timeouts)
	}
}

// TestDatasetProgress: Progress sees the rows after each episode, in
// episode order: the data's episode ends (datasets.Episodes, from the
// terminal and timeout flags), the last one the requested size.
func TestDatasetProgress(t *testing.T) {
	u := envs.UniformActor{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}
	var seen []int
	d, _, err := Dataset(Builtin("hopper"), 400, 5, Options{Workers: 3, Progress: func(rows int) { seen = append(seen, rows) }}, SharedActor(u))
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, e := range d.Episodes() {
		want = append(want, e.End)
	}
	if len(want) < 5 || !slices.Equal(seen, want) || seen[len(seen)-1] != 400 {
		t.Fatalf("progress %v, want the episode ends %v", seen, want)
	}
}
