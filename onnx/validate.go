package onnx

import (
	"fmt"
	"math"

	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/models"
)

// Checks run before exporting, so that a malformed model gives a clear
// error instead of a graph ONNX Runtime rejects (or silently misreads).

func checkFinite(what string, v []float32) error {
	if i := stats.FirstNonFinite(v); i >= 0 {
		return fmt.Errorf("%s[%d] is %v", what, i, v[i])
	}
	return nil
}

func checkVec(what string, v []float32, n int) error {
	if len(v) != n {
		return fmt.Errorf("%s has %d values, want %d", what, len(v), n)
	}
	return checkFinite(what, v)
}

// checkLinear checks l's sizes against in and out (either may be -1: any).
func checkLinear(what string, l *models.Linear, in, out int) error {
	if l.In <= 0 || l.Out <= 0 {
		return fmt.Errorf("%s: bad size %dx%d", what, l.In, l.Out)
	}
	if in >= 0 && l.In != in {
		return fmt.Errorf("%s: input size %d, want %d", what, l.In, in)
	}
	if out >= 0 && l.Out != out {
		return fmt.Errorf("%s: output size %d, want %d", what, l.Out, out)
	}
	if err := checkVec(what+".W", l.W, l.In*l.Out); err != nil {
		return err
	}
	return checkVec(what+".B", l.B, l.Out)
}

// checkMLP checks a layer chain from in to out with a known activation.
func checkMLP(what string, m *models.MLP, in, out int) error {
	if m.Activation != "relu" && m.Activation != "swish" {
		return fmt.Errorf("%s: unknown activation %q (want relu or swish)", what, m.Activation)
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%s: no layers", what)
	}
	prev := in
	for i := range m.Layers {
		want := -1
		if i == len(m.Layers)-1 {
			want = out
		}
		if err := checkLinear(fmt.Sprintf("%s.Layers[%d]", what, i), &m.Layers[i], prev, want); err != nil {
			return err
		}
		prev = m.Layers[i].Out
	}
	return nil
}

func checkNormalizer(what string, n *models.Normalizer, dim int) error {
	if err := checkVec(what+".Mean", n.Mean, dim); err != nil {
		return err
	}
	if err := checkVec(what+".Std", n.Std, dim); err != nil {
		return err
	}
	for i, s := range n.Std {
		if s <= 0 {
			return fmt.Errorf("%s.Std[%d] = %v, want > 0", what, i, s)
		}
	}
	return nil
}

func checkBounds(what string, b *models.LogVarBounds, dim int) error {
	if err := checkVec(what+".Max", b.Max, dim); err != nil {
		return err
	}
	return checkVec(what+".Min", b.Min, dim)
}

func checkGRU(what string, g *models.GRULayer, in, hidden int) error {
	if g.In != in || g.Hidden != hidden {
		return fmt.Errorf("%s: size %dx%d, want %dx%d", what, g.In, g.Hidden, in, hidden)
	}
	h3 := 3 * hidden
	if err := checkVec(what+".Wi", g.Wi, in*h3); err != nil {
		return err
	}
	if err := checkVec(what+".Wh", g.Wh, hidden*h3); err != nil {
		return err
	}
	if err := checkVec(what+".Bi", g.Bi, h3); err != nil {
		return err
	}
	return checkVec(what+".Bh", g.Bh, h3)
}

func checkLayerNorm(what string, n *models.LayerNorm, dim int) error {
	if n.Dim != dim {
		return fmt.Errorf("%s: dim %d, want %d", what, n.Dim, dim)
	}
	if !(n.Eps >= 0) || math.IsInf(float64(n.Eps), 0) {
		return fmt.Errorf("%s: bad Eps %v", what, n.Eps)
	}
	if err := checkVec(what+".Gamma", n.Gamma, dim); err != nil {
		return err
	}
	return checkVec(what+".Beta", n.Beta, dim)
}

