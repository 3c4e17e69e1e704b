package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/rundir"
)

// Fixtures are internal/trainfix's random hopper data set and tiny offline
// runs, set by fixtures_hook_test.go: trainfix imports train, so train's own
// tests reach it through the external test package, which may import both.
var Fixtures struct {
	RandomHopperFile  func(t testing.TB, n int) string
	TinyOfflineConfig func(t testing.TB, algo, kind, dataset string) OfflineConfig
	RunOfflineToEnd   func(t testing.TB, cfg OfflineConfig, dir string)
}

// TestADMPenaltyWhereKStepPredictionsDisagree builds a data set with "calm"
// episodes (the state never changes) and "moving" ones, and an ADM whose
// output is a constant: delta c, reward 1, a log-variance so small the
// samples are the means. Its k-step predictions of s_{t+1} are
// s_{t+1-k} + c, so they agree exactly where the recent states agree, and
// U^ADM = sqrt(mean_d Var_k(s_{t+1-k,d})) over the window's states (closed
// form, computed here from the data set rows). The roll-out's rewards must
// be 1 - beta·U: unpenalised on calm windows, lowered on moving ones.
func TestADMPenaltyWhereKStepPredictionsDisagree(t *testing.T) {
	ortskip.IfMissing(t)
	const od, ad, epLen, m = 11, 3, 12, 3
	d := &datasets.Dataset{ObsDim: od, ActDim: ad}
	state := func(ep, step int) []float32 {
		s := make([]float32, od)
		s[0] = 1.25    // healthy height; angle s[1] = 0
		if ep%2 == 1 { // moving: unique states along the episode
			for j := 2; j < od; j++ {
				s[j] = float32(ep)*0.01 + float32(step)*0.05*float32(j-1)
			}
		}
		return s
	}
	for ep := 0; ep < 20; ep++ {
		for s := 0; s < epLen; s++ {
			d.Obs = append(d.Obs, state(ep, s)...)
			d.NextObs = append(d.NextObs, state(ep, s+1)...)
			d.Act = append(d.Act, 0.1, -0.1, 0.2)
			d.Rew = append(d.Rew, 1)
			d.Terminal = append(d.Terminal, false)
			d.Timeout = append(d.Timeout, s == epLen-1)
			d.N++
		}
	}
	path := filepath.Join(t.TempDir(), "hopper-medium.hdf5")
	if err := datasets.WriteD4RL(path, d); err != nil {
		t.Fatal(err)
	}
	cfg := Fixtures.TinyOfflineConfig(t, "admpo", "medium", path)
	cfg.M, cfg.Horizon, cfg.RolloutBatch, cfg.Penalty = m, 1, 600, 2
	o, err := NewOffline(cfg, filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	adm := o.dyn.(*dynamics.ADM).Model
	clear(adm.Out.W)
	delta := []float32{0.01, 0, 0.02, -0.03, 0, 0, 0.05, 0, 0, 0.01, 0}
	copy(adm.Out.B, delta)
	adm.Out.B[od] = 1 // reward
	for j := od + 1; j < len(adm.Out.B); j++ {
		adm.Out.B[j] = -40 // raw log-variance
	}
	for j := range adm.Bounds.Min {
		adm.Bounds.Min[j] = -30 // std e^-15: samples equal the means
	}
	o.fitted = true

	// episode and step of each data set state, an episode's last next
	// state included (states of moving episodes are unique); roll-outs start
	// at the next state of a window of m-1 transitions (the authors' rule)
	rowOf := map[[od]float32][2]int{}
	for ep := 0; ep < 20; ep++ {
		for step := 0; step <= epLen; step++ {
			var k [od]float32
			copy(k[:], state(ep, step))
			if _, dup := rowOf[k]; !dup {
				rowOf[k] = [2]int{ep, step}
			}
		}
	}
	uRef := func(obs []float32, hist int) float64 {
		var k [od]float32
		copy(k[:], obs)
		pos, ok := rowOf[k]
		if !ok {
			t.Fatalf("roll-out start %v is not a data set state", obs)
		}
		ep, step := pos[0], pos[1]
		if ep%2 == 0 {
			return 0
		}
		var total float64
		for j := 0; j < od; j++ {
			var s, s2 float64
			for b := 0; b < hist; b++ {
				v := float64(state(ep, step-b)[j])
				s += v
				s2 += v * v
			}
			mean := s / float64(hist)
			total += s2/float64(hist) - mean*mean
		}
		return math.Sqrt(math.Max(total, 0) / od)
	}
	tr, err := o.rollout(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != cfg.RolloutBatch {
		t.Fatalf("H=1 roll-out gave %d transitions for %d starts", tr.N, cfg.RolloutBatch)
	}
	var calm, moving, disagree int
	for i := 0; i < tr.N; i++ {
		obs := tr.Obs[i*od : (i+1)*od]
		var k [od]float32
		copy(k[:], obs)
		pos := rowOf[k]
		step := pos[1]
		if pos[0]%2 == 1 && step < m-1 {
			t.Fatalf("transition %d starts at episode step %d, without the full history of %d states", i, step, m-1)
		}
		u := uRef(obs, min(step+1, m)) // the window: m states, not before the episode start
		if got := float64(tr.Uncertainty[i]); math.Abs(got-u) > 1e-4+1e-3*u {
			t.Fatalf("transition %d (episode step %d): U %.6f, closed form %.6f", i, step, got, u)
		}
		want := 1 - cfg.Penalty*u
		if got := float64(tr.Rew[i]); math.Abs(got-want) > 1e-4 {
			t.Fatalf("transition %d: reward %.6f, want 1 - %.1f*%.6f = %.6f", i, got, cfg.Penalty, u, want)
		}
		if u == 0 {
			calm++
		} else {
			moving++
			if u > 0.05 {
				disagree++
			}
		}
	}
	if calm < 100 || disagree < 100 {
		t.Fatalf("case not covered: %d agreeing windows, %d moving (%d with U > 0.05) of %d", calm, moving, disagree, tr.N)
	}
	// The loop's bookkeeping: the model buffer holds exactly these rewards.
	o.Cfg.Penalty = 0
	tr0, err := o.rollout(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < tr0.N; i++ {
		if math.Abs(float64(tr0.Rew[i])-1) > 1e-4 {
			t.Fatalf("beta = 0: reward %v, want the model's 1", tr0.Rew[i])
		}
	}
}

// offState captures what must match between an interrupted and an
// uninterrupted offline run.
type offState struct {
	step, updates, adamT, modelN, evals int
	logAlpha                            float64
	model, actor, critic                []float32
	dyn                                 []byte // the dynamics model's checkpoint sections, encoded
}

func offCapture(o *Offline) offState {
	s := offState{step: o.step, updates: o.sac.Updates, adamT: o.sac.ActorOpt.T, evals: o.evals,
		logAlpha: float64(o.sac.LogAlpha[0])}
	if o.bc != nil {
		s.updates, s.adamT = o.bc.Updates, o.bc.Opt.T
	}
	if o.model != nil {
		s.modelN = o.model.Len()
		_, s.model = ring(o.model, "obs", "rew", "next")
	}
	if o.dyn != nil {
		f := ckpt.New()
		if err := o.dyn.Save(f); err != nil {
			panic(err) // a test helper: the fitted model always saves
		}
		s.dyn = f.Encode()
	}
	for _, l := range o.sac.Actor.Net.Layers {
		s.actor = append(s.actor, l.W...)
	}
	for _, l := range o.sac.Target1.Net.Layers {
		s.critic = append(s.critic, l.W...)
	}
	return s
}

// TestOfflineResumeMatchesUninterruptedRun runs a small job straight
// through, and again "killed" after the update-200 checkpoint and resumed
// from disk: buffers, counters, weights and the logs must be identical.
func TestOfflineResumeMatchesUninterruptedRun(t *testing.T) {
	ortskip.IfMissing(t)
	data := Fixtures.RandomHopperFile(t, 600)
	for _, algo := range []string{"admpo", "mopo", "bc"} {
		t.Run(algo, func(t *testing.T) {
			cfg := Fixtures.TinyOfflineConfig(t, algo, "medium-replay", data)
			aDir, want := offStraightRun(t, cfg)
			wantLog, err := ReadOfflineLog(filepath.Join(aDir, rundir.OfflineLogFile))
			if err != nil {
				t.Fatal(err)
			}

			c, dir := resumedToEnd(t, NewOffline, ResumeOffline, cfg, 250, 200) // checkpoint at 200, 50 updates lost
			offSameRun(t, offCapture(c), want)
			if algo != "bc" && (want.modelN == 0 || want.updates != 300) {
				t.Fatalf("the run did not use the model: %+v", want.counters())
			}
			rows, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 3 || rows[0].Step != 100 || rows[2].Step != 300 {
				t.Fatalf("progress rows after resume: %+v", rows)
			}
			gotLog, err := ReadOfflineLog(filepath.Join(dir, rundir.OfflineLogFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(gotLog) != len(wantLog) {
				t.Fatalf("offline.csv has %d rows, uninterrupted %d", len(gotLog), len(wantLog))
			}
			for i := range gotLog {
				g, w := gotLog[i], wantLog[i]
				if g.Step != w.Step || g.ReturnMean != w.ReturnMean || g.ScoreMean != w.ScoreMean || g.Roll.Transitions != w.Roll.Transitions {
					t.Fatalf("offline.csv row %d: %+v, uninterrupted %+v", i, g, w)
				}
				wantScore, _ := datasets.NormalizedScore("hopper", w.ReturnMean)
				if math.Abs(w.ScoreMean-wantScore) > 1e-3 || math.Abs(rows[i].EvalMean-wantScore) > 1e-3 {
					t.Fatalf("row %d: score %v / progress %v for return %v, want %v", i, w.ScoreMean, rows[i].EvalMean, w.ReturnMean, wantScore)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "policy.onnx")); err != nil {
				t.Fatalf("final policy not exported: %v", err)
			}
			checkTiming(t, dir, algo != "bc")
		})
	}
}

// offStraightRun trains a fresh offline run of cfg to its end and returns
// its directory and final state.
func offStraightRun(t *testing.T, cfg OfflineConfig) (string, offState) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "straight")
	a, err := NewOffline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir, offCapture(a)
}

// offSameRun fails t unless got and want, the final states of two offline
// runs of one config, are identical: counters, model buffer and weights.
func offSameRun(t *testing.T, got, want offState) {
	t.Helper()
	if got.step != want.step || got.updates != want.updates || got.adamT != want.adamT ||
		got.modelN != want.modelN || got.evals != want.evals || got.logAlpha != want.logAlpha {
		t.Fatalf("counters differ:\n got %+v\nwant %+v", got.counters(), want.counters())
	}
	if !bytes.Equal(got.dyn, want.dyn) {
		t.Fatalf("the dynamics models differ (%d and %d bytes encoded)", len(got.dyn), len(want.dyn))
	}
	bitexact.Same(t, "model buffer", got.model, want.model)
	bitexact.Same(t, "actor weights", got.actor, want.actor)
	bitexact.Same(t, "target critic weights", got.critic, want.critic)
}

func (s offState) counters() map[string]any {
	return map[string]any{"step": s.step, "updates": s.updates, "adamT": s.adamT, "modelN": s.modelN,
		"evals": s.evals, "logAlpha": s.logAlpha}
}

// TestOfflineInterruptCheckpoints: a cancelled context stops the loop with
// ErrInterrupted after writing a checkpoint that resumes at that update.
func TestOfflineInterruptCheckpoints(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := Fixtures.TinyOfflineConfig(t, "bc", "random", Fixtures.RandomHopperFile(t, 300))
	dir := filepath.Join(t.TempDir(), "run")
	o, err := NewOffline(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.OnStatus(func(s Status) {
		if s.Step == 37 {
			cancel()
		}
	})
	if err := o.Run(ctx); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run after cancel: %v, want ErrInterrupted", err)
	}
	o.Close()
	r := resumed(t, ResumeOffline, dir)
	if r.step != 37 || r.bc.Updates != 37 {
		t.Fatalf("resumed at update %d with %d BC updates, want 37", r.step, r.bc.Updates)
	}
	if _, err := NewOffline(cfg, dir); err == nil {
		t.Fatal("a second run was started in a run directory")
	}
}

func TestOfflinePresetsFollowThePaper(t *testing.T) {
	for _, x := range []struct {
		name, algo string
		m, h       int
		beta, real float64
	}{
		{"hopper-medium-v2.hdf5", "admpo", 5, 10, 1, 0.05},
		{"data/hopper-medium-replay.hdf5", "admpo", 5, 5, 0.1, 0.5},
		{"walker2d_medium_expert-v2.hdf5", "admpo", 3, 2, 6, 0.5},
		{"hopper-random.hdf5", "admpo", 5, 50, 5, 0.05},
		{"halfcheetah-medium-expert.hdf5", "admpo", 2, 20, 9.16, 0.5}, // the authors' code (the paper's table: 50, 10)
		{"hopper-medium.hdf5", "mopo", 1, 5, 5, 0.05},
		{"walker2d-medium-replay.hdf5", "mopo", 1, 1, 1, 0.5},
	} {
		env, kind, err := DatasetIdentity(x.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := OfflinePreset("paper", env, kind, x.algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		if c.M != x.m || c.Horizon != x.h || c.Penalty != x.beta || c.RealRatio != x.real {
			t.Errorf("%s %s: m %d H %d beta %v real %v, want %d %d %v %v", x.name, x.algo, c.M, c.Horizon, c.Penalty, c.RealRatio,
				x.m, x.h, x.beta, x.real)
		}
		if c.ActorLR != 1e-4 || c.CriticLR != 3e-4 || c.AlphaLR != 1e-4 || c.TargetEntropy != -3 || c.RolloutEvery != 1000 ||
			c.RolloutBatch != 50000 || c.ModelRetain != 5 || c.StepsPerEpoch != 1000 {
			t.Errorf("%s: common ADMPO-OFF defaults wrong: %+v", x.name, c)
		}
	}
	// The quick preset shrinks what `admpo train offline --help` says it
	// shrinks: the ADM, not MOPO's ensemble, and keeps the paper's m, H, beta.
	for _, algo := range []string{"admpo", "mopo"} {
		p, err := OfflinePreset("paper", "hopper", "medium", algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		q, err := OfflinePreset("quick", "hopper", "medium", algo, 3)
		if err != nil {
			t.Fatal(err)
		}
		if q.Epochs != 20 || q.RolloutBatch != 5000 || q.EvalEpisodes != 5 || q.ModelMaxEpochs != 30 ||
			q.ADMHidden != 64 || q.ADMLayers != 2 || q.ADMResBlocks != 2 || q.Ensemble != 7 || q.Elites != 5 ||
			q.M != p.M || q.Horizon != p.Horizon || q.Penalty != p.Penalty || q.RealRatio != p.RealRatio {
			t.Errorf("quick %s preset: %+v (paper: %+v)", algo, q, p)
		}
	}
	if _, _, err := DatasetIdentity("hopper.hdf5", nil); !errors.Is(err, ErrUnknownDataset) {
		t.Errorf("a name without a kind: %v, want ErrUnknownDataset", err)
	}
	// The metadata wins over the name; a name completes partial metadata.
	if e, k, err := DatasetIdentity("x/hopper-random.hdf5", map[string]string{"env": "walker2d", "kind": "expert"}); err != nil || e != "walker2d" || k != "expert" {
		t.Errorf("metadata walker2d/expert read as %s/%s (%v)", e, k, err)
	}
	if e, k, err := DatasetIdentity("x/hopper-random.hdf5", map[string]string{"kind": "medium"}); err != nil || e != "hopper" || k != "medium" {
		t.Errorf("metadata kind medium and a hopper name read as %s/%s (%v)", e, k, err)
	}
}
