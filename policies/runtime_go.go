package policies

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	onnxgo "github.com/owulveryck/onnx-go"
	"github.com/owulveryck/onnx-go/backend/x/gorgonnx"
	"gorgonia.org/tensor"
)

// GoRuntimeOps are the ONNX op types the pure-Go runtime (onnx-go v0.5.0's
// Gorgonia backend) implements. Clip, Slice, Gather, Shape and Cast, among
// others, are missing.
var GoRuntimeOps = []string{
	"Abs", "Add", "BatchNormalization", "Ceil", "Concat", "Constant", "Conv", "Cos", "Div",
	"Dropout", "Exp", "Expm1", "Flatten", "Floor", "Gemm", "GlobalAveragePool", "Identity",
	"ImageScaler", "LeakyRelu", "Log", "Log1p", "MatMul", "Max", "MaxPool", "Min", "Mul",
	"Reshape", "Relu", "Sigmoid", "Sign", "Sin", "Softmax", "Softplus", "Sqrt", "Squeeze",
	"Sub", "Tanh", "Transpose", "Unsqueeze",
}

// UnsupportedGoOps returns the op types of a model that the pure-Go runtime
// cannot run (none for the actors admpo's onnx package exports).
func UnsupportedGoOps(info *ModelInfo) []string {
	var bad []string
	for _, op := range info.Ops {
		if !slices.Contains(GoRuntimeOps, op) {
			bad = append(bad, op)
		}
	}
	return bad
}

// goMaxChunk is the most rows one onnx-go run takes.
const goMaxChunk = 64

// goActor runs the actor on onnx-go/Gorgonia. onnx-go fixes a graph's
// batch size at its first run, so it keeps one decoded graph per padded
// batch size (powers of two up to goMaxChunk) and pads the rows.
//
// Two onnx-go v0.5.0 defects are avoided by never running a batch of 1 or
// of act_dim rows:
//   - its Gemm writes the product into the bias C when C already has M·N
//     values, i.e. at batch 1, corrupting the bias for every later run;
//   - its broadcast of a 1-D [act_dim] tensor (action_scale, action_bias)
//     against [batch, act_dim] guesses the axis by size and fails when
//     batch == act_dim.
//
// A third one, an unguarded global counter used while a graph is built
// (on its first run), is avoided by building graphs under goBuildMu.
type goActor struct {
	model          []byte
	obsDim, actDim int
	iAction, iMean int // output indices
	graphs         map[int]*goGraph
}

// goBuildMu serialises onnx-go graph building across all actors: its
// gorgonnx backend names nodes from an unsynchronised package counter.
var goBuildMu sync.Mutex

// goGraph is one decoded model at a fixed batch size.
type goGraph struct {
	be          *gorgonnx.Graph
	m           *onnxgo.Model
	rows        int
	obs, noise  []float32
	tObs, tNois tensor.Tensor
}

func newGoActor(model []byte, info *ModelInfo, obsDim, actDim int) (*goActor, error) {
	if bad := UnsupportedGoOps(info); len(bad) > 0 {
		return nil, fmt.Errorf("policies: the pure-Go runtime (onnx-go v0.5.0) cannot run op(s) %s used by %s; use the %q runtime",
			strings.Join(bad, ", "), PolicyFile, RuntimeORT)
	}
	if len(info.Inputs) != 2 || info.Inputs[0] != "obs" || info.Inputs[1] != "noise" {
		return nil, fmt.Errorf("policies: the pure-Go runtime needs inputs (obs, noise) in that order, the model has %v", info.Inputs)
	}
	a := &goActor{model: model, obsDim: obsDim, actDim: actDim,
		iAction: slices.Index(info.Outputs, "action"), iMean: slices.Index(info.Outputs, "mean_action"),
		graphs: map[int]*goGraph{}}
	if a.iAction < 0 || a.iMean < 0 {
		return nil, fmt.Errorf("policies: %s lacks the action/mean_action outputs", PolicyFile)
	}
	// Decode the batch-1 graph now so that a model onnx-go cannot run fails
	// at Open, not at the first request.
	if _, err := a.graph(a.runRows(1)); err != nil {
		return nil, err
	}
	return a, nil
}

// runRows is the padded batch size used for r rows (1 <= r <= goMaxChunk).
func (a *goActor) runRows(r int) int {
	s := 2
	for s < r {
		s *= 2
	}
	if s == a.actDim {
		s++
	}
	return s
}

func (a *goActor) graph(rows int) (g *goGraph, err error) {
	if g := a.graphs[rows]; g != nil {
		return g, nil
	}
	goBuildMu.Lock()
	defer goBuildMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("policies: onnx-go panicked decoding %s: %v", PolicyFile, r)
		}
	}()
	be := gorgonnx.NewGraph()
	m := onnxgo.NewModel(be)
	if err := m.UnmarshalBinary(a.model); err != nil {
		return nil, fmt.Errorf("policies: onnx-go cannot decode %s: %w", PolicyFile, err)
	}
	g = &goGraph{be: be, m: m, rows: rows,
		obs: make([]float32, rows*a.obsDim), noise: make([]float32, rows*a.actDim)}
	g.tObs = tensor.New(tensor.WithShape(rows, a.obsDim), tensor.WithBacking(g.obs))
	g.tNois = tensor.New(tensor.WithShape(rows, a.actDim), tensor.WithBacking(g.noise))
	if err := g.run(); err != nil { // builds the graph and fixes the batch size
		return nil, err
	}
	a.graphs[rows] = g
	return g, nil
}

func (g *goGraph) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("policies: onnx-go panicked running %s: %v", PolicyFile, r)
		}
	}()
	if err := g.m.SetInput(0, g.tObs); err != nil {
		return fmt.Errorf("policies: onnx-go input obs: %w", err)
	}
	if err := g.m.SetInput(1, g.tNois); err != nil {
		return fmt.Errorf("policies: onnx-go input noise: %w", err)
	}
	if err := g.be.Run(); err != nil {
		return fmt.Errorf("policies: onnx-go run: %v", err)
	}
	return nil
}

func (a *goActor) act(obs, noise, out []float32) error {
	od, ad := a.obsDim, a.actDim
	n := len(obs) / od
	for lo := 0; lo < n; lo += goMaxChunk {
		r := min(goMaxChunk, n-lo)
		g, err := a.graph(a.runRows(r))
		if err != nil {
			return err
		}
		copy(g.obs, obs[lo*od:(lo+r)*od])
		clear(g.obs[r*od:])
		if noise == nil {
			clear(g.noise)
		} else {
			copy(g.noise, noise[lo*ad:(lo+r)*ad])
			clear(g.noise[r*ad:])
		}
		if err := g.run(); err != nil {
			return err
		}
		outs, err := g.m.GetOutputTensors()
		if err != nil {
			return fmt.Errorf("policies: onnx-go outputs: %w", err)
		}
		idx := a.iAction
		if noise == nil {
			idx = a.iMean
		}
		if idx >= len(outs) || outs[idx] == nil {
			return fmt.Errorf("policies: onnx-go returned %d outputs", len(outs))
		}
		data, ok := outs[idx].Data().([]float32)
		if !ok || len(data) < r*ad {
			return fmt.Errorf("policies: onnx-go output is %T of %v, want float32 [%d, %d]", outs[idx].Data(), outs[idx].Shape(), g.rows, ad)
		}
		copy(out[lo*ad:(lo+r)*ad], data[:r*ad])
	}
	return nil
}

func (a *goActor) close() { a.graphs = nil }
