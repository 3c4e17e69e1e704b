package models

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/models/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gmNaiveMLP is an independent float64 forward of an MLP on one row.
func gmNaiveMLP(m *MLP, x []float64) []float64 {
	h := x
	for li, l := range m.Layers {
		out := make([]float64, l.Out)
		for o := 0; o < l.Out; o++ {
			s := float64(l.B[o])
			for i := 0; i < l.In; i++ {
				s += h[i] * float64(l.W[i*l.Out+o])
			}
			if li+1 < len(m.Layers) {
				switch m.Activation {
				case "relu":
					s = math.Max(s, 0)
				case "swish":
					s /= 1 + math.Exp(-s)
				}
			}
			out[o] = s
		}
		h = out
	}
	return h
}

// TestMLPNodesForwardGrad builds MLPNodes on float32 weights, compares the
// output with a naive float64 forward and the weight gradients of
// sum(y ⊙ c) with central finite differences of that naive forward. It also
// checks that the nodes' values are backed by the struct's slices.
func TestMLPNodesForwardGrad(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	const batch = 5
	for _, act := range []string{"relu", "swish"} {
		mlp := NewMLP([]int{4, 7, 6, 3}, act, rng)
		xv := make([]float32, batch*4)
		cv := make([]float32, batch*3)
		for i := range xv {
			xv[i] = float32(rng.NormFloat64())
		}
		for i := range cv {
			cv[i] = float32(rng.NormFloat64())
		}
		g := G.NewGraph()
		x := G.NewMatrix(g, G.Float32, G.WithShape(batch, 4), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(batch, 4), tensor.WithBacking(xv))))
		c := G.NewMatrix(g, G.Float32, G.WithShape(batch, 3), G.WithName("c"),
			G.WithValue(tensor.New(tensor.WithShape(batch, 3), tensor.WithBacking(cv))))
		nodes := NewMLPNodes(g, "mlp", &mlp)
		y, err := nodes.Apply(x)
		if err != nil {
			t.Fatal(err)
		}
		cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, c))))
		y = G.Must(ops.KeepValue(y)) // y itself may be overwritten by the backward pass
		params := nodes.Params()
		if len(params) != 6 {
			t.Fatalf("%d params, want 6", len(params))
		}
		for i, p := range params {
			l := &mlp.Layers[i/2]
			want := l.W
			if i%2 == 1 {
				want = l.B
			}
			if d := p.Value().Data().([]float32); &d[0] != &want[0] {
				t.Fatalf("param %v is not backed by the struct slice", p.Name())
			}
		}
		if _, err := G.Grad(cost, params...); err != nil {
			t.Fatal(err)
		}
		m := G.NewTapeMachine(g)
		defer m.Close()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		naiveRow := func(r int) []float64 { // the naive forward of input row r
			row := make([]float64, 4)
			for i := range row {
				row[i] = float64(xv[r*4+i])
			}
			return gmNaiveMLP(&mlp, row)
		}
		naiveCost := func() float64 {
			s := 0.0
			for r := 0; r < batch; r++ {
				for j, v := range naiveRow(r) {
					s += v * float64(cv[r*3+j])
				}
			}
			return s
		}
		ys := y.Value().Data().([]float32)
		for r := 0; r < batch; r++ {
			for j, v := range naiveRow(r) {
				if math.Abs(float64(ys[r*3+j])-v) > 1e-5*(1+math.Abs(v)) {
					t.Fatalf("%s y[%d,%d] = %v, want %v", act, r, j, ys[r*3+j], v)
				}
			}
		}
		checkNaiveGrads(t, act, params, naiveCost, 1e-3, 1e-4)
	}
}

// checkNaiveGrads compares the gradient of every param, left by a graph run,
// with central finite differences of naiveCost, which must read the params'
// current values: each entry moves by ±h, and the difference is divided by
// the step float32 realises. tol is relative to 1+|finite difference|.
func checkNaiveGrads(t *testing.T, what string, params G.Nodes, naiveCost func() float64, h float32, tol float64) {
	t.Helper()
	for _, p := range params {
		gv, err := p.Grad()
		if err != nil {
			t.Fatal(err)
		}
		got := gv.Data().([]float32)
		vals := p.Value().Data().([]float32)
		for j := range vals {
			old := vals[j]
			vals[j] = old + h
			up := vals[j]
			fp := naiveCost()
			vals[j] = old - h
			down := vals[j]
			fm := naiveCost()
			vals[j] = old
			fd := (fp - fm) / (float64(up) - float64(down))
			if math.Abs(float64(got[j])-fd) > tol*(1+math.Abs(fd)) {
				t.Errorf("%s: d cost/d %v[%d] = %v, finite difference %v", what, p.Name(), j, got[j], fd)
			}
		}
	}
}

