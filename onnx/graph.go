package onnx

import (
	"fmt"
	"sort"
	"strconv"
)

// Graph builds one ONNX graph: typed inputs and outputs, initializers and
// nodes whose outputs get fresh, unique value names. Methods never panic;
// the first error sticks and is returned by Err and Model.
type Graph struct {
	name, doc       string
	nodes           []node
	inits           []tensor
	inputs, outputs []valueInfo
	defined         map[string]bool
	counters        map[string]int
	err             error
}

// Batch is the symbolic batch dimension of every exported input and output.
var Batch = Dim{Param: "batch"}

// Fixed returns a dimension of fixed size n.
func Fixed(n int) Dim { return Dim{Value: int64(n)} }

// NewGraph returns an empty graph with the given name and doc string.
func NewGraph(name, doc string) *Graph {
	return &Graph{name: name, doc: doc, defined: map[string]bool{}, counters: map[string]int{}}
}

// Err returns the first error met while building, or nil.
func (g *Graph) Err() error { return g.err }

func (g *Graph) fail(format string, args ...any) {
	if g.err == nil {
		g.err = fmt.Errorf("onnx: graph %q: "+format, append([]any{g.name}, args...)...)
	}
}

// Fresh returns a value name starting with prefix that is not used yet in
// the graph, and reserves it.
func (g *Graph) Fresh(prefix string) string {
	for {
		g.counters[prefix]++
		n := prefix + "_" + strconv.Itoa(g.counters[prefix])
		if !g.defined[n] {
			g.defined[n] = true
			return n
		}
	}
}

func (g *Graph) define(name string) {
	if name == "" {
		g.fail("empty value name")
		return
	}
	if g.defined[name] {
		g.fail("value %q defined twice", name)
		return
	}
	g.defined[name] = true
}

// Input declares a graph input and returns its name.
func (g *Graph) Input(name string, dt DataType, dims ...Dim) string {
	g.define(name)
	g.inputs = append(g.inputs, valueInfo{name: name, dtype: dt, dims: append([]Dim(nil), dims...)})
	return name
}

// Output declares value as a graph output called name (through an Identity
// node when the names differ).
func (g *Graph) Output(value, name string, dt DataType, dims ...Dim) {
	if value != name {
		g.define(name)
		g.addNode("Identity", []string{value}, []string{name}, nil)
	} else if !g.defined[name] {
		g.fail("output %q is not a defined value", name)
	}
	g.outputs = append(g.outputs, valueInfo{name: name, dtype: dt, dims: append([]Dim(nil), dims...)})
}

func checkLen(dims []int64, n int) bool {
	p := int64(1)
	for _, d := range dims {
		if d < 0 {
			return false
		}
		p *= d
	}
	return p == int64(n)
}

func (g *Graph) addInit(prefix string, dims []int64, dt DataType, raw []byte, n int) string {
	if !checkLen(dims, n) {
		g.fail("initializer %q: %d values do not fill shape %v", prefix, n, dims)
		return prefix
	}
	name := g.Fresh(prefix)
	g.inits = append(g.inits, tensor{name: name, dims: append([]int64(nil), dims...), dtype: dt, raw: raw})
	return name
}

// Float adds a float32 initializer of the given shape and returns its name.
func (g *Graph) Float(prefix string, dims []int64, data []float32) string {
	return g.addInit(prefix, dims, Float, float32Raw(data), len(data))
}

// Scalar adds a float32 scalar (rank 0) initializer.
func (g *Graph) Scalar(prefix string, v float32) string {
	return g.Float(prefix, nil, []float32{v})
}

// Int64s adds an int64 initializer of the given shape.
func (g *Graph) Int64s(prefix string, dims []int64, data []int64) string {
	return g.addInit(prefix, dims, Int64, int64Raw(data), len(data))
}

// Int32s adds an int32 initializer of the given shape.
func (g *Graph) Int32s(prefix string, dims []int64, data []int32) string {
	return g.addInit(prefix, dims, Int32, int32Raw(data), len(data))
}

func (g *Graph) addNode(opType string, inputs, outputs []string, attrs []Attr) {
	for _, in := range inputs {
		if in != "" && !g.defined[in] {
			g.fail("%s node: input %q is not defined", opType, in)
		}
	}
	g.nodes = append(g.nodes, node{
		inputs: append([]string(nil), inputs...), outputs: outputs,
		name: g.Fresh("node_" + opType), opType: opType, attrs: attrs,
	})
}

// Op adds a node with one output and returns the output's fresh name. An
// empty input name marks an omitted optional input.
func (g *Graph) Op(opType string, inputs []string, attrs ...Attr) string {
	return g.OpN(opType, inputs, 1, attrs...)[0]
}

// OpN adds a node with n outputs and returns their fresh names.
func (g *Graph) OpN(opType string, inputs []string, n int, attrs ...Attr) []string {
	outs := make([]string, n)
	for i := range outs {
		outs[i] = g.Fresh(opType)
	}
	g.addNode(opType, inputs, outs, attrs)
	return outs
}

// OpOpt adds a node with len(want) outputs and names only the wanted ones;
// the others stay empty, which ONNX reads as omitted optional outputs.
func (g *Graph) OpOpt(opType string, inputs []string, want []bool, attrs ...Attr) []string {
	outs := make([]string, len(want))
	last := 0
	for i, w := range want {
		if w {
			outs[i] = g.Fresh(opType)
			last = i + 1
		}
	}
	if last == 0 {
		g.fail("%s node with no wanted output", opType)
		return outs
	}
	g.addNode(opType, inputs, outs[:last], attrs)
	return outs
}

type metaEntry struct{ key, value string }

// Model encodes the graph as an ONNX ModelProto (IR version IRVersion,
// opset ai.onnx OpsetVersion) with meta as metadata_props, sorted by key.
func (g *Graph) Model(meta map[string]string) ([]byte, error) {
	if g.err != nil {
		return nil, g.err
	}
	if len(g.outputs) == 0 {
		return nil, fmt.Errorf("onnx: graph %q has no outputs", g.name)
	}
	entries := make([]metaEntry, 0, len(meta))
	for k, v := range meta {
		entries = append(entries, metaEntry{k, v})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	return marshalModel(g, entries), nil
}
