package onnx

import (
	"fmt"
	"strconv"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx/schema"
)

// ADMForm selects how an exported ADM graph computes its GRU.
type ADMForm int

const (
	// ADMUnrolled (the default) writes the m steps out as Gemm and
	// element-wise nodes. The start state's input projection is computed
	// once, and step 1 skips the recurrent products (the initial state is
	// zero). On ONNX Runtime 1.30 (CPU, hopper size) it was as fast as or
	// faster than ADMGRUOp (up to 2x) in every configuration measured; see
	// BenchmarkADMForms.
	ADMUnrolled ADMForm = iota
	// ADMGRUOp stacks one ONNX GRU op per layer (gates reordered to ONNX's
	// z, r, h; linear_before_reset=1), run on the start state repeated m times.
	ADMGRUOp
	// ADMPacked is the unrolled form in which every row runs only its own k
	// steps instead of all m: the graph orders the rows by length (longest
	// first), runs step j on the prefix of rows with k > j, applies the head
	// once to every row's last step and restores the input order. Inputs,
	// outputs and results are those of ADMUnrolled; for lengths drawn
	// uniformly from 1..m the GRU does (m+1)/2 instead of m steps per row.
	// It has no all_mean output (AllSteps needs every step of every row).
	ADMPacked
)

// String returns "gru", "unrolled" or "packed", the adm_form metadata value.
func (f ADMForm) String() string {
	switch f {
	case ADMGRUOp:
		return "gru"
	case ADMUnrolled:
		return "unrolled"
	case ADMPacked:
		return "packed"
	}
	return "ADMForm(" + strconv.Itoa(int(f)) + ")"
}

// ADMOptions chooses the ADM graph's form and outputs.
type ADMOptions struct {
	Form ADMForm
	// AllSteps adds the all_mean output [m, batch, obs_dim+1]: the mean of
	// [delta, reward] after every step j = 1..m of each row's action
	// sequence, whatever its length. The head then runs on all m steps,
	// which costs more than running it on each row's last step only.
	AllSteps bool
	// Dropout > 0 adds MC dropout with this probability to the head's
	// ResBlocks (y = x + Dropout(Swish(x·W + b)), as the authors' model in
	// training mode): the input dropout_mask [res_blocks, batch, hidden]
	// holds each row's keep flags (1 keep, 0 drop) per block, and the graph
	// scales kept units by 1/(1-Dropout). 0 gives the graph without the
	// input. Not with AllSteps.
	Dropout float64
}

// ExportADM writes an Any-step Dynamics Model as an ONNX model. Inputs:
// obs [batch, obs_dim] (the start state), actions [m, batch, act_dim]
// (sequence-first) and lengths int32 [batch] (k per row; values outside
// 1..m are clamped). Outputs, for step k of each row:
//
//	next_obs_mean [batch, obs_dim] = obs + mean of s_{t+k} - s_t
//	reward_mean   [batch, 1]
//	logvar        [batch, obs_dim+1] (soft-clamped; last column: reward)
//	all_mean      [m, batch, obs_dim+1] (only with opts.AllSteps)
//
// The input [obs, a_j] is z-scored by m.Norm inside the graph. Actions past
// a row's length do not change its outputs (except all_mean's later steps).
func ExportADM(m *models.ADM, opts ADMOptions, meta map[string]string) ([]byte, error) {
	return export("ADM", checkADMOptions(m, opts), "admpo_adm", "Any-step Dynamics Model ("+opts.Form.String()+" form)",
		meta, func(g *Graph) map[string]string { return admGraph(g, m, opts) })
}

// checkADMOptions accepts a valid ADM with options its graph supports.
func checkADMOptions(m *models.ADM, opts ADMOptions) error {
	if err := checkADM(m); err != nil {
		return err
	}
	if opts.Form != ADMGRUOp && opts.Form != ADMUnrolled && opts.Form != ADMPacked {
		return fmt.Errorf("unknown form %v", opts.Form)
	}
	if opts.Form == ADMPacked && opts.AllSteps {
		return fmt.Errorf("the packed form has no all_mean output (AllSteps needs the unrolled or gru form)")
	}
	if err := checkDropout(opts.Dropout); err != nil {
		return err
	}
	if opts.Dropout > 0 && opts.AllSteps {
		return fmt.Errorf("dropout with all_mean (AllSteps) is not supported")
	}
	return nil
}