// TestLinearReuseFrozenViews checks behaviour the fused ops add: a graph
// re-run on new inputs (outputs are kept buffers) matches the naive forward;
// a frozen copy gives the same gradient for the layer below it and refuses
// gradients for its own weights; ops on a non-contiguous column slice read
// the right values; and the LispMachine (DoDiff) path gives the symbolic
// gradients.
func TestLinearReuseFrozenViews(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	const batch = 3
	mlp := NewMLP([]int{2, 4, 3}, "relu", rng)
	build := func(frozenTop bool) (*G.ExprGraph, GraphInput, *G.Node, MLPNodes, *G.Node) {
		g := G.NewGraph()
		x := NewGraphInput(g, "x", batch, 2)
		n := NewMLPNodes(g, "m", &mlp)
		if frozenTop {
			top := MLPNodes{Layers: []LinearNodes{n.Layers[1]}}.Frozen()
			n.Layers[1] = top.Layers[0]
		}
		y := G.Must(n.Apply(x.Node))
		cost := G.Must(G.Sum(G.Must(G.Square(y))))
		return g, x, G.Must(ops.KeepValue(y)), n, cost
	}
	g, x, y, n, cost := build(false)
	if _, err := G.Grad(cost, n.Params()...); err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	var grad0 []float32
	for run := 0; run < 2; run++ {
		for i := range x.Data {
			x.Data[i] = float32(rng.NormFloat64())
		}
		m.Reset()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		ys := sacValues(y)
		for r := 0; r < batch; r++ {
			want := gmNaiveMLP(&mlp, []float64{float64(x.Data[2*r]), float64(x.Data[2*r+1])})
			for j, w := range want {
				if math.Abs(float64(ys[r*3+j])-w) > 1e-5 {
					t.Fatalf("run %d y[%d,%d] = %v, naive %v", run, r, j, ys[r*3+j], w)
				}
			}
		}
		gv, _ := n.Layers[0].W.Grad()
		grad0 = append([]float32(nil), gv.Data().([]float32)...)
	}

	gf, xf, _, nf, costF := build(true)
	if _, err := G.Grad(costF, nf.Layers[1].W); err == nil {
		t.Error("G.Grad with respect to a frozen weight succeeded")
	}
	gf, xf, _, nf, costF = build(true)
	if _, err := G.Grad(costF, nf.Layers[0].Params()...); err != nil {
		t.Fatal(err)
	}
	copy(xf.Data, x.Data)
	mf := G.NewTapeMachine(gf)
	defer mf.Close()
	if err := mf.RunAll(); err != nil {
		t.Fatal(err)
	}
	gv, _ := nf.Layers[0].W.Grad()
	for i, v := range gv.Data().([]float32) {
		if math.Abs(float64(v-grad0[i])) > 1e-6 {
			t.Fatalf("gradient below a frozen layer [%d] = %v, unfrozen %v", i, v, grad0[i])
		}
	}

	// Relu on a column slice [:,1:3] of a [3,4] input.
	gs := G.NewGraph()
	in := NewGraphInput(gs, "in", 3, 4)
	for i := range in.Data {
		in.Data[i] = float32(i) - 5.5
	}
	sl := G.Must(G.Slice(in.Node, nil, G.S(1, 3)))
	r := G.Must(ops.Relu(sl))
	ms := G.NewTapeMachine(gs)
	defer ms.Close()
	if err := ms.RunAll(); err != nil {
		t.Fatal(err)
	}
	rs := sacValues(r)
	for i := 0; i < 3; i++ {
		for j := 0; j < 2; j++ {
			if want := math.Max(float64(in.Data[i*4+1+j]), 0); float64(rs[i*2+j]) != want {
				t.Fatalf("relu of slice [%d,%d] = %v, want %v", i, j, rs[i*2+j], want)
			}
		}
	}

	// LispMachine: dual-value gradients equal the symbolic ones. The input
	// goes through a ReLU first so the first layer's dx is also exercised.
	gl := G.NewGraph()
	xl := NewGraphInput(gl, "x", batch, 2)
	copy(xl.Data, x.Data)
	nl := NewMLPNodes(gl, "m", &mlp)
	yl := G.Must(nl.Apply(xl.Node))
	G.Must(G.Sum(G.Must(G.Square(yl))))
	ml := G.NewLispMachine(gl)
	defer ml.Close()
	if err := ml.RunAll(); err != nil {
		t.Fatal(err)
	}
	gl0, err := nl.Layers[0].W.Grad()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range gl0.Data().([]float32) {
		if math.Abs(float64(v-grad0[i])) > 1e-5 {
			t.Fatalf("LispMachine dW0[%d] = %v, symbolic %v", i, v, grad0[i])
		}
	}
}

