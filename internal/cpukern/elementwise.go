package cpukern

// #include "cpukern.h"
import "C"

import (
	"fmt"
	"math"
)

// ReluForward writes max(x, 0) into y[:len(x)]; +0 and negative values give
// 0 and positive NaNs pass (the ReLU of package ops).
func ReluForward(x, y []float32) {
	if len(x) == 0 {
		return
	}
	_ = y[len(x)-1]
	C.cpukern_relu_fwd(C.int(len(x)), f32(x), f32(y))
}

// ReluBackward writes (accumulate: adds) g where x > 0, else 0, into d.
func ReluBackward(x, g, d []float32, accumulate bool) {
	if len(x) == 0 {
		return
	}
	_, _ = g[len(x)-1], d[len(x)-1]
	C.cpukern_relu_bwd(C.int(len(x)), f32(x), f32(g), f32(d), b2i(accumulate))
}

// ColSum writes (accumulate: adds) the column sums of the row-major
// [len(x)/cols, cols] matrix x into y[:cols], summing rows in order.
func ColSum(x []float32, cols int, y []float32, accumulate bool) {
	if cols <= 0 {
		return
	}
	_ = y[cols-1]
	C.cpukern_colsum(C.int(len(x)/cols), C.int(cols), C.long(cols), f32(x), f32(y), b2i(accumulate))
}

// ColSumStrided writes (accumulate: adds) the column sums of the rows x
// cols matrix x with row stride ld into y[:cols], adding row after row as
// ColSum does (the same sums bit for bit).
func ColSumStrided(x []float32, rows, cols, ld int, y []float32, accumulate bool) {
	if cols <= 0 {
		return
	}
	if ld < cols {
		panic(fmt.Sprintf("cpukern: colsum: ld %d < %d columns", ld, cols))
	}
	_ = y[cols-1]
	if rows <= 0 {
		if !accumulate {
			clear(y[:cols])
		}
		return
	}
	_ = x[(rows-1)*ld+cols-1]
	C.cpukern_colsum(C.int(rows), C.int(cols), C.long(ld), f32(x), f32(y), b2i(accumulate))
}

// AdamHyper are one Adam step's constants, formed in float64 and rounded
// once (as PyTorch does with its Python-float hyper-parameters).
type AdamHyper struct {
	Beta1, Beta2, Eps, WeightDecay float64
	LR                             float64
	T                              int // the step number, from 1
}

// constants returns the float32 constants of the C kernel.
func (h AdamHyper) constants() [8]float32 {
	bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
	bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
	return [8]float32{float32(h.Beta1), float32(1 - h.Beta1), float32(h.Beta2), float32(1 - h.Beta2),
		float32(h.LR / bc1), float32(math.Sqrt(bc2)), float32(h.Eps), float32(h.WeightDecay)}
}

// Adam takes one Adam step (PyTorch's torch.optim.Adam, amsgrad off) on the
// parameters p with gradients g and moments m, v, all of one length:
//
//	g ← g + WeightDecay·p    m ← β1·m + (1-β1)·g    v ← β2·v + (1-β2)·g²
//	p ← p - LR/(1-β1^T) · m / (sqrt(v)/sqrt(1-β2^T) + Eps)
//
// where a new m or v of magnitude below the smallest normal float32 is +0
// (subnormal moments, e.g. of dead ReLU units, cost microcode assists on
// x86). g is not modified.
func Adam(p, g, m, v []float32, h AdamHyper) error {
	if len(g) != len(p) || len(m) != len(p) || len(v) != len(p) {
		return fmt.Errorf("cpukern: adam: lengths p %d, g %d, m %d, v %d differ", len(p), len(g), len(m), len(v))
	}
	if h.T < 1 {
		return fmt.Errorf("cpukern: adam: step number %d, want >= 1", h.T)
	}
	if len(p) == 0 {
		return nil
	}
	c := h.constants()
	C.cpukern_adam(C.int(len(p)), f32(p), f32(g), f32(m), f32(v), (*C.float)(&c[0]))
	return nil
}

// Polyak moves dst towards src: dst ← (1-tau)·dst + tau·src.
func Polyak(dst, src []float32, tau float32) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	C.cpukern_polyak(C.int(len(src)), f32(dst), f32(src), C.float(tau))
}

// DropoutMask fills mask for inverted dropout with probability p: each
// entry is 0 when a 16-bit draw of the SplitMix64 stream at *state falls
// below p·65536 (so p resolves to 1/65536), else 1/(1-p); one 64-bit draw
// decides four entries. *state advances past the draws used.
func DropoutMask(mask []float32, state *uint64, p float64) {
	if len(mask) == 0 {
		return
	}
	keep := float32(1 / (1 - p))
	thr := int32(p * 65536)
	C.cpukern_dropout_mask(C.int(len(mask)), f32(mask), (*C.uint64_t)(state), C.int(thr), C.float(keep))
}

