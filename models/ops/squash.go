package ops

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
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
// to out only. Every element is computed in float64 and rounded once.
func SquashedGaussian(out, eps *G.Node, s Squash) (action, logp *G.Node, err error) {
	defer recoverNode("squashed gaussian", &action, &err)
	ad := len(s.Scale)
	if len(s.Bias) != ad || ad == 0 || s.LogStdMax < s.LogStdMin {
		return nil, nil, fmt.Errorf("ops: squashed gaussian: scale %d, bias %d values, log-std range [%v,%v]",
			ad, len(s.Bias), s.LogStdMin, s.LogStdMax)
	}
	s.Scale, s.Bias = append([]float32(nil), s.Scale...), append([]float32(nil), s.Bias...)
	both, err := applyFused(&squashKernel{s: s}, out, eps)
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

// squashKernel computes [action logp] ([batch, act+1]) from (out, eps),
// keeping each element's forward quantities for the backward pass.
type squashKernel struct {
	s     Squash
	elems []squashElem // [batch·act], from the last forward
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

// squashElem is one element's forward quantities.
type squashElem struct {
	tht, std, y, sig float64 // tanh(t), exp(logstd), tanh(x), σ(-2x)
}

func (k *squashKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	rows, ad := shapes[0][0], len(k.s.Scale)
	half := 0.5 * (k.s.LogStdMax - k.s.LogStdMin)
	c := float64(ad) * (-0.5*math.Log(2*math.Pi) - 2*math.Ln2)
	if cap(k.elems) < rows*ad {
		k.elems = make([]squashElem, rows*ad)
	}
	k.elems = k.elems[:rows*ad]
	for r := 0; r < rows; r++ {
		out, eps, dst := in[0][r*2*ad:(r+1)*2*ad], in[1][r*ad:(r+1)*ad], y[r*(ad+1):(r+1)*(ad+1)]
		lp := c
		for j := 0; j < ad; j++ {
			e := &k.elems[r*ad+j]
			ej := float64(eps[j])
			e.tht = math.Tanh(float64(out[ad+j]))
			logStd := k.s.LogStdMin + half*(e.tht+1)
			e.std = math.Exp(logStd)
			x := float64(out[j]) + e.std*ej
			e.y = math.Tanh(x)
			sp, sig := softplusLogistic(-2 * x)
			e.sig = sig
			dst[j] = float32(e.y*float64(k.s.Scale[j]) + float64(k.s.Bias[j]))
			lp += -0.5*ej*ej - logStd + 2*x + 2*sp
		}
		dst[ad] = float32(lp)
	}
	return nil
}

func (k *squashKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	rows, ad := shapes[0][0], len(k.s.Scale)
	if len(k.elems) != rows*ad {
		return fmt.Errorf("squashed gaussian: backward of %d rows before their forward", rows)
	}
	half := 0.5 * (k.s.LogStdMax - k.s.LogStdMin)
	dout := gin[0]
	for r := 0; r < rows; r++ {
		eps, g, d := in[1][r*ad:(r+1)*ad], gy[r*(ad+1):(r+1)*(ad+1)], dout[r*2*ad:(r+1)*2*ad]
		gl := float64(g[ad])
		for j := 0; j < ad; j++ {
			e := &k.elems[r*ad+j]
			// d logp/dx = 2 - 4σ(-2x); d action/dx = Scale·(1 - tanh²x).
			dx := float64(g[j])*float64(k.s.Scale[j])*(1-e.y*e.y) + gl*(2-4*e.sig)
			dlogStd := dx*e.std*float64(eps[j]) - gl
			d[j] = float32(dx)
			d[ad+j] = float32(dlogStd * half * (1 - e.tht*e.tht))
		}
	}
	return nil
}
