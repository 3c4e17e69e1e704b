package nn

import (
	"errors"
	"fmt"
	"math"

	"github.com/admpo/admpo/device"
)

// MLP is a ReLU MLP on a device, trained with a mean-squared-error loss and
// Adam. It is not safe for concurrent use.
type MLP struct {
	// Adam's hyper-parameters (PyTorch's defaults but the learning rate).
	LR, Beta1, Beta2, Eps float64

	d      device.Device
	sizes  []int
	batch  int
	t      int             // Adam steps taken
	params []device.Buffer // W0, B0, W1, B1, ...
	grads  []device.Buffer // their gradients
	m, v   []device.Buffer // Adam's moments
	acts   []device.Buffer // acts[l+1]: the output of layer l ([batch, sizes[l+1]])
	dacts  []device.Buffer // dacts[l]: the loss's gradient with respect to acts[l] (l >= 1)
	sqerr  device.Buffer   // per-element squared error of the last Step
	loss   device.Buffer   // one element: their sum
	all    []device.Buffer // everything allocated, for Close
}

// NewMLP allocates an MLP with layer sizes sizes (input first, e.g.
// 14, 256, 256, 1) for batches of batch rows on d, with zero weights and
// Adam at learning rate lr (a float32, as models.NewAdam takes it, so both
// form the same step constants).
func NewMLP(d device.Device, sizes []int, batch int, lr float32) (*MLP, error) {
	if len(sizes) < 2 || batch < 1 {
		return nil, fmt.Errorf("nn: mlp: sizes %v, batch %d: need two sizes or more and a batch", sizes, batch)
	}
	for _, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("nn: mlp: sizes %v: every size must be positive", sizes)
		}
	}
	n := &MLP{LR: float64(lr), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, d: d, sizes: append([]int(nil), sizes...), batch: batch}
	alloc := func(count int) (device.Buffer, error) {
		b, err := d.Alloc(device.Float32, count)
		if err == nil {
			n.all = append(n.all, b)
		}
		return b, err
	}
	fail := func(err error) (*MLP, error) {
		_ = n.Close()
		return nil, fmt.Errorf("nn: mlp: %w", err)
	}
	n.acts = make([]device.Buffer, len(sizes))
	n.dacts = make([]device.Buffer, len(sizes))
	for l := 0; l+1 < len(sizes); l++ {
		for _, count := range []int{sizes[l] * sizes[l+1], sizes[l+1]} {
			for _, dst := range []*[]device.Buffer{&n.params, &n.grads, &n.m, &n.v} {
				b, err := alloc(count)
				if err != nil {
					return fail(err)
				}
				*dst = append(*dst, b)
			}
		}
		var err error
		if n.acts[l+1], err = alloc(batch * sizes[l+1]); err != nil {
			return fail(err)
		}
		if n.dacts[l+1], err = alloc(batch * sizes[l+1]); err != nil {
			return fail(err)
		}
	}
	var err error
	if n.sqerr, err = alloc(batch * sizes[len(sizes)-1]); err != nil {
		return fail(err)
	}
	if n.loss, err = alloc(1); err != nil {
		return fail(err)
	}
	return n, nil
}

// Sizes returns the layer sizes.
func (n *MLP) Sizes() []int { return append([]int(nil), n.sizes...) }

// Params returns the weight buffers in models' order: W0, B0, W1, B1, ...
func (n *MLP) Params() []device.Buffer { return n.params }

// Grads returns the gradients of Params from the last Step.
func (n *MLP) Grads() []device.Buffer { return n.grads }

// Moments returns Adam's first and second moments of Params.
func (n *MLP) Moments() (m, v []device.Buffer) { return n.m, n.v }

// Steps returns the number of Adam steps taken.
func (n *MLP) Steps() int { return n.t }

// SetSteps sets the Adam step count (e.g. when moments are restored).
func (n *MLP) SetSteps(t int) { n.t = t }

// Upload copies host values into bufs (one slice per buffer, of its length).
func (n *MLP) Upload(bufs []device.Buffer, vals [][]float32) error {
	if len(vals) != len(bufs) {
		return fmt.Errorf("nn: upload: %d slices for %d buffers", len(vals), len(bufs))
	}
	for i, v := range vals {
		if len(v) != bufs[i].Len() {
			return fmt.Errorf("nn: upload: slice %d has %d values, buffer %d", i, len(v), bufs[i].Len())
		}
		if err := n.d.Upload(bufs[i], v); err != nil {
			return fmt.Errorf("nn: upload %d: %w", i, err)
		}
	}
	return nil
}

// Download copies bufs to the host.
func (n *MLP) Download(bufs []device.Buffer) ([][]float32, error) {
	out := make([][]float32, len(bufs))
	for i, b := range bufs {
		out[i] = make([]float32, b.Len())
		if err := n.d.Download(out[i], b); err != nil {
			return nil, fmt.Errorf("nn: download %d: %w", i, err)
		}
	}
	return out, nil
}

// Forward queues the network's output for x ([batch, in]) into the last
// activation buffer and returns it.
func (n *MLP) Forward(x device.Buffer) (device.Buffer, error) {
	return Forward(n.d, n.sizes, n.params, n.acts, x, n.batch)
}

