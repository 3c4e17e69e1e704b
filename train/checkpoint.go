package train

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/rng"
	"github.com/admpo/admpo/models"
)

// CheckpointName is the run directory's checkpoint file.
const CheckpointName = "checkpoint.ckpt"

// putMLP stores every layer of m under prefix.
func putMLP(f *ckpt.File, prefix string, m *models.MLP) {
	for i := range m.Layers {
		f.PutF32(fmt.Sprintf("%s/%d/w", prefix, i), m.Layers[i].W)
		f.PutF32(fmt.Sprintf("%s/%d/b", prefix, i), m.Layers[i].B)
	}
}

// loadMLP copies the layers stored under prefix into m's existing slices
// (which Gorgonia graphs may be backed by), checking every size.
func loadMLP(f *ckpt.File, prefix string, m *models.MLP) error {
	for i := range m.Layers {
		if err := f.CopyF32(fmt.Sprintf("%s/%d/w", prefix, i), m.Layers[i].W); err != nil {
			return err
		}
		if err := f.CopyF32(fmt.Sprintf("%s/%d/b", prefix, i), m.Layers[i].B); err != nil {
			return err
		}
	}
	return nil
}

// putAdam stores an optimiser's moments and step count.
func putAdam(f *ckpt.File, prefix string, a *models.Adam) {
	f.PutF32(prefix+"/t", []float32{float32(a.T)})
	for i := range a.M {
		f.PutF32(fmt.Sprintf("%s/m/%d", prefix, i), a.M[i])
		f.PutF32(fmt.Sprintf("%s/v/%d", prefix, i), a.V[i])
	}
}

func loadAdam(f *ckpt.File, prefix string, a *models.Adam) error {
	t, err := f.F32(prefix+"/t", 1)
	if err != nil {
		return err
	}
	a.T = int(t[0])
	for i := range a.M {
		if err := f.CopyF32(fmt.Sprintf("%s/m/%d", prefix, i), a.M[i]); err != nil {
			return err
		}
		if err := f.CopyF32(fmt.Sprintf("%s/v/%d", prefix, i), a.V[i]); err != nil {
			return err
		}
	}
	return nil
}

// saveSAC stores the networks, targets, entropy coefficient and optimisers.
func (s *SAC) save(f *ckpt.File) {
	putMLP(f, "sac/actor", &s.Actor.Net)
	putMLP(f, "sac/critic1", &s.Critic1.Net)
	putMLP(f, "sac/critic2", &s.Critic2.Net)
	putMLP(f, "sac/target1", &s.Target1.Net)
	putMLP(f, "sac/target2", &s.Target2.Net)
	f.PutF32("sac/log_alpha", s.LogAlpha)
	putAdam(f, "sac/opt/actor", s.ActorOpt)
	putAdam(f, "sac/opt/critic", s.CriticOpt)
	putAdam(f, "sac/opt/alpha", s.AlphaOpt)
	f.PutF32("sac/updates", []float32{float32(s.Updates)})
}

func (s *SAC) load(f *ckpt.File) error {
	for _, x := range []struct {
		p string
		m *models.MLP
	}{{"sac/actor", &s.Actor.Net}, {"sac/critic1", &s.Critic1.Net}, {"sac/critic2", &s.Critic2.Net},
		{"sac/target1", &s.Target1.Net}, {"sac/target2", &s.Target2.Net}} {
		if err := loadMLP(f, x.p, x.m); err != nil {
			return err
		}
	}
	if err := f.CopyF32("sac/log_alpha", s.LogAlpha); err != nil {
		return err
	}
	for _, x := range []struct {
		p string
		a *models.Adam
	}{{"sac/opt/actor", s.ActorOpt}, {"sac/opt/critic", s.CriticOpt}, {"sac/opt/alpha", s.AlphaOpt}} {
		if err := loadAdam(f, x.p, x.a); err != nil {
			return err
		}
	}
	u, err := f.F32("sac/updates", 1)
	if err != nil {
		return err
	}
	s.Updates = int(u[0])
	return nil
}