// TestMLPInputGradient checks the gradient of sum(y²) with respect to the
// graph input x (through the first layer's dx) against central finite
// differences of the naive forward.
func TestMLPInputGradient(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	mlp := NewMLP([]int{3, 5, 2}, "swish", rng)
	g := G.NewGraph()
	x := NewGraphInput(g, "x", 2, 3)
	for i := range x.Data {
		x.Data[i] = float32(rng.NormFloat64())
	}
	y := G.Must(NewMLPNodes(g, "m", &mlp).Apply(x.Node))
	cost := G.Must(G.Sum(G.Must(G.Square(y))))
	grads, err := G.Grad(cost, x.Node)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	naive := func(xs []float64) float64 {
		s := 0.0
		for r := 0; r < 2; r++ {
			for _, v := range gmNaiveMLP(&mlp, xs[3*r:3*r+3]) {
				s += v * v
			}
		}
		return s
	}
	xs := make([]float64, 6)
	for i, v := range x.Data {
		xs[i] = float64(v)
	}
	got := grads[0].Value().Data().([]float32)
	for i := range xs {
		old := xs[i]
		xs[i] = old + 1e-6
		fp := naive(xs)
		xs[i] = old - 1e-6
		fm := naive(xs)
		xs[i] = old
		fd := (fp - fm) / 2e-6
		if math.Abs(float64(got[i])-fd) > 1e-4*(1+math.Abs(fd)) {
			t.Errorf("d/dx[%d] = %v, finite difference %v", i, got[i], fd)
		}
	}
}

