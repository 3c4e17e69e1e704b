package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/admpo/admpo/internal/cpukern"
)

// This file holds custom Gorgonia ops that loop over float32 (or float64)
// slices directly: ReLU, Swish and a row-broadcast bias add. Gorgonia's own
// Rectify and float32 Sigmoid go through scalar float64 loops and its
// broadcast add builds Reshape/Repeat nodes; these are several times faster.
// Each op supports symbolic differentiation (SymDiff, used by G.Grad with a
// TapeMachine) and automatic differentiation (DoDiff, used by LispMachine).

// Relu returns max(x, 0) elementwise.
func Relu(x *G.Node) (n *G.Node, err error) {
	defer recoverNode("relu", &n, &err)
	n, err = G.ApplyOp(&actOp{kind: actRelu}, x)
	if err != nil {
		return nil, fmt.Errorf("ops: relu: %w", err)
	}
	return n, nil
}

// Swish returns x·sigmoid(x) elementwise.
func Swish(x *G.Node) (n *G.Node, err error) {
	defer recoverNode("swish", &n, &err)
	n, err = G.ApplyOp(&actOp{kind: actSwish}, x)
	if err != nil {
		return nil, fmt.Errorf("ops: swish: %w", err)
	}
	return n, nil
}

// Activate applies the named activation: "relu", "swish", or "" / "identity"
// (x itself).
func Activate(name string, x *G.Node) (*G.Node, error) {
	switch name {
	case "relu":
		return Relu(x)
	case "swish":
		return Swish(x)
	case "", "identity":
		return x, nil
	}
	return nil, fmt.Errorf("ops: unknown activation %q", name)
}

// AddBias returns x + b with x of shape [batch, n] and b of shape [n],
// broadcasting b over the rows.
func AddBias(x, b *G.Node) (n *G.Node, err error) {
	defer recoverNode("add bias", &n, &err)
	if x.Dims() != 2 || b.Dims() != 1 || x.Shape()[1] != b.Shape()[0] {
		return nil, fmt.Errorf("ops: add bias: shapes %v and %v do not fit [batch,n] + [n]", x.Shape(), b.Shape())
	}
	n, err = G.ApplyOp(&biasAddOp{}, x, b)
	if err != nil {
		return nil, fmt.Errorf("ops: add bias: %w", err)
	}
	return n, nil
}

type actKind int

const (
	actRelu actKind = iota
	actSwish
)

func (k actKind) String() string {
	if k == actRelu {
		return "Relu32"
	}
	return "Swish32"
}

// actForward writes f(x) into y.
func actForward(k actKind, x, y G.Value) error {
	switch xs := denseData(x).(type) {
	case []float32:
		ys := y.Data().([]float32)[:len(xs)]
		if k == actRelu {
			cpukern.ReluForward(xs, ys)
		} else {
			cpukern.SwishForward(xs, ys)
		}
	case []float64:
		ys := y.Data().([]float64)[:len(xs)]
		for i, v := range xs {
			if k == actRelu {
				ys[i] = max(v, 0)
			} else {
				ys[i] = v / (1 + math.Exp(-v))
			}
		}
	default:
		return fmt.Errorf("%v: unsupported data %T", k, x.Data())
	}
	return nil
}

// actBackward computes dst = g·f'(x) (accumulate false) or dst += g·f'(x).
func actBackward(k actKind, x, g, dst G.Value, accumulate bool) error {
	switch xs := denseData(x).(type) {
	case []float32:
		gs, ds := denseData(g).([]float32)[:len(xs)], dst.Data().([]float32)[:len(xs)]
		if k == actRelu {
			cpukern.ReluBackward(xs, gs, ds, accumulate)
		} else {
			cpukern.SwishBackward(xs, gs, ds, accumulate)
		}
	case []float64:
		gs, ds := denseData(g).([]float64)[:len(xs)], dst.Data().([]float64)[:len(xs)]
		for i, v := range xs {
			var d float64
			if k == actRelu {
				if v > 0 {
					d = gs[i]
				}
			} else {
				s := 1 / (1 + math.Exp(-v))
				d = gs[i] * s * (1 + v*(1-s))
			}
			if accumulate {
				ds[i] += d
			} else {
				ds[i] = d
			}
		}
	default:
		return fmt.Errorf("%v: unsupported data %T", k, x.Data())
	}
	return nil
}

// like returns the kept buffer with v's shape and type.
func (b *outBuf) like(v G.Value) *tensor.Dense { return b.get(v.Dtype(), v.Shape()...) }

// denseData returns v's values in row-major order, copying views that are
// not contiguous (e.g. column slices).
func denseData(v G.Value) any {
	if d, ok := v.(*tensor.Dense); ok && d.RequiresIterator() {
		return d.Materialize().Data()
	}
	return v.Data()
}