func checkActor(a *models.Actor) error {
	if a == nil {
		return fmt.Errorf("nil actor")
	}
	if a.ObsDim <= 0 || a.ActDim <= 0 {
		return fmt.Errorf("bad dims obs %d, act %d", a.ObsDim, a.ActDim)
	}
	if err := checkMLP("Net", &a.Net, a.ObsDim, 2*a.ActDim); err != nil {
		return err
	}
	if err := checkVec("Scale", a.Scale, a.ActDim); err != nil {
		return err
	}
	if err := checkVec("Bias", a.Bias, a.ActDim); err != nil {
		return err
	}
	if err := checkFinite("LogStd bounds", []float32{a.LogStdMin, a.LogStdMax}); err != nil {
		return err
	}
	if a.LogStdMin > a.LogStdMax {
		return fmt.Errorf("LogStdMin %v > LogStdMax %v", a.LogStdMin, a.LogStdMax)
	}
	return nil
}

func checkCritic(c *models.Critic) error {
	if c == nil {
		return fmt.Errorf("nil critic")
	}
	if c.ObsDim <= 0 || c.ActDim <= 0 {
		return fmt.Errorf("bad dims obs %d, act %d", c.ObsDim, c.ActDim)
	}
	return checkMLP("Net", &c.Net, c.ObsDim+c.ActDim, 1)
}

func checkADM(m *models.ADM) error {
	if m == nil {
		return fmt.Errorf("nil ADM")
	}
	c := m.Cfg
	if c.ObsDim <= 0 || c.ActDim <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.ResBlocks < 0 || c.M <= 0 {
		return fmt.Errorf("invalid config %+v", c)
	}
	in := c.ObsDim + c.ActDim
	if err := checkNormalizer("Norm", &m.Norm, in); err != nil {
		return err
	}
	if len(m.GRU) != c.Layers {
		return fmt.Errorf("%d GRU layers, config says %d", len(m.GRU), c.Layers)
	}
	for l := range m.GRU {
		li := c.Hidden
		if l == 0 {
			li = in
		}
		if err := checkGRU(fmt.Sprintf("GRU[%d]", l), &m.GRU[l], li, c.Hidden); err != nil {
			return err
		}
	}
	if len(m.Blocks) != c.ResBlocks {
		return fmt.Errorf("%d ResBlocks, config says %d", len(m.Blocks), c.ResBlocks)
	}
	for i := range m.Blocks {
		w := fmt.Sprintf("Blocks[%d]", i)
		if err := checkLinear(w+".Lin", &m.Blocks[i].Lin, c.Hidden, c.Hidden); err != nil {
			return err
		}
		if err := checkLayerNorm(w+".Norm", &m.Blocks[i].Norm, c.Hidden); err != nil {
			return err
		}
	}
	if err := checkLinear("Out", &m.Out, c.Hidden, 2*(c.ObsDim+1)); err != nil {
		return err
	}
	return checkBounds("Bounds", &m.Bounds, c.ObsDim+1)
}

func checkEnsemble(e *models.Ensemble) error {
	if e == nil {
		return fmt.Errorf("nil ensemble")
	}
	if e.ObsDim <= 0 || e.ActDim <= 0 {
		return fmt.Errorf("bad dims obs %d, act %d", e.ObsDim, e.ActDim)
	}
	if len(e.Members) == 0 {
		return fmt.Errorf("no members")
	}
	if len(e.Bounds) != len(e.Members) {
		return fmt.Errorf("%d bounds for %d members", len(e.Bounds), len(e.Members))
	}
	in, out := e.ObsDim+e.ActDim, 2*(e.ObsDim+1)
	if err := checkNormalizer("Norm", &e.Norm, in); err != nil {
		return err
	}
	first := &e.Members[0]
	for i := range e.Members {
		m := &e.Members[i]
		w := fmt.Sprintf("Members[%d]", i)
		if err := checkMLP(w, m, in, out); err != nil {
			return err
		}
		if m.Activation != first.Activation || len(m.Layers) != len(first.Layers) {
			return fmt.Errorf("%s: architecture differs from member 0", w)
		}
		for j := range m.Layers {
			if m.Layers[j].Out != first.Layers[j].Out {
				return fmt.Errorf("%s.Layers[%d]: width %d differs from member 0's %d", w, j, m.Layers[j].Out, first.Layers[j].Out)
			}
		}
		if err := checkBounds(fmt.Sprintf("Bounds[%d]", i), &e.Bounds[i], e.ObsDim+1); err != nil {
			return err
		}
	}
	for _, el := range e.Elites {
		if el < 0 || el >= len(e.Members) {
			return fmt.Errorf("elite index %d out of range [0,%d)", el, len(e.Members))
		}
	}
	return nil
}
