package models

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gmNaiveAct is an independent float64 re-implementation of the activations.
func gmNaiveAct(name string, x float64) float64 {
	switch name {
	case "relu":
		return math.Max(x, 0)
	case "swish":
		return x / (1 + math.Exp(-x))
	}
	return x
}

// gmRandAwayFromZero returns values in ±[0.05, 3] so ReLU's kink is never
// within a finite-difference step.
func gmRandAwayFromZero(n int, rng *rand.Rand) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 0.05 + 2.95*rng.Float64()
		if rng.Intn(2) == 0 {
			v[i] = -v[i]
		}
	}
	return v
}

// TestActivationsFloat64FiniteDiff checks Relu, Swish and AddBias (values and
// symbolic gradients) on float64 nodes against a naive float64 forward and
// central finite differences of it.
func TestActivationsFloat64FiniteDiff(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const rows, cols = 4, 6
	for _, act := range []string{"relu", "swish"} {
		xv := gmRandAwayFromZero(rows*cols, rng)
		bv := gmRandAwayFromZero(cols, rng)
		cv := gmRandAwayFromZero(rows*cols, rng)
		g := G.NewGraph()
		x := G.NewMatrix(g, G.Float64, G.WithShape(rows, cols), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float64(nil), xv...)))))
		b := G.NewVector(g, G.Float64, G.WithShape(cols), G.WithName("b"),
			G.WithValue(tensor.New(tensor.WithShape(cols), tensor.WithBacking(append([]float64(nil), bv...)))))
		c := G.NewMatrix(g, G.Float64, G.WithShape(rows, cols), G.WithName("c"),
			G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(cv))))
		xb, err := AddBias(x, b)
		if err != nil {
			t.Fatal(err)
		}
		y, err := Activate(act, xb)
		if err != nil {
			t.Fatal(err)
		}
		prod := G.Must(G.HadamardProd(y, c))
		cost := G.Must(G.Sum(prod))
		grads, err := G.Grad(cost, x, b)
		if err != nil {
			t.Fatal(err)
		}
		m := G.NewTapeMachine(g)
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		m.Close()

		naive := func(xs, bs []float64) float64 {
			s := 0.0
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					s += gmNaiveAct(act, xs[i*cols+j]+bs[j]) * cv[i*cols+j]
				}
			}
			return s
		}
		ys := y.Value().Data().([]float64)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				want := gmNaiveAct(act, xv[i*cols+j]+bv[j])
				if math.Abs(ys[i*cols+j]-want) > 1e-12 {
					t.Fatalf("%s forward [%d,%d] = %v, want %v", act, i, j, ys[i*cols+j], want)
				}
			}
		}
		const h = 1e-6
		check := func(name string, vals []float64, got []float64) {
			for i := range vals {
				old := vals[i]
				vals[i] = old + h
				fp := naive(xv, bv)
				vals[i] = old - h
				fm := naive(xv, bv)
				vals[i] = old
				fd := (fp - fm) / (2 * h)
				if math.Abs(got[i]-fd) > 1e-6*(1+math.Abs(fd)) {
					t.Errorf("%s d/d%s[%d] = %v, finite difference %v", act, name, i, got[i], fd)
				}
			}
		}
		check("x", xv, grads[0].Value().Data().([]float64))
		check("b", bv, grads[1].Value().Data().([]float64))
	}
}

