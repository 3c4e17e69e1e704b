package ops

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/admpo/admpo/internal/cpukern"
	"github.com/admpo/admpo/internal/scratch"
)

// Hand-written kernels (forward and backward) for the fused ops of
// layers.go: a GRU layer unrolled over time, LayerNorm, the tail of a
// ResBlock, the log-variance soft clamp, a column split and the Gaussian
// negative log-likelihood. Their gradients are checked against finite
// differences through the layers that use them (models/graph_rnn_test.go).

func wantShape(what string, got tensor.Shape, want ...int) error {
	if !got.Eq(tensor.Shape(want)) {
		return fmt.Errorf("%s has shape %v, want %v", what, got, tensor.Shape(want))
	}
	return nil
}

// rowsAndColumnVectors checks that in is a matrix [R,C] followed by one
// vector [C] for each name in vecs and returns the matrix's shape, the
// output shape of kernels that work row by row; want describes the inputs in
// errors.
func rowsAndColumnVectors(in []tensor.Shape, want string, vecs ...string) (tensor.Shape, error) {
	if len(in) != 1+len(vecs) || in[0].Dims() != 2 {
		return nil, fmt.Errorf("want %s; got %v", want, in)
	}
	for i, name := range vecs {
		if err := wantShape(name, in[1+i], in[0][1]); err != nil {
			return nil, err
		}
	}
	return in[0].Clone(), nil
}

// gruKernel runs one GRU layer (PyTorch equations, gate order r, z, n) over
// steps time-major steps from a zero initial state.
// Inputs: X [steps·B, In], Wi [In,3H], Bi [3H], Wh [H,3H], Bh [3H].
// Output: every step's hidden state, [steps·B, H] (row t·B+b).
// The gradient with respect to X is computed only when needDX is set (X is
// the output of another layer rather than data).
type gruKernel struct {
	steps  int
	needDX bool
	gi     []float32 // [rows,3H] X·Wi
	gates  []float32 // [rows,3H] r, z, n
	ghn    []float32 // [rows,H] h·Wh_n + Bh_n
	gh     []float32 // [B,3H] scratch
	dgi    []float32 // [rows,3H]
	dgh    []float32 // [rows,3H]
	dh     []float32 // [B,H]
}

func (k *gruKernel) name() string { return "GRULayer" }
func (k *gruKernel) diffWRT() []bool {
	return []bool{k.needDX, true, true, true, true}
}

func (k *gruKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) != 5 || in[0].Dims() != 2 || in[1].Dims() != 2 {
		return nil, fmt.Errorf("want X [T·B,In], Wi [In,3H], Bi, Wh, Bh; got %v", in)
	}
	rows, inDim := in[0][0], in[0][1]
	if k.steps <= 0 || rows%k.steps != 0 {
		return nil, fmt.Errorf("%d input rows are not %d steps of a batch", rows, k.steps)
	}
	h3 := in[1][1]
	if h3%3 != 0 {
		return nil, fmt.Errorf("Wi has %d columns, not 3·hidden", h3)
	}
	h := h3 / 3
	for _, c := range []struct {
		what string
		s    tensor.Shape
		want []int
	}{{"Wi", in[1], []int{inDim, h3}}, {"Bi", in[2], []int{h3}}, {"Wh", in[3], []int{h, h3}}, {"Bh", in[4], []int{h3}}} {
		if err := wantShape(c.what, c.s, c.want...); err != nil {
			return nil, err
		}
	}
	return tensor.Shape{rows, h}, nil
}

// rowGrain is the number of rows below which elementwise loops stay on one
// goroutine.
const rowGrain = 16

