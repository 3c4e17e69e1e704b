package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/internal/trainfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/train"
)

// meanRollout is the roll-out DiagnoseOnline makes of a run's own actor
// with n starts, seed and opt.NoDropout, made again through the train API
// (with the means, which change nothing else in it).
func meanRollout(t *testing.T, dir string, n int, seed int64, noDropout bool) *infer.Transitions {
	t.Helper()
	o, err := train.OpenOnline(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	actor, err := o.ActorONNX()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := o.RolloutActorWith(context.Background(), actor, n, seed, train.RolloutOptions{Mean: true, NoDropout: noDropout})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// replayMeans replays tr's transitions in a fresh hopper from their states
// and returns the mean error (RMS over dimensions of MeanNextObs - the
// simulator's next state) averaged by roll-out step, by k, at h = 1 with
// k = 1, and over all, with the counts, skipping states it cannot restore.
func replayMeans(t *testing.T, tr *infer.Transitions) (step, k []DiagStats, one, all DiagStats) {
	t.Helper()
	errs, ok := replayedErrors(t, tr, tr.MeanNextObs)
	grow := func(g []DiagStats, i int) []DiagStats {
		for len(g) <= i {
			g = append(g, DiagStats{})
		}
		return g
	}
	for i, e := range errs {
		if !ok[i] {
			continue
		}
		h, b := int(tr.Step[i]), int(tr.Back[i])
		step, k = grow(step, h), grow(k, b-1)
		for _, g := range []*DiagStats{&step[h], &k[b-1], &all} {
			g.Transitions++
			g.MeanErrMean += e
		}
		if h == 0 && b == 1 {
			one.Transitions++
			one.MeanErrMean += e
		}
	}
	for _, g := range append([]*DiagStats{&one, &all}, ptrs(step, k)...) {
		if g.Transitions > 0 {
			g.MeanErrMean /= float64(g.Transitions)
		}
	}
	return step, k, one, all
}

func ptrs(gs ...[]DiagStats) []*DiagStats {
	var out []*DiagStats
	for _, g := range gs {
		for i := range g {
			out = append(out, &g[i])
		}
	}
	return out
}

// TestDiagnoseMeanError: the mean error DiagnoseOnline reports (per step,
// per k, one step, overall) is the one recomputed here by replaying in a
// fresh simulator the means of the same roll-out made through the train
// API; it is positive and not the sampled error.
func TestDiagnoseMeanError(t *testing.T) {
	ortskip.IfMissing(t)
	runs := tinyOnlineRuns(t)
	const n, seed = 60, 8
	for _, run := range []string{"admpo-0", "mbpo-0"} {
		dir := runs[run]
		d, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if d.Dropout {
			t.Errorf("%s: the diagnosis reports dropout for a run without rollout_dropout", run)
		}
		step, k, one, all := replayMeans(t, meanRollout(t, dir, n, seed, false))
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }
		if all.Transitions != d.Transitions-d.SkippedClipped || !near(all.MeanErrMean, d.MeanErrMean) {
			t.Errorf("%s: mean error over %d transitions %v, reported %v over %d", run, all.Transitions, all.MeanErrMean,
				d.MeanErrMean, d.Transitions-d.SkippedClipped)
		}
		if one.Transitions != d.OneStep.Transitions || !near(one.MeanErrMean, d.OneStep.MeanErrMean) {
			t.Errorf("%s: one-step mean error %v (%d), reported %v (%d)", run, one.MeanErrMean, one.Transitions, d.OneStep.MeanErrMean, d.OneStep.Transitions)
		}
		if len(step) != len(d.PerStep) || len(k) != len(d.PerK) {
			t.Fatalf("%s: %d steps and %d ks replayed, %d and %d reported", run, len(step), len(k), len(d.PerStep), len(d.PerK))
		}
		for i, g := range step {
			if g.Transitions != d.PerStep[i].Transitions || !near(g.MeanErrMean, d.PerStep[i].MeanErrMean) {
				t.Errorf("%s: h = %d: mean error %v (%d), reported %v (%d)", run, i+1, g.MeanErrMean, g.Transitions, d.PerStep[i].MeanErrMean, d.PerStep[i].Transitions)
			}
		}
		for i, g := range k {
			if g.Transitions != d.PerK[i].Transitions || !near(g.MeanErrMean, d.PerK[i].MeanErrMean) {
				t.Errorf("%s: k = %d: mean error %v (%d), reported %v (%d)", run, i+1, g.MeanErrMean, g.Transitions, d.PerK[i].MeanErrMean, d.PerK[i].Transitions)
			}
		}
		if !(d.MeanErrMean > 0) || d.MeanErrMean == d.ErrMean {
			t.Errorf("%s: mean error %v, sampled error %v", run, d.MeanErrMean, d.ErrMean)
		}
	}
}

// TestDiagnoseNoDropout diagnoses a tiny ADMPO-ON run that rolls out with
// MC dropout with and without NoDropout: without dropout the diagnosis is
// written to diagnosis-nodropout.json (diagnosis.json left as it was),
// records dropout false, is the same again with the same seed and differs
// from the one with dropout. The roll-out's k = 1 means are then the
// plain-Go reference ADM's prediction without dropout masks
// (testfix.ADMPredict with the checkpoint's weights), and with dropout
// they are not. For an MBPO run NoDropout changes nothing but the file name.
func TestDiagnoseNoDropout(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := trainfix.TinyOnlineConfig(t, "admpo")
	cfg.Termination, cfg.RolloutDropout = "none", true
	dir := filepath.Join(t.TempDir(), "admpo-drop")
	trainfix.RunOnlineTo(t, cfg, dir, cfg.TotalSteps())
	const n, seed = 40, 4
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	with, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	withJSON := read("diagnosis.json")
	without, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed, NoDropout: true})
	if err != nil {
		t.Fatal(err)
	}
	first := read("diagnosis-nodropout.json")
	if _, err := DiagnoseOnline(dir, DiagnoseOptions{Starts: n, Seed: seed, NoDropout: true}); err != nil {
		t.Fatal(err)
	}
	if again := read("diagnosis-nodropout.json"); again != first {
		t.Errorf("two diagnoses without dropout, same seed, differ:\n%s\n%s", first, again)
	}
	if read("diagnosis.json") != withJSON {
		t.Errorf("the diagnosis without dropout overwrote diagnosis.json")
	}
	if !with.Dropout || without.Dropout {
		t.Errorf("dropout recorded %v with and %v without", with.Dropout, without.Dropout)
	}
	if with.ErrMean == without.ErrMean || with.MeanErrMean == without.MeanErrMean || with.OneStep.MeanErrMean == without.OneStep.MeanErrMean {
		t.Errorf("with and without dropout alike: error %v / %v, mean error %v / %v, one step %v / %v", with.ErrMean, without.ErrMean,
			with.MeanErrMean, without.MeanErrMean, with.OneStep.MeanErrMean, without.OneStep.MeanErrMean)
	}

	// The k = 1 means against the reference ADM without masks.
	f, err := ckpt.Load(rundir.Dir(dir).Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	adm, err := models.GetADM(f, "adm")
	if err != nil {
		t.Fatal(err)
	}
	od, ad := adm.Cfg.ObsDim, adm.Cfg.ActDim
	worst := func(tr *infer.Transitions) (float64, int) {
		var w float64
		c := 0
		for i := 0; i < tr.N; i++ {
			if tr.Back[i] != 1 {
				continue
			}
			c++
			next, _, _ := testfix.ADMPredict(adm, tr.Obs[i*od:(i+1)*od], [][]float32{tr.Act[i*ad : (i+1)*ad]}, nil)
			for j, v := range next {
				w = math.Max(w, math.Abs(float64(tr.MeanNextObs[i*od+j])-v)/math.Max(1, math.Abs(v)))
			}
		}
		return w, c
	}
	noDrop, c := worst(meanRollout(t, dir, n, seed, true))
	if c < n/2 {
		t.Fatalf("only %d k = 1 transitions", c)
	}
	if noDrop > 1e-4 {
		t.Errorf("without dropout the k = 1 means are up to %.3g from the reference ADM's", noDrop)
	}
	if drop, _ := worst(meanRollout(t, dir, n, seed, false)); drop < 1e-3 {
		t.Errorf("with dropout the k = 1 means are within %.3g of the reference ADM's without masks", drop)
	}

	// An MBPO run: no dropout to turn off.
	mbpo := tinyOnlineRuns(t)["mbpo-0"]
	if _, err := DiagnoseOnline(mbpo, DiagnoseOptions{Starts: n, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	if _, err := DiagnoseOnline(mbpo, DiagnoseOptions{Starts: n, Seed: seed, NoDropout: true}); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(mbpo, "diagnosis.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(mbpo, "diagnosis-nodropout.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("MBPO: NoDropout changed the diagnosis:\n%s\n%s", a, b)
	}
}

// TestDiagnoseOfflineMeanAndNoDropout diagnoses a tiny ADMPO-OFF run that
// rolls out with MC dropout: the reported mean errors (overall, one step,
// per step, per k) are the ones recomputed here by replaying the means of
// the same roll-out made through the train API; with NoDropout the
// diagnosis records dropout false, goes to diagnosis-nodropout.json
// (diagnosis.json left as it was), is the same again with the same seed
// and differs from the one with dropout.
func TestDiagnoseOfflineMeanAndNoDropout(t *testing.T) {
	ortskip.IfMissing(t)
	data := trainfix.RandomHopperFile(t, 400)
	cfg := trainfix.TinyOfflineConfig(t, "admpo", "random", data)
	cfg.Epochs, cfg.Horizon, cfg.M, cfg.RolloutDropout = 1, 3, 3, true
	dir := filepath.Join(t.TempDir(), "admpo")
	trainfix.RunOfflineToEnd(t, cfg, dir)
	const n, seed = 150, 7
	with, err := DiagnoseOffline(dir, DiagnoseOptions{Starts: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if !with.Dropout {
		t.Errorf("a run with rollout_dropout diagnosed without dropout")
	}
	o, err := train.OpenOffline(dir)
	if err != nil {
		t.Fatal(err)
	}
	actor, err := o.ActorONNX()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := o.RolloutActorWith(context.Background(), actor, n, seed, train.RolloutOptions{Mean: true})
	o.Close()
	if err != nil {
		t.Fatal(err)
	}
	step, k, one, all := replayMeans(t, tr)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }
	if all.Transitions != with.Transitions-with.SkippedClipped || !near(all.MeanErrMean, with.MeanErrMean) ||
		one.Transitions != with.OneStep.Transitions || !near(one.MeanErrMean, with.OneStep.MeanErrMean) {
		t.Errorf("replayed here: mean error %v (%d), one step %v (%d); reported %v (%d), %v (%d)", all.MeanErrMean, all.Transitions,
			one.MeanErrMean, one.Transitions, with.MeanErrMean, with.Transitions-with.SkippedClipped, with.OneStep.MeanErrMean, with.OneStep.Transitions)
	}
	if len(step) != len(with.PerStep) || len(k) != len(with.PerK) {
		t.Fatalf("%d steps and %d ks replayed, %d and %d reported", len(step), len(k), len(with.PerStep), len(with.PerK))
	}
	var reported []DiagStats // by step, then by k, as step and k
	for _, p := range with.PerStep {
		reported = append(reported, p.DiagStats)
	}
	reported = append(reported, kStats(with.PerK)...)
	for i, g := range append(step, k...) {
		r := reported[i]
		if g.Transitions != r.Transitions || !near(g.MeanErrMean, r.MeanErrMean) {
			t.Errorf("group %d (steps, then ks): mean error %v (%d), reported %v (%d)", i, g.MeanErrMean, g.Transitions, r.MeanErrMean, r.Transitions)
		}
	}
	withJSON, err := os.ReadFile(filepath.Join(dir, "diagnosis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var files [2]string
	var without *Diagnosis
	for i := range files {
		if without, err = DiagnoseOffline(dir, DiagnoseOptions{Starts: n, Seed: seed, NoDropout: true}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "diagnosis-nodropout.json"))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = string(b)
	}
	if files[0] != files[1] {
		t.Errorf("two diagnoses without dropout, same seed, differ")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "diagnosis.json")); err != nil || string(b) != string(withJSON) {
		t.Errorf("the diagnosis without dropout changed diagnosis.json (%v)", err)
	}
	if without.Dropout || without.MeanErrMean == with.MeanErrMean || without.ErrMean == with.ErrMean {
		t.Errorf("without dropout: dropout %v, mean error %v (with: %v), error %v (with: %v)", without.Dropout,
			without.MeanErrMean, with.MeanErrMean, without.ErrMean, with.ErrMean)
	}
}
