package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"time"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/rng"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// onlineState is the JSON part of an online checkpoint.
type onlineState struct {
	Step       int
	Obs        []float32
	EpReturn   float64
	LastReturn *float64 // nil for NaN
	LastEval   *float64
	Evals      int
	RolloutLen int
	Wall       float64
	Time       Timing
	LastFit    dynamics.FitReport
	FitAt      int // env step of the last model fit (absent in older checkpoints: 0)
	LastSAC    sac.Stats
	Env        envs.Snapshot
	HasModel   bool
	// EvalDue: the evaluation at Step failed (a remote env's server went
	// away) and is redone first on resume.
	EvalDue bool `json:",omitempty"`
}

func nanPtr(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func fromPtr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// fitToJSON returns a copy of r that JSON can encode: a NaN holdout or
// training loss becomes 0, a NaN holdout MSE (per k: a k with no holdout
// sequences, as a fit on a short warm-up has; or an epoch's of its learning
// curve) -1, and an epoch's NaN training loss 0; fitFromJSON turns the -1s
// back into NaN.
func fitToJSON(r dynamics.FitReport) dynamics.FitReport {
	if math.IsNaN(r.HoldoutLoss) {
		r.HoldoutLoss = 0
	}
	if math.IsNaN(r.TrainLoss) {
		r.TrainLoss = 0
	}
	r.HoldoutPerK = mseToJSON(r.HoldoutPerK)
	if r.Curve != nil {
		r.Curve = append([]dynamics.FitEpoch(nil), r.Curve...)
	}
	for i := range r.Curve {
		e := &r.Curve[i]
		if math.IsNaN(e.TrainLoss) {
			e.TrainLoss = 0
		}
		if math.IsNaN(e.HoldoutLoss) {
			e.HoldoutLoss = -1
		}
		e.HoldoutPerK = mseToJSON(e.HoldoutPerK)
	}
	return r
}

// mseToJSON is a copy of the MSEs v with NaN as -1 (nil stays nil).
func mseToJSON(v []float64) []float64 {
	if v == nil {
		return nil
	}
	v = slices.Clone(v)
	for i, x := range v {
		if math.IsNaN(x) {
			v[i] = -1
		}
	}
	return v
}

// mseFromJSON turns mseToJSON's -1s in v back into NaN, in place.
func mseFromJSON(v []float64) {
	for i, x := range v {
		if x < 0 {
			v[i] = math.NaN()
		}
	}
}

func fitFromJSON(r dynamics.FitReport) dynamics.FitReport {
	mseFromJSON(r.HoldoutPerK)
	for i := range r.Curve {
		if r.Curve[i].HoldoutLoss < 0 {
			r.Curve[i].HoldoutLoss = math.NaN()
		}
		mseFromJSON(r.Curve[i].HoldoutPerK)
	}
	return r
}

// Checkpoint writes the whole run state to DIR/checkpoint.ckpt atomically.
func (o *Online) Checkpoint() error {
	snap, err := o.env.Snapshot()
	if err != nil {
		return err
	}
	lastSAC, err := o.sacStats()
	if err != nil {
		return err
	}
	st := onlineState{Step: o.step, Obs: o.obs, EpReturn: o.epReturn, LastReturn: nanPtr(o.lastReturn),
		LastEval: nanPtr(o.lastEval), Evals: o.evals, RolloutLen: o.rolloutLen,
		Wall: o.wall(), Time: o.time, FitAt: o.fitAt, LastFit: fitToJSON(o.lastFit), LastSAC: lastSAC, Env: snap, HasModel: o.model != nil,
		EvalDue: o.evalDue}
	if err := o.writeCheckpoint(o.Dir, o.Cfg.JSON(), st, func(f *ckpt.File) error { return o.real.Save(f, "real") }); err != nil {
		return err
	}
	o.lastCheckpoint = time.Now()
	return nil
}

// writeCheckpoint writes DIR/checkpoint.ckpt atomically, in this order: the
// config, the state (as JSON), the random sources, SAC, the sections extra
// adds (may be nil), the model buffer and the dynamics model.
func (l *loop) writeCheckpoint(dir string, config []byte, state any, extra func(*ckpt.File) error) error {
	f := ckpt.New()
	f.PutBytes("config", config)
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	f.PutBytes("state", b)
	if err := l.saveRNGs(f); err != nil {
		return err
	}
	if err := l.sac.Sync(); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	l.sac.Save(f)
	if extra != nil {
		if err := extra(f); err != nil {
			return err
		}
	}
	if l.model != nil {
		if err := l.model.Save(f, "model"); err != nil {
			return err
		}
	}
	if l.dyn != nil {
		if err := l.dyn.Save(f); err != nil {
			return err
		}
	}
	if err := f.Save(rundir.Dir(dir).Checkpoint()); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	return nil
}

// readState decodes a checkpoint's state section into st.
func readState(f *ckpt.File, st any) error {
	b, err := f.Bytes("state")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, st); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// restoreNets takes SAC, the sections extra reads (may be nil), the model
// buffer (when the checkpoint has one), the dynamics model and the random
// sources from a checkpoint written by writeCheckpoint.
func (l *loop) restoreNets(f *ckpt.File, hasModel bool, extra func() error) error {
	if err := l.sac.Load(f); err != nil {
		return err
	}
	if extra != nil {
		if err := extra(); err != nil {
			return err
		}
	}
	if hasModel {
		var err error
		if l.model, err = buffer.Load(f, "model"); err != nil {
			return err
		}
	}
	if l.dyn != nil {
		if err := l.dyn.Load(f); err != nil {
			return err
		}
	}
	return l.loadRNGs(f)
}

// ResumeOnlineOn is ResumeOnline with the run's SAC updates moved to
// device (cpu, emu or cuda; "" keeps the run's): checkpoints have one
// format on every device. The run's config (config.json, and its next
// checkpoints) records the new device.
func ResumeOnlineOn(dir, device string) (*Online, error) {
	return ResumeOnlineWith(dir, ResumeOptions{Device: device})
}

// ResumeOptions are the settings a resumed online run may change; a zero
// field keeps the run's.
type ResumeOptions struct {
	// Device runs the SAC updates on this device (cpu, emu or cuda).
	Device string
	// EnvTimeout is a remote environment's new longest wait for a
	// connection or an answer (--env-timeout); a run on a built-in task or
	// a task file refuses it with ErrNotRemote.
	EnvTimeout time.Duration
}

// ErrNotRemote is the error of a remote-environment setting (an env
// timeout) given to a run that plays no remote environment.
var ErrNotRemote = errors.New("the run plays no remote environment")

// ResumeOnlineWith is ResumeOnline with the changes opt names. When it
// changes anything, config.json is rewritten at once and the run's next
// checkpoints record the new settings, so a later resume keeps them.
func ResumeOnlineWith(dir string, opt ResumeOptions) (*Online, error) {
	if opt == (ResumeOptions{}) {
		return ResumeOnline(dir)
	}
	if opt.EnvTimeout < 0 {
		return nil, fmt.Errorf("train: resuming %s: env timeout %s is negative", dir, opt.EnvTimeout)
	}
	o, err := reopen(dir, rundir.Online, func(c OnlineConfig, d string) (*Online, error) {
		if opt.Device != "" {
			c.Device = opt.Device
		}
		if opt.EnvTimeout > 0 {
			if !c.IsRemote() || c.Remote == nil {
				return nil, fmt.Errorf("train: resuming %s with an env timeout: %w (env %s)", dir, ErrNotRemote, c.Env)
			}
			r := *c.Remote
			r.TimeoutS = opt.EnvTimeout.Seconds()
			c.Remote = &r
		}
		return newOnline(c, d)
	}, func(o *Online, f *ckpt.File) error { return resumeRun(o, dir, f) })
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(rundir.Dir(dir).Config(), o.Cfg.JSON(), 0o644); err != nil {
		o.Close()
		return nil, fmt.Errorf("train: resuming %s: writing its config: %w", dir, err)
	}
	return o, nil
}

// ResumeOnline reopens the run in dir at its last checkpoint: buffers,
// networks, optimisers, random sources, the env mid-episode and the
// counters, so the run continues as if never stopped.
func ResumeOnline(dir string) (*Online, error) {
	return reopen(dir, rundir.Online, newOnline, func(o *Online, f *ckpt.File) error { return resumeRun(o, dir, f) })
}

// OpenOnline reopens the online run in dir at its last checkpoint to be
// examined rather than continued (ResumeOnline continues it): its logs stay
// closed and nothing in dir is written. A run on a remote environment
// connects to its server, which ResumeOnline would also need.
func OpenOnline(dir string) (*Online, error) {
	return reopen(dir, rundir.Online, newOnline, func(o *Online, f *ckpt.File) error {
		if err := o.restore(f); err != nil {
			o.Close()
			return fmt.Errorf("train: %s: %w", dir, err)
		}
		return nil
	})
}

func (o *Online) restore(f *ckpt.File) error {
	var st onlineState
	if err := readState(f, &st); err != nil {
		return err
	}
	remote := o.Cfg.IsRemote()
	if len(st.Obs) != o.task.ObsDim && !remote {
		return fmt.Errorf("state has a %d-value observation, task %s has %d", len(st.Obs), o.task.Name, o.task.ObsDim)
	}
	o.step, o.obs, o.epReturn, o.lastReturn = st.Step, st.Obs, st.EpReturn, fromPtr(st.LastReturn)
	o.lastEval, o.evals, o.rolloutLen, o.wallBefore = fromPtr(st.LastEval), st.Evals, st.RolloutLen, st.Wall
	o.time, o.fitAt = st.Time, st.FitAt
	o.lastFit, o.lastSAC, o.evalDue = fitFromJSON(st.LastFit), st.LastSAC, st.EvalDue
	if !remote {
		if err := o.env.Restore(st.Env); err != nil {
			return err
		}
	}
	if err := o.restoreNets(f, st.HasModel, func() (err error) {
		o.real, err = buffer.Load(f, "real")
		return err
	}); err != nil {
		return err
	}
	if remote {
		return o.reseedRemote()
	}
	return nil
}

// reseedRemote starts a resumed run's remote environment afresh: its
// server's state cannot be restored, so the episode in progress at the
// checkpoint ends there (its last stored transition is marked as a time
// limit cut) and a new one starts, reset with resumeSeed.
func (o *Online) reseedRemote() error {
	o.real.EndEpisode()
	o.epReturn = 0
	obs := o.env.Reset(o.Cfg.resumeSeed(o.step))
	if obs == nil {
		return o.env.Err()
	}
	o.obs = envs.Float32(obs)
	return nil
}

// rngSources are the random sources of a run, saved in checkpoints.
type rngSources struct {
	loop, real, model, sac *rng.Source
}

// rngList names the random sources as the checkpoint stores them.
func (l *loop) rngList() []namedSource {
	return []namedSource{{"rng/loop", l.srcs.loop}, {"rng/real", l.srcs.real}, {"rng/model", l.srcs.model}, {"rng/sac", l.srcs.sac}}
}

type namedSource struct {
	n string
	s *rng.Source
}

func (l *loop) saveRNGs(f *ckpt.File) error {
	for _, x := range l.rngList() {
		b, err := x.s.MarshalBinary()
		if err != nil {
			return fmt.Errorf("train: checkpoint %s: %w", x.n, err)
		}
		f.PutBytes(x.n, b)
	}
	return nil
}

// loadRNGs restores the sources and gives the buffers fresh *rand.Rand
// views of theirs (a restored buffer has none; rand.Rand keeps no state of
// its own beyond the source).
func (l *loop) loadRNGs(f *ckpt.File) error {
	for _, x := range l.rngList() {
		b, err := f.Bytes(x.n)
		if err != nil {
			return err
		}
		if err := x.s.UnmarshalBinary(b); err != nil {
			return err
		}
	}
	l.real.SetRand(rand.New(l.srcs.real))
	if l.model != nil {
		l.model.SetRand(rand.New(l.srcs.model))
	}
	return nil
}

// reopen rebuilds the run of kind in dir from its checkpoint's config with
// build and hands it, with the checkpoint, to restore, which closes it on
// failure: the one way ResumeOnline, ResumeOffline and OpenOffline read a
// stopped run.
func reopen[C any, R any](dir string, kind rundir.Kind, build func(C, string) (R, error), restore func(R, *ckpt.File) error) (R, error) {
	var (
		cfg  C
		zero R
	)
	f, err := loadCheckpoint(dir, kind, &cfg)
	if err != nil {
		return zero, err
	}
	r, err := build(cfg, dir)
	if err != nil {
		return zero, err
	}
	if err := restore(r, f); err != nil {
		return zero, err
	}
	return r, nil
}

// loadCheckpoint reads the checkpoint in run directory dir and decodes its
// config section, which must be a config of kind, into cfg.
func loadCheckpoint(dir string, kind rundir.Kind, cfg any) (*ckpt.File, error) {
	path := rundir.Dir(dir).Checkpoint()
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("train: no checkpoint in %s: %w", dir, err)
	}
	f, err := ckpt.Load(path)
	if err != nil {
		return nil, err
	}
	cb, err := f.Bytes("config")
	if err != nil {
		return nil, err
	}
	if k, err := rundir.KindOf(cb); err == nil && k != kind {
		return nil, fmt.Errorf("train: %s holds an %s run, not an %s one", dir, k, kind)
	}
	if err := json.Unmarshal(cb, cfg); err != nil {
		return nil, fmt.Errorf("train: %s: checkpoint config: %w", path, err)
	}
	return f, nil
}

// SetSteps makes a resumed run's length n learning steps (Steps): n must
// leave the run at or after its current env step. The real buffer grows to
// the new length and config.json is rewritten; the next checkpoint keeps
// the new length.
func (o *Online) SetSteps(n int) error {
	c := o.Cfg
	c.Steps = n
	if err := o.checkLength(c, "env step"); err != nil {
		return err
	}
	if c.TotalSteps() > o.real.Cap {
		r, err := o.real.Resized(c.TotalSteps())
		if err != nil {
			return err
		}
		o.real = r
	}
	o.Cfg = c
	return atomicfile.WriteFile(rundir.Dir(o.Dir).Config(), c.JSON(), 0o644)
}

// runConfig is what a length change needs of a run's config
// (OnlineConfig, OfflineConfig).
type runConfig interface {
	Validate() error
	TotalSteps() int
}

// checkLength is an error unless c, a resumed run's config at a new
// length, is valid and does not end before the loop's current step (unit:
// "env step", "update").
func (l *loop) checkLength(c runConfig, unit string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if total := c.TotalSteps(); total < l.step {
		return fmt.Errorf("train: the run is at %s %d, past a length of %d %ss", unit, l.step, total, unit)
	}
	return nil
}