// admGraph builds m's graph with opts in g and returns its metadata.
func admGraph(g *Graph, m *models.ADM, opts ADMOptions) map[string]string {
	c := m.Cfg
	obs := g.Input(schema.Obs, Float, Batch, Fixed(c.ObsDim))
	actions := g.Input(schema.Actions, Float, Fixed(c.M), Batch, Fixed(c.ActDim))
	lengths := g.Input(schema.Lengths, Int32, Batch)
	mask := dropoutMask(g, m, opts.Dropout, Batch) // "" without dropout
	lc := clampLengths(g, lengths, c.M)

	obsN := normalize(g, obs, m.Norm.Mean[:c.ObsDim], m.Norm.Std[:c.ObsDim])
	actN := normalize(g, actions, m.Norm.Mean[c.ObsDim:], m.Norm.Std[c.ObsDim:])

	var top string // [batch, H], or [m*batch, H] with AllSteps
	unsort := ""   // packed form: the permutation back to the input order
	switch opts.Form {
	case ADMGRUOp:
		top = gruOpStack(g, m, obsN, actN, lc, opts.AllSteps)
	case ADMUnrolled:
		hs := unrolledStack(g, m, obsN, actN)
		if opts.AllSteps {
			top = g.Op("Concat", hs, AttrInt("axis", 0))
		} else {
			top = selectStep(g, hs, lc)
		}
	case ADMPacked:
		var order string
		top, unsort, order = packedStack(g, m, obsN, actN, lc)
		if mask != "" { // the head runs on the length-sorted rows
			mask = g.Op("Gather", []string{mask, order}, AttrInt("axis", 1))
		}
	}
	out := admHead(g, m, top, mask)
	if unsort != "" {
		out = g.Op("Gather", []string{out, unsort}, AttrInt("axis", 0))
	}
	d := int64(c.ObsDim + 1)
	split := int64s(g, "split", d, d)
	parts := g.OpN("Split", []string{out, split}, 2, AttrInt("axis", -1))
	mean, lv := parts[0], parts[1]
	if opts.AllSteps {
		shape := int64s(g, "shape", int64(c.M), -1, d)
		mean = g.Op("Reshape", []string{mean, shape})
		lv = g.Op("Reshape", []string{lv, shape})
		g.Output(mean, schema.AllMean, Float, Fixed(c.M), Batch, Fixed(int(d)))
		mask := stepMask(g, lc, c.M)
		mean = pickStep(g, mask, mean)
		lv = pickStep(g, mask, lv)
	}
	admOutputs(g, m, obs, mean, lv)

	return admMeta(m, schema.KindADM, opts.Dropout, map[string]string{
		schema.MetaADMForm:  opts.Form.String(),
		schema.MetaAllSteps: strconv.FormatBool(opts.AllSteps),
	})
}

// admMeta returns the metadata every ADM graph carries, the dropout
// probability when it is not 0, and extra.
func admMeta(m *models.ADM, kind string, dropout float64, extra map[string]string) map[string]string {
	c := m.Cfg
	md := map[string]string{
		schema.MetaModel:     kind,
		schema.MetaObsDim:    strconv.Itoa(c.ObsDim),
		schema.MetaActDim:    strconv.Itoa(c.ActDim),
		schema.MetaM:         strconv.Itoa(c.M),
		schema.MetaHidden:    strconv.Itoa(c.Hidden),
		schema.MetaLayers:    strconv.Itoa(c.Layers),
		schema.MetaResBlocks: strconv.Itoa(c.ResBlocks),
		schema.MetaNormMean:  JoinFloats(m.Norm.Mean),
		schema.MetaNormStd:   JoinFloats(m.Norm.Std),
	}
	if dropout > 0 {
		md[schema.MetaDropout] = strconv.FormatFloat(dropout, 'g', -1, 64)
	}
	for k, v := range extra {
		md[k] = v
	}
	return md
}

