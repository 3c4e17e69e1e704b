package cpukern

import (
	"fmt"
	"math"
	"math/rand"
	"sync"
	"testing"
)

// shape is one product's form and size.
type shape struct {
	tA, tB  bool
	m, n, k int
}

func (s shape) String() string {
	return fmt.Sprintf("%s m%d n%d k%d", tname(s.tA, s.tB), s.m, s.n, s.k)
}

func tname(tA, tB bool) string {
	t := map[bool]string{false: "N", true: "T"}
	return t[tA] + t[tB]
}

// trainShapes are the training engine's products: a SAC update (batch 256,
// 256x256 MLPs) and the ADM (GRU) train step.
var trainShapes = []shape{
	{false, false, 256, 256, 256}, {false, true, 256, 256, 256}, {true, false, 256, 256, 256},
	{false, false, 256, 256, 14}, {false, false, 256, 256, 11},
	{false, false, 256, 1, 256}, {false, false, 256, 6, 256},
	{false, true, 256, 256, 1}, {false, true, 256, 256, 6},
	{false, true, 256, 14, 256}, {false, true, 256, 11, 256},
	{true, false, 14, 256, 256}, {true, false, 11, 256, 256},
	{true, false, 256, 1, 256}, {true, false, 256, 6, 256},
	{false, false, 1280, 600, 200}, {false, true, 1280, 600, 200}, {true, false, 1280, 600, 200},
	{false, false, 256, 600, 200}, {false, true, 256, 600, 200}, {true, false, 256, 600, 200},
	{true, false, 1, 600, 1280}, {false, false, 1, 600, 1280},
}

// gemmCase is a product with its operands, strides and epilogue.
type gemmCase struct {
	shape
	lda, ldb, ldc int
	alpha, beta   float32
	a, b, c, bias []float32
	relu          bool
	mask          []float32 // C's layout; nil for none
}

// sentinel marks C's values outside the m x n window.
const sentinel = float32(-12345.5)

func newCase(rng *rand.Rand, s shape, pad int, alpha, beta float32, withBias, relu bool) *gemmCase {
	g := &gemmCase{shape: s, alpha: alpha, beta: beta, relu: relu}
	ar, ac := s.m, s.k
	if s.tA {
		ar, ac = s.k, s.m
	}
	br, bc := s.k, s.n
	if s.tB {
		br, bc = s.n, s.k
	}
	g.lda, g.ldb, g.ldc = max(ac, 1)+rng.Intn(pad+1), max(bc, 1)+rng.Intn(pad+1), s.n+rng.Intn(pad+1)
	fill := func(rows, cols, ld int) []float32 {
		if rows == 0 || cols == 0 {
			return nil
		}
		x := make([]float32, (rows-1)*ld+cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	g.a, g.b = fill(ar, ac, g.lda), fill(br, bc, g.ldb)
	g.c = make([]float32, s.m*g.ldc) // full last row: its padding must stay too
	for i := range g.c {
		g.c[i] = sentinel
		if i%g.ldc < s.n {
			if beta == 0 {
				g.c[i] = float32(math.NaN())
			} else {
				g.c[i] = float32(rng.NormFloat64())
			}
		}
	}
	if withBias {
		g.bias = fill(1, s.n, s.n)
	}
	return g
}

// run computes the product on path isa into a copy of C.
func (g *gemmCase) run(t testing.TB, isa ISA) []float32 {
	if err := Use(isa); err != nil {
		t.Fatal(err)
	}
	defer Use(Detected())
	c := append([]float32(nil), g.c...)
	sgemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc, g.bias, g.relu, g.mask)
	return c
}

// reference returns the exact-ish (float64) result and, per element, a
// bound on float32 evaluation error: γ(k+3)·(|α|·Σ|a||b| + |β·c| + |bias|)
// with γ(n) = n·u/(1-n·u), u = 2⁻²⁴, doubled for FMA and order differences.
func (g *gemmCase) reference() (want, bound []float64) {
	want, bound = make([]float64, g.m*g.n), make([]float64, g.m*g.n)
	const u = 1.0 / (1 << 24)
	nu := float64(g.k+3) * u
	gamma := 2 * nu / (1 - nu)
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.n; j++ {
			var s, abs float64
			for p := 0; p < g.k; p++ {
				var x, y float32
				if g.tA {
					x = g.a[p*g.lda+i]
				} else {
					x = g.a[i*g.lda+p]
				}
				if g.tB {
					y = g.b[j*g.ldb+p]
				} else {
					y = g.b[p*g.ldb+j]
				}
				s += float64(x) * float64(y)
				abs += math.Abs(float64(x) * float64(y))
			}
			v := float64(g.alpha) * s
			abs *= math.Abs(float64(g.alpha))
			if g.beta != 0 {
				cb := float64(g.beta) * float64(g.c[i*g.ldc+j])
				v += cb
				abs += math.Abs(cb)
			}
			if g.bias != nil {
				v += float64(g.bias[j])
				abs += math.Abs(float64(g.bias[j]))
			}
			if g.relu && !(v > 0) {
				v = 0
			}
			if g.mask != nil && int32(math.Float32bits(g.mask[i*g.ldc+j])) <= 0 {
				v = 0
			}
			want[i*g.n+j], bound[i*g.n+j] = v, gamma*abs+1e-30
		}
	}
	return want, bound
}

