package train

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"time"

	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/rng"
)

// offlineState is the JSON part of an offline checkpoint.
type offlineState struct {
	Step      int
	Fitted    bool
	LastFit   FitReport
	LastSAC   SACStats
	LastBC    *float64 // nil for NaN
	LastRoll  RollStats
	LastScore *float64
	Evals     int
	Wall      float64
	HasModel  bool
	DataN     int
	DataSum   uint32
}

// Checkpoint writes the whole run state to DIR/checkpoint.ckpt atomically:
// counters, SAC (or BC), the fitted model, the model buffer and the random
// sources. The data set is not copied: a resume reloads the file and checks
// its checksum.
func (o *Offline) Checkpoint() error {
	f := ckpt.New()
	f.PutBytes("config", o.Cfg.JSON())
	st := offlineState{Step: o.step, Fitted: o.fitted, LastFit: o.lastFit, LastSAC: o.lastSAC, LastBC: nanPtr(o.lastBC),
		LastRoll: o.lastRoll, LastScore: nanPtr(o.lastScore), Evals: o.evals, Wall: o.wallBefore + o.sinceStart(),
		HasModel: o.model != nil, DataN: o.real.Len(), DataSum: o.dataSum}
	if math.IsNaN(st.LastFit.HoldoutLoss) {
		st.LastFit.HoldoutLoss = 0
	}
	for i, v := range st.LastFit.HoldoutPerK {
		if math.IsNaN(v) {
			st.LastFit.HoldoutPerK[i] = -1
		}
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
	if o.bc != nil {
		o.bc.save(f)
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

func (o *Offline) sinceStart() float64 {
	if o.started.IsZero() {
		return 0
	}
	return time.Since(o.started).Seconds()
}

// ResumeOffline reopens the offline run in dir at its last checkpoint, so it
// continues as if never stopped. The data set file must still hold the
// same data.
func ResumeOffline(dir string) (*Offline, error) {
	var cfg OfflineConfig
	f, err := loadCheckpoint(dir, &cfg)
	if err != nil {
		return nil, err
	}
	o, err := newOffline(cfg, dir)
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
	if o.olog, err = openOfflineLog(dir, o.step); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (o *Offline) restore(f *ckpt.File) error {
	b, err := f.Bytes("state")
	if err != nil {
		return err
	}
	var st offlineState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if st.DataN != o.real.Len() || st.DataSum != o.dataSum {
		return fmt.Errorf("the data set %s changed since the run started (%d transitions, checksum %08x; now %d, %08x)",
			o.Cfg.Dataset, st.DataN, st.DataSum, o.real.Len(), o.dataSum)
	}
	for i, v := range st.LastFit.HoldoutPerK {
		if v < 0 {
			st.LastFit.HoldoutPerK[i] = math.NaN()
		}
	}
	o.step, o.fitted, o.lastFit, o.lastSAC, o.lastBC = st.Step, st.Fitted, st.LastFit, st.LastSAC, fromPtr(st.LastBC)
	o.lastRoll, o.lastScore, o.evals, o.wallBefore = st.LastRoll, fromPtr(st.LastScore), st.Evals, st.Wall
	if err := o.sac.load(f); err != nil {
		return err
	}
	if o.bc != nil {
		if err := o.bc.load(f); err != nil {
			return err
		}
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

func (o *Offline) saveRNGs(f *ckpt.File) error {
	for _, x := range o.rngList() {
		b, err := x.s.MarshalBinary()
		if err != nil {
			return fmt.Errorf("train: checkpoint %s: %w", x.n, err)
		}
		f.PutBytes(x.n, b)
	}
	return nil
}

func (o *Offline) loadRNGs(f *ckpt.File) error {
	for _, x := range o.rngList() {
		b, err := f.Bytes(x.n)
		if err != nil {
			return err
		}
		if err := x.s.UnmarshalBinary(b); err != nil {
			return err
		}
	}
	if o.model != nil {
		o.model.rng = rand.New(o.srcs.model)
	}
	return nil
}

type namedSource struct {
	n string
	s *rng.Source
}

func (o *Offline) rngList() []namedSource {
	return []namedSource{{"rng/loop", o.srcs.loop}, {"rng/real", o.srcs.real}, {"rng/model", o.srcs.model}, {"rng/sac", o.srcs.sac}}
}
