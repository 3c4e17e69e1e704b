package goruntime

import (
	"errors"
	"fmt"
	"slices"

	onnxgo "github.com/owulveryck/onnx-go"

	"gorgonia.org/tensor"
)

// Input is a graph input a Program is fed: its name and row width (every
// input is float32 [rows, Width]).
type Input struct {
	Name  string
	Width int
}

// kernel is a kernel of a compiled program.
type kernel uint8

const (
	kernelGemm    kernel = iota // y = x·W + bias, optionally followed by Relu
	kernelRelu                  // y = max(x, 0)
	kernelTanh                  // y = tanh(x)
	kernelExp                   // y = exp(x)
	kernelSigmoid               // y = 1/(1+exp(-x))
	kernelAdd                   // y = a + b (b a row value or a broadcast constant)
	kernelMul                   // y = a · b
)

// value is a value of a compiled program: rows of width values, which
// are a graph input, a kernel's output or (konst != nil) a constant row
// broadcast over all rows (len(konst) is 1 or width).
type value struct {
	name  string
	width int
	input int // index into Program.inputs, or -1
	konst []float32
}

// step is one kernel: it reads values a (and b) and writes value y.
type step struct {
	kind kernel
	a, b int // value indices; b is -1 for unary kernels
	y    int
	// Gemm: x [rows, k] times a k×n matrix stored as w [k, n] (wT false) or
	// as its transpose [n, k] (wT true), alpha folded in; bias [n] (beta
	// folded in) or nil; relu when a Relu was fused into the kernel.
	k, n int
	w    []float32
	wT   bool
	bias []float32
	relu bool
}

// plan computes one graph output: the steps it needs, in order.
type plan struct {
	name  string
	value int
	steps []int
	needs []bool // per program input
}

// Program is a compiled model. It is immutable after compile and can be
// shared; the per-run buffers live in a scratch.
type Program struct {
	inputs []Input
	inVals []int // value index of each input
	values []value
	steps  []step
	plans  []plan
}

// Compile decodes an ONNX model with onnx-go into a backend and
// compiles it for the given inputs and outputs (all float32 [rows, width]).
// Its errors start with "goruntime:"; the caller adds which model.
func Compile(model []byte, inputs []Input, outputs []string) (prog *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, fmt.Errorf("goruntime: onnx-go panicked decoding the model: %v", r)
		}
	}()
	be := newBackend()
	m := onnxgo.NewModel(be)
	if err := m.UnmarshalBinary(model); err != nil {
		return nil, fmt.Errorf("goruntime: decoding the model with onnx-go: %w", err)
	}
	return be.compile(m, inputs, outputs)
}

// compiler holds the state of one compile.
type compiler struct {
	b       *backend
	m       *onnxgo.Model
	prog    *Program
	isInput map[int64]bool
	uses    map[int64]int
	state   map[int64]int // 1: in progress, 2: done
	valueOf map[int64]int
	stepOf  map[int]int // value index -> index of the step writing it
}

// compile turns the recorded graph into a Program computing outputs.
func (b *backend) compile(m *onnxgo.Model, inputs []Input, outputs []string) (*Program, error) {
	c := &compiler{b: b, m: m, prog: &Program{inputs: inputs},
		isInput: map[int64]bool{}, uses: map[int64]int{}, state: map[int64]int{},
		valueOf: map[int64]int{}, stepOf: map[int]int{}}
	for _, id := range m.Input {
		c.isInput[id] = true
	}
	for _, op := range b.ops {
		for _, id := range op.ins {
			c.uses[id]++
		}
	}
	for _, id := range m.Output {
		c.uses[id]++
	}
	for i, in := range inputs {
		n, ok := c.lookup(in.Name)
		if !ok || !c.isInput[n.id] {
			return nil, fmt.Errorf("goruntime: the model has no input %q", in.Name)
		}
		if in.Width <= 0 {
			return nil, fmt.Errorf("goruntime: input %q has width %d", in.Name, in.Width)
		}
		if n.t != nil {
			if sh := n.t.Shape(); len(sh) > 0 && sh.TotalSize() != in.Width {
				return nil, fmt.Errorf("goruntime: input %q is declared with fixed dims %v, want [batch, %d]", in.Name, []int(sh), in.Width)
			}
		}
		v := c.addValue(value{name: in.Name, width: in.Width, input: i})
		c.valueOf[n.id] = v
		c.state[n.id] = 2
		c.prog.inVals = append(c.prog.inVals, v)
	}
	for _, name := range outputs {
		n, ok := c.lookup(name)
		if !ok {
			return nil, fmt.Errorf("goruntime: the model has no value %q", name)
		}
		v, err := c.valueIndex(n.id)
		if err != nil {
			return nil, fmt.Errorf("goruntime: computing %q: %w", name, err)
		}
		if c.prog.values[v].konst != nil {
			return nil, fmt.Errorf("goruntime: output %q is a constant", name)
		}
		c.prog.plans = append(c.prog.plans, c.newPlan(name, v))
	}
	return c.prog, nil
}

