package goruntime

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
)

// newTestActor exports a and compiles it into an Actor.
func newTestActor(t testing.TB, a *models.Actor) *Actor {
	t.Helper()
	model, err := onnx.ExportActor(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewActor(model, a.ObsDim, a.ActDim)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// randomActor is an actor of random bounds and weights larger than the
// default initialisation, so that the outputs spread.
func randomActor(seed int64, obsDim, actDim int, hidden []int) *models.Actor {
	rng := rand.New(rand.NewSource(seed))
	low, high := make([]float64, actDim), make([]float64, actDim)
	for i := range low {
		low[i] = -1 - rng.Float64()
		high[i] = low[i] + 0.5 + 2*rng.Float64()
	}
	a := models.NewActor(obsDim, low, high, hidden, rng)
	for i := range a.Net.Layers {
		for j := range a.Net.Layers[i].W {
			a.Net.Layers[i].W[j] *= 2
		}
	}
	return a
}

// hopperActor is a Hopper-sized actor (11 -> 3, 256x256).
func hopperActor() *models.Actor {
	rng := rand.New(rand.NewSource(1))
	return models.NewActor(11, []float64{-1, -1, -1}, []float64{1, 1, 1}, []int{256, 256}, rng)
}

// TestMatchesPlainMLP runs exported actors of several shapes (both
// batch-1 kernels: the row sums for k <= n and the dot products for k > n;
// a fused and an unfused activation) on the Go runtime and compares them
// with plainActor over batch sizes 1, act_dim, 3, 64 and 257 (more than
// two chunks), deterministic and sampled, repeating batch 1 to catch state
// left over from a previous run.
func TestMatchesPlainMLP(t *testing.T) {
	cases := []struct {
		obs, act   int
		hidden     []int
		activation string
	}{
		{6, 4, []int{32, 32}, "relu"},
		{11, 3, []int{256, 256}, "relu"},
		{40, 2, []int{8}, "relu"}, // 40 -> 8: dot products in the first layer too
		{5, 3, []int{16, 16}, "swish"},
		{3, 1, []int{7}, "relu"},
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("%d-%v-%d-%s", c.obs, c.hidden, c.act, c.activation), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(100 + ci)))
			low, high := make([]float64, c.act), make([]float64, c.act)
			for i := range low {
				low[i] = -1 - rng.Float64()
				high[i] = low[i] + 0.5 + 2*rng.Float64()
			}
			a := models.NewActor(c.obs, low, high, c.hidden, rng)
			a.Net.Activation = c.activation
			for i := range a.Net.Layers {
				for j := range a.Net.Layers[i].W {
					a.Net.Layers[i].W[j] *= 2
				}
			}
			g := newTestActor(t, a)
			defer g.Close()
			for _, n := range []int{1, c.act, 3, 64, 1, 257, 1, 1} {
				obs := testfix.RandNormal(rng, n*c.obs)
				noise := testfix.RandNormal(rng, n*c.act)
				mean, sampled := testfix.RefActor(a, obs, nil), testfix.RefActor(a, obs, noise)
				got := make([]float32, n*c.act)
				if err := g.Act(obs, nil, got); err != nil {
					t.Fatal(err)
				}
				if d := testfix.MaxDiff(got, mean); d > 1e-5 {
					t.Fatalf("n=%d mean action differs from the plain MLP by %g", n, d)
				}
				if err := g.Act(obs, noise, got); err != nil {
					t.Fatal(err)
				}
				if d := testfix.MaxDiff(got, sampled); d > 1e-5 {
					t.Fatalf("n=%d sampled action differs from the plain MLP by %g", n, d)
				}
				if n > 1 && got[0] == got[c.act] && got[1%c.act] == got[c.act+1%c.act] {
					t.Fatalf("n=%d: the first two rows are identical", n)
				}
			}
		})
	}
}