// replayState is the JSON part of a saved replay buffer.
type replayState struct {
	ObsDim, ActDim, Cap, N, Pos int
}

func boolsToF32(b []bool) []float32 {
	v := make([]float32, len(b))
	for i, x := range b {
		if x {
			v[i] = 1
		}
	}
	return v
}

func (r *Replay) save(f *ckpt.File, prefix string) error {
	st, _ := json.Marshal(replayState{r.ObsDim, r.ActDim, r.Cap, r.n, r.pos})
	f.PutBytes(prefix+"/state", st)
	f.PutF32(prefix+"/obs", r.obs)
	f.PutF32(prefix+"/act", r.act)
	f.PutF32(prefix+"/next", r.next)
	f.PutF32(prefix+"/rew", r.rew)
	f.PutF32(prefix+"/terminal", boolsToF32(r.terminal))
	f.PutF32(prefix+"/end", boolsToF32(r.end))
	return nil
}

// loadReplay rebuilds a buffer saved by save.
func loadReplay(f *ckpt.File, prefix string) (*Replay, error) {
	b, err := f.Bytes(prefix + "/state")
	if err != nil {
		return nil, err
	}
	var st replayState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: %w", prefix, err)
	}
	r, err := NewReplay(st.ObsDim, st.ActDim, st.Cap, 0)
	if err != nil {
		return nil, err
	}
	if st.N < 0 || st.N > st.Cap || st.Pos < 0 || st.Pos >= st.Cap {
		return nil, fmt.Errorf("train: checkpoint %s: bad counters n=%d pos=%d cap=%d", prefix, st.N, st.Pos, st.Cap)
	}
	r.n, r.pos = st.N, st.Pos
	for _, x := range []struct {
		n string
		d []float32
	}{{"obs", r.obs}, {"act", r.act}, {"next", r.next}, {"rew", r.rew}} {
		if err := f.CopyF32(prefix+"/"+x.n, x.d); err != nil {
			return nil, err
		}
	}
	for _, x := range []struct {
		n string
		d []bool
	}{{"terminal", r.terminal}, {"end", r.end}} {
		v, err := f.F32(prefix+"/"+x.n, len(x.d))
		if err != nil {
			return nil, err
		}
		for i := range v {
			x.d[i] = v[i] != 0
		}
	}
	return r, nil
}

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
	LastFit    FitReport
	LastSAC    SACStats
	Env        envs.Snapshot
	HasModel   bool
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