func (c *compiler) lookup(name string) (*node, bool) {
	gn, ok := c.m.GetNodeByName(name)
	if !ok {
		return nil, false
	}
	n, ok := gn.(*node)
	return n, ok
}

func (c *compiler) addValue(v value) int {
	c.prog.values = append(c.prog.values, v)
	return len(c.prog.values) - 1
}

func (c *compiler) addStep(s step) int {
	c.prog.steps = append(c.prog.steps, s)
	c.stepOf[s.y] = len(c.prog.steps) - 1
	return s.y
}

// plan collects the steps that value v depends on, in program order.
func (c *compiler) newPlan(name string, v int) plan {
	p := plan{name: name, value: v, needs: make([]bool, len(c.prog.inputs))}
	need := make([]bool, len(c.prog.values))
	need[v] = true
	var steps []int
	for si := len(c.prog.steps) - 1; si >= 0; si-- {
		s := &c.prog.steps[si]
		if !need[s.y] {
			continue
		}
		steps = append(steps, si)
		need[s.a] = true
		if s.b >= 0 {
			need[s.b] = true
		}
	}
	slices.Reverse(steps)
	p.steps = steps
	for i, iv := range c.prog.inVals {
		p.needs[i] = need[iv]
	}
	return p
}

// value returns the program value of graph node id, compiling the kernels
// it depends on first (a depth-first walk, so steps come out in
// topological order).
func (c *compiler) valueIndex(id int64) (int, error) {
	switch c.state[id] {
	case 2:
		return c.valueOf[id], nil
	case 1:
		return 0, fmt.Errorf("the graph has a cycle through %q", c.name(id))
	}
	gn, _ := c.b.Node(id).(*node)
	if gn == nil {
		return 0, fmt.Errorf("no value node %d", id)
	}
	c.state[id] = 1
	var v int
	var err error
	switch {
	case gn.op != 0:
		v, err = c.operation(&c.b.ops[gn.op-1])
	case c.isInput[id]:
		err = fmt.Errorf("the model input %q is not fed by the go runtime", gn.name)
	default:
		v, err = c.constant(gn)
	}
	if err != nil {
		return 0, err
	}
	c.state[id] = 2
	c.valueOf[id] = v
	return v, nil
}

// producer is the op type computing node id, or "".
func (c *compiler) producer(id int64) string {
	if n, ok := c.b.Node(id).(*node); ok && n.op != 0 {
		return c.b.ops[n.op-1].typ
	}
	return ""
}

func (c *compiler) name(id int64) string {
	if n, ok := c.b.Node(id).(*node); ok {
		return n.name
	}
	return fmt.Sprint(id)
}

// constant turns an initialiser into a constant row: a scalar or a vector
// broadcast over the rows ([], [1], [w] or [1, w]).
func (c *compiler) constant(n *node) (int, error) {
	if n.t == nil {
		return 0, fmt.Errorf("value %q is neither computed, an input nor an initialiser", n.name)
	}
	data, sh, err := floatData(n)
	if err != nil {
		return 0, err
	}
	if len(sh) > 2 || (len(sh) == 2 && sh[0] != 1) {
		return 0, fmt.Errorf("initialiser %q has shape %v: the go runtime broadcasts only scalars and rows ([], [n], [1, n]) over the batch", n.name, sh)
	}
	return c.addValue(value{name: n.name, width: len(data), input: -1, konst: slices.Clone(data)}), nil
}

