package sacdev

import (
	"fmt"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/nn"
)

// net is a ReLU MLP on the device with its activations for one batch and,
// when trained, gradients and Adam moments.
type net struct {
	sizes               []int
	batch               int
	params, grads, m, v []device.Buffer // W0, B0, W1, B1, ...; grads, m, v nil when not trained
	acts                []device.Buffer // acts[l]: layer l-1's output [batch, sizes[l]] (l >= 1)
	dacts               []device.Buffer // dacts[l]: the loss's gradient with respect to acts[l] (dacts[0]: the input's)
}

// newNet allocates a net with alloc; trained nets get gradients, moments
// and the gradient buffers of the backward pass.
func newNet(alloc func(int) (device.Buffer, error), sizes []int, batch int, trained bool) (*net, error) {
	n := &net{sizes: sizes, batch: batch, acts: make([]device.Buffer, len(sizes)), dacts: make([]device.Buffer, len(sizes))}
	for l := 0; l+1 < len(sizes); l++ {
		for _, count := range []int{sizes[l] * sizes[l+1], sizes[l+1]} {
			dsts := []*[]device.Buffer{&n.params}
			if trained {
				dsts = append(dsts, &n.grads, &n.m, &n.v)
			}
			for _, dst := range dsts {
				b, err := alloc(count)
				if err != nil {
					return nil, err
				}
				*dst = append(*dst, b)
			}
		}
		var err error
		if n.acts[l+1], err = alloc(batch * sizes[l+1]); err != nil {
			return nil, err
		}
	}
	if trained {
		for l := range sizes {
			var err error
			if n.dacts[l], err = alloc(batch * sizes[l]); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// out is the last layer's output buffer; outGrad its gradient.
func (n *net) out() device.Buffer     { return n.acts[len(n.sizes)-1] }
func (n *net) outGrad() device.Buffer { return n.dacts[len(n.sizes)-1] }

// forward queues the output for x [batch, sizes[0]] (ReLU on hidden layers).
func (n *net) forward(d device.Device, x device.Buffer) error {
	_, err := nn.Forward(d, n.sizes, n.params, n.acts, x, n.batch)
	return err
}

// backward queues the backward pass of the last forward on x from the
// output's gradient in outGrad: the weights' gradients into grads when
// params is set, the input's into dacts[0] when input is set.
func (n *net) backward(d device.Device, x device.Buffer, params, input bool) error {
	for l := len(n.sizes) - 2; l >= 0; l-- {
		k, out := n.sizes[l], n.sizes[l+1]
		in := x
		if l > 0 {
			in = n.acts[l]
		}
		g := n.dacts[l+1]
		if params {
			// dW [k, out] = Xᵀ · G.
			if err := d.Gemm(false, true, out, k, n.batch, 1, g, out, in, k, 0, n.grads[2*l], out); err != nil {
				return fmt.Errorf("layer %d weight gradient: %w", l, err)
			}
			if err := d.Launch("col_sum", out, g, n.grads[2*l+1], n.batch); err != nil {
				return fmt.Errorf("layer %d bias gradient: %w", l, err)
			}
		}
		if l == 0 && !input {
			break
		}
		// dX [batch, k] = G · Wᵀ.
		if err := d.Gemm(true, false, k, n.batch, out, 1, n.params[2*l], out, g, out, 0, n.dacts[l], k); err != nil {
			return fmt.Errorf("layer %d input gradient: %w", l, err)
		}
		if l > 0 {
			if err := d.Launch("relu_grad", n.batch*k, n.dacts[l], n.acts[l]); err != nil {
				return fmt.Errorf("layer %d relu gradient: %w", l, err)
			}
		}
	}
	return nil
}
