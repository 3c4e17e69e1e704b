package policies

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	onnxgo "github.com/owulveryck/onnx-go"
	"gonum.org/v1/gonum/blas"
	blasgonum "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gorgonia.org/tensor"
)

// The pure-Go runtime decodes a model with onnx-go into goBackend, admpo's
// own onnx-go backend, which records the graph's values, initialisers and
// operations. compile then turns the recorded graph, once, into a
// goProgram: a flat list of float32 kernels in topological order over
// row-major [rows, width] buffers. The products run on gonum's pure-Go BLAS
// (its float32 routines are assembly-accelerated on amd64), constructed
// directly so that they never go through a global BLAS that the process may
// have pointed at cgo/OpenBLAS.

// goBLAS is gonum's pure-Go BLAS implementation.
var goBLAS blasgonum.Implementation

// goChunk is the most rows a goProgram runs at once: larger batches run in
// chunks, which bounds the scratch buffers.
const goChunk = 128

// goOpRecord is one operation recorded by the backend: its type,
// attributes, input value nodes (by position; -1 for an omitted optional
// input) and output value node.
type goOpRecord struct {
	typ   string
	attrs map[string]interface{}
	ins   []int64
	out   int64
}

// goNode is a value of the decoded graph (a graph input or output, an
// initialiser or an operation's result). It implements onnx-go's Namer and
// DataCarrier interfaces.
type goNode struct {
	id   int64
	name string
	t    tensor.Tensor
	op   int // index of the producing goOpRecord + 1; 0 when none
}

// ID is the node's ID in the backend's graph.
func (n *goNode) ID() int64 { return n.id }

// SetName sets the node's value name (onnx.Namer).
func (n *goNode) SetName(name string) { n.name = name }

// GetName returns the node's value name (onnx.Namer).
func (n *goNode) GetName() string { return n.name }

// SetTensor attaches a tensor: an initialiser's data or a declared
// input/output placeholder (onnx.DataCarrier).
func (n *goNode) SetTensor(t tensor.Tensor) error {
	n.t = t
	return nil
}

// GetTensor returns the attached tensor (onnx.DataCarrier).
func (n *goNode) GetTensor() tensor.Tensor { return n.t }

// goEdge is an edge as the onnx-go decoder sets it: from an operation's
// output value to its input number pos.
type goEdge struct {
	pos int
	to  int64
}

// goBackend receives a model from onnx-go's decoder (it implements
// onnx.Backend). Besides keeping gonum's directed graph, it records every
// edge in order, so that an operation that reads the same value twice
// keeps both inputs, and every operation with its attributes.
type goBackend struct {
	*simple.WeightedDirectedGraph
	edges map[int64][]goEdge
	ops   []goOpRecord
}

func newGoBackend() *goBackend {
	return &goBackend{
		WeightedDirectedGraph: simple.NewWeightedDirectedGraph(math.MaxFloat64, -1),
		edges:                 map[int64][]goEdge{},
	}
}

// NewNode returns a new value node with a fresh ID (graph.NodeAdder).
func (b *goBackend) NewNode() graph.Node {
	return &goNode{id: b.WeightedDirectedGraph.NewNode().ID()}
}

// SetWeightedEdge records the edge from an operation's output to its input
// number e.Weight() and adds it to the graph (graph.WeightedEdgeAdder).
func (b *goBackend) SetWeightedEdge(e graph.WeightedEdge) {
	from := e.From().ID()
	b.edges[from] = append(b.edges[from], goEdge{pos: int(e.Weight()), to: e.To().ID()})
	if from != e.To().ID() { // a self edge is caught by compile as a cycle
		b.WeightedDirectedGraph.SetWeightedEdge(e)
	}
}

