package sacdev

import (
	"errors"
	"fmt"

	"github.com/admpo/admpo/device"
)

// BCConfig sizes a BC trainer: the SAC actor's sizes, scale and bias, the
// batch and Adam's learning rate (a float64, as sac.BC's optimiser holds
// it).
type BCConfig struct {
	ObsDim, ActDim int
	Hidden         []int
	Batch          int
	LR             float64
	Scale, Bias    []float32 // [ActDim]
	// Graph records the step's launches and products once (the second
	// Step) as a device graph and replays it from then on. It needs a
	// device.Capturer.
	Graph bool
}

// BC is behaviour cloning of a SAC actor on a device: Adam on the mean
// squared error between the actor's deterministic action Scale ⊙ tanh(u) +
// Bias and the data's action, as package sac's BC (models.BCGraph and
// models.Adam) does it. The actor's weights and Adam moments stay on the
// device; a step is the actor's forward pass, bc_head, the backward pass
// and adam_k over a batch uploaded before it, and reads nothing back. It
// is not safe for concurrent use.
type BC struct {
	cfg   BCConfig
	d     device.Device
	actor *net
	t     int // Adam steps taken

	obs, act, scale, bias, action, sq, sum, k device.Buffer
	replay                                    device.Replay
	all                                       []device.Buffer
}

// NewBC allocates a BC trainer on d with zero weights (SetWeights sets
// them) and zero Adam moments.
func NewBC(d device.Device, cfg BCConfig) (*BC, error) {
	od, ad, b := cfg.ObsDim, cfg.ActDim, cfg.Batch
	if od < 1 || ad < 1 || b < 1 || len(cfg.Hidden) == 0 || len(cfg.Scale) != ad || len(cfg.Bias) != ad || !(cfg.LR > 0) {
		return nil, fmt.Errorf("sacdev: bc: invalid config obs %d, act %d, batch %d, hidden %v, scale %d, bias %d, lr %v",
			od, ad, b, cfg.Hidden, len(cfg.Scale), len(cfg.Bias), cfg.LR)
	}
	for _, h := range cfg.Hidden {
		if h < 1 {
			return nil, fmt.Errorf("sacdev: bc: hidden sizes %v must be positive", cfg.Hidden)
		}
	}
	if cfg.Graph {
		if _, ok := d.(device.Capturer); !ok {
			return nil, fmt.Errorf("sacdev: bc: graph: device %s cannot record graphs", d.Name())
		}
	}
	cfg.Hidden = append([]int(nil), cfg.Hidden...)
	cfg.Scale, cfg.Bias = append([]float32(nil), cfg.Scale...), append([]float32(nil), cfg.Bias...)
	bc := &BC{cfg: cfg, d: d}
	alloc := func(n int) (device.Buffer, error) {
		buf, err := d.Alloc(device.Float32, n)
		if err == nil {
			bc.all = append(bc.all, buf)
		}
		return buf, err
	}
	fail := func(err error) (*BC, error) {
		_ = bc.Close()
		return nil, fmt.Errorf("sacdev: bc: new: %w", err)
	}
	sizes := append(append([]int{od}, cfg.Hidden...), 2*ad)
	var err error
	if bc.actor, err = newNet(alloc, sizes, b, true); err != nil {
		return fail(err)
	}
	for _, x := range []struct {
		dst *device.Buffer
		n   int
	}{{&bc.obs, b * od}, {&bc.act, b * ad}, {&bc.scale, ad}, {&bc.bias, ad}, {&bc.action, b * ad},
		{&bc.sq, b * ad}, {&bc.sum, 1}, {&bc.k, 8}} {
		if *x.dst, err = alloc(x.n); err != nil {
			return fail(err)
		}
	}
	if err := d.Upload(bc.scale, cfg.Scale); err != nil {
		return fail(err)
	}
	if err := d.Upload(bc.bias, cfg.Bias); err != nil {
		return fail(err)
	}
	return bc, nil
}

// Steps returns the Adam steps taken (the optimiser's step count).
func (bc *BC) Steps() int { return bc.t }

// SetLR sets the learning rate of the next steps.
func (bc *BC) SetLR(lr float64) { bc.cfg.LR = lr }

// SetWeights uploads the actor's weights (models' order: W0, B0, W1, ...).
func (bc *BC) SetWeights(actor [][]float32) error {
	if err := device.UploadAll(bc.d, bc.actor.params, actor); err != nil {
		return fmt.Errorf("sacdev: bc: set weights: %w", err)
	}
	return nil
}

