package cpukern

import (
	"math"
	"math/rand"
	"testing"
)

// The element-wise kernels are compared bit for bit, on every path this CPU
// supports, with the same arithmetic written as plain Go float32 loops.

func forEachPath(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	defer func() { _ = Use(Detected()) }()
	for _, isa := range Supported() {
		if err := Use(isa); err != nil {
			t.Fatal(err)
		}
		t.Run(isa.String(), fn)
	}
}

func randSlice(rng *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = scale * float32(rng.NormFloat64())
	}
	return s
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (len %d)", what, i, got[i], want[i], len(got))
		}
	}
}

// lengths cover empty, sub-vector, exact multiples and ragged tails of 8 and 16 lanes.
var lengths = []int{0, 1, 7, 8, 15, 16, 17, 33, 255, 256, 1000}

func TestReluMatchesGo(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(1))
		for _, n := range lengths {
			x := randSlice(rng, n, 1)
			if n > 3 {
				x[0], x[1], x[2] = 0, float32(math.Copysign(0, -1)), float32(math.NaN())
			}
			g := randSlice(rng, n, 1)
			y := randSlice(rng, n, 1)
			want := make([]float32, n)
			for i, v := range x {
				if int32(math.Float32bits(v)) > 0 {
					want[i] = v
				}
			}
			ReluForward(x, y)
			sameBits(t, "relu", y, want)

			d := randSlice(rng, n, 1)
			d0 := append([]float32(nil), d...)
			wantSet, wantAcc := make([]float32, n), make([]float32, n)
			for i, v := range x {
				var gi float32
				if int32(math.Float32bits(v)) > 0 {
					gi = g[i]
				}
				wantSet[i], wantAcc[i] = gi, d0[i]+gi
			}
			ReluBackward(x, g, d, true)
			sameBits(t, "relu backward (accumulate)", d, wantAcc)
			ReluBackward(x, g, d, false)
			sameBits(t, "relu backward", d, wantSet)
		}
	})
}

func TestColSumMatchesGo(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(2))
		for _, shape := range [][2]int{{1, 1}, {3, 5}, {256, 1}, {256, 6}, {17, 33}, {256, 256}, {1280, 600}, {0, 4}} {
			rows, cols := shape[0], shape[1]
			x := randSlice(rng, rows*cols, 1)
			y := randSlice(rng, cols, 1)
			start := append([]float32(nil), y...)
			want := append([]float32(nil), start...)
			for r := 0; r < rows; r++ {
				for j := 0; j < cols; j++ {
					want[j] += x[r*cols+j]
				}
			}
			ColSum(x, cols, y, true)
			sameBits(t, "colsum (accumulate)", y, want)
			clear(want)
			for r := 0; r < rows; r++ {
				for j := 0; j < cols; j++ {
					want[j] += x[r*cols+j]
				}
			}
			ColSum(x, cols, y, false)
			sameBits(t, "colsum", y, want)
			// A window of columns [lo, cols) read with the full row stride.
			if rows > 0 && cols > 1 {
				lo := cols / 3
				ys := randSlice(rng, cols-lo, 1)
				ColSumStrided(x[lo:], rows, cols-lo, cols, ys, false)
				sameBits(t, "colsum strided", ys, want[lo:])
			}
		}
	})
}

// adamGo is models.Adam's loop (PyTorch's arithmetic) in Go float32, with
// new moments below the smallest normal float32 stored as +0.
func adamGo(p, g, m, v []float32, h AdamHyper) {
	flush := func(x float32) float32 {
		if math.Abs(float64(x)) < 0x1p-126 {
			return 0
		}
		return x
	}
	bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
	bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
	step, bc2s := float32(h.LR/bc1), float32(math.Sqrt(bc2))
	b1, c1, b2, c2 := float32(h.Beta1), float32(1-h.Beta1), float32(h.Beta2), float32(1-h.Beta2)
	eps, wd := float32(h.Eps), float32(h.WeightDecay)
	for j, gj := range g {
		if wd != 0 {
			gj += wd * p[j]
		}
		m[j] = flush(b1*m[j] + c1*gj)
		v[j] = flush(b2*v[j] + c2*gj*gj)
		p[j] -= step * m[j] / (float32(math.Sqrt(float64(v[j])))/bc2s + eps)
	}
}

