package ops

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// Node builders for the fused ops (fused.go, kernels in kernels.go and
// cell_kernels.c): one node per layer or loss term instead of dozens of small
// Gorgonia ops. Every input must be float32.

// GRU runs one GRU layer (PyTorch equations, gate order r, z, n) over steps
// time-major steps of x [steps·batch, In] (row t·batch+b is step t of
// sequence b) from a zero state, with weights wi [In,3H], bi [3H], wh [H,3H]
// and bh [3H]. It returns every step's hidden state, [steps·batch, H] in the
// same row order. A gradient with respect to x is formed only when x is
// computed by other nodes; a data input gets none.
func GRU(x, wi, bi, wh, bh *G.Node, steps int) (*G.Node, error) {
	return applyFused(&gruKernel{steps: steps, needDX: x.Op() != nil}, x, wi, bi, wh, bh)
}

// LayerNorm normalises every row of x [R,C] and scales and shifts it by
// gamma [C] and beta [C]; eps is added to the variance.
func LayerNorm(x, gamma, beta *G.Node, eps float32) (*G.Node, error) {
	return applyFused(&layerNormKernel{eps: eps}, x, gamma, beta)
}

// ResBlockTail returns LayerNorm(x + mask ⊙ Swish(u)) for u, x [R,C] with
// gamma, beta [C]. mask [R,C] holds dropout multipliers (0 or 1/(1-p)) and is
// not differentiated; nil means no dropout.
func ResBlockTail(u, x, gamma, beta, mask *G.Node, eps float32) (*G.Node, error) {
	in := []*G.Node{u, x, gamma, beta}
	if mask != nil {
		in = append(in, mask)
	}
	return applyFused(&resTailKernel{eps: eps, hasMask: mask != nil}, in...)
}

// ScaledSum returns coef·Σx.
func ScaledSum(x *G.Node, coef float32) (*G.Node, error) {
	return applyFused(linearSumKernel{coef: coef}, x)
}

// SoftClamp bounds lv [R,D] softly between max [D] and min [D]:
// a = max - softplus(max - lv); result = min + softplus(a - min).
func SoftClamp(lv, max, min *G.Node) (*G.Node, error) {
	y, err := applyFused(&softClampKernel{}, lv, max, min)
	if err != nil {
		return nil, fmt.Errorf("ops: soft clamp: %w", err)
	}
	return y, nil
}

// Columns returns columns [from, to) of the matrix x.
func Columns(x *G.Node, from, to int) (*G.Node, error) {
	y, err := applyFused(splitColsKernel{from: from, to: to}, x)
	if err != nil {
		return nil, fmt.Errorf("ops: columns: %w", err)
	}
	return y, nil
}

// Rows returns rows [from, to) of the matrix x; the gradient of the other
// rows is 0.
func Rows(x *G.Node, from, to int) (*G.Node, error) {
	y, err := applyFused(splitRowsKernel{from: from, to: to}, x)
	if err != nil {
		return nil, fmt.Errorf("ops: rows: %w", err)
	}
	return y, nil
}

// ConcatColumns returns [a b], the matrices a [rows, p] and b [rows, q] side
// by side ([rows, p+q]), as one op (G.Concat copies element by element
// through an iterator).
func ConcatColumns(a, b *G.Node) (*G.Node, error) {
	y, err := applyFused(concatColsKernel{}, a, b)
	if err != nil {
		return nil, fmt.Errorf("ops: concat columns: %w", err)
	}
	if IsData(a) && IsData(b) {
		MarkData(y) // [obs act] of a batch is data too
	}
	return y, nil
}

// GaussianNLL returns the Gaussian negative log-likelihood without constants,
// averaged over the valid entries of the [R,D] predictions:
//
//	Σ_r w_r Σ_d [(mu-target)² e^{-logvar} + logvar] / (D · Σ_r w_r)
//
// weight [R] is 1 for rows that count and 0 for padding (any non-negative
// weights work). The result is 0 when every weight is 0.
func GaussianNLL(mu, logvar, target, weight *G.Node) (*G.Node, error) {
	y, err := applyFused(gaussNLLKernel{}, mu, logvar, target, weight)
	if err != nil {
		return nil, fmt.Errorf("ops: gaussian nll: %w", err)
	}
	return y, nil
}

// SumSquares returns coef·Σx², e.g. 0.5·wd·Σw² for weight decay.
func SumSquares(x *G.Node, coef float32) (*G.Node, error) {
	y, err := applyFused(sumSquaresKernel{coef: coef}, x)
	if err != nil {
		return nil, fmt.Errorf("ops: sum of squares: %w", err)
	}
	return y, nil
}