func (k *gruKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	x, wi, bi, wh, bh := in[0], in[1], in[2], in[3], in[4]
	rows, inDim := shapes[0][0], shapes[0][1]
	h := shapes[3][0]
	h3 := 3 * h
	b := rows / k.steps
	k.gi = scratch.Resize(k.gi, rows*h3)
	k.gates = scratch.Resize(k.gates, rows*h3)
	k.ghn = scratch.Resize(k.ghn, rows*h)
	k.gh = scratch.Resize(k.gh, b*h3)
	Sgemm(false, false, rows, h3, inDim, 1, x, inDim, wi, h3, 0, k.gi, h3)
	for t := 0; t < k.steps; t++ {
		var prev []float32
		if t > 0 {
			// gh = prev·Wh + bh, the bias added in the product's epilogue
			// (the same float32 sum as adding the product to a copy of bh
			// with beta 1, without that copy).
			prev = y[(t-1)*b*h : t*b*h]
			dense(false, false, b, h3, h, prev, h, wh, h3, k.gh, h3, bh, false)
		} else {
			for r := 0; r < b; r++ {
				copy(k.gh[r*h3:(r+1)*h3], bh)
			}
		}
		base := t * b
		parallelFor(b, rowGrain, func(lo, hi int) {
			var pr []float32
			if prev != nil {
				pr = prev[lo*h : hi*h]
			}
			row := base + lo
			n := hi - lo
			GRUCellRows(n, h, k.gi[row*h3:(row+n)*h3], bi, k.gh[lo*h3:hi*h3], pr,
				k.gates[row*h3:(row+n)*h3], k.ghn[row*h:(row+n)*h], y[row*h:(row+n)*h])
		})
	}
	return nil
}

func (k *gruKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	x, wi, wh := in[0], in[1], in[3]
	rows, inDim := shapes[0][0], shapes[0][1]
	h := shapes[3][0]
	h3 := 3 * h
	b := rows / k.steps
	if len(k.gates) != rows*h3 {
		return fmt.Errorf("backward before forward")
	}
	k.dgi = scratch.Resize(k.dgi, rows*h3)
	k.dgh = scratch.Resize(k.dgh, rows*h3)
	k.dh = scratch.Resize(k.dh, b*h)
	clear(k.dh)
	for t := k.steps - 1; t >= 0; t-- {
		base := t * b
		parallelFor(b, rowGrain, func(lo, hi int) {
			row := base + lo
			n := hi - lo
			var prev []float32
			if t > 0 {
				prev = y[(row-b)*h : (row-b+n)*h]
			}
			gruCellBackRows(n, h, k.gates[row*h3:(row+n)*h3], k.ghn[row*h:(row+n)*h], prev, gy[row*h:(row+n)*h],
				k.dh[lo*h:hi*h], k.dgi[row*h3:(row+n)*h3], k.dgh[row*h3:(row+n)*h3])
		})
		if t > 0 {
			Sgemm(false, true, b, h, h3, 1, k.dgh[t*b*h3:(t+1)*b*h3], h3, wh, h3, 1, k.dh, h)
		}
	}
	if dx := gin[0]; dx != nil {
		Sgemm(false, true, rows, inDim, h3, 1, k.dgi, h3, wi, h3, 0, dx, inDim)
	}
	if dwi := gin[1]; dwi != nil {
		Sgemm(true, false, inDim, h3, rows, 1, x, inDim, k.dgi, h3, 0, dwi, h3)
	}
	if dbi := gin[2]; dbi != nil {
		colSums(dbi, k.dgi, rows, h3)
	}
	if dwh := gin[3]; dwh != nil {
		// Only steps t ≥ 1 see a non-zero previous state.
		Sgemm(true, false, h, h3, rows-b, 1, y, h, k.dgh[b*h3:], h3, 0, dwh, h3)
	}
	if dbh := gin[4]; dbh != nil {
		if dbi := gin[2]; dbi != nil {
			// dgh's reset and update columns are dgi's (the cell writes the
			// same values): their sums are dbi's, bit for bit; only the
			// new-gate columns differ.
			copy(dbh[:2*h], dbi[:2*h])
			cpukern.ColSumStrided(k.dgh[2*h:], rows, h, h3, dbh[2*h:], false)
		} else {
			colSums(dbh, k.dgh, rows, h3)
		}
	}
	return nil
}

// colSums writes the column sums of m [rows, n] into dst.
func colSums(dst, m []float32, rows, n int) {
	cpukern.ColSum(m[:rows*n], n, dst, false)
}