// adamBoth steps the kernel's parameters and moments got = {p, m, v} and
// the Go loop's want alike with gradients g and checks them bit for bit.
func adamBoth(t *testing.T, h AdamHyper, g []float32, got, want [3][]float32) {
	t.Helper()
	if err := Adam(got[0], g, got[1], got[2], h); err != nil {
		t.Fatal(err)
	}
	adamGo(want[0], g, want[1], want[2], h)
	for i, what := range []string{"adam p", "adam m", "adam v"} {
		sameBits(t, what, got[i], want[i])
	}
}

func TestAdamMatchesGo(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(3))
		for _, n := range lengths {
			for _, wd := range []float64{0, 1e-4} {
				p, g := randSlice(rng, n, 1), randSlice(rng, n, 0.1)
				m, v := make([]float32, n), make([]float32, n)
				pw, mw, vw := append([]float32(nil), p...), make([]float32, n), make([]float32, n)
				for step := 1; step <= 3; step++ {
					h := AdamHyper{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: wd, LR: 3e-4, T: step}
					adamBoth(t, h, g, [3][]float32{p, m, v}, [3][]float32{pw, mw, vw})
				}
			}
		}
	})
}

// TestAdamFlushesSubnormalMoments: moments that fall below the smallest
// normal float32 (those of a parameter whose gradient stays 0 decay there)
// are stored as +0 on every path, moments at or above it are kept, NaNs
// stay NaNs, and the parameters move as the Go loop says.
func TestAdamFlushesSubnormalMoments(t *testing.T) {
	const minNormal = 0x1p-126
	forEachPath(t, func(t *testing.T) {
		// Moments just above and below what one decay step keeps normal,
		// subnormal ones, ±, NaN; zero and tiny gradients.
		seeds := []float32{minNormal, -minNormal, 1.05 * minNormal, 1.2 * minNormal, -1.2 * minNormal,
			2 * minNormal, 0x1p-130, -0x1p-140, 1e-30, float32(math.NaN()), 0}
		grads := []float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1e-21}
		for _, n := range []int{1, 7, 16, 33, 70} {
			p, g := make([]float32, n), make([]float32, n)
			m, v := make([]float32, n), make([]float32, n)
			for i := range p {
				p[i] = float32(i+1) * 0.01
				g[i] = grads[i%len(grads)]
				m[i] = seeds[i%len(seeds)]
				v[i] = float32(math.Abs(float64(seeds[(i+3)%len(seeds)])))
			}
			pw, mw, vw := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
			for step := 1; step <= 4; step++ {
				h := AdamHyper{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, LR: 3e-4, T: 1000 + step}
				adamBoth(t, h, g, [3][]float32{p, m, v}, [3][]float32{pw, mw, vw})
				for i, x := range append(append([]float32(nil), m...), v...) {
					if a := math.Abs(float64(x)); a != 0 && a < minNormal {
						t.Fatalf("n %d step %d: moment %d is subnormal (%g)", n, step, i, x)
					}
					if math.Float32bits(x) == 0x80000000 {
						t.Fatalf("n %d step %d: moment %d is -0, want +0", n, step, i)
					}
				}
			}
		}
	})
	// The decay of one step, checked without the Go loop: 0.9·2·minNormal
	// is normal and kept, 0.9·1.05·minNormal is subnormal and flushed.
	forEachPath(t, func(t *testing.T) {
		p, g := []float32{1, 1}, []float32{0, 0}
		m, v := []float32{2 * minNormal, 1.05 * minNormal}, []float32{0, 0}
		if err := Adam(p, g, m, v, AdamHyper{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, LR: 3e-4, T: 5}); err != nil {
			t.Fatal(err)
		}
		if m[0] != float32(0.9)*(2*minNormal) || m[1] != 0 {
			t.Fatalf("moments after one step %g, %g; want %g, 0", m[0], m[1], float32(0.9)*(2*minNormal))
		}
		// A new moment of exactly minNormal (from a zero moment: 0.1·g) is kept.
		g0 := float32(minNormal / 0.1)
		for float32(0.1)*g0 < minNormal {
			g0 = math.Nextafter32(g0, 1)
		}
		for float32(0.1)*g0 > minNormal {
			g0 = math.Nextafter32(g0, 0)
		}
		if float32(0.1)*g0 != minNormal {
			t.Fatal("no gradient gives a moment of exactly the smallest normal")
		}
		const n = 33 // the vector loops and the tail
		p, g, m, v = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range g {
			p[i], g[i] = 1, g0
		}
		if err := Adam(p, g, m, v, AdamHyper{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, LR: 3e-4, T: 5}); err != nil {
			t.Fatal(err)
		}
		for i, x := range m {
			if x != minNormal {
				t.Fatalf("moment %d: %g, want the smallest normal %g kept", i, x, float32(minNormal))
			}
		}
	})
}

