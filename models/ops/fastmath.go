package ops

import (
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"

	// netlib calls OpenBLAS through cgo; this links it.
	_ "github.com/admpo/admpo/internal/blas"
)

// Helpers shared by the fused graph ops and the plain-Go inference forward:
// the OpenBLAS matrix product, float64 softplus and logistic for the small
// log-variance tensors, and a two-way row split for elementwise loops.

var netlibImpl netlib.Implementation

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on row-major matrices
// through OpenBLAS, where op(A) is [m,k] and op(B) is [k,n].
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	netlibImpl.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// parallelFor runs fn over [0,n) split into contiguous chunks, one per
// available CPU, when n is at least 2·grain; otherwise in the caller.
func parallelFor(n, grain int, fn func(lo, hi int)) {
	p := runtime.GOMAXPROCS(0)
	if p > n/grain {
		p = n / grain
	}
	if p <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + p - 1) / p
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	fn(0, min(chunk, n))
	wg.Wait()
}

// Softplus returns log(1+e^x), stable for large |x|.
func Softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// logistic64 is 1/(1+e^-x) in float64.
func logistic64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
