package dynamics

import (
	"context"
	"fmt"
	"math/rand"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// Ensemble is MBPO/MOPO's probabilistic ensemble as the loops use
// it: trained on, not re-initialised, at every Fit (as MBPO does), and
// rolled out with a random elite per transition.
type Ensemble struct {
	Model  *models.Ensemble
	FitCfg EnsembleFitConfig
	Task   string
}

// NewEnsemble sizes an ensemble (4 x 200 Swish members) from cfg.
func NewEnsemble(cfg Config, obsDim, actDim int) (Model, error) {
	if cfg.RollDevice != "" {
		return nil, fmt.Errorf("dynamics: the ensemble rolls out on ONNX Runtime only, not on device %s (a device roll-out is the ADM's)", cfg.RollDevice)
	}
	e := models.NewEnsemble(obsDim, actDim, cfg.Ensemble, []int{200, 200, 200, 200}, rand.New(rand.NewSource(cfg.Seed)))
	fc := DefaultEnsembleFitConfig()
	fc.Elites, fc.Patience, fc.MaxEpochs = cfg.Elites, cfg.Patience, cfg.MaxEpochs
	fc.MaxSteps, fc.OnEpoch = cfg.EpochSteps, cfg.OnEpoch
	fc.Device, fc.DeviceGraph = cfg.Device, cfg.DeviceGraph
	if cfg.MaxHoldout > 0 {
		fc.MaxHoldout = cfg.MaxHoldout
	}
	if cfg.EnsembleLR > 0 {
		fc.LR = float32(cfg.EnsembleLR)
	}
	return &Ensemble{Model: e, FitCfg: fc, Task: cfg.Task}, nil
}

// M is 1: the ensemble is a one-step model.
func (d *Ensemble) M() int { return 1 }

// Fit trains the ensemble on the real data and re-selects the elites.
func (d *Ensemble) Fit(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand) (FitReport, error) {
	return d.FitResumable(ctx, real, maxSteps, rng, nil)
}

// FitResumable is Fit with the snapshots of r (nil: none).
func (d *Ensemble) FitResumable(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand, r *FitResume) (FitReport, error) {
	fc := d.FitCfg
	fc.MaxTotalSteps, fc.Resume = maxSteps, r
	rep, err := FitEnsemble(ctx, d.Model, real, fc, rng)
	if err != nil {
		return FitReport{}, err
	}
	return rep.FitReport, nil
}

// ExportONNX writes the ensemble with all members in one graph.
func (d *Ensemble) ExportONNX() ([]byte, error) {
	return onnx.ExportEnsemble(d.Model, map[string]string{"task": d.Task})
}

// Roller exports the ensemble and opens infer's ensemble engine.
func (d *Ensemble) Roller(opts infer.Options) (infer.Roller, error) {
	b, err := d.ExportONNX()
	if err != nil {
		return nil, err
	}
	return infer.OpenEnsemble(b, opts)
}

// Save puts the ensemble's weights and elites into a checkpoint.
func (d *Ensemble) Save(f *ckpt.File) error {
	return models.PutEnsemble(f, "ensemble", d.Model)
}

// Load restores the ensemble from a checkpoint.
func (d *Ensemble) Load(f *ckpt.File) error {
	e, err := models.GetEnsemble(f, "ensemble")
	if err != nil {
		return err
	}
	d.Model = e // fits build their graphs afresh over the model's slices
	return nil
}
