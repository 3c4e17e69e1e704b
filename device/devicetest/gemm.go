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

func tr(t bool) string {
	if t {
		return "T"
	}
	return "N"
}
