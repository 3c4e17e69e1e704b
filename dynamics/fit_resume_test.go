package dynamics

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/device/emu"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/internal/rng"
	"github.com/admpo/admpo/models"
)

// countCtx is cancelled from its after-th Err call on.
type countCtx struct {
	context.Context
	left atomic.Int64
}

func newCountCtx(after int64) *countCtx {
	c := &countCtx{Context: context.Background()}
	c.left.Store(after)
	return c
}

func (c *countCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// resumeCase is one fit under test: fit runs it on a model of its own
// (built from seed: a resumed fit must take everything from the snapshot)
// and returns the fitted weights (encoded) and the report with wall times
// cleared.
type resumeCase struct {
	name string
	fit  func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error)
}

func resumeCases(data *buffer.Replay, obs, act int) []resumeCase {
	adm := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitADMCase(t, ctx, seed, rng, r, obs, act, data, false, false)
	}
	admOneK := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitADMCase(t, ctx, seed, rng, r, obs, act, data, false, false, true)
	}
	admEmu := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitADMCase(t, ctx, seed, rng, r, obs, act, data, true, false)
	}
	admEmuGraph := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitADMCase(t, ctx, seed, rng, r, obs, act, data, true, true)
	}
	ens := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitEnsembleCase(t, ctx, seed, rng, r, obs, act, data, false, false)
	}
	ensEmu := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitEnsembleCase(t, ctx, seed, rng, r, obs, act, data, true, false)
	}
	ensEmuGraph := func(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume) ([]byte, any, error) {
		return fitEnsembleCase(t, ctx, seed, rng, r, obs, act, data, true, true)
	}
	return []resumeCase{{"adm", adm}, {"adm-onek", admOneK}, {"adm-emu", admEmu}, {"adm-emu-graph", admEmuGraph}, {"ensemble", ens},
		{"ensemble-emu", ensEmu}, {"ensemble-emu-graph", ensEmuGraph}}
}

// fitEnsembleCase is resumeCases' ensemble fit, its train steps on the
// emulated device when dev is set (package ensdev), recorded as a device
// graph when graph is.
func fitEnsembleCase(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume, obs, act int, data *buffer.Replay, dev, graph bool) ([]byte, any, error) {
	e := models.NewEnsemble(obs, act, 3, []int{16, 16}, rand.New(rand.NewSource(seed)))
	fc := DefaultEnsembleFitConfig()
	fc.Batch, fc.Elites, fc.MaxEpochs, fc.Patience, fc.Reinit = 64, 2, 6, 2, true
	fc.Decay = []float64{2.5e-5, 5e-5, 1e-4}
	fc.Resume = r
	if dev {
		d := emu.New()
		defer d.Close()
		fc.Device, fc.DeviceGraph = d, graph
	}
	rep, err := FitEnsemble(ctx, e, data, fc, rng)
	if err != nil {
		return nil, nil, err
	}
	for i := range rep.History {
		rep.History[i].Seconds = 0
	}
	for i := range rep.Curve {
		rep.Curve[i].Seconds = 0
	}
	f := ckpt.New()
	if err := models.PutEnsemble(f, "ensemble", e); err != nil {
		t.Fatal(err)
	}
	return f.Encode(), rep, nil
}

// fitADMCase is resumeCases' ADM fit, its train steps on the emulated
// device when dev is set (package admdev), recorded as a device graph when
// graph is; with oneK set (at most one value) it is the one-k fit
// (ADMFitConfig.OneK).
func fitADMCase(t *testing.T, ctx context.Context, seed int64, rng *rand.Rand, r *FitResume, obs, act int, data *buffer.Replay, dev, graph bool, oneK ...bool) ([]byte, any, error) {
	m, err := models.NewADM(models.ADMConfig{ObsDim: obs, ActDim: act, Hidden: 8, Layers: 1, ResBlocks: 1, M: 3}, rand.New(rand.NewSource(seed)))
	if err != nil {
		t.Fatal(err)
	}
	fc := DefaultADMFitConfig()
	fc.Batch, fc.MaxEpochs, fc.Patience, fc.EpochPasses, fc.HoldoutDropout, fc.TrainEval = 32, 6, 2, 2, true, 100
	fc.Resume = r
	fc.OneK = len(oneK) > 0 && oneK[0]
	if dev {
		d := emu.New()
		defer d.Close()
		fc.Device, fc.DeviceGraph = d, graph
	}
	rep, err := FitADM(ctx, m, data, fc, rng)
	if err != nil {
		return nil, nil, err
	}
	for i := range rep.History {
		rep.History[i].Seconds = 0
	}
	for i := range rep.Curve {
		rep.Curve[i].Seconds = 0
	}
	rep.Best.Seconds = 0
	f := ckpt.New()
	if err := models.PutADM(f, "adm", m); err != nil {
		t.Fatal(err)
	}
	return f.Encode(), rep, nil
}