// TestActivationsFloat32 checks the float32 kernels against the float64
// formulas, forward and backward (ReLU' = step, Swish' = s(1+x(1-s))).
func TestActivationsFloat32(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, k := range []actKind{actRelu, actSwish} {
		n := 1000
		xs, gs := make([]float32, n), make([]float32, n)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64() * 6)
			gs[i] = float32(rng.NormFloat64())
		}
		xs[0], xs[1], xs[2] = 0, 80, -80
		x := tensor.New(tensor.WithShape(n), tensor.WithBacking(xs))
		gt := tensor.New(tensor.WithShape(n), tensor.WithBacking(gs))
		y := tensor.New(tensor.WithShape(n), tensor.Of(tensor.Float32))
		d := tensor.New(tensor.WithShape(n), tensor.Of(tensor.Float32))
		if err := actForward(k, x, y); err != nil {
			t.Fatal(err)
		}
		if err := actBackward(k, x, gt, d, false); err != nil {
			t.Fatal(err)
		}
		ys, ds := y.Data().([]float32), d.Data().([]float32)
		for i, v := range xs {
			xv := float64(v)
			var wantY, wantD float64
			if k == actRelu {
				wantY = math.Max(xv, 0)
				if xv > 0 {
					wantD = float64(gs[i])
				}
			} else {
				s := 1 / (1 + math.Exp(-xv))
				wantY = xv * s
				wantD = float64(gs[i]) * s * (1 + xv*(1-s))
			}
			if math.Abs(float64(ys[i])-wantY) > 1e-6*(1+math.Abs(wantY)) {
				t.Fatalf("%v(%v) = %v, want %v", k, v, ys[i], wantY)
			}
			if math.Abs(float64(ds[i])-wantD) > 1e-6*(1+math.Abs(wantD)) {
				t.Fatalf("%v'(%v)·g = %v, want %v", k, v, ds[i], wantD)
			}
		}
	}
}

// TestActivationsDoDiff checks the autodiff (LispMachine) path of the custom
// ops against the naive float64 derivative.
func TestActivationsDoDiff(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const rows, cols = 3, 5
	for _, act := range []string{"relu", "swish"} {
		xv := gmRandAwayFromZero(rows*cols, rng)
		bv := gmRandAwayFromZero(cols, rng)
		g := G.NewGraph()
		x := G.NewMatrix(g, G.Float64, G.WithShape(rows, cols), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float64(nil), xv...)))))
		b := G.NewVector(g, G.Float64, G.WithShape(cols), G.WithName("b"),
			G.WithValue(tensor.New(tensor.WithShape(cols), tensor.WithBacking(append([]float64(nil), bv...)))))
		xb := G.Must(AddBias(x, b))
		y := G.Must(Activate(act, xb))
		cost := G.Must(G.Sum(y))
		m := G.NewLispMachine(g)
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		m.Close()
		xg, err := x.Grad()
		if err != nil {
			t.Fatal(err)
		}
		bg, err := b.Grad()
		if err != nil {
			t.Fatal(err)
		}
		_ = cost
		wantB := make([]float64, cols)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				z := xv[i*cols+j] + bv[j]
				const h = 1e-6
				fd := (gmNaiveAct(act, z+h) - gmNaiveAct(act, z-h)) / (2 * h)
				wantB[j] += fd
				if got := xg.Data().([]float64)[i*cols+j]; math.Abs(got-fd) > 1e-6 {
					t.Errorf("%s dx[%d,%d] = %v, want %v", act, i, j, got, fd)
				}
			}
		}
		for j, w := range wantB {
			if got := bg.Data().([]float64)[j]; math.Abs(got-w) > 1e-5 {
				t.Errorf("%s db[%d] = %v, want %v", act, j, got, w)
			}
		}
	}
}

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
				s = gmNaiveAct(m.Activation, s)
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
		y = G.Must(KeepValue(y)) // y itself may be overwritten by the backward pass
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
		naiveCost := func() float64 {
			s := 0.0
			for r := 0; r < batch; r++ {
				row := make([]float64, 4)
				for i := range row {
					row[i] = float64(xv[r*4+i])
				}
				out := gmNaiveMLP(&mlp, row)
				for j, v := range out {
					s += v * float64(cv[r*3+j])
				}
			}
			return s
		}
		ys := y.Value().Data().([]float32)
		for r := 0; r < batch; r++ {
			row := make([]float64, 4)
			for i := range row {
				row[i] = float64(xv[r*4+i])
			}
			out := gmNaiveMLP(&mlp, row)
			for j, v := range out {
				if math.Abs(float64(ys[r*3+j])-v) > 1e-5*(1+math.Abs(v)) {
					t.Fatalf("%s y[%d,%d] = %v, want %v", act, r, j, ys[r*3+j], v)
				}
			}
		}
		for i, p := range params {
			gv, err := p.Grad()
			if err != nil {
				t.Fatal(err)
			}
			got := gv.Data().([]float32)
			vals := p.Value().Data().([]float32)
			for j := range vals {
				old := vals[j]
				const h = 1e-3
				vals[j] = old + h
				up := vals[j]
				fp := naiveCost()
				vals[j] = old - h
				down := vals[j]
				fm := naiveCost()
				vals[j] = old
				// old±h rounds in float32: divide by the realised step.
				fd := (fp - fm) / (float64(up) - float64(down))
				if math.Abs(float64(got[j])-fd) > 1e-4*(1+math.Abs(fd)) {
					t.Errorf("%s param %d (%v) grad[%d] = %v, finite difference %v", act, i, p.Name(), j, got[j], fd)
				}
			}
		}
	}
}