// ApplyOperation records an operation (onnx.OperationCarrier). Only the op
// types in GoRuntimeOps with one output are accepted.
func (b *goBackend) ApplyOperation(op onnxgo.Operation, outs ...graph.Node) error {
	if len(outs) != 1 {
		return fmt.Errorf("%s node with %d outputs: only single-output operations are supported", op.Name, len(outs))
	}
	out, ok := outs[0].(*goNode)
	if !ok {
		return fmt.Errorf("%s node output is a %T, not a node of this backend", op.Name, outs[0])
	}
	if !slices.Contains(GoRuntimeOps, op.Name) {
		return fmt.Errorf("unsupported ONNX op %q (computing %q); the go runtime supports %s",
			op.Name, out.name, strings.Join(GoRuntimeOps, ", "))
	}
	if out.op != 0 {
		return fmt.Errorf("value %q is computed by two nodes (%s and %s)", out.name, b.ops[out.op-1].typ, op.Name)
	}
	es := b.edges[out.id]
	sort.SliceStable(es, func(i, j int) bool { return es[i].pos < es[j].pos })
	ins := make([]int64, 0, len(es))
	for i, e := range es {
		if e.pos != i {
			return fmt.Errorf("%s node computing %q: inputs at positions %v, want 0..%d", op.Name, out.name, positions(es), len(es)-1)
		}
		id := e.to
		if n, ok := b.Node(id).(*goNode); ok && n.name == "" {
			id = -1 // an empty name marks an omitted optional input
		}
		ins = append(ins, id)
	}
	b.ops = append(b.ops, goOpRecord{typ: op.Name, attrs: op.Attributes, ins: ins, out: out.id})
	out.op = len(b.ops)
	return nil
}

func positions(es []goEdge) []int {
	p := make([]int, len(es))
	for i, e := range es {
		p[i] = e.pos
	}
	return p
}

// goInput is a graph input the program is fed: its name and row width.
type goInput struct {
	name  string
	width int
}

// goKind is a kernel of a compiled program.
type goKind uint8

const (
	goGemm    goKind = iota // y = x·W + bias, optionally followed by Relu
	goRelu                  // y = max(x, 0)
	goTanh                  // y = tanh(x)
	goExp                   // y = exp(x)
	goSigmoid               // y = 1/(1+exp(-x))
	goAdd                   // y = a + b (b a row value or a broadcast constant)
	goMul                   // y = a · b
)

// goValue is a value of a compiled program: rows of width values, which
// are a graph input, a kernel's output or (konst != nil) a constant row
// broadcast over all rows (len(konst) is 1 or width).
type goValue struct {
	name  string
	width int
	input int // index into goProgram.inputs, or -1
	konst []float32
}

// goStep is one kernel: it reads values a (and b) and writes value y.
type goStep struct {
	kind goKind
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

// goPlan computes one graph output: the steps it needs, in order.
type goPlan struct {
	name  string
	value int
	steps []int
	needs []bool // per program input
}

// goProgram is a compiled model. It is immutable after compile and can be
// shared; the per-run buffers live in a goScratch.
type goProgram struct {
	inputs []goInput
	inVals []int // value index of each input
	values []goValue
	steps  []goStep
	plans  []goPlan
}

// compileGoModel decodes an ONNX model with onnx-go into a goBackend and
// compiles it for the given inputs and outputs (all float32 [rows, width]).
// Its errors start with "go runtime:"; the caller adds which model.
func compileGoModel(model []byte, inputs []goInput, outputs []string) (prog *goProgram, err error) {
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, fmt.Errorf("go runtime: onnx-go panicked decoding the model: %v", r)
		}
	}()
	be := newGoBackend()
	m := onnxgo.NewModel(be)
	if err := m.UnmarshalBinary(model); err != nil {
		return nil, fmt.Errorf("go runtime: decoding the model with onnx-go: %w", err)
	}
	return be.compile(m, inputs, outputs)
}

// goCompiler holds the state of one compile.
type goCompiler struct {
	b       *goBackend
	m       *onnxgo.Model
	prog    *goProgram
	isInput map[int64]bool
	uses    map[int64]int
	state   map[int64]int // 1: in progress, 2: done
	valueOf map[int64]int
	stepOf  map[int]int // value index -> index of the step writing it
}

