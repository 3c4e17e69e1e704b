package experiments

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// onlineRuns are tiny hopper online runs trained to their end once per
// test binary (tinyOnlineRuns): ADMPO-ON and MBPO with seed 0, ADMPO-ON
// with seed 1 (another buffer of the same task); their roll-outs never
// terminate.
var onlineRuns map[string]string

func tinyOnlineRuns(t *testing.T) map[string]string {
	t.Helper()
	if onlineRuns != nil {
		return onlineRuns
	}
	root, err := os.MkdirTemp("", "diag-online-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) }) // the first test's: the others reuse nothing after it
	runs := map[string]string{}
	for _, r := range []struct {
		name, algo string
		seed       int64
	}{{"admpo-0", "admpo", 0}, {"mbpo-0", "mbpo", 0}, {"admpo-1", "admpo", 1}} {
		cfg := trainfix.TinyOnlineConfig(t, r.algo)
		cfg.Seed = r.seed
		cfg.Termination = "none" // the tiny models' roll-outs run their whole length (hopper's rule ends most at once)
		runs[r.name] = filepath.Join(root, r.name)
		trainfix.RunOnlineTo(t, cfg, runs[r.name], cfg.TotalSteps())
	}
	return runs
}

// TestDiagnoseOnline diagnoses tiny ADMPO-ON (m = 3) and MBPO runs: the
// transitions are those of the run's roll-out (n starts, H = 3), grouped
// into m backtracking lengths for the ADM and one for the ensemble, with
// finite positive errors and U; the same seed writes the same JSON, and
// the run's own directory as the start buffer changes nothing. The
// one-step and overall errors are recomputed here by replaying the
// roll-out's transitions in a fresh simulator.
func TestDiagnoseOnline(t *testing.T) {
	ortskip.IfMissing(t)
	runs := tinyOnlineRuns(t)
	const n, seed, horizon = 100, 5, 3
	for _, c := range []struct {
		run  string
		m    int
		algo string
	}{{"admpo-0", 3, "admpo"}, {"mbpo-0", 1, "mbpo"}} {
		dir := runs[c.run]
		d, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		first, err := os.ReadFile(filepath.Join(dir, "diagnosis.json"))
		if err != nil {
			t.Fatal(err)
		}
		tr := meanRollout(t, dir, n, seed, false)
		if d.Transitions != n*horizon || tr.N != n*horizon || d.Algo != c.algo || d.Policy != "own" || d.Penalty != 0 {
			t.Fatalf("%s: %d transitions (the roll-out made here: %d, want %d), algo %q, policy %q, penalty %v",
				c.run, d.Transitions, tr.N, n*horizon, d.Algo, d.Policy, d.Penalty)
		}
		if len(d.PerK) != c.m || len(d.PerStep) != horizon || len(d.FromStarts) != 0 {
			t.Errorf("%s: %d k groups (want %d), %d steps (want %d), %d start groups", c.run, len(d.PerK), c.m, len(d.PerStep), horizon, len(d.FromStarts))
		}
		for _, g := range append([]DiagStats{d.OneStep}, kStats(d.PerK)...) {
			if g.Transitions == 0 || !(g.ErrMean > 0) || math.IsInf(g.ErrMean, 0) || !(g.UMean > 0) || math.IsInf(g.UMean, 0) {
				t.Errorf("%s: a group of %d transitions with error %v, U %v", c.run, g.Transitions, g.ErrMean, g.UMean)
			}
		}
		// The errors, replayed here.
		errs, ok := replayedErrors(t, tr, tr.NextObs)
		var one, all float64
		var nOne, nAll int
		for i, e := range errs {
			if !ok[i] {
				continue
			}
			all += e
			nAll++
			if tr.Step[i] == 0 && tr.Back[i] == 1 {
				one += e
				nOne++
			}
		}
		if nOne != d.OneStep.Transitions || math.Abs(one/float64(nOne)-d.OneStep.ErrMean) > 1e-9 ||
			nAll != tr.N-d.SkippedClipped || math.Abs(all/float64(nAll)-d.ErrMean) > 1e-9 {
			t.Errorf("%s: replayed here: one step %d transitions, error %v; all %d, %v. Reported: %d, %v; %d (%d skipped), %v",
				c.run, nOne, one/float64(nOne), nAll, all/float64(nAll), d.OneStep.Transitions, d.OneStep.ErrMean, tr.N-d.SkippedClipped, d.SkippedClipped, d.ErrMean)
		}
		// The same seed: the same file; the own buffer named: the same too.
		for _, opt := range []DiagnoseOptions{{Starts: n, Seed: seed}, {Starts: n, Seed: seed, Buffer: dir}} {
			if _, err := DiagnoseOnline(dir, opt); err != nil {
				t.Fatal(err)
			}
			again, err := os.ReadFile(filepath.Join(dir, "diagnosis.json"))
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(first) {
				t.Errorf("%s: diagnosis with buffer %q differs from the first:\n%s\nfirst:\n%s", c.run, opt.Buffer, again, first)
			}
		}
	}
}

// replayedErrors replays every transition of tr in a fresh hopper from its
// state with its action and returns, per transition, the RMS over dimensions
// of pred (tr.NextObs, or tr.MeanNextObs) minus the simulator's next state;
// ok[i] is false where the state cannot be restored (a velocity at the
// observation's clip).
func replayedErrors(t *testing.T, tr *infer.Transitions, pred []float32) (errs []float64, ok []bool) {
	t.Helper()
	env, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	od, ad := env.Task.ObsDim, env.Task.ActDim
	if len(pred) != tr.N*od {
		t.Fatalf("%d predicted values for %d transitions", len(pred), tr.N)
	}
	errs, ok = make([]float64, tr.N), make([]bool, tr.N)
	a := make([]float64, ad)
	for i := 0; i < tr.N; i++ {
		s := tr.Obs[i*od : (i+1)*od]
		if !env.Restorable(s, 1e-4) {
			continue
		}
		if err := env.SetFromObs(s); err != nil {
			t.Fatal(err)
		}
		for j := range a {
			a[j] = float64(tr.Act[i*ad+j])
		}
		st, err := env.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		var se float64
		for j, v := range st.Obs {
			d := float64(pred[i*od+j]) - v
			se += d * d
		}
		errs[i], ok[i] = math.Sqrt(se/float64(od)), true
	}
	return errs, ok
}

func kStats(ks []DiagK) []DiagStats {
	var out []DiagStats
	for _, k := range ks {
		out = append(out, k.DiagStats)
	}
	return out
}

// TestOnlineRolloutStartsFromAnotherBuffer rolls ADMPO-ON seed 0's model
// out from the buffer of seed 1's run: every roll-out's first state is a
// state of that buffer and none of the run's own, and the run's own random
// sources and buffer are as the checkpoint left them (its checkpoint,
// written again, is unchanged).
func TestOnlineRolloutStartsFromAnotherBuffer(t *testing.T) {
	ortskip.IfMissing(t)
	runs := tinyOnlineRuns(t)
	states := func(dir string) map[string]bool {
		f, err := ckpt.Load(rundir.Dir(dir).Checkpoint())
		if err != nil {
			t.Fatal(err)
		}
		r, err := buffer.Load(f, "real")
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Dataset(0)
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for i := 0; i < d.N; i++ {
			set[key(d.Obs[i*d.ObsDim:(i+1)*d.ObsDim])] = true
			set[key(d.NextObs[i*d.ObsDim:(i+1)*d.ObsDim])] = true
		}
		return set
	}
	own, other := states(runs["admpo-0"]), states(runs["admpo-1"])
	dir := t.TempDir() // a copy of the run, so that its checkpoint may be rewritten
	for _, f := range []string{rundir.ConfigFile, rundir.CheckpointFile} {
		b, err := os.ReadFile(filepath.Join(runs["admpo-0"], f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.ReadFile(rundir.Dir(dir).Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	o, err := train.OpenOnline(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.DrawStartsFrom(runs["admpo-1"]); err != nil {
		t.Fatal(err)
	}
	actor, err := o.ActorONNX()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := o.RolloutActor(context.Background(), actor, 50, 2)
	if err != nil {
		t.Fatal(err)
	}
	od := len(tr.Obs) / tr.N
	firsts := 0
	for i := 0; i < tr.N; i++ {
		if tr.Step[i] != 0 {
			continue
		}
		firsts++
		s := key(tr.Obs[i*od : (i+1)*od])
		if !other[s] || own[s] {
			t.Fatalf("transition %d starts from a state in the other buffer: %v, in the run's own: %v", i, other[s], own[s])
		}
	}
	if firsts != 50 {
		t.Fatalf("%d first steps of 50 roll-outs", firsts)
	}
	if err := o.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(rundir.Dir(dir).Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the run's checkpoint changed after a roll-out from another buffer (random sources or buffers touched)")
	}
}

// key is a state's bits as a map key.
func key(v []float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		u := math.Float32bits(x)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return string(b)
}

// TestDiagnoseOnlineRefuses: what DiagnoseOnline cannot diagnose is an
// ErrCannotDiagnose naming why: no run, a sac run, a model never fitted, a
// start buffer of another task, the start-state study.
func TestDiagnoseOnlineRefuses(t *testing.T) {
	ortskip.IfMissing(t)
	tmp := t.TempDir()
	sac := filepath.Join(tmp, "sac")
	trainfix.RunOnlineTo(t, trainfix.TinyOnlineConfig(t, "sac"), sac, 20)
	early := filepath.Join(tmp, "early")
	trainfix.RunOnlineTo(t, trainfix.TinyOnlineConfig(t, "admpo"), early, 20) // before the first fit at step 200
	walker := filepath.Join(tmp, "walker")
	wc := trainfix.TinyOnlineConfig(t, "admpo")
	wc.Env = "walker2d"
	if err := os.MkdirAll(walker, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rundir.Dir(walker).Config(), wc.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		opt       DiagnoseOptions
		want      string
	}{
		{"missing", filepath.Join(tmp, "nothing"), DiagnoseOptions{}, "not a run directory"},
		{"sac", sac, DiagnoseOptions{}, "has no model to diagnose"},
		{"never fitted", early, DiagnoseOptions{}, "never fitted"},
		{"other task", early, DiagnoseOptions{Buffer: walker}, "played walker2d"},
		{"start episodes", early, DiagnoseOptions{StartEpisodes: 3}, "start-state study"},
	} {
		c.opt.Starts = 10
		_, err := DiagnoseOnline(c.dir, c.opt)
		if !errors.Is(err, ErrCannotDiagnose) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrCannotDiagnose saying %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(early, "diagnosis.json")); err == nil {
		t.Errorf("a refused diagnosis wrote diagnosis.json")
	}
}

// TestDiagnosePolicyOfRunningRun: --diagnose-policy naming a run that has
// no final policy yet (still training) rolls out its actor at its last
// checkpoint: the same diagnosis as with that actor exported to a file
// through the train API.
func TestDiagnosePolicyOfRunningRun(t *testing.T) {
	ortskip.IfMissing(t)
	runs := tinyOnlineRuns(t)
	running := filepath.Join(t.TempDir(), "admpo-1") // admpo-1 without its final policy
	if err := os.MkdirAll(running, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "checkpoint.ckpt"} {
		b, err := os.ReadFile(filepath.Join(runs["admpo-1"], f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(running, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := train.OpenOnline(running)
	if err != nil {
		t.Fatal(err)
	}
	actor, err := o.ActorONNX()
	o.Close()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "actor.onnx")
	if err := os.WriteFile(file, actor, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := runs["admpo-0"]
	const n, seed = 60, 3
	fromRun, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed, Policy: running})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(filepath.Dir(running)) + "-admpo-1-checkpoint"
	if _, err := os.Stat(filepath.Join(dir, "diagnosis-with-"+safeName(name)+".json")); err != nil {
		t.Errorf("no diagnosis file named for the running run's checkpoint actor: %v", err)
	}
	fromFile, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed, Policy: file})
	if err != nil {
		t.Fatal(err)
	}
	if fromRun.Transitions != fromFile.Transitions || fromRun.ErrMean != fromFile.ErrMean || fromRun.MeanErrMean != fromFile.MeanErrMean ||
		fromRun.UMean != fromFile.UMean {
		t.Errorf("the running run's actor: %d transitions, error %v, mean's %v, U %v; the same actor from a file: %d, %v, %v, %v",
			fromRun.Transitions, fromRun.ErrMean, fromRun.MeanErrMean, fromRun.UMean, fromFile.Transitions, fromFile.ErrMean, fromFile.MeanErrMean, fromFile.UMean)
	}
	own, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if own.ErrMean == fromRun.ErrMean {
		t.Errorf("another run's actor gave the own actor's error %v: was it rolled out?", own.ErrMean)
	}
	if _, _, err := diagPolicy(nil, t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no final policy") {
		t.Errorf("an empty directory as the policy: %v, want an error naming the missing final policy", err)
	}
}