// check compares got with the reference within bound·slack and checks that
// nothing outside the m x n window of C changed.
func (g *gemmCase) check(t *testing.T, label string, got []float32, want, bound []float64, slack float64) {
	t.Helper()
	bad := 0
	for i := range got {
		r, j := i/g.ldc, i%g.ldc
		if j >= g.n {
			if got[i] != sentinel {
				t.Errorf("%s: C[%d][%d] (padding) written: %v", label, r, j, got[i])
				bad++
			}
		} else if d := math.Abs(float64(got[i]) - want[r*g.n+j]); !(d <= slack*bound[r*g.n+j]) {
			t.Errorf("%s: C[%d][%d] = %v, want %v (error %.3g > bound %.3g)", label, r, j, got[i], want[r*g.n+j], d, slack*bound[r*g.n+j])
			bad++
		}
		if bad >= 5 {
			t.FailNow()
		}
	}
}

// testCase runs g on every path, against the reference and against each other.
func testCase(t *testing.T, g *gemmCase, label string) {
	t.Helper()
	want, bound := g.reference()
	var first []float32
	for _, isa := range Supported() {
		got := g.run(t, isa)
		g.check(t, fmt.Sprintf("%s %v", label, isa), got, want, bound, 1)
		if first == nil {
			first = got
			continue
		}
		// Two float32 evaluations each within the bound differ by at most twice it.
		cross := make([]float64, len(want))
		for i := range cross {
			cross[i] = float64(first[(i/g.n)*g.ldc+i%g.n])
		}
		g.check(t, fmt.Sprintf("%s %v vs %v", label, isa, Supported()[0]), got, cross, bound, 2)
	}
}

func TestSgemmTrainShapes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, s := range trainShapes {
		testCase(t, newCase(rng, s, 0, 1, 0, true, true), s.String()+" dense")
		if s.m*s.n*s.k <= 256*256*256 {
			testCase(t, newCase(rng, s, 5, -0.5, 0.75, false, false), s.String()+" alpha beta padded")
		}
	}
}

func TestSgemmRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	dims := []int{1, 2, 3, 5, 7, 11, 12, 13, 16, 17, 31, 32, 33, 37, 47, 48, 53, 64, 67, 70}
	dim := func() int {
		if rng.Intn(2) == 0 {
			return dims[rng.Intn(len(dims))]
		}
		return 1 + rng.Intn(70)
	}
	alphas := []float32{1, -1, 0.5, 2.5, 0}
	betas := []float32{0, 1, -0.5, 2}
	for it := 0; it < 400; it++ {
		s := shape{rng.Intn(2) == 1, rng.Intn(2) == 1, dim(), dim(), dim()}
		if it%10 == 0 {
			s.k = 0
		}
		alpha, beta := alphas[rng.Intn(len(alphas))], betas[rng.Intn(len(betas))]
		bias, relu := rng.Intn(2) == 1, rng.Intn(2) == 1
		g := newCase(rng, s, rng.Intn(3)*3, alpha, beta, bias, relu)
		testCase(t, g, fmt.Sprintf("%v alpha %v beta %v bias %v relu %v", s, alpha, beta, bias, relu))
	}
}

// TestSgemmLongK covers several k blocks (beta on the first, bias and relu
// on the last) and several n blocks.
func TestSgemmLongK(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, s := range []shape{{false, false, 13, 1100, 600}, {true, true, 29, 70, 777}, {false, true, 3, 530, 513}, {true, false, 5, 3, 1000}} {
		testCase(t, newCase(rng, s, 2, 0.5, -1, true, true), s.String())
	}
}

