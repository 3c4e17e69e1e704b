package ops

import (
	"fmt"
	"hash"
	"runtime"
	"sync"
	"weak"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file holds the fused dense-layer op y = x·W + b.
// Compared with G.Mul plus a bias add it runs one product (bias added in its
// epilogue) forward and one per gradient backward, keeps its output buffers between runs (no large
// allocations per run), and forms no weight gradients for frozen layers . Like every Gorgonia op it forms the gradient with
// respect to x even when x is an input nobody differentiates by; for first
// layers that costs little.

// linearOp computes x·W + b for x [batch, in], W [in, out], b [out].
type linearOp struct {
	pureOp
	needX, needW bool
	relu         bool // y = max(x·W + b, 0), fused into the product's epilogue
	// maskX: x is a LinearRelu's output read by this layer alone, and dx
	// is formed already masked by x > 0 (that layer's ReLU backward pass, in
	// the product's epilogue; see LinearAfterRelu).
	maskX bool
	gpre  outBuf // DoDiff's scratch: the gradient before the ReLU
	out   outBuf
}

// outBuf is an op's output tensor, kept between runs. A Gorgonia op instance
// belongs to one node, so its previous output is dead when it runs again.
type outBuf struct{ t *tensor.Dense }

func (b *outBuf) get(dt tensor.Dtype, shape ...int) *tensor.Dense {
	if b.t == nil || b.t.Dtype() != dt || !b.t.Shape().Eq(tensor.Shape(shape)) {
		b.t = tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
	}
	return b.t
}

// dense32 returns v's float32 values in row-major order, copying views that
// are not contiguous.
func dense32(v G.Value) ([]float32, error) {
	if d, ok := v.(*tensor.Dense); ok && d.RequiresIterator() {
		v = d.Materialize().(*tensor.Dense)
	}
	s, ok := v.Data().([]float32)
	if !ok {
		return nil, fmt.Errorf("want float32 data, got %T", v.Data())
	}
	return s, nil
}

// sgemm32 is C = alpha·op(A)·op(B) + beta·C on row-major matrices, op(A)
// [m,k], op(B) [k,n].
func sgemm32(transA, transB bool, m, n, k int, a, b []float32, beta float32, c []float32) {
	if m == 0 || n == 0 || k == 0 {
		if beta == 0 {
			clear(c[:m*n])
		}
		return
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	Sgemm(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, n)
}

// Linear returns x·w + b for float32 x [batch, in], w [in, out] and
// b [out] as one op. A frozen layer forms no gradients for w and b (the
// gradient with respect to x still flows through it); no gradient with
// respect to x is formed when x is data (MarkData).
func Linear(x, w, b *G.Node, frozen bool) (y *G.Node, err error) {
	return linear(x, w, b, frozen, false)
}

// LinearAfterRelu is Linear (relu: LinearRelu) for an x that is a
// LinearRelu's output, read by this layer alone (the hidden layers of an
// MLP). Backward, the product dx = g·Wᵀ stores its result masked by x > 0,
// which is the gradient before x's ReLU, and x's layer skips its own ReLU
// backward pass: one pass over memory less per hidden layer, the same values
// bit for bit. The gradient node of x then holds that masked gradient, so x
// must be no output that a caller differentiates by or reads the gradient
// of; any other consumer of x stays correct (x's layer masks again when its
// gradient is a sum). If x is not a LinearRelu's output it is plain Linear.
func LinearAfterRelu(x, w, b *G.Node, frozen, relu bool) (y *G.Node, err error) {
	defer recoverNode("linear "+w.Name(), &y, &err)
	if err := checkLinear(x, w, b); err != nil {
		return nil, err
	}
	prev, ok := x.Op().(*linearOp)
	op := &linearOp{needX: !IsData(x), needW: !frozen, relu: relu, maskX: ok && prev.relu}
	return G.ApplyOp(op, x, w, b)
}

func checkLinear(x, w, b *G.Node) error {
	if x.Dims() != 2 || w.Dims() != 2 || b.Dims() != 1 || x.Shape()[1] != w.Shape()[0] || w.Shape()[1] != b.Shape()[0] {
		return fmt.Errorf("shapes x %v, W %v, b %v do not fit [batch,in]·[in,out] + [out]", x.Shape(), w.Shape(), b.Shape())
	}
	if x.Dtype() != tensor.Float32 {
		return fmt.Errorf("x is %v, want float32", x.Dtype())
	}
	return nil
}

func linear(x, w, b *G.Node, frozen, relu bool) (y *G.Node, err error) {
	defer recoverNode("linear "+w.Name(), &y, &err)
	if err := checkLinear(x, w, b); err != nil {
		return nil, err
	}
	op := &linearOp{needX: !IsData(x), needW: !frozen, relu: relu}
	return G.ApplyOp(op, x, w, b)
}

// LinearRelu returns max(x·w + b, 0) as one op: the ReLU is applied while
// the product is stored, and the backward pass masks the gradient by the
// output's sign (y > 0 exactly where x·w + b > 0).
func LinearRelu(x, w, b *G.Node, frozen bool) (y *G.Node, err error) {
	return linear(x, w, b, frozen, true)
}

func (op *linearOp) Arity() int { return 3 }
func (op *linearOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 1, Of: a}, G.TensorType{Dims: 2, Of: a})
}
func (op *linearOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	x, w := in[0].(tensor.Shape), in[1].(tensor.Shape)
	return tensor.Shape{x[0], w[1]}, nil
}
func (op *linearOp) Do(in ...G.Value) (G.Value, error) {
	x, w := in[0].Shape(), in[1].Shape()
	y := op.out.get(tensor.Float32, x[0], w[1])
	return y, linearForward(in[0], in[1], in[2], y, op.relu)
}
func (op *linearOp) WriteHash(h hash.Hash) { _, _ = h.Write([]byte(op.String())) }
func (op *linearOp) Hashcode() uint32      { return opHash(op) }
func (op *linearOp) String() string {
	return fmt.Sprintf("Linear{dx:%v,dw:%v,relu:%v,maskx:%v}", op.needX, op.needW, op.relu, op.maskX)
}
func (op *linearOp) DiffWRT(inputs int) []bool {
	return []bool{op.needX, op.needW, op.needW}
}