// LayerNormRows normalises every row of w (c columns) into y with gamma and
// beta, keeping xhat and the inverse standard deviations for the backward
// pass; y may alias w.
func LayerNormRows(w, gamma, beta, y, xhat, inv []float32, c int, eps float32) {
	parallelFor(len(w)/c, rowGrain, func(lo, hi int) {
		layerNormChunk(hi-lo, c, w[lo*c:hi*c], gamma, beta, y[lo*c:hi*c], xhat[lo*c:hi*c], inv[lo:hi], eps)
	})
}

// lnBack holds the scratch of a LayerNorm backward pass.
type lnBack struct {
	prod []float32 // gy ⊙ xhat
}

// run turns the output gradient gy into the input gradient dw and writes
// dgamma and dbeta (nil to skip); dw may alias gy.
func (s *lnBack) run(gy, gamma, xhat, inv, dw, dgamma, dbeta []float32, c int) {
	rows := len(gy) / c
	s.prod = scratch.Resize(s.prod, len(gy))
	prod := s.prod
	parallelFor(rows, rowGrain, func(lo, hi int) {
		layerNormBackChunk(hi-lo, c, gy[lo*c:hi*c], gamma, xhat[lo*c:hi*c], inv[lo:hi], dw[lo*c:hi*c], prod[lo*c:hi*c])
	})
	if dgamma != nil {
		colSums(dgamma, prod, rows, c)
	}
	if dbeta != nil {
		colSums(dbeta, gy, rows, c)
	}
}

// layerNormKernel is LayerNorm over the last dimension.
// Inputs: X [R,C], Gamma [C], Beta [C]. Output [R,C].
type layerNormKernel struct {
	eps  float32
	xhat []float32
	inv  []float32
	back lnBack
}

func (k *layerNormKernel) name() string    { return "LayerNorm" }
func (k *layerNormKernel) diffWRT() []bool { return []bool{true, true, true} }
func (k *layerNormKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return rowsAndColumnVectors(in, "X [R,C], Gamma [C], Beta [C]", "Gamma", "Beta")
}
func (k *layerNormKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	rows, c := shapes[0][0], shapes[0][1]
	k.xhat = scratch.Resize(k.xhat, rows*c)
	k.inv = scratch.Resize(k.inv, rows)
	LayerNormRows(in[0], in[1], in[2], y, k.xhat, k.inv, c, k.eps)
	return nil
}
func (k *layerNormKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	c := shapes[0][1]
	if len(k.xhat) != len(in[0]) {
		return fmt.Errorf("backward before forward")
	}
	dx := gin[0]
	if dx == nil {
		dx = make([]float32, len(gy))
	}
	k.back.run(gy, in[1], k.xhat, k.inv, dx, gin[1], gin[2], c)
	return nil
}

// resTailKernel is the part of a ResBlock after its Linear layer:
// y = LayerNorm(x + mask ⊙ swish(u)).
// Inputs: U [R,C], X [R,C], Gamma [C], Beta [C] and, with dropout, Mask
// [R,C] (0 or 1/(1-p); not differentiated). Output [R,C].
type resTailKernel struct {
	eps     float32
	hasMask bool
	sig     []float32
	w       []float32
	xhat    []float32
	inv     []float32
	dw      []float32
	back    lnBack
}

