package devicetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/admpo/admpo/device"
)

// gemmRef is C = alpha·op(A)·op(B) + beta·C on column-major matrices, in
// float64 by the definition.
func gemmRef(ta, tb bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) []float64 {
	at := func(i, l int) float64 { // op(A)[i, l]
		if ta {
			return float64(a[l+i*lda])
		}
		return float64(a[i+l*lda])
	}
	bt := func(l, j int) float64 { // op(B)[l, j]
		if tb {
			return float64(b[j+l*ldb])
		}
		return float64(b[l+j*ldb])
	}
	out := f64(c)
	for j := range n {
		for i := range m {
			s := 0.0
			for l := range k {
				s += at(i, l) * bt(l, j)
			}
			out[i+j*ldc] = alpha*s + beta*float64(c[i+j*ldc])
		}
	}
	return out
}

func testGemm(t *testing.T, d device.Device, o Options) {
	r := rand.New(rand.NewPCG(2, 3))
	shapes := []struct{ m, n, k, pad int }{
		{1, 1, 1, 0}, {5, 7, 3, 0}, {33, 17, 65, 2}, {256, 256, 14, 0}, {1, 256, 256, 0}, {64, 3, 0, 1},
	}
	for _, s := range shapes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				name := fmt.Sprintf("m%d_n%d_k%d_pad%d_%s%s", s.m, s.n, s.k, s.pad, tr(ta), tr(tb))
				t.Run(name, func(t *testing.T) {
					h := h{t, d}
					ar, ac := s.m, s.k
					if ta {
						ar, ac = s.k, s.m
					}
					br, bc := s.k, s.n
					if tb {
						br, bc = s.n, s.k
					}
					lda, ldb, ldc := max(1, ar+s.pad), max(1, br+s.pad), s.m+s.pad
					a0 := randn(r, max(1, lda*ac), 1)
					b0 := randn(r, max(1, ldb*bc), 1)
					c0 := randn(r, ldc*s.n, 1)
					alpha, beta := float32(0.75), float32(-0.5)
					a, b, c := h.up(a0), h.up(b0), h.up(c0)
					if err := d.Gemm(ta, tb, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
						t.Fatal(err)
					}
					want := gemmRef(ta, tb, s.m, s.n, s.k, float64(alpha), a0, lda, b0, ldb, float64(beta), c0, ldc)
					// The padding rows of C must stay as they were: the
					// reference leaves them.
					compare(t, "C", h.down(c), want, o.Tol, o.Tol*math.Sqrt(float64(s.k)+1))
				})
			}
		}
	}
}

// testGemmBatched checks GemmStridedBatched against gemmRef per product:
// every transpose, gaps between the matrices (which must stay as they
// were), an A or B shared by every product (stride 0), beta ≠ 0, and
// batches of 1 to 7 products.
func testGemmBatched(t *testing.T, d device.Device, o Options) {
	r := rand.New(rand.NewPCG(4, 5))
	cases := []struct {
		m, n, k, batch int
		pad, gap       int  // extra rows of each matrix, extra elements between matrices
		sharedA        bool // strideA = 0
		sharedB        bool // strideB = 0
	}{
		{1, 1, 1, 1, 0, 0, false, false},
		{5, 7, 3, 2, 0, 0, false, false},
		{5, 7, 3, 3, 1, 3, false, false},
		{33, 17, 65, 7, 2, 1, false, false},
		{20, 16, 12, 7, 0, 0, false, false},
		{4, 9, 6, 4, 0, 2, true, false},
		{9, 1, 8, 5, 1, 0, false, true},
		{6, 5, 0, 3, 0, 1, false, false},
	}
	for _, s := range cases {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				name := fmt.Sprintf("m%d_n%d_k%d_b%d_pad%d_gap%d_%s%s", s.m, s.n, s.k, s.batch, s.pad, s.gap, tr(ta), tr(tb))
				if s.sharedA {
					name += "_sharedA"
				}
				if s.sharedB {
					name += "_sharedB"
				}
				t.Run(name, func(t *testing.T) {
					h := h{t, d}
					ar, ac := s.m, s.k
					if ta {
						ar, ac = s.k, s.m
					}
					br, bc := s.k, s.n
					if tb {
						br, bc = s.n, s.k
					}
					lda, ldb, ldc := max(1, ar+s.pad), max(1, br+s.pad), s.m+s.pad
					sa, sb, sc := lda*ac+s.gap, ldb*bc+s.gap, ldc*s.n+s.gap
					if s.sharedA {
						sa = 0
					}
					if s.sharedB {
						sb = 0
					}
					a0 := randn(r, max(1, sa*(s.batch-1)+lda*ac), 1)
					b0 := randn(r, max(1, sb*(s.batch-1)+ldb*bc), 1)
					c0 := randn(r, sc*(s.batch-1)+ldc*s.n, 1)
					alpha, beta := float32(0.75), float32(-0.5)
					a, b, c := h.up(a0), h.up(b0), h.up(c0)
					if err := d.GemmStridedBatched(ta, tb, s.m, s.n, s.k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
						s.batch); err != nil {
						t.Fatal(err)
					}
					want := f64(c0)
					for i := range s.batch {
						ci := gemmRef(ta, tb, s.m, s.n, s.k, float64(alpha), a0[min(i*sa, len(a0)):], lda,
							b0[min(i*sb, len(b0)):], ldb, float64(beta), c0[i*sc:i*sc+ldc*s.n], ldc)
						copy(want[i*sc:], ci)
					}
					// C's padding rows and the gaps must stay as they were:
					// the reference leaves them.
					compare(t, "C", h.down(c), want, o.Tol, o.Tol*math.Sqrt(float64(s.k)+1))
				})
			}
		}
	}
}

func tr(t bool) string {
	if t {
		return "T"
	}
	return "N"
}
