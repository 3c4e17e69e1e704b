package onnx

import (
	"github.com/admpo/admpo/models"
)

// PyTorch gate indices in a GRULayer's 3H columns.
const (
	gateR = 0
	gateZ = 1
	gateN = 2
)

// unrolledLayer holds one GRU layer's initializers for the unrolled form.
// The r and z biases fold Bi and Bh together; n keeps Bh inside r ⊙ (·).
type unrolledLayer struct {
	l      *models.GRULayer
	split  int       // layer 0: input rows [0, split) are the start state's
	wiLo   [3]string // Wi rows [0, split) per gate (all rows above layer 0)
	wiHi   [3]string // layer 0: Wi rows [split, In) per gate
	bias   [3]string // input-side bias per gate
	wh     [3]string // Wh per gate
	bhN    string    // Bh of gate n
	hidden int
}

func newUnrolledLayer(g *Graph, l *models.GRULayer, split int) *unrolledLayer {
	h := l.Hidden
	u := &unrolledLayer{l: l, split: split, hidden: h}
	for gate := 0; gate < 3; gate++ {
		wc := cols(l.Wi, l.In, 3*h, gate*h, (gate+1)*h)
		u.wiLo[gate] = g.Float("gru_Wi", []int64{int64(split), int64(h)}, rows(wc, h, 0, split))
		if split < l.In {
			u.wiHi[gate] = g.Float("gru_Wi", []int64{int64(l.In - split), int64(h)}, rows(wc, h, split, l.In))
		}
		b := make([]float32, h)
		for i := range b {
			v := float64(l.Bi[gate*h+i])
			if gate != gateN {
				v += float64(l.Bh[gate*h+i])
			}
			b[i] = float32(v)
		}
		u.bias[gate] = g.Float("gru_b", []int64{int64(h)}, b)
		u.wh[gate] = g.Float("gru_Wh", []int64{int64(h), int64(h)}, cols(l.Wh, h, 3*h, gate*h, (gate+1)*h))
	}
	u.bhN = g.Float("gru_bhn", []int64{int64(h)}, l.Bh[gateN*h:(gateN+1)*h])
	return u
}

// project returns the input-side pre-activations x·Wi[:, gate] + bias for
// one step of a layer above the first.
func (u *unrolledLayer) project(g *Graph, x string) [3]string {
	var gi [3]string
	for gate := range gi {
		gi[gate] = g.Op("Gemm", []string{x, u.wiLo[gate], u.bias[gate]})
	}
	return gi
}

// projectStart returns the first layer's start-state part obsN·Wi_obs + bias
// per gate, computed once for all steps.
func (u *unrolledLayer) projectStart(g *Graph, obsN string) [3]string {
	return u.project(g, obsN)
}

// projectAction adds one step's action part to the start-state part.
func (u *unrolledLayer) projectAction(g *Graph, start [3]string, actN string) [3]string {
	var gi [3]string
	for gate := range gi {
		gi[gate] = g.Op("Gemm", []string{actN, u.wiHi[gate], start[gate]})
	}
	return gi
}

// cell returns the next hidden state from the input-side pre-activations and
// the previous state h ("" for the zero initial state).
func (u *unrolledLayer) cell(g *Graph, gi [3]string, h string) string {
	if h == "" {
		r := g.Op("Sigmoid", []string{gi[gateR]})
		z := g.Op("Sigmoid", []string{gi[gateZ]})
		n := g.Op("Tanh", []string{g.Op("Add", []string{gi[gateN], g.Op("Mul", []string{r, u.bhN})})})
		return g.Op("Sub", []string{n, g.Op("Mul", []string{z, n})}) // (1-z)·n
	}
	r := g.Op("Sigmoid", []string{g.Op("Gemm", []string{h, u.wh[gateR], gi[gateR]})})
	z := g.Op("Sigmoid", []string{g.Op("Gemm", []string{h, u.wh[gateZ], gi[gateZ]})})
	ghn := g.Op("Gemm", []string{h, u.wh[gateN], u.bhN})
	n := g.Op("Tanh", []string{g.Op("Add", []string{gi[gateN], g.Op("Mul", []string{r, ghn})})})
	return g.Op("Add", []string{n, g.Op("Mul", []string{z, g.Op("Sub", []string{h, n})})}) // n + z·(h-n)
}

// unrolledStack runs the m steps of every layer from zero initial states and
// returns the top layer's output after each step ([batch, H] each).
func unrolledStack(g *Graph, m *models.ADM, obsN, actN string) []string {
	return gruSteps(g, m, obsN, actN, func(x string, _ int) string { return x })
}