func (k *resTailKernel) name() string { return "ResBlockTail" }
func (k *resTailKernel) diffWRT() []bool {
	return []bool{true, true, true, true, false}
}
func (k *resTailKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	want := 4
	if k.hasMask {
		want = 5
	}
	if len(in) != want || in[0].Dims() != 2 {
		return nil, fmt.Errorf("want U [R,C], X [R,C], Gamma [C], Beta [C] (+ Mask [R,C]); got %v", in)
	}
	r, c := in[0][0], in[0][1]
	if err := wantShape("X", in[1], r, c); err != nil {
		return nil, err
	}
	if err := wantShape("Gamma", in[2], c); err != nil {
		return nil, err
	}
	if err := wantShape("Beta", in[3], c); err != nil {
		return nil, err
	}
	if k.hasMask {
		if err := wantShape("Mask", in[4], r, c); err != nil {
			return nil, err
		}
	}
	return in[0].Clone(), nil
}
func (k *resTailKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	u, x := in[0], in[1]
	rows, c := shapes[0][0], shapes[0][1]
	n := rows * c
	k.sig = scratch.Resize(k.sig, n)
	k.w = scratch.Resize(k.w, n)
	k.xhat = scratch.Resize(k.xhat, n)
	k.inv = scratch.Resize(k.inv, rows)
	var mask []float32
	if k.hasMask {
		mask = in[4]
	}
	sig, w := k.sig, k.w
	parallelFor(rows, rowGrain, func(lo, hi int) {
		a, b := lo*c, hi*c
		var ms []float32
		if mask != nil {
			ms = mask[a:b]
		}
		swishResidual(u[a:b], x[a:b], ms, sig[a:b], w[a:b])
		layerNormChunk(hi-lo, c, w[a:b], in[2], in[3], y[a:b], k.xhat[a:b], k.inv[lo:hi], k.eps)
	})
	return nil
}
func (k *resTailKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	u := in[0]
	rows, c := shapes[0][0], shapes[0][1]
	n := len(u)
	if len(k.sig) != n {
		return fmt.Errorf("backward before forward")
	}
	k.dw = scratch.Resize(k.dw, n)
	dw := k.dw
	k.back.run(gy, in[2], k.xhat, k.inv, dw, gin[2], gin[3], c)
	if dx := gin[1]; dx != nil {
		copy(dx, dw)
	}
	if du := gin[0]; du != nil {
		var mask []float32
		if k.hasMask {
			mask = in[4]
		}
		sig := k.sig
		parallelFor(rows, rowGrain, func(lo, hi int) {
			a, b := lo*c, hi*c
			var ms []float32
			if mask != nil {
				ms = mask[a:b]
			}
			swishBack(u[a:b], sig[a:b], dw[a:b], ms, du[a:b])
		})
	}
	return nil
}

// softClampKernel bounds a log-variance softly between learnable limits:
// a = max - softplus(max - lv); out = min + softplus(a - min).
// Inputs: LV [R,D], Max [D], Min [D]. Output [R,D]. The forward keeps both
// logistic factors of every element for the backward pass.
type softClampKernel struct {
	s1, s2 []float64 // σ(max - lv), σ(a - min)
}

func (*softClampKernel) name() string    { return "SoftClamp" }
func (*softClampKernel) diffWRT() []bool { return []bool{true, true, true} }
func (*softClampKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return rowsAndColumnVectors(in, "LV [R,D], Max [D], Min [D]", "Max", "Min")
}

// softplusLogistic returns softplus(z) = log(1+e^z) and σ(z) from one
// exponential.
func softplusLogistic(z float64) (sp, sig float64) {
	ez := math.Exp(-math.Abs(z))
	sp = max(z, 0) + math.Log1p(ez)
	if z >= 0 {
		return sp, 1 / (1 + ez)
	}
	return sp, ez / (1 + ez)
}

func (k *softClampKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	lv, mx, mn := in[0], in[1], in[2]
	d := shapes[0][1]
	k.s1, k.s2 = scratch.Resize(k.s1, len(lv)), scratch.Resize(k.s2, len(lv))
	for i, v := range lv {
		j := i % d
		sp1, s1 := softplusLogistic(float64(mx[j]) - float64(v))
		a := float64(mx[j]) - sp1
		sp2, s2 := softplusLogistic(a - float64(mn[j]))
		y[i] = float32(float64(mn[j]) + sp2)
		k.s1[i], k.s2[i] = s1, s2
	}
	return nil
}
func (k *softClampKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	lv := in[0]
	d := shapes[0][1]
	if len(k.s1) != len(lv) {
		return fmt.Errorf("soft clamp: backward of %d values before their forward", len(lv))
	}
	dmax := make([]float64, d)
	dmin := make([]float64, d)
	for i := range lv {
		j := i % d
		s1, s2 := k.s1[i], k.s2[i]
		g := float64(gy[i])
		if gin[0] != nil {
			gin[0][i] = float32(g * s2 * s1)
		}
		dmax[j] += g * s2 * (1 - s1)
		dmin[j] += g * (1 - s2)
	}
	for j := 0; j < d; j++ {
		if gin[1] != nil {
			gin[1][j] = float32(dmax[j])
		}
		if gin[2] != nil {
			gin[2][j] = float32(dmin[j])
		}
	}
	return nil
}

