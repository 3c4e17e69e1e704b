package ops

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

// biasActGraph draws xv [rows·cols] and bv [cols] away from zero and builds
// y = Activate(act, AddBias(x, b)) on float64 nodes x and b holding copies
// of them.
func biasActGraph(t *testing.T, rng *rand.Rand, act string, rows, cols int) (g *G.ExprGraph, x, b, y *G.Node, xv, bv []float64) {
	t.Helper()
	xv = gmRandAwayFromZero(rows*cols, rng)
	bv = gmRandAwayFromZero(cols, rng)
	g = G.NewGraph()
	x = G.NewMatrix(g, G.Float64, G.WithShape(rows, cols), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float64(nil), xv...)))))
	b = G.NewVector(g, G.Float64, G.WithShape(cols), G.WithName("b"),
		G.WithValue(tensor.New(tensor.WithShape(cols), tensor.WithBacking(append([]float64(nil), bv...)))))
	xb, err := AddBias(x, b)
	if err != nil {
		t.Fatal(err)
	}
	if y, err = Activate(act, xb); err != nil {
		t.Fatal(err)
	}
	return g, x, b, y, xv, bv
}

// TestActivationsFloat64FiniteDiff checks Relu, Swish and AddBias (values and
// symbolic gradients) on float64 nodes against a naive float64 forward and
// central finite differences of it.
func TestActivationsFloat64FiniteDiff(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const rows, cols = 4, 6
	for _, act := range []string{"relu", "swish"} {
		g, x, b, y, xv, bv := biasActGraph(t, rng, act, rows, cols)
		cv := gmRandAwayFromZero(rows*cols, rng)
		c := G.NewMatrix(g, G.Float64, G.WithShape(rows, cols), G.WithName("c"),
			G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(cv))))
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
		g, x, b, y, xv, bv := biasActGraph(t, rng, act, rows, cols)
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

// BenchmarkActivation256 compares the custom Relu and Swish ops with
// Gorgonia's G.Rectify and x·G.Sigmoid(x), forward and backward on a
// [256,256] float32 matrix.
func BenchmarkActivation256(b *testing.B) {
	for _, c := range []struct {
		name string
		act  func(x *G.Node) (*G.Node, error)
	}{
		{"Relu/custom", Relu},
		{"Relu/G.Rectify", G.Rectify},
		{"Swish/custom", Swish},
		{"Swish/G.Sigmoid", func(x *G.Node) (*G.Node, error) { return G.HadamardProd(x, G.Must(G.Sigmoid(x))) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := G.NewGraph()
			xs := make([]float32, 256*256)
			rng := rand.New(rand.NewSource(1))
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			x := G.NewMatrix(g, G.Float32, G.WithShape(256, 256), G.WithName("x"),
				G.WithValue(tensor.New(tensor.WithShape(256, 256), tensor.WithBacking(xs))))
			cost := G.Must(G.Sum(G.Must(c.act(x))))
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

// TestKernelExp checks the C kernels' exp against math.Exp and its
// saturation.
func TestKernelExp(t *testing.T) {
	var xs []float32
	for x := -87.0; x < 88; x += 0.0137 {
		xs = append(xs, float32(x))
	}
	xs = append(xs, -100, 100, 0)
	ys := make([]float32, len(xs))
	expInto(xs, ys)
	worst := 0.0
	for i, x := range xs[:len(xs)-3] {
		want := math.Exp(float64(x))
		worst = math.Max(worst, math.Abs(float64(ys[i])-want)/want)
	}
	if worst > 5e-7 {
		t.Fatalf("kernel exp relative error %.2e", worst)
	}
	n := len(xs)
	if ys[n-3] > 1.3e-38 || ys[n-2] != float32(math.Exp(88)) && math.Abs(float64(ys[n-2])/math.Exp(88)-1) > 1e-6 || ys[n-1] != 1 {
		t.Fatalf("kernel exp saturation/identity: %g %g %g", ys[n-3], ys[n-2], ys[n-1])
	}
}