// gruSteps builds the m steps of every GRU layer from zero initial states
// and returns the top layer's output after each step. rowsAt(x, j) is the
// part of x (rows of step 0's batch) that runs step j: all of it for the
// plain unrolled form, a prefix of the length-sorted batch for the packed one.
func gruSteps(g *Graph, m *models.ADM, obsN, actN string, rowsAt func(x string, j int) string) []string {
	c := m.Cfg
	var xs []string
	for li := range m.GRU {
		l := &m.GRU[li]
		split := l.In
		if li == 0 {
			split = c.ObsDim
		}
		u := newUnrolledLayer(g, l, split)
		var start [3]string
		if li == 0 {
			start = u.projectStart(g, obsN)
		}
		h := ""
		next := make([]string, c.M)
		for j := 0; j < c.M; j++ {
			var gi [3]string
			if li == 0 {
				a := g.Op("Gather", []string{actN, g.Int64s("step", nil, []int64{int64(j)})}, AttrInt("axis", 0))
				var st [3]string
				for gate := range st {
					st[gate] = rowsAt(start[gate], j)
				}
				gi = u.projectAction(g, st, rowsAt(a, j))
			} else {
				gi = u.project(g, xs[j]) // the layer below already ran on step j's rows only
			}
			if h != "" {
				h = rowsAt(h, j)
			}
			h = u.cell(g, gi, h)
			next[j] = h
		}
		xs = next
	}
	return xs
}

// packedStack is the unrolled GRU in which every row runs only its own
// number of steps. The rows are ordered by length, longest first, so that
// the rows still running at step j (lengths > j) are a prefix of the batch;
// step j then works on that prefix only. It returns the top layer's output
// at each row's last step, [batch, H] in the sorted order, the permutation
// that restores the input order (Gather with it along axis 0) and the
// sorting order itself (sorted row i is input row order[i]).
//
// The graph has no data-dependent Slice and no TopK over values that can
// tie (ONNX Runtime 1.29's CUDA provider crashes on the first and orders
// ties differently from the CPU): the order concatenates, from length m
// down to 1, the ascending row indices of each length (NonZero), a stable
// sort; the rows of step j and those ending there are Gathers by NonZero
// indices; the inverse permutation is a TopK over the order, whose values
// are distinct. lc must be clamped to 1..m.
func packedStack(g *Graph, m *models.ADM, obsN, actN, lc string) (top, unsort, order string) {
	c := m.Cfg
	l64 := g.Op("Cast", []string{lc}, AttrInt("to", int64(Int64)))
	step := func(j int) string { return g.Int64s("step", nil, []int64{int64(j)}) }
	buckets := make([]string, 0, c.M)
	for k := c.M; k >= 1; k-- {
		buckets = append(buckets, rowIndices(g, g.Op("Equal", []string{l64, step(k)})))
	}
	order = g.Op("Concat", buckets, AttrInt("axis", 0))
	// The positions that sort order ascending are its inverse permutation.
	unsort = g.OpN("TopK", []string{order, g.Op("Shape", []string{order})}, 2,
		AttrInt("axis", 0), AttrInt("largest", 0), AttrInt("sorted", 1))[1]
	obsS := g.Op("Gather", []string{obsN, order}, AttrInt("axis", 0))
	actS := g.Op("Gather", []string{actN, order}, AttrInt("axis", 1))
	lenS := g.Op("Gather", []string{l64, order}, AttrInt("axis", 0))

	// running[j]: the sorted rows with length > j, [0, n_j); step 0 runs all.
	running := make([]string, c.M)
	for j := 1; j < c.M; j++ {
		running[j] = rowIndices(g, g.Op("Greater", []string{lenS, step(j)}))
	}
	rowsAt := func(x string, j int) string {
		if j == 0 {
			return x
		}
		return g.Op("Gather", []string{x, running[j]}, AttrInt("axis", 0))
	}
	xs := gruSteps(g, m, obsS, actS, rowsAt)
	// The sorted rows of length j+1, [n_{j+1}, n_j), end at step j: their
	// positions in the full sorted batch are their rows in xs[j], which
	// holds rows [0, n_j). Concatenate from the longest.
	parts := make([]string, 0, c.M)
	for j := c.M - 1; j >= 0; j-- {
		if j == c.M-1 {
			parts = append(parts, xs[j])
			continue
		}
		ends := rowIndices(g, g.Op("Equal", []string{lenS, step(j + 1)}))
		parts = append(parts, g.Op("Gather", []string{xs[j], ends}, AttrInt("axis", 0)))
	}
	top = parts[0]
	if len(parts) > 1 {
		top = g.Op("Concat", parts, AttrInt("axis", 0))
	}
	return top, unsort, order
}

// rowIndices returns the positions where the bool vector cond holds, as
// int64 [count], ascending (NonZero, whose output has data-dependent size
// and no input in host memory).
func rowIndices(g *Graph, cond string) string {
	return g.Op("Squeeze", []string{g.Op("NonZero", []string{cond}), int64s(g, "axes", 0)})
}