// BenchmarkRelu256 compares the custom Relu op with G.Rectify, forward and
// backward on a [256,256] float32 matrix.
func BenchmarkRelu256(b *testing.B) {
	for _, name := range []string{"custom", "G.Rectify"} {
		b.Run(name, func(b *testing.B) {
			g := G.NewGraph()
			xs := make([]float32, 256*256)
			rng := rand.New(rand.NewSource(1))
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			x := G.NewMatrix(g, G.Float32, G.WithShape(256, 256), G.WithName("x"),
				G.WithValue(tensor.New(tensor.WithShape(256, 256), tensor.WithBacking(xs))))
			var y *G.Node
			if name == "custom" {
				y = G.Must(Relu(x))
			} else {
				y = G.Must(G.Rectify(x))
			}
			cost := G.Must(G.Sum(y))
			if _, err := G.Grad(cost, x); err != nil {
				b.Fatal(err)
			}
			m := G.NewTapeMachine(g)
			defer m.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Reset()
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSwish256 compares the custom Swish op with x·G.Sigmoid(x).
func BenchmarkSwish256(b *testing.B) {
	for _, name := range []string{"custom", "G.Sigmoid"} {
		b.Run(name, func(b *testing.B) {
			g := G.NewGraph()
			xs := make([]float32, 256*256)
			rng := rand.New(rand.NewSource(1))
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			x := G.NewMatrix(g, G.Float32, G.WithShape(256, 256), G.WithName("x"),
				G.WithValue(tensor.New(tensor.WithShape(256, 256), tensor.WithBacking(xs))))
			var y *G.Node
			if name == "custom" {
				y = G.Must(Swish(x))
			} else {
				y = G.Must(G.HadamardProd(x, G.Must(G.Sigmoid(x))))
			}
			cost := G.Must(G.Sum(y))
			if _, err := G.Grad(cost, x); err != nil {
				b.Fatal(err)
			}
			m := G.NewTapeMachine(g)
			defer m.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Reset()
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkActKernels times the float32 kernels alone on 65536 values.
func BenchmarkActKernels(b *testing.B) {
	n := 256 * 256
	rng := rand.New(rand.NewSource(1))
	xs, gs := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], gs[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	x := tensor.New(tensor.WithShape(n), tensor.WithBacking(xs))
	gt := tensor.New(tensor.WithShape(n), tensor.WithBacking(gs))
	y := tensor.New(tensor.WithShape(n), tensor.Of(tensor.Float32))
	for _, k := range []actKind{actRelu, actSwish} {
		b.Run(k.String()+"/fwd", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_ = actForward(k, x, y)
			}
		})
		b.Run(k.String()+"/bwd", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_ = actBackward(k, x, gt, y, false)
			}
		})
	}
}

// TestActExp32 checks the float32 exp against math.Exp over its range.
func TestActExp32(t *testing.T) {
	worst := 0.0
	for x := -87.0; x <= 88.5; x += 0.00731 {
		got := float64(actExp32(float32(x)))
		want := math.Exp(float64(float32(x)))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 5e-7 {
		t.Fatalf("worst relative error %g > 5e-7", worst)
	}
	if actExp32(-100) != 0 || !math.IsInf(float64(actExp32(100)), 1) {
		t.Fatalf("exp(-100) = %v, exp(100) = %v", actExp32(-100), actExp32(100))
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
		return g, x, G.Must(KeepValue(y)), n, cost
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
	r := G.Must(Relu(sl))
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
