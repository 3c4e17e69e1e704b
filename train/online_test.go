package train

import (
	"context"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/internal/ckpt"
)

// tinyConfig is a run small enough for a unit test.
func tinyConfig(algo string) OnlineConfig {
	c, err := Preset("quick", "hopper", algo, 3)
	if err != nil {
		panic(err)
	}
	c.Steps, c.WarmUp, c.UpdatesPerStep, c.Batch = 400, 200, 1, 32 // 600 env steps
	c.Hidden = []int{32, 32}
	c.EvalEvery, c.EvalEpisodes, c.CheckpointEvery = 300, 1, 300
	c.ModelEvery, c.RolloutBatch, c.Rollout = 200, 64, Schedule{0, 400, 1, 3}
	c.ADMHidden, c.ADMLayers, c.ADMResBlocks, c.M = 16, 1, 1, 3
	c.Ensemble, c.Elites, c.ModelMaxEpochs, c.ModelPatience = 3, 2, 3, 2
	return c
}

// runState captures what must match between an interrupted and an
// uninterrupted run.
type runState struct {
	step            int
	realCounters    string // the real buffer's checkpointed counters (size, capacity, n, pos)
	real            []float32
	modelN          int
	model           []float32
	actor, critic   []float32
	logAlpha, epRet float64
	updates, adamT  int
	obs             []float32
}

func capture(o *Online) runState {
	s := runState{step: o.step, updates: o.sac.Updates, adamT: o.sac.ActorOpt.T,
		logAlpha: float64(o.sac.LogAlpha[0]), epRet: o.epReturn, obs: append([]float32(nil), o.obs...)}
	s.realCounters, s.real = ring(o.real, "obs", "act", "rew")
	if o.model != nil {
		s.modelN = o.model.Len()
		_, s.model = ring(o.model, "obs", "rew")
	}
	for _, l := range o.sac.Actor.Net.Layers {
		s.actor = append(s.actor, l.W...)
	}
	for _, l := range o.sac.Target2.Net.Layers {
		s.critic = append(s.critic, l.W...)
	}
	return s
}

// ring returns a buffer as its checkpoint stores it: the JSON counters and
// copies of the raw ring arrays named in parts, back to back.
func ring(r *buffer.Replay, parts ...string) (counters string, data []float32) {
	f := ckpt.New()
	if err := r.Save(f, "r"); err != nil {
		panic(err)
	}
	b, _ := f.Bytes("r/state")
	for _, p := range parts {
		v, _ := f.F32("r/"+p, -1)
		data = append(data, v...)
	}
	return string(b), data
}