// splitColsKernel takes columns [from, to) of a matrix.
type splitColsKernel struct{ from, to int }

func (k splitColsKernel) name() string    { return fmt.Sprintf("Columns[%d:%d]", k.from, k.to) }
func (k splitColsKernel) diffWRT() []bool { return []bool{true} }
func (k splitColsKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) != 1 || in[0].Dims() != 2 || k.from < 0 || k.to <= k.from || k.to > in[0][1] {
		return nil, fmt.Errorf("columns [%d,%d) of shape %v", k.from, k.to, in)
	}
	return tensor.Shape{in[0][0], k.to - k.from}, nil
}
func (k splitColsKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	rows, c := shapes[0][0], shapes[0][1]
	w := k.to - k.from
	for r := 0; r < rows; r++ {
		copy(y[r*w:(r+1)*w], in[0][r*c+k.from:r*c+k.to])
	}
	return nil
}
func (k splitColsKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	rows, c := shapes[0][0], shapes[0][1]
	w := k.to - k.from
	dx := gin[0]
	clear(dx)
	for r := 0; r < rows; r++ {
		copy(dx[r*c+k.from:r*c+k.to], gy[r*w:(r+1)*w])
	}
	return nil
}

// splitRowsKernel takes rows [from, to) of a matrix.
type splitRowsKernel struct{ from, to int }

func (k splitRowsKernel) name() string    { return fmt.Sprintf("Rows[%d:%d]", k.from, k.to) }
func (k splitRowsKernel) diffWRT() []bool { return []bool{true} }
func (k splitRowsKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) != 1 || in[0].Dims() != 2 || k.from < 0 || k.to <= k.from || k.to > in[0][0] {
		return nil, fmt.Errorf("rows [%d,%d) of shape %v", k.from, k.to, in)
	}
	return tensor.Shape{k.to - k.from, in[0][1]}, nil
}
func (k splitRowsKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	c := shapes[0][1]
	copy(y, in[0][k.from*c:k.to*c])
	return nil
}
func (k splitRowsKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	c := shapes[0][1]
	dx := gin[0]
	clear(dx)
	copy(dx[k.from*c:k.to*c], gy)
	return nil
}

// concatColsKernel puts two matrices with the same rows side by side.
type concatColsKernel struct{}

func (concatColsKernel) name() string    { return "ConcatColumns" }
func (concatColsKernel) diffWRT() []bool { return []bool{true, true} }
func (concatColsKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) != 2 || in[0].Dims() != 2 || in[1].Dims() != 2 || in[0][0] != in[1][0] {
		return nil, fmt.Errorf("want two matrices with the same rows, got %v", in)
	}
	return tensor.Shape{in[0][0], in[0][1] + in[1][1]}, nil
}
func (concatColsKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	rows, p, q := shapes[0][0], shapes[0][1], shapes[1][1]
	for r := 0; r < rows; r++ {
		copy(y[r*(p+q):r*(p+q)+p], in[0][r*p:(r+1)*p])
		copy(y[r*(p+q)+p:(r+1)*(p+q)], in[1][r*q:(r+1)*q])
	}
	return nil
}
func (concatColsKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	rows, p, q := shapes[0][0], shapes[0][1], shapes[1][1]
	for r := 0; r < rows; r++ {
		if gin[0] != nil {
			copy(gin[0][r*p:(r+1)*p], gy[r*(p+q):r*(p+q)+p])
		}
		if gin[1] != nil {
			copy(gin[1][r*q:(r+1)*q], gy[r*(p+q)+p:(r+1)*(p+q)])
		}
	}
	return nil
}

// gaussNLLKernel is the Gaussian negative log-likelihood (without constants)
// averaged over the valid entries:
//
//	L = Σ_r w_r Σ_d [(μ-y)² e^{-lv} + lv] / (D · Σ_r w_r)
//
// Inputs: Mu [R,D], LV [R,D], Y [R,D], W [R] (row weights, 0 for padding;
// Y and W are not differentiated). Output: a scalar (0 when Σw = 0).
type gaussNLLKernel struct{}