func linearForward(xv, wv, bv G.Value, y *tensor.Dense, relu bool) error {
	x, err := dense32(xv)
	if err != nil {
		return fmt.Errorf("linear: x: %w", err)
	}
	w, err := dense32(wv)
	if err != nil {
		return fmt.Errorf("linear: W: %w", err)
	}
	b, err := dense32(bv)
	if err != nil {
		return fmt.Errorf("linear: b: %w", err)
	}
	n, in, out := xv.Shape()[0], wv.Shape()[0], wv.Shape()[1]
	if len(b) < out {
		return fmt.Errorf("linear: b has %d values for %d outputs", len(b), out)
	}
	dense(false, false, n, out, in, x, in, w, out, y.Data().([]float32), out, b, relu)
	return nil
}

func (op *linearOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	res := make(G.Nodes, 3)
	var err error
	if op.relu && !maskedBy(grad, output) {
		if grad, err = G.ApplyOp(&actGradOp{kind: actRelu}, output, grad); err != nil {
			return nil, fmt.Errorf("linear: relu: %w", err)
		}
	}
	if op.needX && op.maskX {
		gop := &linearGradOp{wrtX: true, maskBy: inputs[0]}
		if res[0], err = G.ApplyOp(gop, grad, inputs[1], inputs[0]); err != nil {
			return nil, fmt.Errorf("linear: dx: %w", err)
		}
	} else if op.needX {
		if res[0], err = G.ApplyOp(&linearGradOp{wrtX: true}, grad, inputs[1]); err != nil {
			return nil, fmt.Errorf("linear: dx: %w", err)
		}
	}
	if op.needW {
		if res[1], err = G.ApplyOp(&linearGradOp{}, inputs[0], grad); err != nil {
			return nil, fmt.Errorf("linear: dW: %w", err)
		}
		if res[2], err = G.ApplyOp(&colSumOp{}, grad); err != nil {
			return nil, fmt.Errorf("linear: db: %w", err)
		}
	}
	return res, nil
}

// DoDiff adds the gradients into the inputs' dual values (LispMachine).
func (op *linearOp) DoDiff(ctx G.ExecutionContext, inputs G.Nodes, output *G.Node) error {
	gv, err := output.Grad()
	if err != nil {
		return fmt.Errorf("linear: dodiff: %w", err)
	}
	if op.relu {
		gpre := op.gpre.get(tensor.Float32, gv.Shape()...)
		if err := actBackward(actRelu, output.Value(), gv, gpre, false); err != nil {
			return fmt.Errorf("linear: dodiff: %w", err)
		}
		gv = gpre
	}
	g, err := dense32(gv)
	if err != nil {
		return fmt.Errorf("linear: dodiff: %w", err)
	}
	x, err := dense32(inputs[0].Value())
	if err != nil {
		return fmt.Errorf("linear: dodiff: %w", err)
	}
	w, err := dense32(inputs[1].Value())
	if err != nil {
		return fmt.Errorf("linear: dodiff: %w", err)
	}
	n, in, out := inputs[0].Shape()[0], inputs[1].Shape()[0], inputs[1].Shape()[1]
	if op.needX {
		xd, err := inputs[0].Grad()
		if err != nil {
			return fmt.Errorf("linear: dodiff: %w", err)
		}
		sgemm32(false, true, n, in, out, g, w, 1, xd.Data().([]float32))
	}
	if op.needW {
		wd, err := inputs[1].Grad()
		if err != nil {
			return fmt.Errorf("linear: dodiff: %w", err)
		}
		sgemm32(true, false, in, out, n, x, g, 1, wd.Data().([]float32))
		bd, err := inputs[2].Grad()
		if err != nil {
			return fmt.Errorf("linear: dodiff: %w", err)
		}
		return colSum(gv, bd, true)
	}
	return nil
}

