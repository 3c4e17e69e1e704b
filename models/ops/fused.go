package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file is a small framework for hand-written ("fused") Gorgonia ops:
// a kernel computes a float32 function of several tensors and, in one
// backward pass, the gradients with respect to all its differentiable inputs.
// Gorgonia ops have a single output, so the backward node returns every
// gradient packed into one flat vector, and cheap unpack nodes hand out
// zero-copy views of its pieces. Fused ops keep their output and scratch
// buffers between runs: a graph built with them runs without allocating
// large tensors, but one op instance serves one graph only.

// fusedKernel is a differentiable float32 function of float32 tensors.
type fusedKernel interface {
	// name identifies the kernel in graph dumps and errors.
	name() string
	// outShape gives the output shape for the input shapes (empty for a scalar).
	outShape(in []tensor.Shape) (tensor.Shape, error)
	// diffWRT tells which inputs gradients are computed for.
	diffWRT() []bool
	// forward writes the output into out (len = outShape's size); it may
	// keep what backward needs in the kernel.
	forward(in [][]float32, shapes []tensor.Shape, out []float32) error
	// backward writes the gradient of every differentiable input into
	// gin[i] (same length as in[i]; gin[i] is nil for the others) given the
	// output's gradient gout. It runs after forward on the same inputs.
	backward(in [][]float32, shapes []tensor.Shape, out, gout []float32, gin [][]float32) error
}

var fusedIDs atomic.Uint64

// applyFused adds a fused op with kernel k on the given inputs to their graph.
func applyFused(k fusedKernel, inputs ...*G.Node) (*G.Node, error) {
	dims := make([]int, len(inputs))
	shapes := make([]tensor.Shape, len(inputs))
	for i, n := range inputs {
		if n.Dtype() != tensor.Float32 {
			return nil, fmt.Errorf("ops: %s input %d (%s) is %v, want float32", k.name(), i, n.Name(), n.Dtype())
		}
		dims[i] = n.Shape().Dims()
		shapes[i] = n.Shape().Clone()
	}
	os, err := k.outShape(shapes)
	if err != nil {
		return nil, fmt.Errorf("ops: %s: %w", k.name(), err)
	}
	op := &fusedOp{k: k, id: fusedIDs.Add(1), inDims: dims, outDims: os.Dims()}
	out, err := G.ApplyOp(op, inputs...)
	if err != nil {
		return nil, fmt.Errorf("ops: applying %s: %w", k.name(), err)
	}
	return out, nil
}

func f32Type(dims int) hm.Type {
	if dims == 0 {
		return tensor.Float32
	}
	return G.TensorType{Dims: dims, Of: tensor.Float32}
}

// ValueF32 returns the float32 data behind a Gorgonia value (a dense
// tensor, copied to row-major order if it is a view, or an F32 scalar) and
// its shape.
func ValueF32(v G.Value) ([]float32, tensor.Shape, error) {
	switch t := v.(type) {
	case *tensor.Dense:
		if t.Dtype() != tensor.Float32 {
			return nil, nil, fmt.Errorf("value is %v, want float32", t.Dtype())
		}
		if t.RequiresIterator() {
			m, ok := t.Materialize().(*tensor.Dense)
			if !ok {
				return nil, nil, fmt.Errorf("materialising a view gave %T", t.Materialize())
			}
			t = m
		}
		return t.Float32s(), t.Shape(), nil
	case *G.F32:
		return []float32{float32(*t)}, tensor.Shape{}, nil
	default:
		return nil, nil, fmt.Errorf("unsupported value type %T", v)
	}
}

func valuesF32(vs []G.Value) ([][]float32, []tensor.Shape, error) {
	data := make([][]float32, len(vs))
	shapes := make([]tensor.Shape, len(vs))
	for i, v := range vs {
		d, s, err := ValueF32(v)
		if err != nil {
			return nil, nil, fmt.Errorf("input %d: %w", i, err)
		}
		data[i], shapes[i] = d, s
	}
	return data, shapes, nil
}

// reuseDense returns buf if it has the shape, else a new float32 tensor.
func reuseDense(buf *tensor.Dense, shape tensor.Shape) *tensor.Dense {
	if buf != nil && buf.Shape().Eq(shape) {
		return buf
	}
	return tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape.Clone()...))
}

// fusedOp is the forward op of a kernel.
type fusedOp struct {
	pureOp
	k       fusedKernel
	id      uint64
	inDims  []int
	outDims int
	buf     *tensor.Dense
}

func (op *fusedOp) Arity() int { return len(op.inDims) }

func (op *fusedOp) Type() hm.Type {
	ts := make([]hm.Type, 0, len(op.inDims)+1)
	for _, d := range op.inDims {
		ts = append(ts, f32Type(d))
	}
	return hm.NewFnType(append(ts, f32Type(op.outDims))...)
}

func (op *fusedOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	shapes, err := G.DimSizersToShapes(in)
	if err != nil {
		return nil, err
	}
	return op.k.outShape(shapes)
}

func (op *fusedOp) Do(vs ...G.Value) (G.Value, error) {
	data, shapes, err := valuesF32(vs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.k.name(), err)
	}
	os, err := op.k.outShape(shapes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.k.name(), err)
	}
	if len(os) == 0 {
		var y [1]float32
		if err := op.k.forward(data, shapes, y[:]); err != nil {
			return nil, fmt.Errorf("%s forward: %w", op.k.name(), err)
		}
		return G.NewF32(y[0]), nil
	}
	op.buf = reuseDense(op.buf, os)
	if err := op.k.forward(data, shapes, op.buf.Float32s()); err != nil {
		return nil, fmt.Errorf("%s forward: %w", op.k.name(), err)
	}
	return op.buf, nil
}

