package rolldev

import (
	"errors"
	"fmt"
	"math"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/nn"
)

// ActorWeights is a SAC actor on the host (models.Actor): a ReLU MLP from
// an observation to 2·ActDim values, the mean u and a raw log-std t, and
// the action Scale·tanh(u + exp(logstd)·ε) + Bias with logstd =
// LogStdMin + (LogStdMax-LogStdMin)/2·(tanh(t)+1), as the exported ONNX
// actor computes it (ε = 0 for the deterministic action).
type ActorWeights struct {
	// Sizes are the layer sizes, ObsDim first and 2·ActDim last (e.g.
	// 11, 256, 256, 6).
	Sizes []int
	// Params are W0, B0, W1, B1, ... (models.Linear's W [in, out]
	// row-major and B [out]).
	Params               [][]float32
	LogStdMin, LogStdMax float32
	Scale, Bias          []float32 // [ActDim]
}

// actor is an actor on the device with its activations for up to rows
// rows.
type actor struct {
	sizes           []int
	params, acts    []device.Buffer // acts[l]: layer l-1's output [rows, sizes[l]] (l >= 1)
	scale, bias     device.Buffer
	act, logp       device.Buffer // the action [rows, ad]; logp and xs, ths are sac_head's scratch
	xs, ths         device.Buffer
	half, off       float32 // the log-std's soft clamp, as the ONNX actor rounds it
	set             bool
	all             []device.Buffer
	maxRows, od, ad int
}

// checkActor reports whether w is an actor for observations of od and
// actions of ad values.
func checkActor(w ActorWeights, od, ad int) error {
	s := w.Sizes
	if len(s) < 2 || s[0] != od || s[len(s)-1] != 2*ad {
		return fmt.Errorf("rolldev: set actor: sizes %v, want %d first and %d last", s, od, 2*ad)
	}
	if len(w.Params) != 2*(len(s)-1) {
		return fmt.Errorf("rolldev: set actor: %d tensors for %d layers, want %d", len(w.Params), len(s)-1, 2*(len(s)-1))
	}
	for l := 0; l+1 < len(s); l++ {
		if s[l+1] < 1 {
			return fmt.Errorf("rolldev: set actor: sizes %v: every size must be positive", s)
		}
		if len(w.Params[2*l]) != s[l]*s[l+1] || len(w.Params[2*l+1]) != s[l+1] {
			return fmt.Errorf("rolldev: set actor: layer %d has %d weights and %d biases, want %d and %d", l,
				len(w.Params[2*l]), len(w.Params[2*l+1]), s[l]*s[l+1], s[l+1])
		}
	}
	lo, hi := float64(w.LogStdMin), float64(w.LogStdMax)
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return fmt.Errorf("rolldev: set actor: log-std bounds [%v, %v]", w.LogStdMin, w.LogStdMax)
	}
	if len(w.Scale) != ad || len(w.Bias) != ad {
		return fmt.Errorf("rolldev: set actor: %d scales and %d biases, want %d each", len(w.Scale), len(w.Bias), ad)
	}
	return nil
}

// newActor allocates an actor of sizes on d for up to rows rows.
func newActor(d device.Device, sizes []int, rows, od, ad int) (*actor, error) {
	a := &actor{sizes: append([]int(nil), sizes...), acts: make([]device.Buffer, len(sizes)), maxRows: rows, od: od, ad: ad}
	var errs []error
	buf := func(dst *device.Buffer, n int) {
		b, err := d.Alloc(device.Float32, n)
		if err == nil {
			a.all = append(a.all, b)
		}
		*dst = b
		errs = append(errs, err)
	}
	for l := 0; l+1 < len(sizes); l++ {
		a.params = append(a.params, nil, nil)
		buf(&a.params[2*l], sizes[l]*sizes[l+1])
		buf(&a.params[2*l+1], sizes[l+1])
		buf(&a.acts[l+1], rows*sizes[l+1])
	}
	buf(&a.scale, ad)
	buf(&a.bias, ad)
	buf(&a.act, rows*ad)
	buf(&a.logp, rows)
	buf(&a.xs, rows*ad)
	buf(&a.ths, rows*ad)
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, a.free(d))
	}
	return a, nil
}

// upload copies w (checked, of a's sizes) to the device.
func (a *actor) upload(d device.Device, w ActorWeights) error {
	a.set = false
	bufs := append(append([]device.Buffer(nil), a.params...), a.scale, a.bias)
	src := append(append([][]float32(nil), w.Params...), w.Scale, w.Bias)
	if err := device.UploadAll(d, bufs, src); err != nil {
		return fmt.Errorf("rolldev: set actor: %w", err)
	}
	half := 0.5 * (float64(w.LogStdMax) - float64(w.LogStdMin))
	a.half, a.off = float32(half), float32(float64(w.LogStdMin)+half)
	a.set = true
	return nil
}

// forward queues the actions of n rows of observations obs [n, od] with
// the noise eps [n, ad] (zeros: the deterministic actions) into a.act.
func (a *actor) forward(d device.Device, obs, eps device.Buffer, n int) error {
	out, err := nn.Forward(d, a.sizes, a.params, a.acts, obs, n)
	if err != nil {
		return fmt.Errorf("actor: %w", err)
	}
	if err := d.Launch("sac_head", n, out, eps, a.scale, a.bias, a.act, a.logp, a.xs, a.ths, a.ad, a.half, a.off,
		float32(0)); err != nil {
		return fmt.Errorf("actor head: %w", err)
	}
	return nil
}

// free releases a's buffers.
func (a *actor) free(d device.Device) error {
	var errs []error
	for _, b := range a.all {
		errs = append(errs, d.Free(b))
	}
	a.all, a.set = nil, false
	return errors.Join(errs...)
}