// Checkpoint writes the whole run state to DIR/checkpoint.ckpt atomically.
func (o *Online) Checkpoint() error {
	f := ckpt.New()
	f.PutBytes("config", o.Cfg.JSON())
	snap, err := o.env.Snapshot()
	if err != nil {
		return err
	}
	st := onlineState{Step: o.step, Obs: o.obs, EpReturn: o.epReturn, LastReturn: nanPtr(o.lastReturn),
		LastEval: nanPtr(o.lastEval), Evals: o.evals, RolloutLen: o.rolloutLen,
		Wall: o.wallBefore + sinceStart(o), LastFit: o.lastFit, LastSAC: o.lastSAC, Env: snap, HasModel: o.model != nil}
	if math.IsNaN(st.LastFit.HoldoutLoss) {
		st.LastFit.HoldoutLoss = 0
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	f.PutBytes("state", b)
	if err := o.saveRNGs(f); err != nil {
		return err
	}
	o.sac.save(f)
	if err := o.real.save(f, "real"); err != nil {
		return err
	}
	if o.model != nil {
		if err := o.model.save(f, "model"); err != nil {
			return err
		}
	}
	if o.dyn != nil {
		if err := o.dyn.Save(f); err != nil {
			return err
		}
	}
	if err := f.Save(filepath.Join(o.Dir, CheckpointName)); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	return nil
}

// ResumeOnline reopens the run in dir at its last checkpoint: buffers,
// networks, optimisers, random sources, the env mid-episode and the
// counters, so the run continues as if never stopped.
func ResumeOnline(dir string) (*Online, error) {
	var cfg OnlineConfig
	f, err := loadCheckpoint(dir, &cfg)
	if err != nil {
		return nil, err
	}
	o, err := newOnline(cfg, dir)
	if err != nil {
		return nil, err
	}
	if err := o.restore(f); err != nil {
		o.Close()
		return nil, fmt.Errorf("train: resuming %s: %w", dir, err)
	}
	if o.progress, err = OpenProgress(dir, o.step); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (o *Online) restore(f *ckpt.File) error {
	b, err := f.Bytes("state")
	if err != nil {
		return err
	}
	var st onlineState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if len(st.Obs) != o.task.ObsDim {
		return fmt.Errorf("state has a %d-value observation, task %s has %d", len(st.Obs), o.task.Name, o.task.ObsDim)
	}
	o.step, o.obs, o.epReturn, o.lastReturn = st.Step, st.Obs, st.EpReturn, fromPtr(st.LastReturn)
	o.lastEval, o.evals, o.rolloutLen, o.wallBefore = fromPtr(st.LastEval), st.Evals, st.RolloutLen, st.Wall
	o.lastFit, o.lastSAC = st.LastFit, st.LastSAC
	if err := o.env.Restore(st.Env); err != nil {
		return err
	}
	if err := o.sac.load(f); err != nil {
		return err
	}
	if o.real, err = loadReplay(f, "real"); err != nil {
		return err
	}
	if st.HasModel {
		if o.model, err = loadReplay(f, "model"); err != nil {
			return err
		}
	}
	if o.dyn != nil {
		if err := o.dyn.Load(f); err != nil {
			return err
		}
	}
	return o.loadRNGs(f)
}

// rngSources are the random sources of a run, saved in checkpoints.
type rngSources struct {
	loop, real, model, sac *rng.Source
}

// seedRNGs gives the loop, the buffers and SAC serialisable sources.
func (o *Online) seedRNGs() {
	s := o.Cfg.Seed
	o.rng, o.srcs.loop = rng.New(s*7 + 2)
	o.real.rng, o.srcs.real = rng.New(s*7 + 3)
	o.sac.rng, o.srcs.sac = rng.New(s*7 + 4)
	o.srcs.model = rng.NewSource(s*7 + 5)
}

func (o *Online) saveRNGs(f *ckpt.File) error {
	for _, x := range []struct {
		n string
		s *rng.Source
	}{{"rng/loop", o.srcs.loop}, {"rng/real", o.srcs.real}, {"rng/model", o.srcs.model}, {"rng/sac", o.srcs.sac}} {
		b, err := x.s.MarshalBinary()
		if err != nil {
			return fmt.Errorf("train: checkpoint %s: %w", x.n, err)
		}
		f.PutBytes(x.n, b)
	}
	return nil
}

func (o *Online) loadRNGs(f *ckpt.File) error {
	for _, x := range []struct {
		n string
		s *rng.Source
	}{{"rng/loop", o.srcs.loop}, {"rng/real", o.srcs.real}, {"rng/model", o.srcs.model}, {"rng/sac", o.srcs.sac}} {
		b, err := f.Bytes(x.n)
		if err != nil {
			return err
		}
		if err := x.s.UnmarshalBinary(b); err != nil {
			return err
		}
	}
	o.real.rng = rand.New(o.srcs.real)
	if o.model != nil {
		o.model.rng = rand.New(o.srcs.model)
	}
	return nil
}

func sinceStart(o *Online) float64 {
	if o.started.IsZero() {
		return 0
	}
	return time.Since(o.started).Seconds()
}

// loadCheckpoint reads the checkpoint in run directory dir and decodes its
// config section into cfg.
func loadCheckpoint(dir string, cfg any) (*ckpt.File, error) {
	path := filepath.Join(dir, CheckpointName)
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
	if err := json.Unmarshal(cb, cfg); err != nil {
		return nil, fmt.Errorf("train: %s: checkpoint config: %w", path, err)
	}
	return f, nil
}
