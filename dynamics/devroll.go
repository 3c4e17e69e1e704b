package dynamics

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/rolldev"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
)

// RollDevices lists Config.RollDevice's device values ("" is ONNX Runtime).
var RollDevices = []string{"emu", "cuda"}

// DevChunkRows is a device roller's default RollConfig.ChunkRows per
// device name: emu runs on the CPU, where the engine's buffers for
// chunk·m plans should stay well under a gigabyte (8192 rows, infer's CPU
// default, so a seed gives ONNX Runtime's CPU transitions); cuda takes
// larger chunks (fewer, larger launches).
var DevChunkRows = map[string]int{"emu": 8192, "cuda": 131072}

// DevMode is the device engine's style for the ADM roll-out engine
// setting (Config.Engine): "incremental" is rolldev.ModeIncremental,
// "direct" and "" (ORTRoller's default) rolldev.ModeDirect, so a device
// roll-out evaluates the plans as the ONNX Runtime roll-out would.
func DevMode(engine string) (rolldev.Mode, error) {
	switch engine {
	case "direct", "":
		return rolldev.ModeDirect, nil
	case "incremental":
		return rolldev.ModeIncremental, nil
	}
	return rolldev.ModeAuto, fmt.Errorf("dynamics: unknown ADM engine %q (direct or incremental)", engine)
}

// ActorSetter is a Roller that rolls out a host actor (a device roller):
// the loops set the actor before each roll-out, and Rollout's
// *infer.Policy only checks the dimensions.
type ActorSetter interface {
	SetActor(a *models.Actor) error
}

// DevRoller rolls an ADM out on a device (rolldev.Engine) as an
// infer.Roller: a seed and ChunkRows give infer.ADMDirect's (or
// ADMIncremental's) transitions within float32 rounding. Mode is the
// engine's style (NewADM sets Config.Engine's, DevMode). Its engine is
// allocated at the first roll-out for min(chunk rows, start rows) rows and
// again when a roll-out needs more; SetADM and SetActor keep the host
// weights and upload them before the next roll-out. Close frees nothing:
// Free does (the loops keep one roller across roll-outs). It is not safe
// for concurrent use.
type DevRoller struct {
	// Mode is the engine's evaluation, set before a roll-out (default
	// rolldev.ModeAuto).
	Mode  rolldev.Mode
	d     device.Device
	name  string // the device's setting, for errors and the default chunk
	chunk int    // the default ChunkRows
	cfg   rolldev.ADMConfig
	adm   *rolldev.ADMWeights
	actor *rolldev.ActorWeights
	eng   *rolldev.Engine
	// upADM, upActor: the engine holds these weights.
	upADM, upActor bool
}

// NewDevRoller returns a roller on the open device d, named name ("emu"
// or "cuda": DevChunkRows' default chunk), for ADMs of m's sizes.
func NewDevRoller(d device.Device, name string, m *models.ADM) (*DevRoller, error) {
	if d == nil {
		return nil, fmt.Errorf("dynamics: roll-out device %q: no open device", name)
	}
	chunk, ok := DevChunkRows[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("dynamics: unknown roll-out device %q (%s)", name, strings.Join(RollDevices, " or "))
	}
	c := m.Cfg
	return &DevRoller{d: d, name: strings.ToLower(name), chunk: chunk, cfg: rolldev.ADMConfig{ObsDim: c.ObsDim,
		ActDim: c.ActDim, M: c.M, Hidden: c.Hidden, Layers: c.Layers, ResBlocks: c.ResBlocks}}, nil
}

// SetADM takes m's current weights, rolled out with MC dropout p (0:
// none); they are uploaded before the next roll-out.
func (r *DevRoller) SetADM(m *models.ADM, p float64) error {
	c := m.Cfg
	cfg := rolldev.ADMConfig{ObsDim: c.ObsDim, ActDim: c.ActDim, M: c.M, Hidden: c.Hidden, Layers: c.Layers,
		ResBlocks: c.ResBlocks, Dropout: p}
	if cfg != r.cfg {
		if err := r.Free(); err != nil {
			return fmt.Errorf("dynamics: roll-out device %s: %w", r.name, err)
		}
		r.cfg = cfg
	}
	eps := float32(1e-5) // models' LayerNorm default, unused without ResBlocks
	if len(m.Blocks) > 0 {
		eps = m.Blocks[0].Norm.Eps
	}
	r.adm = &rolldev.ADMWeights{Tensors: m.TrainedTensors(), NormMean: m.Norm.Mean, NormStd: m.Norm.Std, Eps: eps}
	r.upADM = false
	return nil
}