// admHead applies the ResBlocks and the output layer to x [N, H], giving
// [N, 2·(obs_dim+1)]: mean of [delta, r], then the raw log-variance. mask
// ("" for none) is the scaled dropout mask [res_blocks, N, H] of
// dropoutMask, its rows in x's order.
func admHead(g *Graph, m *models.ADM, x, mask string) string {
	for i := range m.Blocks {
		bm := ""
		if mask != "" {
			bm = g.Op("Gather", []string{mask, g.Int64s("block", nil, []int64{int64(i)})}, AttrInt("axis", 0))
		}
		x = resBlock(g, x, &m.Blocks[i], bm)
	}
	return linear(g, x, "adm_out", &m.Out)
}

// checkDropout accepts a dropout probability in [0, 1).
func checkDropout(p float64) error {
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("dropout %v outside [0, 1)", p)
	}
	return nil
}

// dropoutMask declares the dropout_mask input [res_blocks, rows, hidden]
// (keep flags) and returns it scaled by 1/(1-p), the inverted-dropout
// multipliers; "" (no input) when p is 0.
func dropoutMask(g *Graph, m *models.ADM, p float64, rows Dim) string {
	if p == 0 {
		return ""
	}
	c := m.Cfg
	in := g.Input(schema.DropoutMask, Float, Fixed(c.ResBlocks), rows, Fixed(c.Hidden))
	return g.Op("Mul", []string{in, g.Scalar("dropout_scale", float32(1/(1-p)))})
}

// admOutputs splits mean [batch, obs_dim+1] into next_obs_mean = obs + delta
// and reward_mean, soft-clamps lv and declares the three outputs.
func admOutputs(g *Graph, m *models.ADM, obs, mean, lv string) {
	c := m.Cfg
	parts := g.OpN("Split", []string{mean, int64s(g, "split", int64(c.ObsDim), 1)}, 2, AttrInt("axis", -1))
	next := g.Op("Add", []string{obs, parts[0]})
	lv = softClamp(g, lv, []int64{int64(c.ObsDim + 1)}, m.Bounds.Max, m.Bounds.Min)
	g.Output(next, schema.NextObsMean, Float, Batch, Fixed(c.ObsDim))
	g.Output(parts[1], schema.RewardMean, Float, Batch, Fixed(1))
	g.Output(lv, schema.LogVar, Float, Batch, Fixed(c.ObsDim+1))
}

// clampLengths returns min(max(lengths, 1), m) as int32 [batch].
func clampLengths(g *Graph, lengths string, m int) string {
	lo := g.Int32s("len_min", nil, []int32{1})
	hi := g.Int32s("len_max", nil, []int32{int32(m)})
	return g.Op("Min", []string{g.Op("Max", []string{lengths, lo}), hi})
}

// stepMask returns the bool mask [m, batch, 1] that is true at step
// lengths[b]-1 of row b (lengths already clamped).
func stepMask(g *Graph, lc string, m int) string {
	steps := make([]int32, m)
	for j := range steps {
		steps[j] = int32(j + 1)
	}
	st := g.Int32s("steps", []int64{int64(m), 1, 1}, steps)
	l3 := g.Op("Reshape", []string{lc, int64s(g, "shape", 1, -1, 1)})
	return g.Op("Equal", []string{st, l3})
}

// pickStep returns x [m, batch, C] at each row's masked step: [batch, C].
func pickStep(g *Graph, mask, x string) string {
	w := g.Op("Where", []string{mask, x, g.Scalar("zero", 0)})
	return g.Op("ReduceSum", []string{w, int64s(g, "axes", 0)}, AttrInt("keepdims", 0))
}

// selectStep picks hs[lengths[b]-1] for every row b from per-step outputs
// hs[j] [batch, H] (lengths already clamped to 1..len(hs)).
func selectStep(g *Graph, hs []string, lc string) string {
	l2 := g.Op("Unsqueeze", []string{lc, int64s(g, "axes", 1)}) // [batch, 1]
	sel := hs[0]
	for j := 1; j < len(hs); j++ {
		k := g.Int32s("step", nil, []int32{int32(j + 1)})
		sel = g.Op("Where", []string{g.Op("Equal", []string{l2, k}), hs[j], sel})
	}
	return sel
}