// Forward queues a ReLU MLP's forward pass over the first rows rows of x
// ([rows, sizes[0]], row-major): layer l (weights params[2l] [sizes[l],
// sizes[l+1]] and bias params[2l+1]) writes its output, ReLU'd but for the
// last layer's, into acts[l+1] ([rows, sizes[l+1]]); acts[0] is not used.
// It returns the last output. Buffers may hold more rows than rows (a
// batch's prefix); the products check that they hold enough.
func Forward(d device.Device, sizes []int, params, acts []device.Buffer, x device.Buffer, rows int) (device.Buffer, error) {
	L := len(sizes) - 1
	if L < 1 || len(params) < 2*L || len(acts) < L+1 || rows < 0 {
		return nil, fmt.Errorf("nn: forward: sizes %v, %d params, %d activations, %d rows: %w", sizes, len(params),
			len(acts), rows, device.ErrArgs)
	}
	in := x
	for l := 0; l < L; l++ {
		k, out := sizes[l], sizes[l+1]
		w, b, y := params[2*l], params[2*l+1], acts[l+1]
		// Y [rows, out] = X [rows, k] · W [k, out], column-major.
		if err := d.Gemm(false, false, out, rows, k, 1, w, out, in, k, 0, y, out); err != nil {
			return nil, fmt.Errorf("nn: layer %d forward: %w", l, err)
		}
		kernel := "bias_relu"
		if l == L-1 {
			kernel = "bias_add"
		}
		if err := d.Launch(kernel, rows*out, y, b, out); err != nil {
			return nil, fmt.Errorf("nn: layer %d forward: %w", l, err)
		}
		in = y
	}
	return in, nil
}

// Step queues one training step on inputs x ([batch, in]) and targets y
// ([batch, out]): forward, the mean squared error's gradient, backward
// and one Adam step of every weight. Loss reports its loss.
func (n *MLP) Step(x, y device.Buffer) error {
	d, L := n.d, len(n.sizes)-1
	pred, err := n.Forward(x)
	if err != nil {
		return err
	}
	count := n.batch * n.sizes[L]
	if err := d.Launch("sq_err", count, pred, y, n.sqerr); err != nil {
		return fmt.Errorf("nn: loss: %w", err)
	}
	if err := d.Launch("mse_grad", count, pred, y, n.dacts[L], float32(2/float64(count))); err != nil {
		return fmt.Errorf("nn: loss gradient: %w", err)
	}
	for l := L - 1; l >= 0; l-- {
		k, out := n.sizes[l], n.sizes[l+1]
		in := x
		if l > 0 {
			in = n.acts[l]
		}
		g := n.dacts[l+1]
		// dW [k, out] = Xᵀ · G: column-major [out, k] = G [out, batch] · op(X) with X [k, batch] transposed.
		if err := d.Gemm(false, true, out, k, n.batch, 1, g, out, in, k, 0, n.grads[2*l], out); err != nil {
			return fmt.Errorf("nn: layer %d weight gradient: %w", l, err)
		}
		if err := d.Launch("col_sum", out, g, n.grads[2*l+1], n.batch); err != nil {
			return fmt.Errorf("nn: layer %d bias gradient: %w", l, err)
		}
		if l == 0 {
			break
		}
		// dX [batch, k] = G · Wᵀ: column-major [k, batch] = op(W) [k, out] · G [out, batch].
		if err := d.Gemm(true, false, k, n.batch, out, 1, n.params[2*l], out, g, out, 0, n.dacts[l], k); err != nil {
			return fmt.Errorf("nn: layer %d input gradient: %w", l, err)
		}
		if err := d.Launch("relu_grad", n.batch*k, n.dacts[l], n.acts[l]); err != nil {
			return fmt.Errorf("nn: layer %d relu gradient: %w", l, err)
		}
	}
	return n.adam()
}

// adam queues one Adam step of every weight with the gradients in grads.
// The constants are formed in float64 and rounded once, as models.Adam does.
func (n *MLP) adam() error {
	n.t++
	bc1 := 1 - math.Pow(n.Beta1, float64(n.t))
	bc2 := 1 - math.Pow(n.Beta2, float64(n.t))
	for i, p := range n.params {
		if err := n.d.Launch("adam", p.Len(), p, n.grads[i], n.m[i], n.v[i],
			float32(n.Beta1), float32(1-n.Beta1), float32(n.Beta2), float32(1-n.Beta2),
			float32(n.LR/bc1), float32(math.Sqrt(bc2)), float32(n.Eps), float32(0)); err != nil {
			return fmt.Errorf("nn: adam step %d, parameter %d: %w", n.t, i, err)
		}
	}
	return nil
}

// Loss returns the mean squared error of the last Step's forward pass (its
// weights before the update). It waits for the device.
func (n *MLP) Loss() (float32, error) {
	count := n.sqerr.Len()
	if err := n.d.Launch("col_sum", 1, n.sqerr, n.loss, count); err != nil {
		return 0, fmt.Errorf("nn: loss: %w", err)
	}
	var s [1]float32
	if err := n.d.Download(s[:], n.loss); err != nil {
		return 0, fmt.Errorf("nn: loss: %w", err)
	}
	return s[0] / float32(count), nil
}

// Close frees the network's buffers.
func (n *MLP) Close() error {
	var errs []error
	for _, b := range n.all {
		errs = append(errs, n.d.Free(b))
	}
	n.all = nil
	return errors.Join(errs...)
}
