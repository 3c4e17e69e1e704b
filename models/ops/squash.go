package ops

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/admpo/admpo/internal/cpukern"
	"github.com/admpo/admpo/internal/scratch"
)

// Squash holds the constants of a tanh-squashed Gaussian policy head: the
// log-std range and the per-dimension affine map from [-1,1] to the action
// bounds.
type Squash struct {
	LogStdMin, LogStdMax float64
	Scale, Bias          []float32 // [act]
}

// SquashedGaussian returns, as one op, the actions [batch, act] and their
// log-densities [batch] of the reparameterised tanh-squashed Gaussian whose
// network output out [batch, 2·act] holds the means u and raw log-stds t,
// for standard normal noise eps [batch, act]:
//
//	logstd = LogStdMin + (LogStdMax-LogStdMin)/2·(tanh(t)+1)
//	x      = u + exp(logstd)·eps,   action = Scale·tanh(x) + Bias
//	logp   = Σ_j [ -eps_j²/2 - logstd_j - log(2π)/2 - 2(log 2 - x_j - softplus(-2x_j)) ]
//
// (the density of tanh(x) in [-1,1]^act; no log|Scale| term). Gradients flow
// to out only. Forward and backward run in float32 as one C loop each
// (cpukern.SquashForward/SquashBackward: vectorised float32 polynomials for
// exp, log1p and tanh, a few ulp).
func SquashedGaussian(out, eps *G.Node, s Squash) (action, logp *G.Node, err error) {
	defer recoverNode("squashed gaussian", &action, &err)
	ad := len(s.Scale)
	if len(s.Bias) != ad || ad == 0 || s.LogStdMax < s.LogStdMin {
		return nil, nil, fmt.Errorf("ops: squashed gaussian: scale %d, bias %d values, log-std range [%v,%v]",
			ad, len(s.Bias), s.LogStdMin, s.LogStdMax)
	}
	s.Scale, s.Bias = append([]float32(nil), s.Scale...), append([]float32(nil), s.Bias...)
	both, err := applyFused(&squashKernel{s: cpukern.Squash{LogStdMin: s.LogStdMin, LogStdMax: s.LogStdMax,
		Scale: s.Scale, Bias: s.Bias}}, out, eps)
	if err != nil {
		return nil, nil, fmt.Errorf("ops: squashed gaussian: %w", err)
	}
	if action, err = Columns(both, 0, ad); err != nil {
		return nil, nil, err
	}
	if logp, err = Columns(both, ad, ad+1); err != nil {
		return nil, nil, err
	}
	if logp, err = G.Reshape(logp, tensor.Shape{out.Shape()[0]}); err != nil {
		return nil, nil, fmt.Errorf("ops: squashed gaussian: %w", err)
	}
	return action, logp, nil
}

// squashKernel computes [action logp] ([batch, act+1]) from (out, eps) with
// cpukern's float32 kernel, keeping each element's forward quantities for the
// backward pass.
type squashKernel struct {
	s  cpukern.Squash
	st []float32 // cpukern.SquashStateLen(batch, act) values, from the last forward
}

func (k *squashKernel) name() string    { return "SquashedGaussian" }
func (k *squashKernel) diffWRT() []bool { return []bool{true, false} }
func (k *squashKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	ad := len(k.s.Scale)
	if len(in) != 2 || in[0].Dims() != 2 || in[1].Dims() != 2 || in[0][1] != 2*ad || in[1][1] != ad || in[0][0] != in[1][0] {
		return nil, fmt.Errorf("want out [batch,%d] and eps [batch,%d], got %v", 2*ad, ad, in)
	}
	return tensor.Shape{in[0][0], ad + 1}, nil
}

func (k *squashKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	rows := shapes[0][0]
	k.st = scratch.Resize(k.st, cpukern.SquashStateLen(rows, len(k.s.Scale)))
	return cpukern.SquashForward(k.s, rows, in[0], in[1], y, k.st)
}

func (k *squashKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	rows := shapes[0][0]
	if len(k.st) != cpukern.SquashStateLen(rows, len(k.s.Scale)) {
		return fmt.Errorf("squashed gaussian: backward of %d rows before their forward", rows)
	}
	return cpukern.SquashBackward(k.s, rows, in[1], gy, k.st, gin[0])
}