func (op *fusedOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "fused:%s#%d", op.k.name(), op.id)
}
func (op *fusedOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *fusedOp) String() string { return op.k.name() }

// DiffWRT implements G.SDOp.
func (op *fusedOp) DiffWRT(n int) []bool {
	d := op.k.diffWRT()
	out := make([]bool, n)
	copy(out, d)
	return out
}

// SymDiff implements G.SDOp: one packed backward node plus one unpack view
// per differentiable input.
func (op *fusedOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	diff := op.k.diffWRT()
	offsets := make([]int, len(inputs))
	total := 0
	for i, n := range inputs {
		offsets[i] = total
		if i < len(diff) && diff[i] {
			total += n.Shape().TotalSize()
		}
	}
	bop := &fusedGradOp{fwd: op, total: total, offsets: offsets}
	children := append(append(G.Nodes{}, inputs...), output, grad)
	packed, err := G.ApplyOp(bop, children...)
	if err != nil {
		return nil, fmt.Errorf("ops: %s backward: %w", op.k.name(), err)
	}
	out := make(G.Nodes, len(inputs))
	for i, n := range inputs {
		if i >= len(diff) || !diff[i] {
			continue
		}
		uop := &unpackOp{name: op.k.name(), id: op.id, index: i, off: offsets[i], shape: n.Shape().Clone()}
		if out[i], err = G.ApplyOp(uop, packed); err != nil {
			return nil, fmt.Errorf("ops: %s gradient %d: %w", op.k.name(), i, err)
		}
	}
	return out, nil
}

// fusedGradOp computes all of a kernel's input gradients into one vector.
// Its inputs are the forward inputs, the forward output and its gradient.
type fusedGradOp struct {
	pureOp
	fwd     *fusedOp
	total   int
	offsets []int
	buf     *tensor.Dense
	gin     [][]float32
}

func (op *fusedGradOp) Arity() int { return len(op.fwd.inDims) + 2 }

func (op *fusedGradOp) Type() hm.Type {
	ts := make([]hm.Type, 0, len(op.fwd.inDims)+3)
	for _, d := range op.fwd.inDims {
		ts = append(ts, f32Type(d))
	}
	ts = append(ts, f32Type(op.fwd.outDims), f32Type(op.fwd.outDims), f32Type(1))
	return hm.NewFnType(ts...)
}

func (op *fusedGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.total}, nil
}

func (op *fusedGradOp) Do(vs ...G.Value) (G.Value, error) {
	n := len(op.fwd.inDims)
	data, shapes, err := valuesF32(vs)
	if err != nil {
		return nil, fmt.Errorf("%s backward: %w", op.fwd.k.name(), err)
	}
	op.buf = reuseDense(op.buf, tensor.Shape{op.total})
	packed := op.buf.Float32s()
	diff := op.fwd.k.diffWRT()
	if op.gin == nil {
		op.gin = make([][]float32, n)
	}
	for i := 0; i < n; i++ {
		op.gin[i] = nil
		if i < len(diff) && diff[i] {
			op.gin[i] = packed[op.offsets[i] : op.offsets[i]+len(data[i])]
		}
	}
	gout := data[n+1]
	if len(gout) != len(data[n]) {
		return nil, fmt.Errorf("%s backward: output gradient has %d values, output %d", op.fwd.k.name(), len(gout), len(data[n]))
	}
	if err := op.fwd.k.backward(data[:n], shapes[:n], data[n], gout, op.gin); err != nil {
		return nil, fmt.Errorf("%s backward: %w", op.fwd.k.name(), err)
	}
	return op.buf, nil
}

func (op *fusedGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "fusedgrad:%s#%d", op.fwd.k.name(), op.fwd.id)
}
func (op *fusedGradOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *fusedGradOp) String() string { return op.fwd.k.name() + "Grad" }

// unpackOp returns a zero-copy view of one gradient inside a packed vector.
type unpackOp struct {
	pureOp
	name  string
	id    uint64
	index int
	off   int
	shape tensor.Shape
}

func (op *unpackOp) Arity() int { return 1 }
func (op *unpackOp) Type() hm.Type {
	return hm.NewFnType(f32Type(1), f32Type(op.shape.Dims()))
}
func (op *unpackOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op *unpackOp) Do(vs ...G.Value) (G.Value, error) {
	data, _, err := ValueF32(vs[0])
	if err != nil {
		return nil, fmt.Errorf("unpack %s[%d]: %w", op.name, op.index, err)
	}
	size := op.shape.TotalSize()
	if op.off+size > len(data) {
		return nil, fmt.Errorf("unpack %s[%d]: packed vector too short", op.name, op.index)
	}
	if op.shape.Dims() == 0 {
		return G.NewF32(data[op.off]), nil
	}
	return tensor.New(tensor.WithShape(op.shape.Clone()...), tensor.WithBacking(data[op.off:op.off+size])), nil
}
func (op *unpackOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "unpack:%s#%d[%d]", op.name, op.id, op.index)
}
func (op *unpackOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *unpackOp) String() string { return fmt.Sprintf("unpack(%s,%d)", op.name, op.index) }