func TestAdamRejectsBadInput(t *testing.T) {
	if err := Adam(make([]float32, 3), make([]float32, 2), make([]float32, 3), make([]float32, 3), AdamHyper{T: 1}); err == nil {
		t.Fatal("Adam accepted gradients of the wrong length")
	}
	if err := Adam(make([]float32, 3), make([]float32, 3), make([]float32, 3), make([]float32, 3), AdamHyper{}); err == nil {
		t.Fatal("Adam accepted step number 0")
	}
}

func TestPolyakMatchesGo(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(4))
		for _, n := range lengths {
			dst, src := randSlice(rng, n, 1), randSlice(rng, n, 1)
			want := append([]float32(nil), dst...)
			tau := float32(0.005)
			for i, v := range src {
				want[i] = (1-tau)*want[i] + tau*v
			}
			Polyak(dst, src, tau)
			sameBits(t, "polyak", dst, want)
		}
	})
}

func TestUseRefusesMissingPaths(t *testing.T) {
	if err := Use(Detected() + 1); err == nil {
		t.Fatalf("Use accepted a path beyond %v", Detected())
	}
	if Active() != Detected() {
		t.Fatalf("active path %v after a refused Use, want %v", Active(), Detected())
	}
	for _, s := range []string{"generic", "AVX2", "avx512"} {
		if _, err := Parse(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Parse("sse9"); err == nil {
		t.Fatal("Parse accepted sse9")
	}
}

// dropoutGo is package models' former Go generator: SplitMix64, four
// entries per draw, 16 bits each.
func dropoutGo(mask []float32, state *uint64, p float64) {
	next := func() uint64 {
		*state += 0x9e3779b97f4a7c15
		z := *state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	keep := float32(1 / (1 - p))
	thr := int32(p * 65536)
	for i := 0; i < len(mask); i += 4 {
		bits := next()
		for j := i; j < i+4 && j < len(mask); j++ {
			drop := uint32(int32(bits&0xffff)-thr) >> 31
			mask[j] = keep * float32(1-drop)
			bits >>= 16
		}
	}
}

func TestDropoutMaskMatchesGo(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, n := range lengths {
			for _, p := range []float64{0.1, 0.5, 1.0 / 65536} {
				s1, s2 := uint64(12345), uint64(12345)
				got, want := make([]float32, n), make([]float32, n)
				for round := 0; round < 2; round++ { // the state carries over
					DropoutMask(got, &s1, p)
					dropoutGo(want, &s2, p)
					sameBits(t, "dropout mask", got, want)
					if s1 != s2 {
						t.Fatalf("n %d: state %d after the masks, want %d", n, s1, s2)
					}
				}
			}
		}
	})
}
