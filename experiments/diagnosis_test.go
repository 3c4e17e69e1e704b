package experiments

import (
	"context"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/collect"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/train"
)

// TestStateFromObservationReproducesSteps: the diagnosis replays model
// transitions from observations alone. For recorded random transitions of
// each task, the simulator rebuilt from the observation (x position 0) must
// step to the recorded next observation and reward.
func TestStateFromObservationReproducesSteps(t *testing.T) {
	for _, task := range []string{"hopper", "walker2d", "halfcheetah"} {
		env, err := envs.Make(task)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := collect.Dataset(collect.Builtin(task), 300, 4, collect.Options{}, collect.SharedActor(envs.UniformActor{Low: env.ActionLow(), High: env.ActionHigh()}))
		if err != nil {
			t.Fatal(err)
		}
		od, ad := d.ObsDim, d.ActDim
		var worst float64
		skipped := 0
		for i := 0; i < d.N; i++ {
			if !env.Restorable(d.Obs[i*od:(i+1)*od], clipMargin) {
				skipped++
				continue
			}
			if err := env.SetFromObs(d.Obs[i*od : (i+1)*od]); err != nil {
				t.Fatal(err)
			}
			a := make([]float64, ad)
			for j := range a {
				a[j] = float64(d.Act[i*ad+j])
			}
			st, err := env.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; j < od; j++ {
				worst = math.Max(worst, math.Abs(st.Obs[j]-float64(d.NextObs[i*od+j])))
			}
			if math.Abs(st.Reward-float64(d.Rew[i])) > 2e-3 || st.Terminated != d.Terminal[i] {
				t.Fatalf("%s row %d: reward %v / terminal %v, recorded %v / %v", task, i, st.Reward, st.Terminated, d.Rew[i], d.Terminal[i])
			}
		}
		env.Close()
		t.Logf("%s: worst next-observation difference %.2g (%d rows with clipped velocities skipped)", task, worst, skipped)
		if d.N-skipped < 50 {
			t.Errorf("%s: only %d of %d rows checked", task, d.N-skipped, d.N)
		}
		if worst > 2e-3 {
			t.Errorf("%s: rebuilt states step to next observations up to %g away from the recorded ones", task, worst)
		}
	}
}