// TestPlans checks that the deterministic plan does not read the
// noise and that the Relu after each hidden Gemm was fused.
func TestPlans(t *testing.T) {
	g := newTestActor(t, randomActor(21, 5, 2, []int{32, 32}))
	if !g.prog.plans[0].needs[1] || g.prog.plans[1].needs[1] || !g.prog.plans[1].needs[0] {
		t.Fatalf("plans need %v and %v", g.prog.plans[0].needs, g.prog.plans[1].needs)
	}
	var gemms, fused, relus int
	for _, s := range g.prog.steps {
		switch {
		case s.kind == kernelGemm && s.relu:
			gemms++
			fused++
		case s.kind == kernelGemm:
			gemms++
		case s.kind == kernelRelu:
			relus++
		}
	}
	if gemms != 4 || fused != 2 || relus != 0 { // two hidden layers, the mean and log-std halves
		t.Fatalf("%d Gemm kernels, %d with a fused Relu, %d Relu kernels", gemms, fused, relus)
	}
}

// opsModel builds a hand-made model over obs [batch, 5] and noise
// [batch, 3] using every supported op with attributes and broadcasts the
// exporter does not emit, and returns it with a float64 reference.
func opsModel(t *testing.T, rng *rand.Rand) ([]byte, func(obs, noise []float32) []float64) {
	t.Helper()
	bT := testfix.RandNormal(rng, 3*5) // Gemm B given transposed: [3, 5]
	w2 := testfix.RandNormal(rng, 5*3)
	row := testfix.RandNormal(rng, 3)
	const alpha, beta, c0, c1 = 0.5, 2.0, 0.25, -0.75
	g := onnx.NewGraph("ops", "")
	obs := g.Input("obs", onnx.Float, onnx.Batch, onnx.Fixed(5))
	noise := g.Input("noise", onnx.Float, onnx.Batch, onnx.Fixed(3))
	h := g.Op("Gemm", []string{obs, g.Float("B", []int64{3, 5}, bT), g.Scalar("C", c0)},
		onnx.AttrFloat("alpha", alpha), onnx.AttrFloat("beta", beta), onnx.AttrInt("transB", 1))
	m := g.Op("MatMul", []string{obs, g.Float("W2", []int64{5, 3}, w2)})
	p := g.Op("Mul", []string{g.Op("Sigmoid", []string{m}), noise})
	q := g.Op("Mul", []string{g.Float("row", []int64{1, 3}, row), p})
	r := g.Op("Add", []string{g.Op("Add", []string{h, q}), g.Op("Relu", []string{m})}) // m is read twice: no fusion
	e := g.Op("Exp", []string{g.Op("Tanh", []string{r})})
	y := g.Op("Add", []string{e, g.Float("one", []int64{1}, []float32{c1})})
	g.Output(g.Op("Mul", []string{y, y}), "y", onnx.Float, onnx.Batch, onnx.Fixed(3))
	model, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(obs, noise []float32) []float64 {
		var out []float64
		for b := 0; b < len(obs)/5; b++ {
			x := obs[b*5 : (b+1)*5]
			for j := 0; j < 3; j++ {
				var hj, mj float64
				for i := 0; i < 5; i++ {
					hj += float64(x[i]) * float64(bT[j*5+i])
					mj += float64(x[i]) * float64(w2[i*3+j])
				}
				hj = alpha*hj + beta*c0
				q := float64(row[j]) * float64(noise[b*3+j]) / (1 + math.Exp(-mj))
				v := math.Exp(math.Tanh(hj+q+math.Max(mj, 0))) + c1
				out = append(out, v*v)
			}
		}
		return out
	}
	return model, ref
}

