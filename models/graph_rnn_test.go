package models

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
)

// Finite-difference checks of the fused ops' gradients and naive float64
// references for their forward passes.

func randSlice(rng *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64() * scale)
	}
	return s
}

func constNode(g *G.ExprGraph, name string, data []float32, shape ...int) *G.Node {
	return paramNode(g, name, data, shape...)
}

// projCost returns Σ out ⊙ R for a fixed random R, making every output
// element matter to the checked gradient.
func projCost(g *G.ExprGraph, out *G.Node, rng *rand.Rand) (*G.Node, error) {
	if out.IsScalar() {
		return out, nil
	}
	r := constNode(g, fmt.Sprintf("proj%d", rng.Int()), randSlice(rng, out.Shape().TotalSize(), 1), out.Shape()...)
	p, err := G.HadamardProd(out, r)
	if err != nil {
		return nil, err
	}
	return G.Sum(p)
}

// checkProjGrads checks the gradients of a random projection of out (see
// projCost) with checkGrads.
func checkProjGrads(t *testing.T, g *G.ExprGraph, out *G.Node, rng *rand.Rand, params []fdParam, samples int, eps, tol float64) {
	t.Helper()
	cost, err := projCost(g, out, rng)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, g, cost, params, samples, eps, tol)
}

// checkLayer builds a graph holding the input xd (rows×dim), applies a
// layer to it with apply (which returns the output and the layer's
// parameters), checks the gradients of the input and of the parameters by
// finite differences on samples entries each (eps 1e-2, tolerance 5e-3) and
// returns the output's values.
func checkLayer(t *testing.T, rng *rand.Rand, xd []float32, rows, dim, samples int,
	apply func(g *G.ExprGraph, x *G.Node) (*G.Node, []fdParam, error)) []float32 {
	t.Helper()
	g := G.NewGraph()
	x := constNode(g, "x", xd, rows, dim)
	y, params, err := apply(g, x)
	if err != nil {
		t.Fatal(err)
	}
	checkProjGrads(t, g, y, rng, append([]fdParam{{"x", x, xd}}, params...), samples, 1e-2, 5e-3)
	return y.Value().Data().([]float32)
}

type fdParam struct {
	name string
	node *G.Node
	data []float32
}

