package dynamics

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math/rand"
	"slices"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// RandState is a random source whose state can be saved and restored
// (internal/rng.Source).
type RandState interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// FitResume makes a fit (FitADM, FitEnsemble) resumable: it hands out
// snapshots of its whole state (weights, Adam's moments and step count, the
// kept best weights and scores, patience and epoch counters, the
// normaliser, the random sources, the curve so far) and continues from one
// so that it ends exactly as the uninterrupted fit would have.
type FitResume struct {
	// Source is the random source behind the fit's rng (required).
	Source RandState
	// From is a snapshot Save received, to continue from; nil starts a
	// fresh fit.
	From []byte
	// Due reports whether to hand out a snapshot at the start of epoch
	// (asked at every epoch start after the first of a call); nil: never.
	Due func(epoch int) bool
	// Save receives a snapshot: at the start of an epoch Due chose
	// (interrupted false), and when ctx is cancelled (interrupted true: the
	// state at the Adam step the fit stopped before). An error from Save
	// ends the fit.
	Save func(snap []byte, epoch int, interrupted bool) error
}

// Resumable is a Model whose fit can be snapshotted and continued.
type Resumable interface {
	// FitResumable is Model.Fit with the snapshots of r.
	FitResumable(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand, r *FitResume) (FitReport, error)
}

// fitProgress is the non-tensor part of a fit snapshot (gob-encoded).
type fitProgress struct {
	Kind  string // "adm" or "ensemble"
	DataN int    // transitions in the fitted buffer
	// Epoch is the epoch the snapshot stands in; Pos the next batch's
	// offset in it (ADM: into the epoch's permutation; ensemble: the step).
	Epoch, Pos int
	Steps      int // Adam steps of Epoch so far (ADM)
	TotalStart int // Adam steps of the fit before Epoch
	Total      int // Adam steps of the fit so far (ensemble: with all of Epoch's)
	Since      int // epochs without improvement
	Seconds    float64
	RNG        []byte // the fit's source at the start of Epoch
	SplitRNG   []byte // ensemble: the source before the holdout split
	Dropout    uint64 // ADM: the training graph's dropout generator
	AdamT      int

	NLLSum, WSum float64 // ADM: the epoch's train NLL sums so far
	BestMSE      float64 // ADM: the kept weights' early-stopping metric
	Best         ADMEpoch
	ADMHistory   []ADMEpoch

	TrainNLL   []float64 // ensemble: the epoch's per-member train NLL so far
	BestMSEs   []float64 // ensemble: the kept weights' holdout MSE per member
	EnsHistory []EnsembleEpoch

	Curve []FitEpoch
}

// Snapshot sections: "progress" (gob), the current and kept-best models
// under "model" and "best", Adam's moments as "adam/m/<i>", "adam/v/<i>".

// encodeSnapshot serialises p, the models put stores and opt's moments.
func encodeSnapshot(p *fitProgress, opt *models.Adam, put func(f *ckpt.File) error) ([]byte, error) {
	p.AdamT = opt.T
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(p); err != nil {
		return nil, fmt.Errorf("dynamics: encoding the fit snapshot: %w", err)
	}
	f := ckpt.New()
	f.PutBytes("progress", b.Bytes())
	if err := put(f); err != nil {
		return nil, err
	}
	for i := range opt.M {
		f.PutF32(fmt.Sprintf("adam/m/%d", i), opt.M[i])
		f.PutF32(fmt.Sprintf("adam/v/%d", i), opt.V[i])
	}
	return f.Encode(), nil // copies the live slices
}

// decodeProgress reads a snapshot's container and progress record.
func decodeProgress(snap []byte) (*ckpt.File, *fitProgress, error) {
	f, err := ckpt.Decode(snap)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamics: fit snapshot: %w", err)
	}
	b, err := f.Bytes("progress")
	if err != nil {
		return nil, nil, fmt.Errorf("dynamics: fit snapshot: %w", err)
	}
	var p fitProgress
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&p); err != nil {
		return nil, nil, fmt.Errorf("dynamics: fit snapshot progress: %w", err)
	}
	return f, &p, nil
}

// decodeSnapshot reads a snapshot of a kind fit on dataN transitions.
func decodeSnapshot(snap []byte, kind string, dataN int) (*ckpt.File, *fitProgress, error) {
	f, p, err := decodeProgress(snap)
	if err != nil {
		return nil, nil, err
	}
	if p.Kind != kind || p.DataN != dataN {
		return nil, nil, fmt.Errorf("dynamics: the fit snapshot is of a %s fit on %d transitions, not of a %s fit on %d",
			p.Kind, p.DataN, kind, dataN)
	}
	if p.Epoch < 1 || p.Pos < 0 {
		return nil, nil, fmt.Errorf("dynamics: fit snapshot at epoch %d, offset %d", p.Epoch, p.Pos)
	}
	return f, p, nil
}

// restoreAdam takes opt's moments and step count from a snapshot.
func restoreAdam(f *ckpt.File, p *fitProgress, opt *models.Adam) error {
	for i := range opt.M {
		if err := f.CopyF32(fmt.Sprintf("adam/m/%d", i), opt.M[i]); err != nil {
			return fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
		if err := f.CopyF32(fmt.Sprintf("adam/v/%d", i), opt.V[i]); err != nil {
			return fmt.Errorf("dynamics: fit snapshot: %w", err)
		}
	}
	opt.T = p.AdamT
	return nil
}

// FitSnapshotInfo is where a fit snapshot stands.
type FitSnapshotInfo struct {
	Epoch     int        // the epoch the fit continues in
	AdamSteps int        // Adam steps done
	Curve     []FitEpoch // the finished epochs
}

// SnapshotInfo reads where the fit snapshot snap stands.
func SnapshotInfo(snap []byte) (FitSnapshotInfo, error) {
	_, p, err := decodeProgress(snap)
	if err != nil {
		return FitSnapshotInfo{}, err
	}
	done := p.Total
	if p.Kind == "ensemble" { // its Total counts the whole epoch from its start
		done = p.TotalStart + p.Pos
	}
	return FitSnapshotInfo{Epoch: p.Epoch, AdamSteps: done, Curve: slices.Clone(p.Curve)}, nil
}

// interrupted wraps the fit's ctx error (which callers test with
// errors.Is) and, when r wants one, hands r the snapshot that take makes.
func (r *FitResume) interrupted(what string, epoch int, ctxErr error, take func() ([]byte, error)) error {
	err := fmt.Errorf("dynamics: %s fit stopped in epoch %d: %w", what, epoch, ctxErr)
	if r == nil || r.Save == nil {
		return err
	}
	snap, serr := take()
	if serr == nil {
		serr = r.Save(snap, epoch, true)
	}
	if serr != nil {
		return errors.Join(err, fmt.Errorf("dynamics: no snapshot of the interrupted %s fit: %w", what, serr))
	}
	return err
}

// epochStart returns the fit's source state at the start of epoch and,
// when Due asks for it (not at the first epoch of a call), hands Save a
// snapshot that take makes from that state.
func (r *FitResume) epochStart(epoch, first int, take func(rngState []byte) ([]byte, error)) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	st, err := r.Source.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("dynamics: fit snapshot: %w", err)
	}
	if epoch > first && r.Due != nil && r.Save != nil && r.Due(epoch) {
		snap, err := take(st)
		if err != nil {
			return nil, err
		}
		if err := r.Save(snap, epoch, false); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// check validates r before a fit.
func (r *FitResume) check() error {
	if r != nil && r.Source == nil {
		return fmt.Errorf("dynamics: a resumable fit needs its rng's source")
	}
	return nil
}