// maskedBy tells whether the gradient node grad is a product dx = g·Wᵀ
// already masked by y > 0 (the layer after y, see LinearAfterRelu): y's
// ReLU backward pass is then done.
func maskedBy(grad, y *G.Node) bool {
	op, ok := grad.Op().(*linearGradOp)
	return ok && op.maskBy != nil && op.maskBy == y
}

// linearGradOp computes dx = g·Wᵀ from (g, W) when wrtX, else dW = xᵀ·g
// from (x, g). With maskBy (wrtX only) it takes a third input, the node
// maskBy, and zeroes dx where that input is not > 0.
type linearGradOp struct {
	pureOp
	wrtX   bool
	maskBy *G.Node
	out    outBuf
}

func (op *linearGradOp) Arity() int {
	if op.maskBy != nil {
		return 3
	}
	return 2
}
func (op *linearGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	if op.maskBy != nil {
		return hm.NewFnType(m, m, m, m)
	}
	return hm.NewFnType(m, m, m)
}
func (op *linearGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	a, b := in[0].(tensor.Shape), in[1].(tensor.Shape)
	if op.wrtX { // g [n,out], W [in,out] -> [n,in]
		return tensor.Shape{a[0], b[0]}, nil
	}
	return tensor.Shape{a[1], b[1]}, nil // x [n,in], g [n,out] -> [in,out]
}
func (op *linearGradOp) Do(in ...G.Value) (G.Value, error) {
	a, err := dense32(in[0])
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	b, err := dense32(in[1])
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	as, bs := in[0].Shape(), in[1].Shape()
	if op.wrtX {
		n, nIn, nOut := as[0], bs[0], bs[1]
		d := op.out.get(tensor.Float32, n, nIn)
		if op.maskBy != nil {
			mask, err := dense32(in[2])
			if err != nil {
				return nil, fmt.Errorf("%v: %w", op, err)
			}
			if ms := in[2].Shape(); len(ms) != 2 || ms[0] != n || ms[1] != nIn {
				return nil, fmt.Errorf("%v: mask %v, want [%d %d]", op, ms, n, nIn)
			}
			sgemmMasked(false, true, n, nIn, nOut, a, nOut, b, nOut, d.Data().([]float32), nIn, mask)
			return d, nil
		}
		sgemm32(false, true, n, nIn, nOut, a, b, 0, d.Data().([]float32))
		return d, nil
	}
	n, nIn, nOut := as[0], as[1], bs[1]
	d := op.out.get(tensor.Float32, nIn, nOut)
	sgemm32(true, false, nIn, nOut, n, a, b, 0, d.Data().([]float32))
	return d, nil
}
func (op *linearGradOp) WriteHash(h hash.Hash) { _, _ = h.Write([]byte(op.String())) }
func (op *linearGradOp) Hashcode() uint32      { return opHash(op) }
func (op *linearGradOp) String() string {
	if op.maskBy != nil {
		return "LinearGradXMasked"
	}
	if op.wrtX {
		return "LinearGradX"
	}
	return "LinearGradW"
}

// dataNodes holds the nodes marked by MarkData, weakly: an entry goes when
// its node is collected.
var dataNodes sync.Map // weak.Pointer[G.Node] -> struct{}

// MarkData marks n as a data input that no caller differentiates by (a
// batch of observations or actions): a Linear or LinearRelu layer reading n,
// or a ConcatColumns of such inputs, forms no gradient with respect to it, so
// the first layer of a network on data skips its product dx = g·Wᵀ.
// Differentiating by a marked node (or by a ConcatColumns of marked nodes)
// fails in G.Grad.
func MarkData(n *G.Node) {
	wp := weak.Make(n)
	if _, loaded := dataNodes.LoadOrStore(wp, struct{}{}); !loaded {
		runtime.AddCleanup(n, func(wp weak.Pointer[G.Node]) { dataNodes.Delete(wp) }, wp)
	}
}

// IsData tells whether n was marked by MarkData.
func IsData(n *G.Node) bool {
	_, ok := dataNodes.Load(weak.Make(n))
	return ok
}