// DropoutFill writes n MC-dropout keep flags (1 keep, 0 drop) from the
// counter-based SplitMix64 generator at state base: flag e is half e%2 (the
// low 32 bits for even e) of the output for state base + (e/2+1)·golden
// (golden = 0x9e3779b97f4a7c15), 0 when those bits are below thr, else 1. Flag
// e goes to dst[(e/width)·stride + e%width]: blocks of width flags, stride
// apart. It panics when width < 1, n < 0, blocks overlap (stride < width with
// more than one block) or dst is too short; the C kernel never writes
// outside dst[:need].
func DropoutFill(base uint64, thr uint32, dst []float32, n, width, stride int) {
	if n < 0 || width < 1 {
		panic(fmt.Sprintf("cpukern: dropout fill: %d flags in blocks of %d", n, width))
	}
	if n == 0 {
		return
	}
	blocks := (n-1)/width + 1
	last := n - (blocks-1)*width // the last block's flags
	if blocks > 1 && (stride < width || blocks-1 > (math.MaxInt-last)/stride) {
		panic(fmt.Sprintf("cpukern: dropout fill: %d blocks of %d flags with stride %d", blocks, width, stride))
	}
	if need := (blocks-1)*stride + last; len(dst) < need {
		panic(fmt.Sprintf("cpukern: dropout fill: dst has %d values, needs %d", len(dst), need))
	}
	C.cpukern_dropout_fill(C.uint64_t(base), C.uint32_t(thr), f32(dst), C.long(n), C.long(width), C.long(stride))
}

// Squash holds the constants of a tanh-squashed Gaussian policy head for
// SquashForward and SquashBackward: the log-std range and the per-dimension
// affine map from [-1,1] to the action bounds.
type Squash struct {
	LogStdMin, LogStdMax float64
	Scale, Bias          []float32 // [act]
}

// SquashStateLen is the number of float32 values SquashForward keeps per
// batch of rows for the backward pass.
func SquashStateLen(rows, act int) int { return 7 * rows * act }

// SquashForward computes in float32, for the network outputs out [rows,
// 2·act] (means u, raw log-stds t) and standard normal noise eps [rows, act],
// y [rows, act+1]: the actions Scale·tanh(x) + Bias, x = u + exp(logstd)·eps,
// logstd = LogStdMin + (LogStdMax-LogStdMin)/2·(tanh(t)+1), and in the last
// column the log-density
//
//	Σ_j [ -eps_j²/2 - logstd_j - log(2π)/2 - 2(log 2 - x_j - softplus(-2x_j)) ]
//
// It keeps in st (SquashStateLen values; the last three of its seven planes
// are scratch) what SquashBackward needs. exp, log1p and tanh are float32
// polynomials (Cephes', a few ulp) that the compiler vectorises; every path
// gives the same bits. The constants are formed in float64 and rounded once.
func SquashForward(s Squash, rows int, out, eps, y, st []float32) error {
	ad := len(s.Scale)
	if ad == 0 || len(s.Bias) != ad {
		return fmt.Errorf("cpukern: squash: scale %d, bias %d values", ad, len(s.Bias))
	}
	if rows < 0 || len(out) < rows*2*ad || len(eps) < rows*ad || len(y) < rows*(ad+1) || len(st) < SquashStateLen(rows, ad) {
		return fmt.Errorf("cpukern: squash: %d rows of %d actions with out %d, eps %d, y %d, state %d values",
			rows, ad, len(out), len(eps), len(y), len(st))
	}
	if rows == 0 {
		return nil
	}
	k := [3]float32{float32(s.LogStdMin), float32(0.5 * (s.LogStdMax - s.LogStdMin)),
		float32(float64(ad) * (-0.5*math.Log(2*math.Pi) - 2*math.Ln2))}
	C.cpukern_squash_fwd(C.int(rows), C.int(ad), f32(out), f32(eps), f32(s.Scale), f32(s.Bias), (*C.float)(&k[0]), f32(y), f32(st), f32(st[4*rows*ad:]))
	return nil
}

// SquashBackward writes into dout [rows, 2·act] the gradients with respect to
// out of SquashForward's outputs, given their gradients gy [rows, act+1], the
// same eps and the state st of the forward pass.
func SquashBackward(s Squash, rows int, eps, gy, st, dout []float32) error {
	ad := len(s.Scale)
	if ad == 0 {
		return fmt.Errorf("cpukern: squash: no action dimensions")
	}
	if rows < 0 || len(eps) < rows*ad || len(gy) < rows*(ad+1) || len(st) < SquashStateLen(rows, ad) || len(dout) < rows*2*ad {
		return fmt.Errorf("cpukern: squash backward: %d rows of %d actions with eps %d, gy %d, state %d, dout %d values",
			rows, ad, len(eps), len(gy), len(st), len(dout))
	}
	if rows == 0 {
		return nil
	}
	C.cpukern_squash_bwd(C.int(rows), C.int(ad), f32(eps), f32(s.Scale), C.float(float32(0.5*(s.LogStdMax-s.LogStdMin))),
		f32(gy), f32(st), f32(dout))
	return nil
}

// SwishForward writes y = x·σ(x), σ(x) = 1/(1+e^-x), in float32 with e^x
// by a degree-7 polynomial (relative error below 5e-7; 0 below -87.3).
// y must be at least as long as x.
func SwishForward(x, y []float32) {
	if len(x) == 0 {
		return
	}
	_ = y[len(x)-1]
	C.cpukern_swish_fwd(C.int(len(x)), f32(x), f32(y))
}

// SwishBackward writes d = g·σ(x)(1 + x(1-σ(x))), the gradient through
// SwishForward, or adds it to d when accumulate.
func SwishBackward(x, g, d []float32, accumulate bool) {
	if len(x) == 0 {
		return
	}
	_, _ = g[len(x)-1], d[len(x)-1]
	C.cpukern_swish_bwd(C.int(len(x)), f32(x), f32(g), f32(d), b2i(accumulate))
}