// recoverNode, deferred by the exported node builders, turns a panic inside
// Gorgonia (which panics on some shape errors instead of returning them) into
// an error in *err and clears *n.
func recoverNode(what string, n **G.Node, err *error) {
	if r := recover(); r != nil {
		*n, *err = nil, fmt.Errorf("ops: %s: graph construction panicked: %v", what, r)
	}
}

// pureOp, embedded in every op of this package, gives the Gorgonia op
// methods they share: an op returns a value of its own (not a pointer into
// an input), calls no external device and overwrites none of its inputs.
type pureOp struct{}

func (pureOp) ReturnsPtr() bool     { return false }
func (pureOp) CallsExtern() bool    { return false }
func (pureOp) OverwritesInput() int { return -1 }

// elementwiseOp, embedded in the ops of one input whose output has the
// input's type and shape, gives them Arity, Type and InferShape.
type elementwiseOp struct{ pureOp }

func (elementwiseOp) Arity() int { return 1 }
func (elementwiseOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (elementwiseOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}

func opHash(op fmt.Stringer) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(op.String()))
	return h.Sum32()
}

// actOp is an elementwise activation y = f(x).
type actOp struct {
	elementwiseOp
	kind actKind
	out  outBuf
}

func (op *actOp) Do(in ...G.Value) (G.Value, error) {
	y := op.out.like(in[0])
	return y, actForward(op.kind, in[0], y)
}
func (op *actOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	return prealloc, actForward(op.kind, in[0], prealloc)
}
func (op *actOp) WriteHash(h hash.Hash)     { _, _ = h.Write([]byte(op.String())) }
func (op *actOp) Hashcode() uint32          { return opHash(op) }
func (op *actOp) String() string            { return op.kind.String() }
func (op *actOp) DiffWRT(inputs int) []bool { return []bool{true} }

func (op *actOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(&actGradOp{kind: op.kind}, inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("%v: symdiff: %w", op, err)
	}
	return G.Nodes{d}, nil
}

func (op *actOp) DoDiff(ctx G.ExecutionContext, inputs G.Nodes, output *G.Node) error {
	xd, err := inputs[0].Grad()
	if err != nil {
		return fmt.Errorf("%v: dodiff: %w", op, err)
	}
	yd, err := output.Grad()
	if err != nil {
		return fmt.Errorf("%v: dodiff: %w", op, err)
	}
	return actBackward(op.kind, inputs[0].Value(), yd, xd, true)
}

// actGradOp computes g·f'(x) from (x, g).
type actGradOp struct {
	pureOp
	kind actKind
	out  outBuf
}

func (op *actGradOp) Arity() int { return 2 }
func (op *actGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op *actGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op *actGradOp) Do(in ...G.Value) (G.Value, error) {
	d := op.out.like(in[0])
	return d, actBackward(op.kind, in[0], in[1], d, false)
}
func (op *actGradOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	return prealloc, actBackward(op.kind, in[0], in[1], prealloc, false)
}
func (op *actGradOp) WriteHash(h hash.Hash) { _, _ = h.Write([]byte(op.String())) }
func (op *actGradOp) Hashcode() uint32      { return opHash(op) }
func (op *actGradOp) String() string        { return op.kind.String() + "Grad" }

// biasAddOp is y = x + b, x [batch, n], b [n].
type biasAddOp struct {
	pureOp
	out outBuf
}

func (op *biasAddOp) Arity() int { return 2 }
func (op *biasAddOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 1, Of: a}, G.TensorType{Dims: 2, Of: a})
}
func (op *biasAddOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op *biasAddOp) Do(in ...G.Value) (G.Value, error) {
	y := op.out.like(in[0])
	return y, biasAdd(in[0], in[1], y)
}
func (op *biasAddOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	return prealloc, biasAdd(in[0], in[1], prealloc)
}
func (op *biasAddOp) WriteHash(h hash.Hash)     { _, _ = h.Write([]byte(op.String())) }
func (op *biasAddOp) Hashcode() uint32          { return opHash(op) }
func (op *biasAddOp) String() string            { return "AddBias" }
func (op *biasAddOp) DiffWRT(inputs int) []bool { return []bool{true, true} }

func (op *biasAddOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	db, err := G.ApplyOp(&colSumOp{}, grad)
	if err != nil {
		return nil, fmt.Errorf("add bias: symdiff: %w", err)
	}
	return G.Nodes{grad, db}, nil
}

func (op *biasAddOp) DoDiff(ctx G.ExecutionContext, inputs G.Nodes, output *G.Node) error {
	yd, err := output.Grad()
	if err != nil {
		return fmt.Errorf("add bias: dodiff: %w", err)
	}
	xd, err := inputs[0].Grad()
	if err != nil {
		return fmt.Errorf("add bias: dodiff: %w", err)
	}
	bd, err := inputs[1].Grad()
	if err != nil {
		return fmt.Errorf("add bias: dodiff: %w", err)
	}
	switch ys := yd.Data().(type) {
	case []float32:
		xs := xd.Data().([]float32)
		for i, v := range ys {
			xs[i] += v
		}
	case []float64:
		xs := xd.Data().([]float64)
		for i, v := range ys {
			xs[i] += v
		}
	}
	return colSum(yd, bd, true)
}

