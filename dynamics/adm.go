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

// ADM is the Any-step Dynamics Model as the loops use it: fitted
// from scratch at every Fit (as the reference code does), exported to ONNX
// and rolled out by infer's ADM-Roll engines.
type ADM struct {
	Model  *models.ADM
	FitCfg ADMFitConfig
	Engine string // "direct" (unrolled graph) or "incremental"
	Task   string
	// RolloutDropout is the MC dropout probability of roll-outs (0: none);
	// FitCfg.HoldoutDropout validates with it.
	RolloutDropout float64
	// Dev, when set (Config.RollDevice), rolls the ADM out on a device
	// instead of ONNX Runtime; copies of the ADM share it.
	Dev *DevRoller
}

// NewADM sizes an ADM from cfg.
func NewADM(cfg Config, obsDim, actDim int) (Model, error) {
	mc := models.ADMConfig{ObsDim: obsDim, ActDim: actDim, Hidden: cfg.ADMHidden, Layers: cfg.ADMLayers,
		ResBlocks: cfg.ADMResBlocks, M: cfg.M}
	m, err := models.NewADM(mc, rand.New(rand.NewSource(cfg.Seed)))
	if err != nil {
		return nil, err
	}
	fc := DefaultADMFitConfig()
	fc.Patience, fc.MaxEpochs, fc.WarmStart = cfg.Patience, cfg.MaxEpochs, cfg.WarmStart
	fc.MaxSteps, fc.OnEpoch, fc.Device, fc.DeviceGraph = cfg.EpochSteps, cfg.OnEpoch, cfg.Device, cfg.DeviceGraph
	fc.EpochPasses, fc.AuthorsImprove, fc.OneK = cfg.EpochPasses, cfg.Improve == "authors", cfg.OneK
	if cfg.LR > 0 {
		fc.LR = float32(cfg.LR)
	}
	if cfg.MaxHoldout > 0 {
		fc.MaxHoldout = cfg.MaxHoldout
	}
	d := &ADM{Model: m, FitCfg: fc, Engine: cfg.Engine, Task: cfg.Task}
	if cfg.RolloutDropout {
		d.RolloutDropout, d.FitCfg.HoldoutDropout = fc.Dropout, true
	}
	if cfg.RollDevice != "" {
		if d.Dev, err = NewDevRoller(cfg.RollOn, cfg.RollDevice, m); err != nil {
			return nil, err
		}
		if d.Dev.Mode, err = DevMode(cfg.Engine); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// M is the ADM's maximum backtracking length.
func (d *ADM) M() int { return d.Model.Cfg.M }

// Fit re-initialises and trains the ADM on the real data.
func (d *ADM) Fit(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand) (FitReport, error) {
	return d.FitResumable(ctx, real, maxSteps, rng, nil)
}

// FitResumable is Fit with the snapshots of r (nil: none).
func (d *ADM) FitResumable(ctx context.Context, real *buffer.Replay, maxSteps int, rng *rand.Rand, r *FitResume) (FitReport, error) {
	fc := d.FitCfg
	fc.MaxTotalSteps, fc.Resume = maxSteps, r
	rep, err := FitADM(ctx, d.Model, real, fc, rng)
	if err != nil {
		return FitReport{}, err
	}
	return rep.FitReport, nil
}

func (d *ADM) meta() map[string]string { return map[string]string{"task": d.Task} }

// ExportONNX writes the ADM's direct graph (unrolled form, with all_mean).
func (d *ADM) ExportONNX() ([]byte, error) {
	return onnx.ExportADM(d.Model, onnx.ADMOptions{Form: onnx.ADMUnrolled}, d.meta())
}

// Roller returns the device roller (Dev) with the ADM's current weights
// when the ADM rolls out on a device: its caller sets the actor
// (ActorSetter) before Rollout. Otherwise it is ORTRoller.
func (d *ADM) Roller(opts infer.Options) (infer.Roller, error) {
	if d.Dev == nil {
		return d.ORTRoller(opts)
	}
	if err := d.Dev.SetADM(d.Model, d.RolloutDropout); err != nil {
		return nil, err
	}
	return d.Dev, nil
}

// ORTRoller exports the ADM and opens the configured engine on ONNX
// Runtime, device or not (a roll-out of an actor known only as ONNX).
func (d *ADM) ORTRoller(opts infer.Options) (infer.Roller, error) {
	switch d.Engine {
	case "incremental":
		b, err := onnx.ExportADMStepWith(d.Model, onnx.ADMStepOptions{Dropout: d.RolloutDropout}, d.meta())
		if err != nil {
			return nil, err
		}
		return infer.OpenADMIncremental(b, opts)
	case "direct", "":
		// The packed form runs each plan's own k GRU steps (not all m), on
		// the CPU and the CUDA provider alike.
		b, err := onnx.ExportADM(d.Model, onnx.ADMOptions{Form: onnx.ADMPacked, Dropout: d.RolloutDropout}, d.meta())
		if err != nil {
			return nil, err
		}
		return infer.OpenADMDirect(b, opts)
	}
	return nil, fmt.Errorf("dynamics: unknown ADM engine %q (direct or incremental)", d.Engine)
}

// Close frees the device roller's buffers (nil error without one); the
// device stays open for its owner to close.
func (d *ADM) Close() error {
	if d.Dev == nil {
		return nil
	}
	return d.Dev.Free()
}

// Save puts the ADM's weights into a checkpoint.
func (d *ADM) Save(f *ckpt.File) error { return models.PutADM(f, "adm", d.Model) }

// Load restores the ADM's weights from a checkpoint.
func (d *ADM) Load(f *ckpt.File) error { return models.GetADMInto(f, "adm", d.Model) }