// matrix returns the float32 data of a 2-D initialiser and its shape.
func (c *compiler) matrix(id int64) ([]float32, int, int, error) {
	n, _ := c.b.Node(id).(*node)
	if n == nil || n.op != 0 || c.isInput[id] || n.t == nil {
		return nil, 0, 0, fmt.Errorf("the weight matrix %q must be an initialiser", c.name(id))
	}
	d, sh, err := floatData(n)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(sh) != 2 {
		return nil, 0, 0, fmt.Errorf("weight matrix %q has shape %v, want 2-D", n.name, sh)
	}
	return d, sh[0], sh[1], nil
}

// floatData returns the values and shape of a node's float32 tensor.
func floatData(n *node) ([]float32, []int, error) {
	if n.t.Dtype() != tensor.Float32 {
		return nil, nil, fmt.Errorf("initialiser %q is %v, the go runtime computes in float32", n.name, n.t.Dtype())
	}
	var data []float32
	switch d := n.t.Data().(type) {
	case []float32:
		data = d
	case float32:
		data = []float32{d}
	default:
		return nil, nil, fmt.Errorf("initialiser %q holds %T", n.name, d)
	}
	sh := []int(n.t.Shape())
	size := 1
	for _, d := range sh {
		size *= d
	}
	if size != len(data) || size == 0 {
		return nil, nil, fmt.Errorf("initialiser %q has %d values for shape %v", n.name, len(data), sh)
	}
	return data, sh, nil
}

// attrs reads an operation's attributes: floats and ints with defaults;
// any attribute not in the defaults is an error.
func attrs(op *opRecord, floats map[string]float32, ints map[string]int64) error {
	for k, v := range op.attrs {
		switch x := v.(type) {
		case float32:
			if _, ok := floats[k]; ok {
				floats[k] = x
				continue
			}
		case int64:
			if _, ok := ints[k]; ok {
				ints[k] = x
				continue
			}
		}
		return fmt.Errorf("%s attribute %s=%v is not supported", op.typ, k, v)
	}
	return nil
}

// operation compiles one recorded operation.
func (c *compiler) operation(op *opRecord) (int, error) {
	want := map[string]int{"Gemm": 3, "MatMul": 2, "Add": 2, "Mul": 2}[op.typ]
	if want == 0 {
		want = 1
	}
	nin := len(op.ins)
	if op.typ == "Gemm" && nin == 2 {
		nin = 3 // C is optional
	}
	if nin != want {
		return 0, fmt.Errorf("%s %q has %d inputs, want %d", op.typ, c.name(op.out), len(op.ins), want)
	}
	for i, id := range op.ins {
		if id < 0 && !(op.typ == "Gemm" && i == 2) {
			return 0, fmt.Errorf("%s %q: input %d is missing", op.typ, c.name(op.out), i)
		}
	}
	wrap := func(err error) error { return fmt.Errorf("%s %q: %w", op.typ, c.name(op.out), err) }
	switch op.typ {
	case "Identity":
		if err := attrs(op, nil, nil); err != nil {
			return 0, wrap(err)
		}
		return c.valueIndex(op.ins[0])
	case "Gemm", "MatMul":
		v, err := c.gemm(op)
		if err != nil {
			return 0, wrap(err)
		}
		return v, nil
	case "Relu", "Tanh", "Exp", "Sigmoid":
		if err := attrs(op, nil, nil); err != nil {
			return 0, wrap(err)
		}
		x, err := c.valueIndex(op.ins[0])
		if err != nil {
			return 0, err
		}
		xv := c.prog.values[x]
		if xv.konst != nil {
			return 0, wrap(errors.New("the go runtime does not fold constants: the input is a constant"))
		}
		if p := c.producer(op.ins[0]); op.typ == "Relu" && c.uses[op.ins[0]] == 1 && (p == "Gemm" || p == "MatMul") {
			if si, ok := c.stepOf[x]; ok && c.prog.steps[si].kind == kernelGemm && !c.prog.steps[si].relu {
				c.prog.steps[si].relu = true // fuse: nothing else reads the product
				return x, nil
			}
		}
		kind := map[string]kernel{"Relu": kernelRelu, "Tanh": kernelTanh, "Exp": kernelExp, "Sigmoid": kernelSigmoid}[op.typ]
		y := c.addValue(value{name: c.name(op.out), width: xv.width, input: -1})
		return c.addStep(step{kind: kind, a: x, b: -1, y: y}), nil
	case "Add", "Mul":
		if err := attrs(op, nil, nil); err != nil {
			return 0, wrap(err)
		}
		a, err := c.valueIndex(op.ins[0])
		if err != nil {
			return 0, err
		}
		b, err := c.valueIndex(op.ins[1])
		if err != nil {
			return 0, err
		}
		av, bv := c.prog.values[a], c.prog.values[b]
		if av.konst != nil { // both ops commute: keep the row value first
			a, b, av, bv = b, a, bv, av
		}
		switch {
		case av.konst != nil:
			return 0, wrap(errors.New("the go runtime does not fold constants: both inputs are constants"))
		case bv.konst == nil && bv.width != av.width:
			return 0, wrap(fmt.Errorf("inputs [batch, %d] and [batch, %d] do not broadcast", av.width, bv.width))
		case bv.konst != nil && bv.width != 1 && bv.width != av.width:
			return 0, wrap(fmt.Errorf("constant %q of %d values does not broadcast against [batch, %d]", bv.name, bv.width, av.width))
		}
		kind := kernelAdd
		if op.typ == "Mul" {
			kind = kernelMul
		}
		y := c.addValue(value{name: c.name(op.out), width: av.width, input: -1})
		return c.addStep(step{kind: kind, a: a, b: b, y: y}), nil
	}
	return 0, wrap(errors.New("no kernel")) // ops and this switch disagree
}