// TestResumeAfterKillMatchesUninterruptedRun runs a small job straight
// through, and again with a "kill" after the step-300 checkpoint (the
// process state past it is thrown away), resumed from disk. Buffers,
// counters, weights and the env's position must be identical (also for
// ADMPO with rollout_dropout).
func TestResumeAfterKillMatchesUninterruptedRun(t *testing.T) {
	for _, algo := range []string{"sac", "admpo", "mbpo", "admpo-dropout"} {
		t.Run(algo, func(t *testing.T) {
			var cfg OnlineConfig
			if algo == "admpo-dropout" { // MC dropout in roll-outs and validation: seeded, so exact too
				cfg = tinyConfig("admpo")
				cfg.RolloutDropout = true
			} else {
				cfg = tinyConfig(algo)
			}
			want := straightRun(t, cfg)
			c, dir := resumedToEnd(t, NewOnline, ResumeOnline, cfg, 450, 300) // checkpoint at 300, then 150 lost steps
			sameRun(t, capture(c), want)
			rows, err := ReadProgressCSV(filepath.Join(dir, "progress.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].Step != 300 || rows[1].Step != 600 {
				t.Fatalf("progress rows after resume: %+v", rows)
			}
			if _, err := os.Stat(filepath.Join(dir, "policy.onnx")); err != nil {
				t.Fatalf("final policy not exported: %v", err)
			}
			checkTiming(t, dir, algo != "sac")
		})
	}
}

// checkTiming reads the time profile of a run's progress.jsonl: every phase
// grows from row to row (a resume starts from the checkpoint's totals, not
// from zero), the phases never add up to more than the wall time, updates and
// evaluations take time, and model fits and roll-outs take time exactly when
// the run has a model.
func checkTiming(t *testing.T, dir string, hasModel bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "progress.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var prev Timing
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, line := range lines {
		var r struct {
			Wall float64 `json:"wall_s"`
			Time *Timing `json:"time"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Time == nil {
			t.Fatalf("row %d has no time profile: %s", i, line)
		}
		tm := *r.Time
		if tm.Fit < prev.Fit || tm.Rollout < prev.Rollout || tm.Update < prev.Update || tm.Eval < prev.Eval {
			t.Fatalf("row %d: time profile went back from %+v to %+v", i, prev, tm)
		}
		if sum := tm.Fit + tm.Rollout + tm.Update + tm.Eval; sum > r.Wall+1e-6 {
			t.Fatalf("row %d: phases add up to %.3fs, more than the wall time %.3fs", i, sum, r.Wall)
		}
		prev = tm
	}
	if prev.Update <= 0 || prev.Eval <= 0 || (prev.Fit > 0) != hasModel || (prev.Rollout > 0) != hasModel {
		t.Fatalf("final time profile %+v (model: %v)", prev, hasModel)
	}
}

// straightRun runs cfg from start to end uninterrupted and returns its
// final state.
func straightRun(t *testing.T, cfg OnlineConfig) runState {
	t.Helper()
	a, err := NewOnline(cfg, filepath.Join(t.TempDir(), "straight"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return capture(a)
}

// killed starts a run of cfg in dir with start (NewOnline, NewOffline),
// runs it to step stop and drops the process state (the "kill": nothing
// after the last checkpoint is saved).
func killed[C any, R interface {
	RunTo(context.Context, int) error
	Close()
}](t *testing.T, start func(C, string) (R, error), cfg C, dir string, stop int) {
	t.Helper()
	b, err := start(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.RunTo(context.Background(), stop); err != nil {
		t.Fatal(err)
	}
}

// resumed reopens the stopped run in dir with resume (ResumeOnline,
// ResumeOffline); the end of t closes it.
func resumed[R interface{ Close() }](t *testing.T, resume func(string) (R, error), dir string) R {
	t.Helper()
	r, err := resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// resumedToEnd kills a run of cfg at step stop (see killed), resumes it,
// checks that it restarts at the checkpoint's step at, and runs it to its
// end; it returns the run (closed at the end of t) and its directory.
func resumedToEnd[C any, R interface {
	RunTo(context.Context, int) error
	Run(context.Context) error
	Step() int
	Close()
}](t *testing.T, start func(C, string) (R, error), resume func(string) (R, error), cfg C, stop, at int) (R, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b")
	killed(t, start, cfg, dir, stop)
	r := resumed(t, resume, dir)
	if r.Step() != at {
		t.Fatalf("resumed at step %d, want the checkpoint's %d", r.Step(), at)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r, dir
}

// sameRun fails t unless got and want, the final states of two runs of one
// config, are identical: counters, buffers, weights and the observation.
func sameRun(t *testing.T, got, want runState) {
	t.Helper()
	if got.step != want.step || got.realCounters != want.realCounters || got.updates != want.updates ||
		got.adamT != want.adamT || got.modelN != want.modelN || got.epRet != want.epRet || got.logAlpha != want.logAlpha {
		t.Fatalf("counters differ:\n got %+v\nwant %+v", pick(got), pick(want))
	}
	bitexact.Same(t, "real buffer", got.real, want.real)
	bitexact.Same(t, "model buffer", got.model, want.model)
	bitexact.Same(t, "actor weights", got.actor, want.actor)
	bitexact.Same(t, "target critic weights", got.critic, want.critic)
	bitexact.Same(t, "current observation", got.obs, want.obs)
}

func pick(s runState) map[string]any {
	return map[string]any{"step": s.step, "real": s.realCounters, "updates": s.updates, "adamT": s.adamT,
		"modelN": s.modelN, "epRet": s.epRet, "logAlpha": s.logAlpha}
}

func TestNewOnlineRefusesAnExistingRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	if _, err := NewOnline(tinyConfig("sac"), dir); err == nil {
		t.Fatal("a second run was started in a run directory")
	}
	if _, err := ResumeOnline(t.TempDir()); err == nil {
		t.Fatal("resumed a directory without a checkpoint")
	}
}

// TestBatchMixtureIsExact fills the real buffer with reward +1 and the model
// buffer with reward -1 and counts what a batch holds.
func TestBatchMixtureIsExact(t *testing.T) {
	cfg := tinyConfig("admpo")
	cfg.Batch, cfg.RealRatio = 256, 0.05
	o, err := NewOnline(cfg, filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	obs, act := make([]float32, 11), make([]float32, 3)
	for i := 0; i < 50; i++ {
		o.real.Add(obs, act, 1, obs, false, false)
	}
	count := func() (real int) {
		if err := o.fillBatch(); err != nil {
			t.Fatal(err)
		}
		for _, r := range o.batch.Rew {
			if r == 1 {
				real++
			}
		}
		return real
	}
	if n := count(); n != 256 {
		t.Fatalf("without model data the batch must be all real, got %d of 256", n)
	}
	o.model, _ = buffer.New(11, 3, 100, 1)
	for i := 0; i < 100; i++ {
		o.model.Add(obs, act, -1, obs, false, false)
	}
	for _, ratio := range []float64{0.05, 0.5, 0, 1} {
		o.Cfg.RealRatio = ratio
		want := int(ratio * 256) // the authors' int(batch_size*real_ratio)
		for rep := 0; rep < 3; rep++ {
			if n := count(); n != want {
				t.Fatalf("ratio %v: %d real rows, want exactly %d", ratio, n, want)
			}
		}
	}
}

// TestSampleStartsNeverCrossEpisodes checks roll-out start sequences:
// consecutive states are linked by the stored transitions and no sequence
// reaches back over an episode end.
func TestSampleStartsNeverCrossEpisodes(t *testing.T) {
	r, _ := buffer.New(1, 1, 64, 1)
	// Episodes of lengths 3, 1, 5, ...: obs encodes (episode, step).
	ep := 0
	for r.Len() < 60 {
		n := 1 + (ep*3)%6
		for s := 0; s < n; s++ {
			o := float32(ep*100 + s)
			r.Add([]float32{o}, []float32{o + 0.5}, 0, []float32{o + 1}, false, s == n-1)
		}
		ep++
	}
	rng, _ := rngNew(3)
	st, err := r.SampleStarts(4000, 4, rng)
	if err != nil {
		t.Fatal(err)
	}
	lens := map[int]int{}
	for i := 0; i < st.N; i++ {
		l := st.Len[i]
		lens[l]++
		first := st.Obs[i*4]
		step := int(first) % 100
		for j := 0; j < l; j++ {
			if st.Obs[i*4+j] != first+float32(j) {
				t.Fatalf("row %d: states %v are not consecutive in one episode", i, st.Obs[i*4:i*4+l])
			}
			if j < l-1 && st.Act[i*3+j] != st.Obs[i*4+j]+0.5 {
				t.Fatalf("row %d: action %d is %v, want %v", i, j, st.Act[i*3+j], st.Obs[i*4+j]+0.5)
			}
		}
		// A shorter history is allowed only at an episode's start.
		if l < 4 && step != 0 {
			t.Fatalf("row %d: history %d stops at step %d, not at the episode start", i, l, step)
		}
	}
	if lens[1] == 0 || lens[4] == 0 {
		t.Errorf("history lengths %v: expected both short and full histories", lens)
	}
}

func rngNew(seed int64) (*rand.Rand, error) { return rand.New(rand.NewSource(seed)), nil }

// TestCheckpointKeepsNaNPerKHoldout: a fit whose holdout has no sequences
// for some k reports NaN there; the checkpoint must still be written and a
// resume must give the NaN back, and the running loop's own report must
// not be changed by writing the checkpoint.
func TestCheckpointKeepsNaNPerKHoldout(t *testing.T) {
	c := tinyConfig("admpo")
	o, err := NewOnline(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.lastFit = dynamics.FitReport{Epochs: 2, TrainLoss: math.NaN(), HoldoutLoss: math.NaN(), HoldoutPerK: []float64{0.5, math.NaN(), 0.25}}
	if err := o.Checkpoint(); err != nil {
		t.Fatalf("checkpoint with NaN losses: %v", err)
	}
	if !math.IsNaN(o.lastFit.HoldoutPerK[1]) || !math.IsNaN(o.lastFit.HoldoutLoss) {
		t.Fatalf("writing the checkpoint changed the live fit report: %+v", o.lastFit)
	}
	r := resumed(t, ResumeOnline, o.Dir)
	got := r.lastFit.HoldoutPerK
	if len(got) != 3 || got[0] != 0.5 || !math.IsNaN(got[1]) || got[2] != 0.25 {
		t.Fatalf("resumed per-k holdout %v, want [0.5 NaN 0.25]", got)
	}
}

// TestCheckpointIntervalCheckpointsByTime: with CheckpointInterval set, a
// run also checkpoints by wall time (here after every step), so a kill at
// step 450 resumes at 450 rather than at checkpoint_every's 300, and the
// extra checkpoints leave the run exactly as an uninterrupted one.
func TestCheckpointIntervalCheckpointsByTime(t *testing.T) {
	for _, algo := range []string{"sac", "admpo"} {
		t.Run(algo, func(t *testing.T) {
			cfg := tinyConfig(algo)
			want := straightRun(t, cfg)
			everyStep := func(c OnlineConfig, dir string) (*Online, error) {
				o, err := NewOnline(c, dir)
				if err == nil {
					o.CheckpointInterval = time.Nanosecond
				}
				return o, err
			}
			c, _ := resumedToEnd(t, everyStep, ResumeOnline, cfg, 450, 450)
			sameRun(t, capture(c), want)
		})
	}
}
