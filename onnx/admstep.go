package onnx

import (
	"fmt"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

// ExportADMStep writes one GRU step of an ADM for incremental roll-outs:
// inputs hidden [layers, batch0, H], obs [batch, obs_dim] (the start state,
// the same at every step of a sequence) and act [batch, act_dim]; outputs
// hidden_out [layers, batch, H] and, for the sequence so far, next_obs_mean
// [batch, obs_dim] = obs + mean delta, reward_mean [batch, 1] and logvar
// [batch, obs_dim+1].
//
// The first batch0 <= batch rows continue from hidden; the remaining
// batch-batch0 rows take their first step from the zero state, which skips
// their recurrent products (hidden holding zeros for them gives the same
// result at a higher cost). batch0 = batch is the plain step. The graph
// carries the metadata fresh_rows=true.
func ExportADMStep(m *models.ADM, meta map[string]string) ([]byte, error) {
	return ExportADMStepWith(m, ADMStepOptions{}, meta)
}

// ADMStepOptions chooses the ADM step graph's options.
type ADMStepOptions struct {
	// Dropout > 0 adds MC dropout to the head as ADMOptions.Dropout does:
	// the input dropout_mask [res_blocks, batch, hidden] holds the keep flags
	// of every row (in obs's row order), scaled by 1/(1-Dropout) in the graph.
	Dropout float64
	// Form is the GRU's form: ADMUnrolled (the default: Gemm and
	// element-wise nodes; the fresh rows skip the recurrent products) or
	// ADMGRUOp (one ONNX GRU op per layer over all rows, the fresh rows'
	// initial state zero-padded: cuDNN's RNN on ONNX Runtime's CUDA
	// provider, and no NonZero, whose data-dependent shape synchronises
	// the GPU). Inputs, outputs and results are the same.
	Form ADMForm
}

// ExportADMStepWith is ExportADMStep with options.
func ExportADMStepWith(m *models.ADM, opts ADMStepOptions, meta map[string]string) ([]byte, error) {
	invalid := checkADM(m)
	if invalid == nil {
		invalid = checkDropout(opts.Dropout)
	}
	if invalid == nil && opts.Form != ADMUnrolled && opts.Form != ADMGRUOp {
		invalid = fmt.Errorf("the step graph's form is unrolled or gru, not %v", opts.Form)
	}
	return export("ADM step", invalid, "admpo_adm_step", "Any-step Dynamics Model, one GRU step", meta,
		func(g *Graph) map[string]string { return admStepGraph(g, m, opts) })
}

// admStepGraph builds m's step graph with opts in g and returns its metadata.
func admStepGraph(g *Graph, m *models.ADM, opts ADMStepOptions) map[string]string {
	c := m.Cfg
	// hidden keeps the declared shape [layers, batch, H] of earlier versions;
	// ONNX Runtime does not require equal sizes for equal symbolic names.
	hidden := g.Input(schema.Hidden, Float, Fixed(c.Layers), Batch, Fixed(c.Hidden))
	obs := g.Input(schema.Obs, Float, Batch, Fixed(c.ObsDim))
	act := g.Input(schema.Act, Float, Batch, Fixed(c.ActDim))
	// The mask's rows are obs's, but its dimension has its own name: hidden
	// reuses "batch" for a possibly smaller size, and ONNX Runtime's buffer
	// planner would take same-named shapes for equal ones.
	mask := dropoutMask(g, m, opts.Dropout, Dim{Param: "mask_rows"})
	obsN := normalize(g, obs, m.Norm.Mean[:c.ObsDim], m.Norm.Std[:c.ObsDim])
	actN := normalize(g, act, m.Norm.Mean[c.ObsDim:], m.Norm.Std[c.ObsDim:])
	meta := map[string]string{schema.MetaFreshRows: "true"}
	if opts.Form == ADMGRUOp { // adm_form only here: the unrolled step graph stays byte for byte as before
		meta[schema.MetaADMForm] = opts.Form.String()
		hOut, top := gruOpStep(g, m, hidden, obs, obsN, actN)
		g.Output(hOut, schema.HiddenOut, Float, Fixed(c.Layers), Batch, Fixed(c.Hidden))
		stepOutputs(g, m, obs, top, mask)
		return admMeta(m, schema.KindADMStep, opts.Dropout, meta)
	}

	// Rows [0, n0) continue from hidden, rows [n0, batch) start from zero;
	// n0 is hidden's dimension 1. Both sets are Gathers by NonZero indices,
	// not Slices by n0: ONNX Runtime 1.29's CUDA provider crashes on a Slice
	// whose bounds are not initializers. A row is fresh when its number
	// 1..batch, a CumSum of ones over obs's rows (Where over IsNaN gives ones
	// for any value, NaN included), exceeds n0.
	axis0 := g.Int64s("axis", nil, []int64{0})
	// n0 is [1], not a scalar: scripts/gpu_bisect.py feeds captured
	// intermediates back as tensors, and onnxruntime_go makes none of rank 0.
	n0 := g.Op("Gather", []string{g.Op("Shape", []string{hidden}), g.Int64s("dim", []int64{1}, []int64{1})}, AttrInt("axis", 0))
	col := g.Op("Gather", []string{obs, g.Int64s("col", nil, []int64{0})}, AttrInt("axis", 1))
	one := g.Int64s("one", nil, []int64{1})
	ones := g.Op("Where", []string{g.Op("IsNaN", []string{col}), one, one})
	fresh := g.Op("Greater", []string{g.Op("CumSum", []string{ones, axis0}), n0})
	contIdx, freshIdx := rowIndices(g, g.Op("Not", []string{fresh})), rowIndices(g, fresh)
	rowsCont := func(x string) string { return g.Op("Gather", []string{x, contIdx}, AttrInt("axis", 0)) }
	rowsFresh := func(x string) string { return g.Op("Gather", []string{x, freshIdx}, AttrInt("axis", 0)) }

	var xc, xf string
	outs := make([]string, c.Layers)
	axes := int64s(g, "axes", 0)
	for li := range m.GRU {
		l := &m.GRU[li]
		h := g.Op("Gather", []string{hidden, g.Int64s("layer", nil, []int64{int64(li)})}, AttrInt("axis", 0))
		if li == 0 {
			u := newUnrolledLayer(g, l, c.ObsDim)
			oc, of := rowsCont(obsN), rowsFresh(obsN)
			ac, af := rowsCont(actN), rowsFresh(actN)
			xc = u.cell(g, u.projectAction(g, u.projectStart(g, oc), ac), h)
			xf = u.cell(g, u.projectAction(g, u.projectStart(g, of), af), "")
		} else {
			u := newUnrolledLayer(g, l, l.In)
			xc = u.cell(g, u.project(g, xc), h)
			xf = u.cell(g, u.project(g, xf), "")
		}
		outs[li] = g.Op("Unsqueeze", []string{g.Op("Concat", []string{xc, xf}, AttrInt("axis", 0)), axes})
	}
	hOut := outs[0]
	if len(outs) > 1 {
		hOut = g.Op("Concat", outs, AttrInt("axis", 0))
	}
	g.Output(hOut, schema.HiddenOut, Float, Fixed(c.Layers), Batch, Fixed(c.Hidden))
	stepOutputs(g, m, obs, g.Op("Concat", []string{xc, xf}, AttrInt("axis", 0)), mask)
	return admMeta(m, schema.KindADMStep, opts.Dropout, meta)
}

// stepOutputs runs the head on the top layer's new states top [batch, H]
// and declares the step graph's next_obs_mean, reward_mean and logvar.
func stepOutputs(g *Graph, m *models.ADM, obs, top, mask string) {
	out := admHead(g, m, top, mask)
	d := int64(m.Cfg.ObsDim + 1)
	parts := g.OpN("Split", []string{out, int64s(g, "split", d, d)}, 2, AttrInt("axis", -1))
	admOutputs(g, m, obs, parts[0], parts[1])
}

// gruOpStep is the step graph's GRU as one ONNX GRU op per layer, a
// sequence of one step over all batch rows: hidden [layers, n0, H] padded
// with zero rows to [layers, batch, H] is the initial state (the fresh rows
// start from zero), [obsN, actN] layer 0's input. It returns hidden_out
// [layers, batch, H] and the top layer's new states [batch, H].
func gruOpStep(g *Graph, m *models.ADM, hidden, obs, obsN, actN string) (hOut, top string) {
	c := m.Cfg
	// pads [0, 0, 0, 0, batch-n0, 0]: zero rows after hidden's n0 along axis 1.
	dim := func(x string, i int64) string {
		return g.Op("Gather", []string{g.Op("Shape", []string{x}), g.Int64s("dim", []int64{1}, []int64{i})}, AttrInt("axis", 0))
	}
	fresh := g.Op("Sub", []string{dim(obs, 0), dim(hidden, 1)})
	pads := g.Op("Concat", []string{int64s(g, "pads", 0, 0, 0, 0), fresh, int64s(g, "pads", 0)}, AttrInt("axis", 0))
	h0 := g.Op("Pad", []string{hidden, pads})
	x := g.Op("Unsqueeze", []string{g.Op("Concat", []string{obsN, actN}, AttrInt("axis", 1)), int64s(g, "axes", 0)})
	outs := make([]string, c.Layers)
	for li := range m.GRU {
		init := g.Op("Gather", []string{h0, g.Int64s("layer", []int64{1}, []int64{int64(li)})}, AttrInt("axis", 0))
		yh := gruOp(g, &m.GRU[li], x, "", init, []bool{false, true})[1]
		outs[li] = yh // Y_h [1, batch, H]: the next layer's input and this layer's hidden_out
		x = yh
	}
	hOut = outs[0]
	if len(outs) > 1 {
		hOut = g.Op("Concat", outs, AttrInt("axis", 0))
	}
	return hOut, g.Op("Squeeze", []string{x, int64s(g, "axes", 0)})
}