// checkGrads compares G.Grad's gradients of cost with central finite
// differences on up to samples entries of every parameter, running g on a
// TapeMachine.
func checkGrads(t *testing.T, g *G.ExprGraph, cost *G.Node, params []fdParam, samples int, eps, tol float64) {
	t.Helper()
	wrt := make(G.Nodes, len(params))
	for i, p := range params {
		wrt[i] = p.node
	}
	if _, err := G.Grad(cost, wrt...); err != nil {
		t.Fatalf("grad: %v", err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	run := func() error {
		m.Reset()
		return m.RunAll()
	}
	checkGradsRun(t, run, cost, params, samples, eps, tol, 7)
}

// checkGradsRun is checkGrads for a graph that already holds its gradients
// and runs through run; seed picks the sampled entries.
func checkGradsRun(t *testing.T, run func() error, cost *G.Node, params []fdParam, samples int, eps, tol float64, seed int64) {
	t.Helper()
	value := func() float64 {
		if err := run(); err != nil {
			t.Fatalf("run: %v", err)
		}
		d, _, err := ops.ValueF32(cost.Value())
		if err != nil {
			t.Fatalf("cost: %v", err)
		}
		return float64(d[0])
	}
	value()
	analytic := make([][]float32, len(params))
	for i, p := range params {
		gv, err := p.node.Grad()
		if err != nil {
			t.Fatalf("%s: no gradient: %v", p.name, err)
		}
		d, _, err := ops.ValueF32(gv)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		analytic[i] = append([]float32(nil), d...)
	}
	rng := rand.New(rand.NewSource(seed))
	for i, p := range params {
		idx := rng.Perm(len(p.data))
		if len(idx) > samples {
			idx = idx[:samples]
		}
		worst := 0.0
		for _, j := range idx {
			old := p.data[j]
			p.data[j] = old + float32(eps)
			up := value()
			p.data[j] = old - float32(eps)
			down := value()
			p.data[j] = old
			num := (up - down) / (2 * eps)
			a := float64(analytic[i][j])
			err := math.Abs(a-num) / math.Max(1, math.Abs(num))
			worst = math.Max(worst, err)
			if err > tol {
				t.Errorf("%s[%d]: analytic %.6g, finite difference %.6g", p.name, j, a, num)
			}
		}
		t.Logf("%s: worst relative error %.2e over %d entries", p.name, worst, len(idx))
	}
	value() // leave the unperturbed values in the graph
}

func TestGRUStackGradients(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const steps, batch, in, hidden = 3, 2, 3, 4
	g := G.NewGraph()
	l0 := NewGRULayer(in, hidden, rng)
	l1 := NewGRULayer(hidden, hidden, rng)
	scaleUp := func(l *GRULayer) { // larger weights exercise the nonlinearities
		for _, s := range [][]float32{l.Wi, l.Wh, l.Bi, l.Bh} {
			for i := range s {
				s[i] *= 2
			}
		}
	}
	scaleUp(&l0)
	scaleUp(&l1)
	xd := randSlice(rng, steps*batch*in, 1)
	x := constNode(g, "x", xd, steps*batch, in)
	// A computed input (x ⊙ 1) makes the first layer form dX too.
	ones := make([]float32, len(xd))
	for i := range ones {
		ones[i] = 1
	}
	xc, err := G.HadamardProd(x, constNode(g, "ones", ones, steps*batch, in))
	if err != nil {
		t.Fatal(err)
	}
	n0 := NewGRUNodes(g, "l0", &l0)
	n1 := NewGRUNodes(g, "l1", &l1)
	h0, err := n0.Apply(xc, steps)
	if err != nil {
		t.Fatal(err)
	}
	h1, err := n1.Apply(h0, steps)
	if err != nil {
		t.Fatal(err)
	}
	ps := []fdParam{{"x", x, xd}}
	for li, n := range []struct {
		nodes GRUNodes
		l     *GRULayer
	}{{n0, &l0}, {n1, &l1}} {
		ps = append(ps,
			fdParam{fmt.Sprintf("l%d.Wi", li), n.nodes.Wi, n.l.Wi},
			fdParam{fmt.Sprintf("l%d.Bi", li), n.nodes.Bi, n.l.Bi},
			fdParam{fmt.Sprintf("l%d.Wh", li), n.nodes.Wh, n.l.Wh},
			fdParam{fmt.Sprintf("l%d.Bh", li), n.nodes.Bh, n.l.Bh})
	}
	checkProjGrads(t, g, h1, rng, ps, 40, 1e-2, 5e-3)
}

// naiveGRU runs a stack of GRU layers in float64 straight from PyTorch's
// equations; x is [steps][batch][in]; it returns the top layer's outputs.
func naiveGRU(layers []GRULayer, x [][][]float64) [][][]float64 {
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	cur := x
	for _, l := range layers {
		H := l.Hidden
		out := make([][][]float64, len(cur))
		h := make([][]float64, len(cur[0]))
		for b := range h {
			h[b] = make([]float64, H)
		}
		for t := range cur {
			out[t] = make([][]float64, len(cur[t]))
			for b := range cur[t] {
				gi := make([]float64, 3*H)
				gh := make([]float64, 3*H)
				for c := 0; c < 3*H; c++ {
					gi[c] = float64(l.Bi[c])
					for i := 0; i < l.In; i++ {
						gi[c] += cur[t][b][i] * float64(l.Wi[i*3*H+c])
					}
					gh[c] = float64(l.Bh[c])
					for i := 0; i < H; i++ {
						gh[c] += h[b][i] * float64(l.Wh[i*3*H+c])
					}
				}
				nh := make([]float64, H)
				for j := 0; j < H; j++ {
					r := sig(gi[j] + gh[j])
					z := sig(gi[H+j] + gh[H+j])
					n := math.Tanh(gi[2*H+j] + r*gh[2*H+j])
					nh[j] = (1-z)*n + z*h[b][j]
				}
				h[b] = nh
				out[t][b] = nh
			}
		}
		cur = out
	}
	return cur
}

func runGraph(t *testing.T, g *G.ExprGraph) {
	t.Helper()
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
}

func TestGRUForwardMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	const steps, batch, in, hidden = 4, 3, 5, 6
	layers := []GRULayer{NewGRULayer(in, hidden, rng), NewGRULayer(hidden, hidden, rng)}
	xd := randSlice(rng, steps*batch*in, 1)
	x3 := make([][][]float64, steps)
	for s := range x3 {
		x3[s] = make([][]float64, batch)
		for b := range x3[s] {
			x3[s][b] = make([]float64, in)
			for i := range x3[s][b] {
				x3[s][b][i] = float64(xd[(s*batch+b)*in+i])
			}
		}
	}
	want := naiveGRU(layers, x3)
	g := G.NewGraph()
	h := constNode(g, "x", xd, steps*batch, in)
	var err error
	for i := range layers {
		if h, err = NewGRUNodes(g, fmt.Sprintf("l%d", i), &layers[i]).Apply(h, steps); err != nil {
			t.Fatal(err)
		}
	}
	runGraph(t, g)
	got := h.Value().Data().([]float32)
	for s := 0; s < steps; s++ {
		for b := 0; b < batch; b++ {
			for j := 0; j < hidden; j++ {
				w := want[s][b][j]
				v := float64(got[(s*batch+b)*hidden+j])
				if math.Abs(v-w) > 1e-6 {
					t.Fatalf("step %d row %d unit %d: got %.8f, naive %.8f", s, b, j, v, w)
				}
			}
		}
	}
}

func TestLayerNormForwardAndGradients(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const rows, dim = 4, 5
	ln := NewLayerNorm(dim)
	copy(ln.Gamma, randSlice(rng, dim, 1))
	copy(ln.Beta, randSlice(rng, dim, 1))
	xd := randSlice(rng, rows*dim, 2)
	got := checkLayer(t, rng, xd, rows, dim, 40, func(g *G.ExprGraph, x *G.Node) (*G.Node, []fdParam, error) {
		nn := NewLayerNormNodes(g, "ln", &ln)
		y, err := nn.Apply(x)
		return y, []fdParam{{"gamma", nn.Gamma, ln.Gamma}, {"beta", nn.Beta, ln.Beta}}, err
	})
	// Forward against the textbook formula in float64.
	for r := 0; r < rows; r++ {
		var mean, vr float64
		for j := 0; j < dim; j++ {
			mean += float64(xd[r*dim+j]) / dim
		}
		for j := 0; j < dim; j++ {
			d := float64(xd[r*dim+j]) - mean
			vr += d * d / dim
		}
		for j := 0; j < dim; j++ {
			w := (float64(xd[r*dim+j])-mean)/math.Sqrt(vr+1e-5)*float64(ln.Gamma[j]) + float64(ln.Beta[j])
			if math.Abs(float64(got[r*dim+j])-w) > 1e-5 {
				t.Fatalf("row %d col %d: got %v, want %v", r, j, got[r*dim+j], w)
			}
		}
	}
}

func TestResBlockGradients(t *testing.T) {
	for _, dropout := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropout=%v", dropout), func(t *testing.T) {
			rng := rand.New(rand.NewSource(4))
			const rows, dim = 3, 5
			b := ResBlock{Lin: NewLinear(dim, dim, rng), Norm: NewLayerNorm(dim)}
			copy(b.Norm.Gamma, randSlice(rng, dim, 1))
			copy(b.Norm.Beta, randSlice(rng, dim, 1))
			xd := randSlice(rng, rows*dim, 1)
			checkLayer(t, rng, xd, rows, dim, 30, func(g *G.ExprGraph, x *G.Node) (*G.Node, []fdParam, error) {
				var mask *G.Node
				if dropout {
					md := make([]float32, rows*dim)
					for i := range md {
						if rng.Float64() > 0.3 {
							md[i] = 1 / 0.7
						}
					}
					mask = constNode(g, "mask", md, rows, dim)
				}
				bn := NewResBlockNodes(g, "rb", &b)
				y, err := bn.Apply(x, mask)
				return y, []fdParam{{"W", bn.Lin.W, b.Lin.W}, {"B", bn.Lin.B, b.Lin.B},
					{"gamma", bn.Norm.Gamma, b.Norm.Gamma}, {"beta", bn.Norm.Beta, b.Norm.Beta}}, err
			})
		})
	}
}