// compile turns the recorded graph into a goProgram computing outputs.
func (b *goBackend) compile(m *onnxgo.Model, inputs []goInput, outputs []string) (*goProgram, error) {
	c := &goCompiler{b: b, m: m, prog: &goProgram{inputs: inputs},
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
		n, ok := c.node(in.name)
		if !ok || !c.isInput[n.id] {
			return nil, fmt.Errorf("go runtime: the model has no input %q", in.name)
		}
		if in.width <= 0 {
			return nil, fmt.Errorf("go runtime: input %q has width %d", in.name, in.width)
		}
		if n.t != nil {
			if sh := n.t.Shape(); len(sh) > 0 && sh.TotalSize() != in.width {
				return nil, fmt.Errorf("go runtime: input %q is declared with fixed dims %v, want [batch, %d]", in.name, []int(sh), in.width)
			}
		}
		v := c.addValue(goValue{name: in.name, width: in.width, input: i})
		c.valueOf[n.id] = v
		c.state[n.id] = 2
		c.prog.inVals = append(c.prog.inVals, v)
	}
	for _, name := range outputs {
		n, ok := c.node(name)
		if !ok {
			return nil, fmt.Errorf("go runtime: the model has no value %q", name)
		}
		v, err := c.value(n.id)
		if err != nil {
			return nil, fmt.Errorf("go runtime: computing %q: %w", name, err)
		}
		if c.prog.values[v].konst != nil {
			return nil, fmt.Errorf("go runtime: output %q is a constant", name)
		}
		c.prog.plans = append(c.prog.plans, c.plan(name, v))
	}
	return c.prog, nil
}

func (c *goCompiler) node(name string) (*goNode, bool) {
	gn, ok := c.m.GetNodeByName(name)
	if !ok {
		return nil, false
	}
	n, ok := gn.(*goNode)
	return n, ok
}

func (c *goCompiler) addValue(v goValue) int {
	c.prog.values = append(c.prog.values, v)
	return len(c.prog.values) - 1
}

func (c *goCompiler) addStep(s goStep) int {
	c.prog.steps = append(c.prog.steps, s)
	c.stepOf[s.y] = len(c.prog.steps) - 1
	return s.y
}