// ActorWeights downloads the actor's weights into dst (models' order, each
// of its tensor's size); it waits for the device.
func (bc *BC) ActorWeights(dst [][]float32) error {
	if err := device.DownloadAll(bc.d, dst, bc.actor.params); err != nil {
		return fmt.Errorf("sacdev: bc: actor weights: %w", err)
	}
	return nil
}

// OptimInto downloads the Adam state into o's tensors, which must have the
// actor's sizes, and its step count; it waits for the device.
func (bc *BC) OptimInto(o *device.AdamState) error {
	if err := device.DownloadAdam(bc.d, o, bc.actor.m, bc.actor.v); err != nil {
		return fmt.Errorf("sacdev: bc: %w", err)
	}
	o.T = bc.t
	return nil
}

// SetOptim uploads an Adam state (e.g. a checkpoint's).
func (bc *BC) SetOptim(o device.AdamState) error {
	if err := device.UploadAdam(bc.d, bc.actor.m, bc.actor.v, o); err != nil {
		return fmt.Errorf("sacdev: bc: set optimiser state: %w", err)
	}
	bc.t = o.T
	return nil
}

// Upload copies a batch's observations [Batch·ObsDim] and actions
// [Batch·ActDim] to the device for the next Step.
func (bc *BC) Upload(obs, act []float32) error {
	for _, x := range []struct {
		name string
		dst  device.Buffer
		src  []float32
	}{{"obs", bc.obs, obs}, {"act", bc.act, act}} {
		if len(x.src) != x.dst.Len() {
			return fmt.Errorf("sacdev: bc: upload: %s has %d values, want %d", x.name, len(x.src), x.dst.Len())
		}
		if err := bc.d.Upload(x.dst, x.src); err != nil {
			return fmt.Errorf("sacdev: bc: upload %s: %w", x.name, err)
		}
	}
	return nil
}

// Step queues one Adam step on the uploaded batch; it reads nothing back.
func (bc *BC) Step() error {
	bc.t++
	if err := bc.d.Upload(bc.k, device.AdamK(bc.t, bc.cfg.LR)); err != nil {
		bc.t--
		return fmt.Errorf("sacdev: bc: step %d: adam constants: %w", bc.t+1, err)
	}
	if err := bc.replay.Run(bc.d, bc.cfg.Graph, bc.queue); err != nil {
		return fmt.Errorf("sacdev: bc: step %d: %w", bc.t, err)
	}
	return nil
}

// queue queues one step's launches and products.
func (bc *BC) queue() error {
	d, b, ad := bc.d, bc.cfg.Batch, bc.cfg.ActDim
	if err := bc.actor.forward(d, bc.obs); err != nil {
		return fmt.Errorf("actor: %w", err)
	}
	coef := float32(1 / float64(b*ad))
	if err := d.Launch("bc_head", b*ad, bc.actor.out(), bc.act, bc.scale, bc.bias, bc.action, bc.sq,
		bc.actor.outGrad(), ad, coef); err != nil {
		return fmt.Errorf("head: %w", err)
	}
	if err := d.Launch("col_sum", 1, bc.sq, bc.sum, b*ad); err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	if err := bc.actor.backward(d, bc.obs, true, false); err != nil {
		return fmt.Errorf("actor: %w", err)
	}
	for i, p := range bc.actor.params {
		if err := d.Launch("adam_k", p.Len(), p, bc.actor.grads[i], bc.actor.m[i], bc.actor.v[i], bc.k); err != nil {
			return fmt.Errorf("adam: %w", err)
		}
	}
	return nil
}

// Loss returns the last step's loss (before its Adam step, as
// sac.BC.Update returns it); it waits for the device.
func (bc *BC) Loss() (float64, error) {
	if bc.t == 0 {
		return 0, errors.New("sacdev: bc: loss: no step yet")
	}
	var s [1]float32
	if err := bc.d.Download(s[:], bc.sum); err != nil {
		return 0, fmt.Errorf("sacdev: bc: loss: %w", err)
	}
	return float64(s[0]) / float64(bc.cfg.Batch*bc.cfg.ActDim), nil
}

// Close frees the trainer's buffers and graph.
func (bc *BC) Close() error {
	var errs []error
	errs = append(errs, bc.replay.Free())
	for _, b := range bc.all {
		errs = append(errs, bc.d.Free(b))
	}
	bc.all = nil
	return errors.Join(errs...)
}
