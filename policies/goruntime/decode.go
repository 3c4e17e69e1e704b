package goruntime

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	onnxgo "github.com/owulveryck/onnx-go"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gorgonia.org/tensor"
)

// opRecord is one operation recorded by the backend: its type,
// attributes, input value nodes (by position; -1 for an omitted optional
// input) and output value node.
type opRecord struct {
	typ   string
	attrs map[string]interface{}
	ins   []int64
	out   int64
}

// node is a value of the decoded graph (a graph input or output, an
// initialiser or an operation's result). It implements onnx-go's Namer and
// DataCarrier interfaces.
type node struct {
	id   int64
	name string
	t    tensor.Tensor
	op   int // index of the producing opRecord + 1; 0 when none
}

// ID is the node's ID in the backend's graph.
func (n *node) ID() int64 { return n.id }

// SetName sets the node's value name (onnx.Namer).
func (n *node) SetName(name string) { n.name = name }

// GetName returns the node's value name (onnx.Namer).
func (n *node) GetName() string { return n.name }

// SetTensor attaches a tensor: an initialiser's data or a declared
// input/output placeholder (onnx.DataCarrier).
func (n *node) SetTensor(t tensor.Tensor) error {
	n.t = t
	return nil
}

// GetTensor returns the attached tensor (onnx.DataCarrier).
func (n *node) GetTensor() tensor.Tensor { return n.t }

// edge is an edge as the onnx-go decoder sets it: from an operation's
// output value to its input number pos.
type edge struct {
	pos int
	to  int64
}

// backend receives a model from onnx-go's decoder (it implements
// onnx.Backend). Besides keeping gonum's directed graph, it records every
// edge in order, so that an operation that reads the same value twice
// keeps both inputs, and every operation with its attributes.
type backend struct {
	*simple.WeightedDirectedGraph
	edges map[int64][]edge
	ops   []opRecord
}

func newBackend() *backend {
	return &backend{
		WeightedDirectedGraph: simple.NewWeightedDirectedGraph(math.MaxFloat64, -1),
		edges:                 map[int64][]edge{},
	}
}

// NewNode returns a new value node with a fresh ID (graph.NodeAdder).
func (b *backend) NewNode() graph.Node {
	return &node{id: b.WeightedDirectedGraph.NewNode().ID()}
}

// SetWeightedEdge records the edge from an operation's output to its input
// number e.Weight() and adds it to the graph (graph.WeightedEdgeAdder).
func (b *backend) SetWeightedEdge(e graph.WeightedEdge) {
	from := e.From().ID()
	b.edges[from] = append(b.edges[from], edge{pos: int(e.Weight()), to: e.To().ID()})
	if from != e.To().ID() { // a self edge is caught by compile as a cycle
		b.WeightedDirectedGraph.SetWeightedEdge(e)
	}
}

// ApplyOperation records an operation (onnx.OperationCarrier). Only the op
// types in Ops with one output are accepted.
func (b *backend) ApplyOperation(op onnxgo.Operation, outs ...graph.Node) error {
	if len(outs) != 1 {
		return fmt.Errorf("%s node with %d outputs: only single-output operations are supported", op.Name, len(outs))
	}
	out, ok := outs[0].(*node)
	if !ok {
		return fmt.Errorf("%s node output is a %T, not a node of this backend", op.Name, outs[0])
	}
	if !slices.Contains(ops, op.Name) {
		return fmt.Errorf("unsupported ONNX op %q (computing %q); the go runtime supports %s",
			op.Name, out.name, strings.Join(ops, ", "))
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
		if n, ok := b.Node(id).(*node); ok && n.name == "" {
			id = -1 // an empty name marks an omitted optional input
		}
		ins = append(ins, id)
	}
	b.ops = append(b.ops, opRecord{typ: op.Name, attrs: op.Attributes, ins: ins, out: out.id})
	out.op = len(b.ops)
	return nil
}

func positions(es []edge) []int {
	p := make([]int, len(es))
	for i, e := range es {
		p[i] = e.pos
	}
	return p
}
