package onnx_test

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/admpo/admpo/internal/protofield"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// TestADMGraphsAvoidCUDAFaults walks every exported ADM graph form (with and
// without dropout and all_mean, m 1 and more) and the step graph and fails on
// the two patterns ONNX Runtime 1.29's CUDA provider gets wrong
// (docs/results/gpu/2026-11-27/bisect.txt): a Slice whose starts, ends,
// axes or steps are not initializers (a crash in Run), and a TopK over
// values that can tie (CUDA orders ties unlike the CPU). The one TopK the
// design keeps sorts a permutation: its input must be a Concat of
// Squeeze(NonZero(Equal(x, c))) over one x and distinct initializer
// constants c, disjoint sets of ascending row indices.
func TestADMGraphsAvoidCUDAFaults(t *testing.T) {
	type graph struct {
		name  string
		model []byte
	}
	var graphs []graph
	add := func(name string, b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		graphs = append(graphs, graph{name, b})
	}
	for _, cfg := range []models.ADMConfig{
		{ObsDim: 5, ActDim: 2, Hidden: 16, Layers: 2, ResBlocks: 2, M: 3},
		{ObsDim: 3, ActDim: 1, Hidden: 8, Layers: 1, ResBlocks: 1, M: 1},
		models.DefaultADMConfig(11, 3, 5),
	} {
		a, err := models.NewADM(cfg, rand.New(rand.NewSource(1)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled, onnx.ADMPacked} {
			for _, o := range []onnx.ADMOptions{{Form: f}, {Form: f, Dropout: 0.1}, {Form: f, AllSteps: true}} {
				if o.AllSteps && f == onnx.ADMPacked {
					continue
				}
				b, err := onnx.ExportADM(a, o, nil)
				add(fmt.Sprintf("m%d %v dropout %v all_mean %v", cfg.M, f, o.Dropout, o.AllSteps), b, err)
			}
		}
		for _, f := range []onnx.ADMForm{onnx.ADMUnrolled, onnx.ADMGRUOp} {
			for _, p := range []float64{0, 0.1} {
				b, err := onnx.ExportADMStepWith(a, onnx.ADMStepOptions{Form: f, Dropout: p}, nil)
				add(fmt.Sprintf("m%d step %v dropout %v", cfg.M, f, p), b, err)
			}
		}
	}
	topKs := 0
	for _, gr := range graphs {
		nodes, inits, err := readGraph(gr.model)
		if err != nil {
			t.Fatalf("%s: %v", gr.name, err)
		}
		producer := map[string]*protoNode{}
		for i := range nodes {
			for _, o := range nodes[i].outputs {
				producer[o] = &nodes[i]
			}
		}
		for _, n := range nodes {
			switch n.op {
			case "Slice":
				for _, in := range n.inputs[1:] {
					if _, ok := inits[in]; in != "" && !ok {
						t.Errorf("%s: Slice %s has the bound %s, not an initializer", gr.name, n.outputs[0], in)
					}
				}
			case "TopK":
				topKs++
				if err := distinctIndices(n.inputs[0], producer, inits); err != nil {
					t.Errorf("%s: TopK %s over values that can tie: %v", gr.name, n.outputs[0], err)
				}
			}
		}
	}
	if topKs == 0 {
		t.Fatal("no TopK seen: the packed graphs were not walked")
	}
}

// distinctIndices checks that value is Concat(Squeeze(NonZero(Equal(x,
// c_i)))...) with one x and distinct int64 initializers c_i.
func distinctIndices(value string, producer map[string]*protoNode, inits map[string][]byte) error {
	cat := producer[value]
	if cat == nil || cat.op != "Concat" {
		return fmt.Errorf("%s is not made by a Concat", value)
	}
	x := ""
	seen := map[int64]bool{}
	for _, in := range cat.inputs {
		sq := producer[in]
		if sq == nil || sq.op != "Squeeze" {
			return fmt.Errorf("Concat input %s is not made by a Squeeze", in)
		}
		nz := producer[sq.inputs[0]]
		if nz == nil || nz.op != "NonZero" {
			return fmt.Errorf("Squeeze input %s is not made by a NonZero", sq.inputs[0])
		}
		eq := producer[nz.inputs[0]]
		if eq == nil || eq.op != "Equal" {
			return fmt.Errorf("NonZero input %s is not made by an Equal", nz.inputs[0])
		}
		if x == "" {
			x = eq.inputs[0]
		}
		raw, ok := inits[eq.inputs[1]]
		if eq.inputs[0] != x || !ok || len(raw) != 8 {
			return fmt.Errorf("Equal(%s, %s): not one x against an int64 initializer", eq.inputs[0], eq.inputs[1])
		}
		c := int64(binary.LittleEndian.Uint64(raw))
		if seen[c] {
			return fmt.Errorf("the constant %d twice: the index sets overlap", c)
		}
		seen[c] = true
	}
	return nil
}

// protoNode is a NodeProto's op_type, inputs and outputs.
type protoNode struct {
	op              string
	inputs, outputs []string
}

// readGraph decodes a ModelProto's main graph (field 7): its nodes (1) and
// its initializers' raw data by name (5; TensorProto name 8, raw_data 9).
func readGraph(model []byte) ([]protoNode, map[string][]byte, error) {
	g, err := protofield.Bytes(model, 7)
	if err != nil || len(g) != 1 {
		return nil, nil, fmt.Errorf("reading the graph: %v", err)
	}
	raw, err := protofield.Bytes(g[0], 1)
	if err != nil {
		return nil, nil, err
	}
	var nodes []protoNode
	for _, r := range raw {
		var n protoNode
		for _, f := range []struct {
			num protowire.Number
			dst *[]string
		}{{1, &n.inputs}, {2, &n.outputs}} {
			vs, err := protofield.Bytes(r, f.num)
			if err != nil {
				return nil, nil, err
			}
			for _, v := range vs {
				*f.dst = append(*f.dst, string(v))
			}
		}
		op, err := protofield.Bytes(r, 4)
		if err != nil || len(op) != 1 {
			return nil, nil, fmt.Errorf("a node without op_type: %v", err)
		}
		n.op = string(op[0])
		nodes = append(nodes, n)
	}
	ts, err := protofield.Bytes(g[0], 5)
	if err != nil {
		return nil, nil, err
	}
	inits := map[string][]byte{}
	for _, tb := range ts {
		name, err := protofield.Bytes(tb, 8)
		if err != nil || len(name) != 1 {
			return nil, nil, fmt.Errorf("an initializer without a name: %v", err)
		}
		data, err := protofield.Bytes(tb, 9)
		if err != nil || len(data) > 1 {
			return nil, nil, fmt.Errorf("initializer %s: raw_data: %v", name[0], err)
		}
		inits[string(name[0])] = nil
		if len(data) == 1 {
			inits[string(name[0])] = data[0]
		}
	}
	return nodes, inits, nil
}