// TestDiagnosisGroupsByStepAndK diagnoses tiny finished ADMPO-OFF (m = 3)
// and MOPO runs and checks how the replayed transitions are grouped: every
// transition counted once by roll-out step and once by backtracking length,
// k within 1..m for the ADM (with k > 1 present at h = 1, where the starts
// carry real history) and always 1 for the ensemble, the one-step group a
// part of step 1, and the group means recombining to the overall mean.
func TestDiagnosisGroupsByStepAndK(t *testing.T) {
	ortskip.IfMissing(t)
	data := trainfix.RandomHopperFile(t, 400)
	for _, algo := range []string{"admpo", "mopo"} {
		cfg := trainfix.TinyOfflineConfig(t, algo, "random", data)
		cfg.Epochs, cfg.Horizon = 1, 3
		if algo == "admpo" {
			cfg.M = 3
		}
		dir := filepath.Join(t.TempDir(), algo)
		trainfix.RunOfflineToEnd(t, cfg, dir)
		d, err := DiagnoseOffline(dir, DiagnoseOptions{Starts: 300, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		var nh, nk int
		var sumH, sumK float64
		for _, p := range d.PerStep {
			nh += p.Transitions
			sumH += p.ErrMean * float64(p.Transitions)
		}
		for _, p := range d.PerK {
			nk += p.Transitions
			sumK += p.ErrMean * float64(p.Transitions)
			if p.K < 1 || p.K > cfg.M || p.Transitions == 0 {
				t.Errorf("%s: group k = %d (want 1..%d) has %d transitions", algo, p.K, cfg.M, p.Transitions)
			}
		}
		if nh == 0 || nh != nk || nh > d.Transitions-d.SkippedClipped {
			t.Fatalf("%s: %d transitions by step, %d by k, %d replayed (%d skipped)", algo, nh, nk, d.Transitions, d.SkippedClipped)
		}
		if math.Abs(sumH/float64(nh)-d.ErrMean) > 1e-9 || math.Abs(sumK/float64(nk)-d.ErrMean) > 1e-9 {
			t.Errorf("%s: group means recombine to %v (by h) and %v (by k), overall %v", algo, sumH/float64(nh), sumK/float64(nk), d.ErrMean)
		}
		if d.OneStep.Transitions == 0 || d.OneStep.Transitions > d.PerStep[0].Transitions {
			t.Errorf("%s: %d one-step transitions of %d at h = 1", algo, d.OneStep.Transitions, d.PerStep[0].Transitions)
		}
		switch algo {
		case "mopo":
			if len(d.PerK) != 1 || d.OneStep.Transitions != d.PerStep[0].Transitions {
				t.Errorf("mopo: %d k groups, one-step %d of %d at h = 1; the ensemble only predicts one step",
					len(d.PerK), d.OneStep.Transitions, d.PerStep[0].Transitions)
			}
		case "admpo":
			if len(d.PerK) != cfg.M || d.OneStep.Transitions == d.PerStep[0].Transitions {
				t.Errorf("admpo: %d k groups (want %d), one-step %d of %d at h = 1: no backtracking into the starts' history",
					len(d.PerK), cfg.M, d.OneStep.Transitions, d.PerStep[0].Transitions)
			}
		}
	}
}

// TestDiagnosisWithAnotherPolicy diagnoses a MOPO run's model with the
// policy of an ADMPO-OFF run on the same data: naming the MOPO run's own
// policy.onnx reproduces its own-policy diagnosis exactly, the other run's
// policy gives other transitions and a separate JSON file (the run's own
// diagnosis.json stays), and an actor of another task's size is refused.
func TestDiagnosisWithAnotherPolicy(t *testing.T) {
	ortskip.IfMissing(t)
	data := trainfix.RandomHopperFile(t, 400)
	dirs := map[string]string{}
	for _, algo := range []string{"admpo", "mopo"} {
		cfg := trainfix.TinyOfflineConfig(t, algo, "random", data)
		cfg.Epochs = 1
		dirs[algo] = filepath.Join(t.TempDir(), "hopper-random", algo+"-0")
		o, err := train.NewOffline(cfg, dirs[algo])
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		o.Close()
	}
	run := dirs["mopo"]
	own, err := DiagnoseOffline(run, DiagnoseOptions{Starts: 200, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ownFile, err := os.ReadFile(filepath.Join(run, "diagnosis.json"))
	if err != nil {
		t.Fatal(err)
	}
	same, err := DiagnoseOffline(run, DiagnoseOptions{Starts: 200, Seed: 3, Policy: filepath.Join(run, "policy.onnx")})
	if err != nil {
		t.Fatal(err)
	}
	if same.Transitions != own.Transitions || same.ErrMean != own.ErrMean || same.UMean != own.UMean {
		t.Fatalf("own policy.onnx: %d transitions, error %v, U %v; own policy: %d, %v, %v",
			same.Transitions, same.ErrMean, same.UMean, own.Transitions, own.ErrMean, own.UMean)
	}
	other, err := DiagnoseOffline(run, DiagnoseOptions{Starts: 200, Seed: 3, Policy: dirs["admpo"]})
	if err != nil {
		t.Fatal(err)
	}
	if other.Policy != dirs["admpo"] || other.ErrMean == own.ErrMean {
		t.Fatalf("with the ADMPO-OFF policy: policy %q, error %v (own policy's %v)", other.Policy, other.ErrMean, own.ErrMean)
	}
	if _, err := os.Stat(filepath.Join(run, "diagnosis-with-hopper-random-admpo-0.json")); err != nil {
		t.Errorf("the other policy's diagnosis file: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(run, "diagnosis.json")); err != nil || string(b) != string(ownFile) {
		t.Errorf("diagnosis.json was changed by a diagnosis with another policy (%v)", err)
	}
	rng := rand.New(rand.NewSource(1))
	walker := models.NewActor(17, []float64{-1, -1, -1, -1, -1, -1}, []float64{1, 1, 1, 1, 1, 1}, []int{8}, rng)
	b, err := onnx.ExportActor(walker, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "walker.onnx")
	if err := os.WriteFile(wrong, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DiagnoseOffline(run, DiagnoseOptions{Starts: 50, Seed: 3, Policy: wrong}); err == nil || !strings.Contains(err.Error(), "17") {
		t.Fatalf("a 17x6 actor on a hopper model: %v, want an error naming the sizes", err)
	}
}

// TestDiagnosisFromStarts runs a tiny ADMPO-OFF run's policy from the three
// kinds of start state and checks the study against a loop written out here:
// the episode-start rows begin episodes of the data set (row 0, or after a
// terminal or a timeout row: the data mark some starts by timeouts only) and
// the mid-episode rows do not, no row twice;
// replaying each reported row and reset seed with the deterministic actor
// until termination or 1000 steps gives the reported mean steps, returns
// and share at the limit.
func TestDiagnosisFromStarts(t *testing.T) {
	ortskip.IfMissing(t)
	// Timeouts every third row (where no terminal is) make episode starts
	// that only the timeout flag marks.
	ds := trainfix.RandomHopper(t, 400, 3)
	for i := 2; i < ds.N; i += 3 {
		ds.Timeout[i] = !ds.Terminal[i]
	}
	data := filepath.Join(t.TempDir(), "hopper-random.hdf5")
	trainfix.WriteD4RL(t, data, ds)
	cfg := trainfix.TinyOfflineConfig(t, "admpo", "random", data)
	cfg.Epochs, cfg.Horizon, cfg.M = 1, 3, 3
	dir := filepath.Join(t.TempDir(), "admpo")
	trainfix.RunOfflineToEnd(t, cfg, dir)
	const n = 8
	d, err := DiagnoseOffline(dir, DiagnoseOptions{Starts: 50, Seed: 3, StartEpisodes: n})
	if err != nil {
		t.Fatal(err)
	}
	p := testfix.OpenRunPolicy(t, dir)
	env, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	// episode plays the mean action from the env's current observation.
	episode := func(obs []float64) (ret float64, steps int) {
		a32 := make([]float32, ds.ActDim)
		act := make([]float64, ds.ActDim)
		for steps < 1000 {
			o := make([]float32, len(obs))
			for i, v := range obs {
				o[i] = float32(v)
			}
			if err := p.Act(o, nil, a32); err != nil {
				t.Fatal(err)
			}
			for i, v := range a32 {
				act[i] = float64(v)
			}
			st, err := env.Step(act)
			if err != nil {
				t.Fatal(err)
			}
			ret += st.Reward
			steps++
			obs = st.Obs
			if st.Terminated {
				break
			}
		}
		return ret, steps
	}
	want := []string{FromReset, FromEpisodeStart, FromMidEpisode}
	if len(d.FromStarts) != len(want) {
		t.Fatalf("%d start groups, want %d", len(d.FromStarts), len(want))
	}
	for gi, g := range d.FromStarts {
		if g.From != want[gi] || g.Episodes != n {
			t.Fatalf("group %d: %q with %d episodes, want %q with %d", gi, g.From, g.Episodes, want[gi], n)
		}
		var sumRet, sumSteps, atLimit float64
		seen := map[int]bool{}
		for i := 0; i < n; i++ {
			var obs []float64
			if g.From == FromReset {
				if len(g.Seeds) != n || len(g.Rows) != 0 {
					t.Fatalf("reset group: %d seeds, %d rows", len(g.Seeds), len(g.Rows))
				}
				obs = env.Reset(g.Seeds[i])
			} else {
				if len(g.Rows) != n {
					t.Fatalf("%s: %d rows", g.From, len(g.Rows))
				}
				r := g.Rows[i]
				begins := r == 0 || ds.Terminal[r-1] || ds.Timeout[r-1]
				if begins != (g.From == FromEpisodeStart) || seen[r] {
					t.Fatalf("%s: row %d (begins an episode: %v, seen before: %v)", g.From, r, begins, seen[r])
				}
				seen[r] = true
				if err := env.SetFromObs(ds.Obs[r*ds.ObsDim : (r+1)*ds.ObsDim]); err != nil {
					t.Fatal(err)
				}
				obs = env.Observation()
			}
			ret, steps := episode(obs)
			sumRet += ret
			sumSteps += float64(steps)
			if steps == 1000 {
				atLimit++
			}
		}
		if math.Abs(sumRet/n-g.MeanReturn) > 1e-9 || sumSteps/n != g.MeanSteps || atLimit/n != g.AtLimit {
			t.Errorf("%s: replayed mean return %v, steps %v, at limit %v; reported %v, %v, %v",
				g.From, sumRet/n, sumSteps/n, atLimit/n, g.MeanReturn, g.MeanSteps, g.AtLimit)
		}
	}
}