// plan collects the steps that value v depends on, in program order.
func (c *goCompiler) plan(name string, v int) goPlan {
	p := goPlan{name: name, value: v, needs: make([]bool, len(c.prog.inputs))}
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
func (c *goCompiler) value(id int64) (int, error) {
	switch c.state[id] {
	case 2:
		return c.valueOf[id], nil
	case 1:
		return 0, fmt.Errorf("the graph has a cycle through %q", c.name(id))
	}
	gn, _ := c.b.Node(id).(*goNode)
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
func (c *goCompiler) producer(id int64) string {
	if n, ok := c.b.Node(id).(*goNode); ok && n.op != 0 {
		return c.b.ops[n.op-1].typ
	}
	return ""
}

func (c *goCompiler) name(id int64) string {
	if n, ok := c.b.Node(id).(*goNode); ok {
		return n.name
	}
	return fmt.Sprint(id)
}

// constant turns an initialiser into a constant row: a scalar or a vector
// broadcast over the rows ([], [1], [w] or [1, w]).
func (c *goCompiler) constant(n *goNode) (int, error) {
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
	return c.addValue(goValue{name: n.name, width: len(data), input: -1, konst: slices.Clone(data)}), nil
}

// matrix returns the float32 data of a 2-D initialiser and its shape.
func (c *goCompiler) matrix(id int64) ([]float32, int, int, error) {
	n, _ := c.b.Node(id).(*goNode)
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
func floatData(n *goNode) ([]float32, []int, error) {
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
func attrs(op *goOpRecord, floats map[string]float32, ints map[string]int64) error {
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
func (c *goCompiler) operation(op *goOpRecord) (int, error) {
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
		return c.value(op.ins[0])
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
		x, err := c.value(op.ins[0])
		if err != nil {
			return 0, err
		}
		xv := c.prog.values[x]
		if xv.konst != nil {
			return 0, wrap(errors.New("the go runtime does not fold constants: the input is a constant"))
		}
		if p := c.producer(op.ins[0]); op.typ == "Relu" && c.uses[op.ins[0]] == 1 && (p == "Gemm" || p == "MatMul") {
			if si, ok := c.stepOf[x]; ok && c.prog.steps[si].kind == goGemm && !c.prog.steps[si].relu {
				c.prog.steps[si].relu = true // fuse: nothing else reads the product
				return x, nil
			}
		}
		kind := map[string]goKind{"Relu": goRelu, "Tanh": goTanh, "Exp": goExp, "Sigmoid": goSigmoid}[op.typ]
		y := c.addValue(goValue{name: c.name(op.out), width: xv.width, input: -1})
		return c.addStep(goStep{kind: kind, a: x, b: -1, y: y}), nil
	case "Add", "Mul":
		if err := attrs(op, nil, nil); err != nil {
			return 0, wrap(err)
		}
		a, err := c.value(op.ins[0])
		if err != nil {
			return 0, err
		}
		b, err := c.value(op.ins[1])
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
		kind := goAdd
		if op.typ == "Mul" {
			kind = goMul
		}
		y := c.addValue(goValue{name: c.name(op.out), width: av.width, input: -1})
		return c.addStep(goStep{kind: kind, a: a, b: b, y: y}), nil
	}
	return 0, wrap(errors.New("no kernel")) // GoRuntimeOps and this switch disagree
}

// gemm compiles Gemm (Y = alpha·A·B + beta·C, B an initialiser, C an
// optional constant row) and MatMul (Y = A·B) for A [batch, k].
func (c *goCompiler) gemm(op *goOpRecord) (int, error) {
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
	x, err := c.value(op.ins[0])
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
	st := goStep{kind: goGemm, a: x, b: -1, k: k, n: n, wT: k > n}
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
		b, err := c.value(op.ins[2])
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
	st.y = c.addValue(goValue{name: c.name(op.out), width: n, input: -1})
	return c.addStep(st), nil
}

// goScratch holds one runner's buffers for a goProgram: it must not be
// used by two goroutines at once.
type goScratch struct {
	rows int         // capacity of the buffers, in rows
	buf  [][]float32 // per value: the kernel output buffer (nil for inputs and constants)
	data [][]float32 // per value: this chunk's rows
	in   [][]float32 // per input: this call's data (nil: zeros)
	zero []float32
}

func (p *goProgram) newScratch() *goScratch {
	s := &goScratch{
		buf:  make([][]float32, len(p.values)),
		data: make([][]float32, len(p.values)),
		in:   make([][]float32, len(p.inputs)),
	}
	s.grow(p, 1)
	return s
}

// grow makes the buffers hold at least rows rows.
func (s *goScratch) grow(p *goProgram, rows int) {
	if rows <= s.rows {
		return
	}
	maxW := 0
	for i, v := range p.values {
		if v.input < 0 && v.konst == nil {
			s.buf[i] = make([]float32, rows*v.width)
		}
	}
	for _, in := range p.inputs {
		maxW = max(maxW, in.width)
	}
	s.zero = make([]float32, rows*maxW)
	s.rows = rows
}

// run computes plan pl for the rows in s.in (every input holds the same
// number of rows, or is nil for zeros) and writes them to out.
func (p *goProgram) run(s *goScratch, pl *goPlan, out []float32) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("policies: go runtime: computing %q: panic: %v", pl.name, r)
		}
	}()
	rows := -1
	for i, in := range p.inputs {
		if !pl.needs[i] || s.in[i] == nil {
			continue
		}
		if len(s.in[i])%in.width != 0 || (rows >= 0 && len(s.in[i]) != rows*in.width) {
			return fmt.Errorf("policies: go runtime: input %q has %d values, not the same number of rows of %d as the other inputs", in.name, len(s.in[i]), in.width)
		}
		rows = len(s.in[i]) / in.width
	}
	ow := p.values[pl.value].width
	if rows < 0 {
		rows = len(out) / ow
	}
	if len(out) != rows*ow {
		return fmt.Errorf("policies: go runtime: %q needs room for %d values, the output has %d", pl.name, rows*ow, len(out))
	}
	for lo := 0; lo < rows; lo += goChunk {
		r := min(goChunk, rows-lo)
		s.grow(p, r)
		for i, in := range p.inputs {
			v := p.inVals[i]
			switch {
			case !pl.needs[i]:
				s.data[v] = nil
			case s.in[i] == nil:
				s.data[v] = s.zero[:r*in.width]
			default:
				s.data[v] = s.in[i][lo*in.width : (lo+r)*in.width]
			}
		}
		for i, v := range p.values {
			switch {
			case v.konst != nil:
				s.data[i] = v.konst
			case v.input < 0:
				s.data[i] = s.buf[i][:r*v.width]
			}
		}
		for _, si := range pl.steps {
			p.steps[si].exec(s, r)
		}
		copy(out[lo*ow:(lo+r)*ow], s.data[pl.value])
	}
	return nil
}

// exec runs the kernel on r rows.
func (st *goStep) exec(s *goScratch, r int) {
	x, y := s.data[st.a], s.data[st.y]
	switch st.kind {
	case goGemm:
		st.gemm(x, y, r)
	case goRelu:
		for i, v := range x {
			y[i] = max(v, 0)
		}
	case goTanh:
		for i, v := range x {
			y[i] = float32(math.Tanh(float64(v)))
		}
	case goExp:
		for i, v := range x {
			y[i] = float32(math.Exp(float64(v)))
		}
	case goSigmoid:
		for i, v := range x {
			y[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	case goAdd, goMul:
		b := s.data[st.b]
		w := len(y) / r
		switch {
		case len(b) == 1 && st.kind == goAdd:
			for i, v := range x {
				y[i] = v + b[0]
			}
		case len(b) == 1:
			for i, v := range x {
				y[i] = v * b[0]
			}
		case len(b) == len(y) && st.kind == goAdd:
			for i, v := range x {
				y[i] = v + b[i]
			}
		case len(b) == len(y):
			for i, v := range x {
				y[i] = v * b[i]
			}
		case st.kind == goAdd: // a constant row, r > 1
			for o := 0; o < len(y); o += w {
				yr, xr := y[o:o+w], x[o:o+w]
				for j, v := range b[:w] {
					yr[j] = xr[j] + v
				}
			}
		default:
			for o := 0; o < len(y); o += w {
				yr, xr := y[o:o+w], x[o:o+w]
				for j, v := range b[:w] {
					yr[j] = xr[j] * v
				}
			}
		}
	}
}

// gemm computes y [r, n] = x [r, k]·W + bias (then Relu when fused).
func (st *goStep) gemm(x, y []float32, r int) {
	k, n := st.k, st.n
	var beta float32
	if st.bias != nil {
		for o := 0; o < len(y); o += n {
			copy(y[o:o+n], st.bias)
		}
		beta = 1
	} else if r == 1 && !st.wT {
		clear(y)
	}
	switch {
	case r == 1 && st.wT:
		goBLAS.Sgemv(blas.NoTrans, n, k, 1, st.w, k, x, 1, beta, y, 1)
	case r == 1:
		for i, v := range x {
			if v != 0 {
				goBLAS.Saxpy(n, v, st.w[i*n:(i+1)*n], 1, y, 1)
			}
		}
	case st.wT:
		goBLAS.Sgemm(blas.NoTrans, blas.Trans, r, n, k, 1, x, k, st.w, k, beta, y, n)
	default:
		goBLAS.Sgemm(blas.NoTrans, blas.NoTrans, r, n, k, 1, x, k, st.w, n, beta, y, n)
	}
	if st.relu {
		for i, v := range y {
			y[i] = max(v, 0)
		}
	}
}