// TestSgemmConcurrent runs products from several goroutines at once: the
// kernels must keep no shared mutable state.
func TestSgemmConcurrent(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	var cases []*gemmCase
	for _, s := range []shape{{false, true, 67, 45, 300}, {true, false, 100, 5, 70}, {false, false, 30, 3, 40}, {true, true, 40, 50, 60}} {
		cases = append(cases, newCase(rng, s, 1, 1, 0.5, true, false))
	}
	want := make([][]float32, len(cases))
	for i, g := range cases {
		want[i] = append([]float32(nil), g.c...)
		sgemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, want[i], g.ldc, g.bias, g.relu, nil)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(cases))
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 20; r++ {
				for i, g := range cases {
					c := append([]float32(nil), g.c...)
					sgemm(g.tA, g.tB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc, g.bias, g.relu, nil)
					for j := range c {
						if c[j] != want[i][j] {
							errs <- fmt.Sprintf("%v: concurrent result differs at %d: %v != %v", g.shape, j, c[j], want[i][j])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// withMask gives g a mask in C's layout: positive, zero, negative, -0 and
// ±NaN entries (a ReLU output holds only the first two).
func (g *gemmCase) withMask(rng *rand.Rand) *gemmCase {
	g.mask = make([]float32, len(g.c))
	for i := range g.mask {
		switch r := rng.Intn(10); {
		case r < 5:
			g.mask[i] = float32(rng.Float64() + 1e-3)
		case r < 7:
			g.mask[i] = 0
		case r < 8:
			g.mask[i] = -float32(rng.Float64())
		case r < 9:
			g.mask[i] = float32(math.Copysign(0, -1))
		default: // NaNs of either sign: kept when positive
			g.mask[i] = math.Float32frombits(0x7fc00000 | uint32(rng.Intn(2))<<31)
		}
	}
	return g
}

// TestSgemmMasked checks the masked epilogue on every path against the
// reference, and bit for bit against the unmasked product followed by the
// ReLU backward pass (what it replaces in the training graphs).
func TestSgemmMasked(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	var cases []*gemmCase
	for _, s := range trainShapes {
		cases = append(cases, newCase(rng, s, 0, 1, 0, false, false).withMask(rng))
	}
	for _, s := range []shape{{false, true, 13, 1100, 600}, {false, true, 3, 530, 513}, {true, false, 5, 3, 1000}} {
		cases = append(cases, newCase(rng, s, 2, 1, 0, false, false).withMask(rng))
	}
	dims := []int{1, 2, 3, 4, 5, 7, 11, 12, 13, 14, 16, 17, 31, 32, 33, 47, 64, 70}
	for it := 0; it < 150; it++ {
		s := shape{rng.Intn(2) == 1, rng.Intn(2) == 1, dims[rng.Intn(len(dims))], dims[rng.Intn(len(dims))], dims[rng.Intn(len(dims))]}
		if it%15 == 0 {
			s.k = 0
		}
		alpha, beta := []float32{1, -0.5}[rng.Intn(2)], []float32{0, 0.75}[rng.Intn(2)]
		cases = append(cases, newCase(rng, s, rng.Intn(3)*3, alpha, beta, rng.Intn(2) == 1, rng.Intn(2) == 1).withMask(rng))
	}
	for _, g := range cases {
		label := fmt.Sprintf("%v alpha %v beta %v bias %v relu %v masked", g.shape, g.alpha, g.beta, g.bias != nil, g.relu)
		testCase(t, g, label)
		for _, isa := range Supported() {
			got := g.run(t, isa)
			mask := g.mask
			g.mask = nil
			plain := g.run(t, isa)
			g.mask = mask
			for i := 0; i < g.m; i++ {
				row := plain[i*g.ldc : i*g.ldc+g.n]
				reluBackwardRef(mask[i*g.ldc:i*g.ldc+g.n], row)
				for j, v := range row {
					if got[i*g.ldc+j] != v || math.Signbit(float64(got[i*g.ldc+j])) != math.Signbit(float64(v)) {
						t.Fatalf("%s %v: C[%d][%d] = %v, want %v (product, then the ReLU backward pass)", label, isa, i, j, got[i*g.ldc+j], v)
					}
				}
			}
		}
	}
	// The exported form: C = op(A)·op(B) masked, C's old values ignored.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 0, 1, 1, 1}
	c := []float32{9, 9, 9, 9}
	SgemmMasked(false, false, 2, 2, 3, a, 3, b, 2, c, 2, []float32{1, 0, -1, 2})
	if want := []float32{4, 0, 0, 11}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("SgemmMasked = %v, want %v", c, want)
	}
}

// reluBackwardRef masks g in place as the ReLU backward pass does: g where
// x > 0, else +0.
func reluBackwardRef(x, g []float32) {
	d := make([]float32, len(g))
	ReluBackward(x, g, d, false)
	copy(g, d)
}

func TestSgemmAPI(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6}                                       // 2x3
	b := []float32{1, 0, 0, 1, 1, 1}                                       // 3x2
	c := []float32{9, 9, 9, 9}                                             // 2x2
	Dense(false, false, 2, 2, 3, a, 3, b, 2, c, 2, []float32{-5, 0}, true) // relu([[4 5] [10 11]] + bias)
	if want := []float32{0, 5, 5, 11}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("Dense = %v, want %v", c, want)
	}
	Sgemm(true, true, 2, 2, 3, 2, b, 2, a, 3, -1, c, 2) // C = 2·Bᵀ·Aᵀ - C
	if want := []float32{8, 15, 5, 11}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("Sgemm = %v, want %v", c, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("short C did not panic")
		}
	}()
	Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c[:3], 2)
}

func TestPeakGFLOPS(t *testing.T) {
	for _, isa := range Supported() {
		if err := Use(isa); err != nil {
			t.Fatal(err)
		}
		g := PeakGFLOPS(64, 3)
		t.Logf("%v: %.1f GFLOP/s at 64^3", isa, g)
		if !(g > 0) {
			t.Errorf("%v: PeakGFLOPS = %v", isa, g)
		}
	}
	Use(Detected())
}

func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewSource(5))
	for _, s := range trainShapes {
		g := newCase(rng, s, 0, 1, 0, true, false)
		for _, isa := range Supported() {
			b.Run(fmt.Sprintf("%s_m%d_n%d_k%d/%v", tname(s.tA, s.tB), s.m, s.n, s.k, isa), func(b *testing.B) {
				if err := Use(isa); err != nil {
					b.Fatal(err)
				}
				defer Use(Detected())
				c := append([]float32(nil), g.c...)
				for i := 0; i < b.N; i++ {
					sgemm(g.tA, g.tB, g.m, g.n, g.k, 1, g.a, g.lda, g.b, g.ldb, 0, c, g.ldc, g.bias, false, nil)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