func TestSoftClampForwardAndGradients(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const rows, dim = 6, 3
	bounds := NewLogVarBounds(dim)
	lvd := randSlice(rng, rows*dim, 6) // spans both bounds
	got := checkLayer(t, rng, lvd, rows, dim, 40, func(g *G.ExprGraph, lv *G.Node) (*G.Node, []fdParam, error) {
		bn := NewBoundsNodes(g, "b", &bounds)
		y, err := bn.Apply(lv)
		return y, []fdParam{{"max", bn.Max, bounds.Max}, {"min", bn.Min, bounds.Min}}, err
	})
	sp := func(v float64) float64 { return math.Log(1 + math.Exp(v)) }
	for i, v := range lvd {
		j := i % dim
		a := float64(bounds.Max[j]) - sp(float64(bounds.Max[j])-float64(v))
		w := float64(bounds.Min[j]) + sp(a-float64(bounds.Min[j]))
		if math.Abs(float64(got[i])-w) > 1e-5 {
			t.Fatalf("entry %d: got %v, want %v", i, got[i], w)
		}
	}
}

func TestGaussianNLLAndColumns(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	const rows, dim = 5, 3
	od := randSlice(rng, rows*2*dim, 1)
	yd := randSlice(rng, rows*dim, 1)
	wd := []float32{1, 0, 1, 1, 0}
	g := G.NewGraph()
	o := constNode(g, "o", od, rows, 2*dim)
	y := constNode(g, "y", yd, rows, dim)
	w := constNode(g, "w", wd, rows)
	mu, err := ops.Columns(o, 0, dim)
	if err != nil {
		t.Fatal(err)
	}
	lv, err := ops.Columns(o, dim, 2*dim)
	if err != nil {
		t.Fatal(err)
	}
	nll, err := ops.GaussianNLL(mu, lv, y, w)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, g, nll, []fdParam{{"o", o, od}}, 30, 1e-2, 5e-3)
	var want float64
	for r := 0; r < rows; r++ {
		if wd[r] == 0 {
			continue
		}
		for j := 0; j < dim; j++ {
			m, l := float64(od[r*2*dim+j]), float64(od[r*2*dim+dim+j])
			e := m - float64(yd[r*dim+j])
			want += e*e*math.Exp(-l) + l
		}
	}
	want /= 3 * dim
	got, _, _ := ops.ValueF32(nll.Value())
	if math.Abs(float64(got[0])-want) > 1e-5*math.Max(1, math.Abs(want)) {
		t.Fatalf("nll %v, want %v", got[0], want)
	}
}

func TestSumSquaresAndPenalty(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	xd := randSlice(rng, 12, 1)
	bounds := NewLogVarBounds(4)
	g := G.NewGraph()
	x := constNode(g, "x", xd, 3, 4)
	ss, err := ops.SumSquares(x, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	bn := NewBoundsNodes(g, "b", &bounds)
	pen, err := bn.Penalty()
	if err != nil {
		t.Fatal(err)
	}
	cost, err := G.Add(ss, pen)
	if err != nil {
		t.Fatal(err)
	}
	checkGrads(t, g, cost, []fdParam{{"x", x, xd}, {"max", bn.Max, bounds.Max}, {"min", bn.Min, bounds.Min}}, 12, 1e-2, 5e-3)
	var want float64
	for _, v := range xd {
		want += 0.3 * float64(v) * float64(v)
	}
	want += 0.01*4*0.5 - 0.01*4*(-10)
	got, _, _ := ops.ValueF32(cost.Value())
	if math.Abs(float64(got[0])-want) > 1e-5 {
		t.Fatalf("cost %v, want %v", got[0], want)
	}
}