// TestReluMLPMaskedBackward checks the ReLU backward pass fused into the
// next layer's product (ops.LinearAfterRelu, which MLPNodes uses past the
// first layer): the graph has no separate ReLU backward op left; the
// gradients of every weight and of the input match central finite
// differences of the naive float64 forward; they equal, bit for bit, those
// of the same MLP built from LinearRelu and Linear alone (a separate ReLU
// backward pass); and a hidden output with a second consumer (its gradient
// a sum) still gets the full ReLU mask.
func TestReluMLPMaskedBackward(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	const batch, in, out = 6, 5, 2
	mlp := NewMLP([]int{in, 9, 8, 7, out}, "relu", rng)
	for i := range mlp.Layers { // biases that leave some units dead
		for j := range mlp.Layers[i].B {
			mlp.Layers[i].B[j] = float32(0.3 * rng.NormFloat64())
		}
	}
	xv := make([]float32, batch*in)
	cv := make([]float32, batch*out)
	for i := range xv {
		xv[i] = float32(rng.NormFloat64())
	}
	for i := range cv {
		cv[i] = float32(rng.NormFloat64())
	}
	// build returns the graph's gradients (params, then x) after one run;
	// fused picks MLPNodes.Apply, else LinearRelu/Linear per layer; extra
	// adds sum(h1) (the second hidden output) to the cost.
	build := func(fused, extra bool) (grads [][]float32, ops_ []string) {
		g := G.NewGraph()
		x := NewGraphInput(g, "x", batch, in)
		copy(x.Data, xv)
		c := NewGraphInput(g, "c", batch, out)
		copy(c.Data, cv)
		nodes := NewMLPNodes(g, "mlp", &mlp)
		var y, h1 *G.Node
		if fused && !extra {
			y = G.Must(nodes.Apply(x.Node))
		} else {
			h := x.Node
			for i, l := range nodes.Layers {
				last := i+1 == len(nodes.Layers)
				switch {
				case !fused && last:
					h = G.Must(ops.Linear(h, l.W, l.B, false))
				case !fused:
					h = G.Must(ops.LinearRelu(h, l.W, l.B, false))
				case i == 0:
					h = G.Must(ops.LinearRelu(h, l.W, l.B, false))
				default:
					h = G.Must(ops.LinearAfterRelu(h, l.W, l.B, false, !last))
				}
				if i == 1 {
					h1 = h
				}
			}
			y = h
		}
		cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, c.Node))))
		if extra {
			cost = G.Must(G.Add(cost, G.Must(G.Sum(h1))))
		}
		wrt := append(nodes.Params(), x.Node)
		gs, err := G.Grad(cost, wrt...)
		if err != nil {
			t.Fatal(err)
		}
		m := G.NewTapeMachine(g)
		defer m.Close()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		for _, gn := range gs {
			grads = append(grads, append([]float32(nil), gn.Value().Data().([]float32)...))
		}
		for _, n := range g.AllNodes() {
			if n.Op() != nil {
				ops_ = append(ops_, n.Op().String())
			}
		}
		return grads, ops_
	}
	naive := func(extra bool) func(xs []float64) float64 {
		return func(xs []float64) float64 {
			s := 0.0
			for r := 0; r < batch; r++ {
				row := xs[r*in : (r+1)*in]
				for j, v := range gmNaiveMLP(&mlp, row) {
					s += v * float64(cv[r*out+j])
				}
				if extra { // sum of the second hidden layer's outputs
					two := MLP{Layers: mlp.Layers[:2], Activation: "relu"}
					for _, v := range gmNaiveMLP(&two, row) {
						s += math.Max(v, 0)
					}
				}
			}
			return s
		}
	}
	fdCheck := func(what string, grads [][]float32, cost func([]float64) float64) {
		t.Helper()
		xs := make([]float64, len(xv))
		for i, v := range xv {
			xs[i] = float64(v)
		}
		// The input gradient, through every masked product.
		for i := range xs {
			old := xs[i]
			xs[i] = old + 1e-6
			fp := cost(xs)
			xs[i] = old - 1e-6
			fm := cost(xs)
			xs[i] = old
			fd := (fp - fm) / 2e-6
			if got := grads[len(grads)-1][i]; math.Abs(float64(got)-fd) > 1e-4*(1+math.Abs(fd)) {
				t.Errorf("%s: d cost/d x[%d] = %v, finite difference %v", what, i, got, fd)
			}
		}
		// Every weight: the same with the weights moved (naive reads mlp).
		li := 0
		for l := range mlp.Layers {
			for _, vals := range [][]float32{mlp.Layers[l].W, mlp.Layers[l].B} {
				for j := range vals {
					old := vals[j]
					vals[j] = old + 1e-3
					up := vals[j]
					fp := cost(xs)
					vals[j] = old - 1e-3
					down := vals[j]
					fm := cost(xs)
					vals[j] = old
					fd := (fp - fm) / (float64(up) - float64(down))
					if got := grads[li][j]; math.Abs(float64(got)-fd) > 1e-3*(1+math.Abs(fd)) {
						t.Errorf("%s: d cost/d layer %d param %d[%d] = %v, finite difference %v", what, l, li%2, j, got, fd)
					}
				}
				li++
			}
		}
	}
	fused, opsFused := build(true, false)
	plain, opsPlain := build(false, false)
	count := func(list []string, name string) (n int) {
		for _, s := range list {
			if s == name {
				n++
			}
		}
		return n
	}
	if n := count(opsFused, "Relu32Grad"); n != 0 {
		t.Errorf("fused graph has %d ReLU backward ops, want 0", n)
	}
	if n := count(opsFused, "LinearGradXMasked"); n != 3 {
		t.Errorf("fused graph has %d masked dx products, want 3", n)
	}
	if n := count(opsPlain, "Relu32Grad"); n != 3 {
		t.Errorf("plain graph has %d ReLU backward ops, want 3", n)
	}
	fdCheck("fused", fused, naive(false))
	for i := range plain {
		for j := range plain[i] {
			if math.Float32bits(fused[i][j]) != math.Float32bits(plain[i][j]) {
				t.Fatalf("gradient %d[%d]: fused %v, separate ReLU pass %v", i, j, fused[i][j], plain[i][j])
			}
		}
	}
	extra, opsExtra := build(true, true)
	if n := count(opsExtra, "Relu32Grad"); n != 1 {
		t.Errorf("graph with a second consumer of h1 has %d ReLU backward ops, want 1 (h1's)", n)
	}
	fdCheck("second consumer", extra, naive(true))
}

