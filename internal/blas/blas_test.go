package blas

import (
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestCoreTypeFromFlags(t *testing.T) {
	cases := map[string]string{
		"flags\t: fpu sse2 avx avx2 avx512f avx512bw\n": "SkylakeX",
		"flags\t: fpu sse2 avx avx2 avx512f\n":          "Haswell",
		"flags\t: fpu sse2 avx avx2\n":                  "Haswell",
		"flags\t: fpu sse2 avx\n":                       "",
		"processor : 0\n":                               "",
	}
	for in, want := range cases {
		if got := coreTypeFromFlags(in); got != want {
			t.Errorf("coreTypeFromFlags(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGorgoniaMatMulThroughOpenBLAS checks a float32 product computed by
// Gorgonia with OpenBLAS against a plain triple loop.
func TestGorgoniaMatMulThroughOpenBLAS(t *testing.T) {
	Use()
	if CoreName() == "" {
		t.Fatal("OpenBLAS reports no core name")
	}
	const m, k, n = 37, 53, 29
	rng := rand.New(rand.NewSource(1))
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = rng.Float32() - 0.5
	}
	for i := range b {
		b[i] = rng.Float32() - 0.5
	}
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(m, k), G.WithValue(tensor.New(tensor.WithShape(m, k), tensor.WithBacking(append([]float32(nil), a...)))))
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(k, n), G.WithValue(tensor.New(tensor.WithShape(k, n), tensor.WithBacking(append([]float32(nil), b...)))))
	z := G.Must(G.Mul(x, y))
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := z.Value().Data().([]float32)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				s += float64(a[i*k+l]) * float64(b[l*n+j])
			}
			if d := float64(got[i*n+j]) - s; d > 1e-5 || d < -1e-5 {
				t.Fatalf("[%d,%d] = %v, want %v", i, j, got[i*n+j], s)
			}
		}
	}
}

func TestPeakSgemmIsPlausible(t *testing.T) {
	g := PeakSgemm(256, 3)
	// A 2-core AVX2/AVX-512 machine does tens to hundreds of GFLOP/s; pure
	// Go or a broken binding would be far below 1.
	if g < 1 || g > 10000 {
		t.Fatalf("sgemm %v GFLOP/s is implausible", g)
	}
}

func TestSetThreads(t *testing.T) {
	before := Threads()
	defer SetThreads(before)
	SetThreads(1)
	if Threads() != 1 {
		t.Fatalf("after SetThreads(1): %d threads", Threads())
	}
	SetThreads(0) // ignored
	if Threads() != 1 {
		t.Fatalf("SetThreads(0) changed the count to %d", Threads())
	}
}