func biasAdd(x, b, y G.Value) error {
	if x.Shape().Dims() != 2 || b.Shape().Dims() != 1 || x.Shape()[1] != b.Shape()[0] {
		return fmt.Errorf("add bias: shapes %v and %v do not fit [batch,n] + [n]", x.Shape(), b.Shape())
	}
	n := x.Shape()[1]
	switch xs := denseData(x).(type) {
	case []float32:
		bs, ys := denseData(b).([]float32), y.Data().([]float32)
		for r := 0; r < len(xs); r += n {
			xr, yr := xs[r:r+n], ys[r:r+n]
			for j, v := range bs {
				yr[j] = xr[j] + v
			}
		}
	case []float64:
		bs, ys := denseData(b).([]float64), y.Data().([]float64)
		for r := 0; r < len(xs); r += n {
			xr, yr := xs[r:r+n], ys[r:r+n]
			for j, v := range bs {
				yr[j] = xr[j] + v
			}
		}
	default:
		return fmt.Errorf("add bias: unsupported data %T", x.Data())
	}
	return nil
}

// colSumOp sums a [batch, n] matrix over its rows, giving [n].
type colSumOp struct {
	pureOp
	out outBuf
}

func (op *colSumOp) Arity() int { return 1 }
func (op *colSumOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 2, Of: a}, G.TensorType{Dims: 1, Of: a})
}
func (op *colSumOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s := in[0].(tensor.Shape)
	if len(s) != 2 {
		return nil, fmt.Errorf("column sum: want a matrix, got shape %v", s)
	}
	return tensor.Shape{s[1]}, nil
}
func (op *colSumOp) Do(in ...G.Value) (G.Value, error) {
	y := op.out.get(in[0].Dtype(), in[0].Shape()[1])
	return y, colSum(in[0], y, false)
}
func (op *colSumOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	return prealloc, colSum(in[0], prealloc, false)
}
func (op *colSumOp) WriteHash(h hash.Hash) { _, _ = h.Write([]byte(op.String())) }
func (op *colSumOp) Hashcode() uint32      { return opHash(op) }
func (op *colSumOp) String() string        { return "ColSum" }

// colSum writes (or adds, when accumulate) the row sum of x into y.
func colSum(x, y G.Value, accumulate bool) error {
	if x.Shape().Dims() != 2 {
		return fmt.Errorf("column sum: want a matrix, got shape %v", x.Shape())
	}
	n := x.Shape()[1]
	switch xs := denseData(x).(type) {
	case []float32:
		cpukern.ColSum(xs, n, y.Data().([]float32), accumulate)
	case []float64:
		ys := y.Data().([]float64)
		if !accumulate {
			clear(ys)
		}
		for r := 0; r < len(xs); r += n {
			for j, v := range xs[r : r+n] {
				ys[j] += v
			}
		}
	default:
		return fmt.Errorf("column sum: unsupported data %T", x.Data())
	}
	return nil
}

// KeepValue returns a copy of x's value made when x is computed. A tape
// machine reuses the memory of intermediate nodes for later in-place ops, so
// an intermediate node's Value() is garbage after a run; a KeepValue node has
// no consumers and keeps its copy until the next run. It is not
// differentiable.
func KeepValue(x *G.Node) (n *G.Node, err error) {
	defer recoverNode("keep value", &n, &err)
	n, err = G.ApplyOp(&keepOp{}, x)
	if err != nil {
		return nil, fmt.Errorf("ops: keep value of %s: %w", x.Name(), err)
	}
	return n, nil
}

// keepOp copies its input.
type keepOp struct {
	elementwiseOp
	out outBuf
}

func (op *keepOp) Do(in ...G.Value) (G.Value, error) {
	return op.UsePreallocDo(op.out.like(in[0]), in...)
}
func (op *keepOp) UsePreallocDo(prealloc G.Value, in ...G.Value) (G.Value, error) {
	switch x := denseData(in[0]).(type) {
	case []float32:
		copy(prealloc.Data().([]float32), x)
	case []float64:
		copy(prealloc.Data().([]float64), x)
	default:
		return nil, fmt.Errorf("keep value: unsupported data %T", x)
	}
	return prealloc, nil
}
func (op *keepOp) WriteHash(h hash.Hash) { _, _ = h.Write([]byte(op.String())) }
func (op *keepOp) Hashcode() uint32      { return opHash(op) }
func (op *keepOp) String() string        { return "KeepValue" }