// TestFitResumesExactly fits an ADM and an ensemble straight through, then
// again interrupted every few Adam steps (mid-epoch and at epoch starts)
// and continued each time on a freshly built model with a freshly seeded
// rng from the last snapshot: from the interrupt's own snapshot, and (a
// hard kill) from the last periodic one. The weights must be bit-identical
// and the reports (learning curves, kept epoch, per-k losses) equal to the
// uninterrupted fit's.
func TestFitResumesExactly(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ls := newLinearSystemAngle(0.9, 1, r)
	data := linearReplay(t, ls, 20, 20, r)
	for _, c := range resumeCases(data, ls.obs, ls.act) {
		wantW, wantRep, err := c.fit(t, context.Background(), 2, rand.New(rng.NewSource(3)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, kill := range []bool{false, true} {
			name := c.name + "/interrupt"
			if kill {
				name = c.name + "/kill"
			}
			t.Run(name, func(t *testing.T) {
				var snap []byte
				var snaps, periodic int
				for try := 0; ; try++ {
					if try > 200 {
						t.Fatal("the fit makes no progress across resumes")
					}
					// A fresh start has the uninterrupted fit's seeds; a resumed
					// one others, which the snapshot must override.
					seed, src := int64(2), rng.NewSource(3)
					if snap != nil {
						seed, src = int64(50+try), rng.NewSource(int64(100+try))
					}
					rs := &FitResume{Source: src, From: snap, Due: func(int) bool { return true },
						Save: func(b []byte, epoch int, interrupted bool) error {
							if interrupted && kill {
								return nil // a kill leaves the last periodic snapshot
							}
							if !interrupted {
								periodic++
							}
							snaps++
							snap = b
							return nil
						}}
					after := int64(3 + try%4)
					if kill { // a kill must come after the next epoch start
						after = int64(23 + try%5)
					}
					w, rep, err := c.fit(t, newCountCtx(after), seed, rand.New(src), rs)
					if errors.Is(err, context.Canceled) {
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					if try < 1 || !kill && try < 3 || snaps < try || periodic == 0 {
						t.Fatalf("%d interrupts, %d snapshots (%d periodic): the case is not covered", try, snaps, periodic)
					}
					if !bytes.Equal(w, wantW) {
						t.Fatalf("after %d interrupts the fitted weights differ from the uninterrupted fit's", try)
					}
					if !reflect.DeepEqual(rep, wantRep) {
						t.Fatalf("after %d interrupts the report differs:\n got %+v\nwant %+v", try, rep, wantRep)
					}
					return
				}
			})
		}
	}
}

// TestFitSnapshotRefusesOtherData: a snapshot continues only the fit it
// came from.
func TestFitSnapshotRefusesOtherData(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ls := newLinearSystemAngle(0.9, 1, r)
	data := linearReplay(t, ls, 20, 20, r)
	other := linearReplay(t, ls, 21, 20, r)
	for _, c := range resumeCases(data, ls.obs, ls.act) {
		var snap []byte
		src := rng.NewSource(3)
		rs := &FitResume{Source: src, Save: func(b []byte, _ int, _ bool) error { snap = b; return nil }}
		if _, _, err := c.fit(t, newCountCtx(5), 2, rand.New(src), rs); !errors.Is(err, context.Canceled) || snap == nil {
			t.Fatalf("%s: interrupted fit: %v, snapshot %d bytes", c.name, err, len(snap))
		}
		info, err := SnapshotInfo(snap)
		if err != nil || info.Epoch < 1 || info.AdamSteps != 5 { // five Err calls pass: stopped before the sixth step
			t.Fatalf("%s: snapshot info %+v, %v; want 5 Adam steps done", c.name, info, err)
		}
		rs.From = snap
		for _, o := range resumeCases(other, ls.obs, ls.act) {
			if o.name != c.name {
				continue
			}
			if _, _, err := o.fit(t, context.Background(), 2, rand.New(src), rs); err == nil {
				t.Errorf("%s: a snapshot of a fit on 400 transitions continued a fit on 420", c.name)
			}
		}
	}
}