// gemm compiles Gemm (Y = alpha·A·B + beta·C, B an initialiser, C an
// optional constant row) and MatMul (Y = A·B) for A [batch, k].
func (c *compiler) gemm(op *opRecord) (int, error) {
	floats := map[string]float32{"alpha": 1, "beta": 1}
	ints := map[string]int64{"transA": 0, "transB": 0}
	if op.typ == "Gemm" {
		if err := attrs(op, floats, ints); err != nil {
			return 0, err
		}
	} else if err := attrs(op, nil, nil); err != nil {
		return 0, err
	}
	if ints["transA"] != 0 {
		return 0, errors.New("transA=1 is not supported (A is the batch)")
	}
	x, err := c.valueIndex(op.ins[0])
	if err != nil {
		return 0, err
	}
	xv := c.prog.values[x]
	if xv.konst != nil {
		return 0, errors.New("the go runtime does not fold constants: A is a constant")
	}
	w, r, cl, err := c.matrix(op.ins[1])
	if err != nil {
		return 0, err
	}
	k, n := r, cl
	if ints["transB"] != 0 {
		k, n = cl, r
	}
	if k != xv.width {
		return 0, fmt.Errorf("A is [batch, %d] but B is %d×%d (transB=%d)", xv.width, r, cl, ints["transB"])
	}
	// Batch 1 runs a matrix-vector product. With k <= n it is a sum of k
	// rows of w [k, n] scaled by x (rows for zero inputs, frequent after a
	// Relu, are skipped); with k > n it is n dot products of length k over
	// the transpose [n, k]. Larger batches use the same layout in Sgemm.
	alpha := floats["alpha"]
	st := step{kind: kernelGemm, a: x, b: -1, k: k, n: n, wT: k > n}
	st.w = make([]float32, k*n)
	for i := 0; i < r; i++ {
		for j := 0; j < cl; j++ {
			ki, nj := i, j // B[i, j] = W[ki, nj]
			if ints["transB"] != 0 {
				ki, nj = j, i
			}
			if st.wT {
				st.w[nj*k+ki] = alpha * w[i*cl+j]
			} else {
				st.w[ki*n+nj] = alpha * w[i*cl+j]
			}
		}
	}
	if len(op.ins) == 3 && op.ins[2] >= 0 {
		b, err := c.valueIndex(op.ins[2])
		if err != nil {
			return 0, err
		}
		bv := c.prog.values[b]
		if bv.konst == nil {
			return 0, fmt.Errorf("C %q must be a constant: the go runtime does not add a batch-dependent C", bv.name)
		}
		if bv.width != 1 && bv.width != n {
			return 0, fmt.Errorf("C %q of %d values does not broadcast against [batch, %d]", bv.name, bv.width, n)
		}
		st.bias = make([]float32, n)
		for j := range st.bias {
			st.bias[j] = floats["beta"] * bv.konst[j%bv.width]
		}
	}
	st.y = c.addValue(value{name: c.name(op.out), width: n, input: -1})
	return c.addStep(st), nil
}