func (gaussNLLKernel) name() string    { return "GaussianNLL" }
func (gaussNLLKernel) diffWRT() []bool { return []bool{true, true, false, false} }
func (gaussNLLKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) != 4 || in[0].Dims() != 2 {
		return nil, fmt.Errorf("want Mu [R,D], LV [R,D], Y [R,D], W [R]; got %v", in)
	}
	r, d := in[0][0], in[0][1]
	if err := wantShape("LV", in[1], r, d); err != nil {
		return nil, err
	}
	if err := wantShape("Y", in[2], r, d); err != nil {
		return nil, err
	}
	if err := wantShape("W", in[3], r); err != nil {
		return nil, err
	}
	return tensor.Shape{}, nil
}

func nllNorm(w []float32, d int) float64 {
	var s float64
	for _, v := range w {
		s += float64(v)
	}
	return s * float64(d)
}

func (gaussNLLKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	mu, lv, tg, w := in[0], in[1], in[2], in[3]
	d := shapes[0][1]
	norm := nllNorm(w, d)
	if norm == 0 {
		y[0] = 0
		return nil
	}
	var s float64
	for r, wr := range w {
		if wr == 0 {
			continue
		}
		var rs float64
		for j := r * d; j < (r+1)*d; j++ {
			e := float64(mu[j]) - float64(tg[j])
			rs += e*e*math.Exp(-float64(lv[j])) + float64(lv[j])
		}
		s += float64(wr) * rs
	}
	y[0] = float32(s / norm)
	return nil
}

func (gaussNLLKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	mu, lv, tg, w := in[0], in[1], in[2], in[3]
	d := shapes[0][1]
	norm := nllNorm(w, d)
	dmu, dlv := gin[0], gin[1]
	for r, wr := range w {
		c := 0.0
		if norm != 0 {
			c = float64(gy[0]) * float64(wr) / norm
		}
		for j := r * d; j < (r+1)*d; j++ {
			e := float64(mu[j]) - float64(tg[j])
			iv := math.Exp(-float64(lv[j]))
			if dmu != nil {
				dmu[j] = float32(c * 2 * e * iv)
			}
			if dlv != nil {
				dlv[j] = float32(c * (1 - e*e*iv))
			}
		}
	}
	return nil
}

// scalarSum gives the kernels that sum one input of any shape into a
// scalar their inputs' differentiability and output shape.
type scalarSum struct{}

func (scalarSum) diffWRT() []bool { return []bool{true} }
func (scalarSum) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("want one input, got %d", len(in))
	}
	return tensor.Shape{}, nil
}

// sumSquaresKernel is Coef · Σ x² (a weight-decay term). Input X of any
// shape; output a scalar.
type sumSquaresKernel struct {
	scalarSum
	coef float32
}

func (sumSquaresKernel) name() string { return "SumSquares" }
func (k sumSquaresKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	var s float64
	for _, v := range in[0] {
		s += float64(v) * float64(v)
	}
	y[0] = float32(float64(k.coef) * s)
	return nil
}
func (k sumSquaresKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	c := 2 * k.coef * gy[0]
	for i, v := range in[0] {
		gin[0][i] = c * v
	}
	return nil
}

// linearSumKernel is Coef · Σ x. Input X of any shape; output a scalar.
type linearSumKernel struct {
	scalarSum
	coef float32
}

func (linearSumKernel) name() string { return "ScaledSum" }
func (k linearSumKernel) forward(in [][]float32, shapes []tensor.Shape, y []float32) error {
	var s float64
	for _, v := range in[0] {
		s += float64(v)
	}
	y[0] = float32(float64(k.coef) * s)
	return nil
}
func (k linearSumKernel) backward(in [][]float32, shapes []tensor.Shape, y, gy []float32, gin [][]float32) error {
	for i := range gin[0] {
		gin[0][i] = k.coef * gy[0]
	}
	return nil
}