// TestOps checks each supported op and broadcast against a float64
// reference on a hand-made model.
func TestOps(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	model, ref := opsModel(t, rng)
	prog, err := Compile(model, []Input{{"obs", 5}, {"noise", 3}}, []string{"y"})
	if err != nil {
		t.Fatal(err)
	}
	r := prog.NewRunner()
	for _, n := range []int{1, 3, 257, 1} {
		obs, noise := testfix.RandNormal(rng, n*5), testfix.RandNormal(rng, n*3)
		out := make([]float32, n*3)
		if err := r.Run(0, [][]float32{obs, noise}, out); err != nil {
			t.Fatal(err)
		}
		if d := testfix.MaxDiff(out, ref(obs, noise)); d > 1e-5 {
			t.Fatalf("n=%d: differs from the reference by %g", n, d)
		}
		if err := r.Run(0, [][]float32{obs, noise[:len(noise)-3]}, out); err == nil || !strings.Contains(err.Error(), "rows") {
			t.Fatalf("n=%d: a short noise input gave %v", n, err)
		}
	}
}

// TestErrors checks that models outside the supported set fail
// at compile time with errors naming the problem.
func TestErrors(t *testing.T) {
	build := func(f func(g *onnx.Graph, obs string) string) []byte {
		g := onnx.NewGraph("bad", "")
		obs := g.Input("obs", onnx.Float, onnx.Batch, onnx.Fixed(4))
		g.Output(f(g, obs), "y", onnx.Float, onnx.Batch, onnx.Fixed(4))
		m, err := g.Model(nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	w := make([]float32, 16)
	cases := []struct {
		name  string
		model []byte
		want  []string
	}{
		{"Sub", build(func(g *onnx.Graph, x string) string { return g.Op("Sub", []string{x, g.Scalar("c", 1)}) }),
			[]string{`unsupported ONNX op "Sub"`, "supports Add, Exp, Gemm"}},
		{"Clip", build(func(g *onnx.Graph, x string) string { return g.Op("Clip", []string{x}) }),
			[]string{`unsupported ONNX op "Clip"`}},
		{"transA", build(func(g *onnx.Graph, x string) string {
			return g.Op("Gemm", []string{x, g.Float("W", []int64{4, 4}, w)}, onnx.AttrInt("transA", 1))
		}), []string{"Gemm", "transA=1 is not supported"}},
		{"attribute", build(func(g *onnx.Graph, x string) string {
			return g.Op("Relu", []string{x}, onnx.AttrInt("axis", 1))
		}), []string{"Relu", "attribute axis=1 is not supported"}},
		{"broadcast", build(func(g *onnx.Graph, x string) string {
			return g.Op("Add", []string{x, g.Float("v", []int64{3}, w[:3])})
		}), []string{"Add", "does not broadcast against [batch, 4]"}},
		{"batch B", build(func(g *onnx.Graph, x string) string { return g.Op("MatMul", []string{x, x}) }),
			[]string{"MatMul", "must be an initialiser"}},
		{"constant", build(func(g *onnx.Graph, x string) string {
			return g.Op("Add", []string{x, g.Op("Exp", []string{g.Scalar("c", 1)})})
		}), []string{"Exp", "does not fold constants"}},
		{"width", build(func(g *onnx.Graph, x string) string {
			return g.Op("MatMul", []string{x, g.Float("W", []int64{3, 4}, w[:12])})
		}), []string{"MatMul", "A is [batch, 4] but B is 3×4"}},
	}
	for _, c := range cases {
		_, err := Compile(c.model, []Input{{"obs", 4}}, []string{"y"})
		if err == nil {
			t.Fatalf("%s: compiled", c.name)
		}
		t.Logf("%s: %v", c.name, err)
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
	if _, err := Compile([]byte("not a model"), []Input{{"obs", 4}}, []string{"y"}); err == nil ||
		!strings.Contains(err.Error(), "decoding the model with onnx-go") {
		t.Fatalf("garbage: %v", err)
	}
	relu := build(func(g *onnx.Graph, x string) string { return g.Op("Relu", []string{x}) })
	if _, err := Compile(relu, []Input{{"state", 4}}, []string{"y"}); err == nil ||
		!strings.Contains(err.Error(), `no input "state"`) {
		t.Fatalf("wrong input name: %v", err)
	}
}

// TestNoAllocs checks that batch-1 calls allocate nothing once the
// actor has run, also after a larger batch.
func TestNoAllocs(t *testing.T) {
	g := newTestActor(t, hopperActor())
	rng := rand.New(rand.NewSource(9))
	obs, noise, out := testfix.RandNormal(rng, 11), testfix.RandNormal(rng, 3), make([]float32, 3)
	big := testfix.RandNormal(rng, 200*11)
	if err := g.Act(big, nil, make([]float32, 200*3)); err != nil {
		t.Fatal(err)
	}
	for _, nz := range [][]float32{nil, noise} {
		var err error
		allocs := testing.AllocsPerRun(200, func() {
			if e := g.Act(obs, nz, out); e != nil {
				err = e
			}
		})
		if err != nil || allocs != 0 {
			t.Fatalf("noise=%v: %v allocations per call (%v)", nz != nil, allocs, err)
		}
	}
}

// TestConcurrent shares one actor between goroutines (its mutex
// serialises them) and checks every result against a sequential run.
func TestConcurrent(t *testing.T) {
	g := newTestActor(t, randomActor(23, 7, 3, []int{32, 32}))
	rng := rand.New(rand.NewSource(4))
	const calls = 64
	obs := make([][]float32, calls)
	want := make([][]float32, calls)
	for i := range obs {
		obs[i] = testfix.RandNormal(rng, (1+i%5)*7)
		want[i] = make([]float32, (1+i%5)*3)
		if err := g.Act(obs[i], nil, want[i]); err != nil {
			t.Fatal(err)
		}
	}
	testfix.Concurrently(t, calls, func(i int) error {
		got := make([]float32, len(want[i]))
		if err := g.Act(obs[i], nil, got); err != nil {
			return err
		}
		for j := range got {
			if got[j] != want[i][j] {
				return fmt.Errorf("call %d value %d: %v, sequentially %v", i, j, got[j], want[i][j])
			}
		}
		return nil
	})
	g.Close()
	if err := g.Act(obs[0], nil, want[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("act after close: %v", err)
	}
}

// BenchmarkActor measures the actor alone (no Policy) on
// a Hopper-sized actor at a few batch sizes.
func BenchmarkActor(b *testing.B) {
	g := newTestActor(b, hopperActor())
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 64, 256} {
		b.Run(fmt.Sprint("batch", n), func(b *testing.B) {
			obs, out := testfix.RandNormal(rng, n*11), make([]float32, n*3)
			b.ReportAllocs()
			for b.Loop() {
				if err := g.Act(obs, nil, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSharedActorsShareOneProgram checks that shared actors hold one
// compiled program (one copy of the weights) with buffers of their own, and
// that actors running at once on different batches each return what the
// plain float64 MLP computes for their own batch.
func TestSharedActorsShareOneProgram(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	a := models.NewActor(5, []float64{-1, -2, 0}, []float64{1, 0.5, 2}, []int{16, 16}, rng)
	const n = 4
	first := newTestActor(t, a)
	as := []*Actor{first}
	for len(as) < n {
		as = append(as, first.Share())
	}
	for i, g := range as {
		if g.prog != first.prog {
			t.Fatalf("actor %d compiled its own program", i)
		}
		if i > 0 && g.r.s == first.r.s {
			t.Fatalf("actor %d shares actor 0's buffers", i)
		}
	}
	testfix.Concurrently(t, len(as), func(i int) error {
		r := rand.New(rand.NewSource(int64(100 + i)))
		for it := 0; it < 200; it++ {
			rows := 1 + r.Intn(9)
			obs, noise := testfix.RandNormal(r, rows*a.ObsDim), testfix.RandNormal(r, rows*a.ActDim)
			got := make([]float32, rows*a.ActDim)
			if err := as[i].Act(obs, noise, got); err != nil {
				return err
			}
			want := testfix.RefActor(a, obs, noise)
			for j, w := range want {
				if d := math.Abs(float64(got[j]) - w); d > 1e-5 {
					return fmt.Errorf("actor %d iteration %d: value %d = %v, want %v", i, it, j, got[j], w)
				}
			}
		}
		return nil
	})
}