// TestMarkDataSkipsInputGradient checks ops.MarkData: an MLP on a marked
// input (or on ConcatColumns of two marked inputs) forms no product for the
// input gradient, its weight gradients equal bit for bit those of the same
// graph on unmarked inputs, differentiating by a marked input fails, and a
// concatenation with an unmarked input still passes that input's gradient.
func TestMarkDataSkipsInputGradient(t *testing.T) {
	rng := rand.New(rand.NewSource(32))
	const batch = 7
	mlp := NewMLP([]int{5, 8, 6, 2}, "relu", rng)
	av := make([]float32, batch*3)
	bv := make([]float32, batch*2)
	for _, v := range [][]float32{av, bv} {
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
	}
	type result struct {
		grads  [][]float32
		dxOps  int
		bGrad  []float32 // d cost / d b when b is unmarked and differentiated
		gradOK error
	}
	run := func(markA, markB bool) result {
		g := G.NewGraph()
		a, b := NewGraphInput(g, "a", batch, 3), NewGraphInput(g, "b", batch, 2)
		copy(a.Data, av)
		copy(b.Data, bv)
		if markA {
			ops.MarkData(a.Node)
		}
		if markB {
			ops.MarkData(b.Node)
		}
		x := G.Must(ops.ConcatColumns(a.Node, b.Node))
		nodes := NewMLPNodes(g, "mlp", &mlp)
		y := G.Must(nodes.Apply(x))
		cost := G.Must(G.Sum(G.Must(G.Square(y))))
		wrt := nodes.Params()
		if !markB {
			wrt = append(wrt, b.Node)
		}
		var r result
		gs, err := G.Grad(cost, wrt...)
		if err != nil {
			t.Fatal(err)
		}
		m := G.NewTapeMachine(g)
		defer m.Close()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		for i, gn := range gs {
			v := append([]float32(nil), gn.Value().Data().([]float32)...)
			if i < len(nodes.Params()) {
				r.grads = append(r.grads, v)
			} else {
				r.bGrad = v
			}
		}
		for _, n := range g.AllNodes() {
			if n.Op() != nil && (n.Op().String() == "LinearGradX" || n.Op().String() == "LinearGradXMasked") {
				r.dxOps++
			}
		}
		return r
	}
	marked, plain, half := run(true, true), run(false, false), run(true, false)
	if marked.dxOps != 2 || plain.dxOps != 3 || half.dxOps != 3 {
		t.Errorf("dx products: marked %d (want 2), unmarked %d (want 3), one marked %d (want 3)", marked.dxOps, plain.dxOps, half.dxOps)
	}
	for i := range plain.grads {
		for j := range plain.grads[i] {
			if math.Float32bits(marked.grads[i][j]) != math.Float32bits(plain.grads[i][j]) ||
				math.Float32bits(half.grads[i][j]) != math.Float32bits(plain.grads[i][j]) {
				t.Fatalf("gradient %d[%d]: marked %v, one marked %v, unmarked %v", i, j, marked.grads[i][j], half.grads[i][j], plain.grads[i][j])
			}
		}
	}
	nonzero := false
	for j := range plain.bGrad {
		nonzero = nonzero || plain.bGrad[j] != 0
		if plain.bGrad[j] != half.bGrad[j] {
			t.Fatalf("d cost/d b[%d]: %v with a marked, %v unmarked", j, half.bGrad[j], plain.bGrad[j])
		}
	}
	if !nonzero {
		t.Error("d cost/d b is all zero")
	}
	// Differentiating by a marked input fails.
	g := G.NewGraph()
	x := NewGraphInput(g, "x", batch, 5)
	ops.MarkData(x.Node)
	y := G.Must(NewMLPNodes(g, "mlp", &mlp).Apply(x.Node))
	if _, err := G.Grad(G.Must(G.Sum(y)), x.Node); err == nil {
		t.Error("G.Grad by a marked input succeeded")
	}
	if !ops.IsData(x.Node) || ops.IsData(y) {
		t.Errorf("IsData: input %v, output %v", ops.IsData(x.Node), ops.IsData(y))
	}
}
