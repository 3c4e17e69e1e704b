package train

import (
	"fmt"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/internal/atomicfile"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// offlineState is the JSON part of an offline checkpoint.
type offlineState struct {
	Step      int
	Fitted    bool
	LastFit   dynamics.FitReport
	LastSAC   sac.Stats
	LastBC    *float64 // nil for NaN
	LastRoll  RollStats
	LastScore *float64
	Evals     int
	Wall      float64
	Time      Timing
	HasModel  bool
	DataN     int
	DataSum   uint32
	// FitEpoch is the epoch in which the unfinished model fit, whose
	// snapshot is the "fit" section, continues (absent: no snapshot).
	FitEpoch int `json:",omitempty"`
}

// fitSection is the checkpoint section that holds the snapshot of an
// unfinished model fit (dynamics.FitResume).
const fitSection = "fit"

// Checkpoint writes the whole run state to DIR/checkpoint.ckpt atomically:
// counters, SAC (or BC), the fitted model, the model buffer and the random
// sources; during the model fit, the fit's last snapshot. The data set is
// not copied: a resume reloads the file and checks its checksum.
func (o *Offline) Checkpoint() error {
	if err := o.syncBC(); err != nil {
		return err
	}
	lastSAC, err := o.sacStats()
	if err != nil {
		return err
	}
	st := offlineState{Step: o.step, Fitted: o.fitted, LastFit: fitToJSON(o.lastFit), LastSAC: lastSAC, LastBC: nanPtr(o.lastBC),
		LastRoll: o.lastRoll, LastScore: nanPtr(o.lastScore), Evals: o.evals, Wall: o.wall(), Time: o.time,
		HasModel: o.model != nil, DataN: o.real.Len(), DataSum: o.dataSum, FitEpoch: o.FitInterruptedAt()}
	return o.writeCheckpoint(o.Dir, o.Cfg.JSON(), st, func(f *ckpt.File) error {
		if o.bc != nil {
			o.bc.Save(f)
		}
		if st.FitEpoch > 0 {
			f.PutBytes(fitSection, o.fitSnap)
		}
		return nil
	})
}

// ResumeOfflineOn is ResumeOffline with the run's SAC updates moved to
// device (see ResumeOnlineOn).
func ResumeOfflineOn(dir, device string) (*Offline, error) {
	if device == "" {
		return ResumeOffline(dir)
	}
	o, err := reopen(dir, rundir.Offline, func(c OfflineConfig, d string) (*Offline, error) {
		c.Device = device
		return newOffline(c, d)
	}, func(o *Offline, f *ckpt.File) error { return resumeRun(o, dir, f) })
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(rundir.Dir(dir).Config(), o.Cfg.JSON(), 0o644); err != nil {
		o.Close()
		return nil, fmt.Errorf("train: resuming %s on device %s: %w", dir, device, err)
	}
	return o, nil
}

// ResumeOffline reopens the offline run in dir at its last checkpoint, so it
// continues as if never stopped. The data set file must still hold the
// same data.
func ResumeOffline(dir string) (*Offline, error) {
	return reopen(dir, rundir.Offline, newOffline, func(o *Offline, f *ckpt.File) error { return resumeRun(o, dir, f) })
}

// OpenOffline reopens the offline run in dir at its last checkpoint to be
// examined rather than continued (ResumeOffline continues it): its logs
// stay closed and nothing in dir is written.
func OpenOffline(dir string) (*Offline, error) {
	return reopen(dir, rundir.Offline, newOffline, func(o *Offline, f *ckpt.File) error {
		if err := o.restore(f); err != nil {
			o.Close()
			return fmt.Errorf("train: %s: %w", dir, err)
		}
		return nil
	})
}

func (o *Offline) restore(f *ckpt.File) error {
	var st offlineState
	if err := readState(f, &st); err != nil {
		return err
	}
	if st.DataN != o.real.Len() || st.DataSum != o.dataSum {
		return fmt.Errorf("the data set %s changed since the run started (%d transitions, checksum %08x; now %d, %08x)",
			o.Cfg.Dataset, st.DataN, st.DataSum, o.real.Len(), o.dataSum)
	}
	o.step, o.fitted, o.lastFit, o.lastSAC, o.lastBC = st.Step, st.Fitted, fitFromJSON(st.LastFit), st.LastSAC, fromPtr(st.LastBC)
	o.lastRoll, o.lastScore, o.evals, o.wallBefore = st.LastRoll, fromPtr(st.LastScore), st.Evals, st.Wall
	o.time = st.Time
	if err := o.restoreNets(f, st.HasModel, func() error {
		if o.bc != nil {
			return o.bc.Load(f)
		}
		return nil
	}); err != nil {
		return err
	}
	if st.Fitted || st.FitEpoch == 0 { // a checkpoint from before fit snapshots has none: the fit starts afresh
		return nil
	}
	snap, err := f.Bytes(fitSection)
	if err != nil {
		return fmt.Errorf("the state names a model fit snapshot at epoch %d: %w", st.FitEpoch, err)
	}
	if _, err := dynamics.SnapshotInfo(snap); err != nil {
		return err
	}
	o.fitSnap, o.fitSnapEpoch = snap, st.FitEpoch
	return nil
}

// SetEpochs makes a resumed run's length n epochs: n must leave the run at
// or after its current update. The actor's cosine follows the new length;
// config.json is rewritten and the next checkpoint keeps it.
func (o *Offline) SetEpochs(n int) error {
	c := o.Cfg
	c.Epochs = n
	if err := o.checkLength(c, "update"); err != nil {
		return err
	}
	o.Cfg = c
	o.sac.Cfg.ActorLRDecayUpdates = c.sacConfig(o.eval.ActionLow(), o.eval.ActionHigh()).ActorLRDecayUpdates
	return atomicfile.WriteFile(rundir.Dir(o.Dir).Config(), c.JSON(), 0o644)
}
