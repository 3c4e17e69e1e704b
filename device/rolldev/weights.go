package rolldev

import (
	"errors"
	"fmt"
	"math"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/admdev"
)

// ADMConfig sizes the model (models.ADMConfig's fields of the same names)
// and its MC dropout.
type ADMConfig struct {
	ObsDim, ActDim int
	M              int // maximum plan length (backtracking steps)
	Hidden         int // GRU and ResBlock width
	Layers         int // stacked GRU layers
	ResBlocks      int
	// Dropout is the ResBlocks' MC dropout probability in [0, 1) (the
	// exported graph's onnx.ADMOptions.Dropout); 0: none.
	Dropout float64
}

func (c ADMConfig) in() int { return c.ObsDim + c.ActDim }
func (c ADMConfig) d() int  { return c.ObsDim + 1 }

// Sizes returns the number of values of every tensor ADMWeights.Tensors
// holds (admdev.Sizes: models.ADM.TrainedTensors' order).
func (c ADMConfig) Sizes() []int {
	return admdev.Sizes(c.ObsDim, c.ActDim, c.Hidden, c.Layers, c.ResBlocks)
}

// check reports whether c with maxPlans plans fits the device's buffers.
func (c ADMConfig) check(maxPlans int) error {
	if c.ObsDim < 1 || c.ActDim < 1 || c.M < 1 || c.Hidden < 1 || c.Layers < 1 || c.ResBlocks < 0 {
		return fmt.Errorf("rolldev: invalid sizes %+v", c)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("rolldev: dropout %v outside [0, 1)", c.Dropout)
	}
	if maxPlans < 1 {
		return fmt.Errorf("rolldev: at most %d plans: need one or more", maxPlans)
	}
	// The widest buffers: [plans, 3H] gates, the [plans, m, od+ad] window
	// and the [plans, 2d] output; the kernels index with 32-bit ints.
	for _, w := range []int{3 * c.Hidden, c.M * c.in(), 2 * c.d()} {
		if w > device.MaxLen/maxPlans {
			return fmt.Errorf("rolldev: %d plans of %d values exceed a buffer: %w", maxPlans, w, device.ErrRange)
		}
	}
	return nil
}

// ADMWeights is a trained ADM on the host.
type ADMWeights struct {
	// Tensors are the trained weights in ADMConfig.Sizes' order, e.g.
	// models.ADM.TrainedTensors() or the slices dynamics passes to
	// admdev.Trainer.SetWeights.
	Tensors [][]float32
	// NormMean and NormStd z-score the GRU's input [obs, act]
	// (models.ADM.Norm), ObsDim+ActDim values each.
	NormMean, NormStd []float32
	// Eps is the ResBlocks' LayerNorm epsilon (models.LayerNorm.Eps, 1e-5).
	Eps float32
}

// weights are the ADM's tensors on the device.
type weights struct {
	wiObs, wiAct   device.Buffer   // layer 0's Wi split: rows [0, od) and [od, od+ad)
	wi, bi, wh, bh []device.Buffer // per GRU layer (wi[0] unused)
	bw, bb, bg, bt []device.Buffer // per ResBlock: W, B, Gamma, Beta
	wout, bout     device.Buffer
	mx, mn         device.Buffer // the log-variance bounds
	mean, std      device.Buffer // the input normaliser
	eps            float32
}

// allocWeights allocates c's weights with alloc.
func allocWeights(c ADMConfig, alloc func(device.Type, int) (device.Buffer, error)) (*weights, error) {
	w := &weights{}
	h, h3, d := c.Hidden, 3*c.Hidden, c.d()
	f := func(dst *device.Buffer, n int) error {
		var err error
		*dst, err = alloc(device.Float32, n)
		return err
	}
	fs := func(dst *[]device.Buffer, n int) error {
		b, err := alloc(device.Float32, n)
		*dst = append(*dst, b)
		return err
	}
	errs := []error{f(&w.wiObs, c.ObsDim*h3), f(&w.wiAct, c.ActDim*h3)}
	for l := range c.Layers {
		if l == 0 {
			w.wi = append(w.wi, nil)
		} else {
			errs = append(errs, fs(&w.wi, h*h3))
		}
		errs = append(errs, fs(&w.bi, h3), fs(&w.wh, h*h3), fs(&w.bh, h3))
	}
	for range c.ResBlocks {
		errs = append(errs, fs(&w.bw, h*h), fs(&w.bb, h), fs(&w.bg, h), fs(&w.bt, h))
	}
	errs = append(errs, f(&w.wout, h*2*d), f(&w.bout, 2*d), f(&w.mx, d), f(&w.mn, d), f(&w.mean, c.in()), f(&w.std, c.in()))
	return w, errors.Join(errs...)
}

// check reports whether aw fits c.
func check(c ADMConfig, aw ADMWeights) error {
	sizes := c.Sizes()
	if len(aw.Tensors) != len(sizes) {
		return fmt.Errorf("rolldev: set ADM: %d tensors, want %d (admdev.Sizes)", len(aw.Tensors), len(sizes))
	}
	for i, n := range sizes {
		if len(aw.Tensors[i]) != n {
			return fmt.Errorf("rolldev: set ADM: tensor %d has %d values, want %d", i, len(aw.Tensors[i]), n)
		}
	}
	if len(aw.NormMean) != c.in() || len(aw.NormStd) != c.in() {
		return fmt.Errorf("rolldev: set ADM: normaliser of %d means and %d stds, want %d each", len(aw.NormMean),
			len(aw.NormStd), c.in())
	}
	if !(aw.Eps > 0) || math.IsInf(float64(aw.Eps), 0) {
		return fmt.Errorf("rolldev: set ADM: LayerNorm eps %v is not positive and finite", aw.Eps)
	}
	return nil
}

// upload copies aw (checked) to the device.
func (w *weights) upload(d device.Device, c ADMConfig, aw ADMWeights) error {
	// Tensors in Sizes' order, with layer 0's Wi in two parts.
	t := aw.Tensors
	split := c.ObsDim * 3 * c.Hidden
	bufs := []device.Buffer{w.wiObs, w.wiAct}
	src := [][]float32{t[0][:split], t[0][split:]}
	for l := range c.Layers {
		if l > 0 {
			bufs, src = append(bufs, w.wi[l]), append(src, t[4*l])
		}
		bufs, src = append(bufs, w.bi[l], w.wh[l], w.bh[l]), append(src, t[4*l+1:4*l+4]...)
	}
	for b := range c.ResBlocks {
		bufs, src = append(bufs, w.bw[b], w.bb[b], w.bg[b], w.bt[b]), append(src, t[4*(c.Layers+b):4*(c.Layers+b+1)]...)
	}
	bufs = append(bufs, w.wout, w.bout, w.mx, w.mn, w.mean, w.std)
	src = append(src, t[len(t)-4:]...)
	src = append(src, aw.NormMean, aw.NormStd)
	if err := device.UploadAll(d, bufs, src); err != nil {
		return fmt.Errorf("rolldev: set ADM: %w", err)
	}
	w.eps = aw.Eps
	return nil
}
