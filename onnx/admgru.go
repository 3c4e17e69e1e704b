package onnx

import (
	"github.com/admpo/admpo/models"
)

// onnxGate maps ONNX's gate order (z, r, h) to PyTorch's (r, z, n) index.
var onnxGate = [3]int{1, 0, 2}

// gruOpWeights converts one PyTorch-layout layer into the ONNX GRU op's
// W [1, 3H, in], R [1, 3H, H] and B [1, 6H] (gates z, r, h).
func gruOpWeights(l *models.GRULayer) (w, r, b []float32) {
	h := l.Hidden
	w = make([]float32, 3*h*l.In)
	r = make([]float32, 3*h*h)
	b = make([]float32, 6*h)
	for og, pg := range onnxGate {
		for i := 0; i < h; i++ {
			row := og*h + i
			col := pg*h + i
			for j := 0; j < l.In; j++ {
				w[row*l.In+j] = l.Wi[j*3*h+col]
			}
			for j := 0; j < h; j++ {
				r[row*h+j] = l.Wh[j*3*h+col]
			}
			b[row] = l.Bi[col]
			b[3*h+row] = l.Bh[col]
		}
	}
	return w, r, b
}

// gruOp adds one ONNX GRU op for layer l (linear_before_reset=1, as
// PyTorch's GRU) on x [seq, batch, in], with sequence_lens seq and
// initial_h init ("" for none), and returns the outputs want selects (Y,
// Y_h).
func gruOp(g *Graph, l *models.GRULayer, x, seq, init string, want []bool) []string {
	w, r, b := gruOpWeights(l)
	h := int64(l.Hidden)
	ins := []string{x,
		g.Float("gru_W", []int64{1, 3 * h, int64(l.In)}, w),
		g.Float("gru_R", []int64{1, 3 * h, h}, r),
		g.Float("gru_B", []int64{1, 6 * h}, b), seq}
	if init != "" {
		ins = append(ins, init)
	}
	return g.OpOpt("GRU", ins, want, AttrInt("hidden_size", h), AttrInt("linear_before_reset", 1))
}

// gruOpStack runs the normalised start state obsN [batch, obs_dim] repeated
// with actN [m, batch, act_dim] through one GRU op per layer. It returns the
// top layer's output at each row's step lc ([batch, H]) or, with allSteps,
// at every step ([m·batch, H], step-major).
func gruOpStack(g *Graph, m *models.ADM, obsN, actN, lc string, allSteps bool) string {
	c := m.Cfg
	// [1, batch, obs] + zeros [m, 1, obs] broadcasts the start state over the steps.
	rep := g.Op("Add", []string{
		g.Op("Unsqueeze", []string{obsN, int64s(g, "axes", 0)}),
		g.Float("zeros", []int64{int64(c.M), 1, int64(c.ObsDim)}, make([]float32, c.M*c.ObsDim)),
	})
	x := g.Op("Concat", []string{rep, actN}, AttrInt("axis", 2))
	seq := lc
	if allSteps {
		seq = "" // every row runs all m steps
	}
	h := int64(c.Hidden)
	for li := range m.GRU {
		topOnly := li == len(m.GRU)-1 && !allSteps
		outs := gruOp(g, &m.GRU[li], x, seq, "", []bool{!topOnly, topOnly})
		if topOnly {
			return g.Op("Squeeze", []string{outs[1], int64s(g, "axes", 0)}) // Y_h [1, batch, H]
		}
		x = g.Op("Squeeze", []string{outs[0], int64s(g, "axes", 1)}) // Y [m, 1, batch, H]
	}
	return g.Op("Reshape", []string{x, int64s(g, "shape", -1, h)})
}