// SetActor takes the policy's weights; they are uploaded before the next
// roll-out.
func (r *DevRoller) SetActor(a *models.Actor) error {
	if a == nil || len(a.Net.Layers) == 0 {
		return fmt.Errorf("dynamics: roll-out device %s: no actor", r.name)
	}
	w := rolldev.ActorWeights{LogStdMin: a.LogStdMin, LogStdMax: a.LogStdMax, Scale: a.Scale, Bias: a.Bias}
	w.Sizes = append(w.Sizes, a.Net.Layers[0].In)
	for _, l := range a.Net.Layers {
		w.Sizes = append(w.Sizes, l.Out)
		w.Params = append(w.Params, l.W, l.B)
	}
	r.actor, r.upActor = &w, false
	return nil
}

// Rollout rolls the actor SetActor gave out in the ADM SetADM gave, with
// infer's semantics (rolldev.Engine.Rollout): chunks of cfg.ChunkRows
// start rows (0: DevChunkRows' for the device). p, when not nil, must have
// the ADM's dimensions; its weights are not used.
func (r *DevRoller) Rollout(p *infer.Policy, start *infer.Start, cfg infer.RollConfig, rng *rand.Rand) (*infer.Transitions, error) {
	fail := func(err error) (*infer.Transitions, error) {
		return nil, fmt.Errorf("dynamics: roll-out on device %s: %w", r.name, err)
	}
	switch {
	case r.adm == nil:
		return fail(errors.New("no ADM weights (SetADM)"))
	case r.actor == nil:
		return fail(errors.New("no actor (SetActor)"))
	case p != nil && (p.ObsDim != r.cfg.ObsDim || p.ActDim != r.cfg.ActDim):
		return fail(fmt.Errorf("policy of %dx%d for an ADM of %dx%d", p.ObsDim, p.ActDim, r.cfg.ObsDim, r.cfg.ActDim))
	case start == nil:
		return fail(errors.New("no start rows"))
	}
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = r.chunk
	}
	if err := r.ready(max(1, min(cfg.ChunkRows, start.N))); err != nil {
		return fail(err)
	}
	if cfg.ChunkRows > r.eng.MaxChunkRows() { // fewer start rows than a chunk: one chunk
		cfg.ChunkRows = r.eng.MaxChunkRows()
	}
	r.eng.Mode = r.Mode
	tr, err := r.eng.Rollout(start, cfg, rng)
	if err != nil {
		return fail(err)
	}
	return tr, nil
}

// ready allocates an engine for chunks of rows rows (unless the one held
// takes them) and uploads the weights it lacks.
func (r *DevRoller) ready(rows int) error {
	if r.eng != nil && r.eng.MaxChunkRows() < rows {
		if err := r.Free(); err != nil {
			return err
		}
	}
	if r.eng == nil {
		e, err := rolldev.New(r.d, r.cfg, rows)
		if err != nil {
			return err
		}
		r.eng, r.upADM, r.upActor = e, false, false
	}
	if !r.upADM {
		if err := r.eng.SetADM(*r.adm); err != nil {
			return err
		}
		r.upADM = true
	}
	if !r.upActor {
		if err := r.eng.SetActor(*r.actor); err != nil {
			return err
		}
		r.upActor = true
	}
	return nil
}

// Reserve allocates the engine for chunks of up to rows start rows now
// (with the weights set so far), so that a later roll-out of as many rows
// allocates nothing (a benchmark's timed roll-outs).
func (r *DevRoller) Reserve(rows int) error {
	if r.adm == nil || r.actor == nil {
		return fmt.Errorf("dynamics: roll-out device %s: reserve before SetADM and SetActor", r.name)
	}
	if err := r.ready(max(1, rows)); err != nil {
		return fmt.Errorf("dynamics: roll-out device %s: %w", r.name, err)
	}
	return nil
}

// Close ends one roll-out's use (infer.Roller); the engine stays for the
// next (Free releases it).
func (r *DevRoller) Close() {}

// Free releases the engine's device buffers; the weights stay, so a later
// roll-out allocates and uploads again. The device itself stays open.
func (r *DevRoller) Free() error {
	if r.eng == nil {
		return nil
	}
	err := r.eng.Close()
	r.eng, r.upADM, r.upActor = nil, false, false
	return err
}
