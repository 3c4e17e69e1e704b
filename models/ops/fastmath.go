package ops

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/admpo/admpo/internal/blas"
	"github.com/admpo/admpo/internal/cpukern"
)

// Helpers shared by the fused graph ops and the plain-Go inference forward:
// the matrix product (package cpukern's kernels), float64 softplus and
// logistic for the small log-variance tensors, and a row split for
// elementwise loops.

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on row-major matrices, where
// op(A) is [m,k] and op(B) is [k,n], with cpukern's kernels for this CPU.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemmRows(transA, m, n, k, a, lda, c, ldc, func(rows int, a, c []float32) {
		cpukern.Sgemm(transA, transB, rows, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	})
}

// dense writes c = op(A)·op(B) + bias (then max(c, 0) when relu) for the
// row-major [m,n] matrix c.
func dense(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32, relu bool) {
	gemmRows(transA, m, n, k, a, lda, c, ldc, func(rows int, a, c []float32) {
		cpukern.Dense(transA, transB, rows, n, k, a, lda, b, ldb, c, ldc, bias, relu)
	})
}

// sgemmMasked writes c = op(A)·op(B) where mask > 0, else 0, for the
// row-major [m,n] matrix c; mask has c's layout (the ReLU backward pass of a
// layer whose output is mask, fused into the product's epilogue).
func sgemmMasked(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, mask []float32) {
	gemmRows(transA, m, n, k, a, lda, c, ldc, func(rows int, a, cr []float32) {
		off := len(c) - len(cr) // the block's first row, as in c
		cpukern.SgemmMasked(transA, transB, rows, n, k, a, lda, b, ldb, cr, ldc, mask[off:])
	})
}

var productFLOPs atomic.Uint64

// ProductFLOPs is the number of floating-point operations (2·m·n·k per
// product) of all matrix products run through Sgemm and the dense layers
// since the process started; benchmarks read it before and after a step.
func ProductFLOPs() uint64 { return productFLOPs.Load() }

// gemmGrain is the number of multiply-adds below which a product stays on
// one thread.
const gemmGrain = 1 << 22

// gemmRows runs a product over the rows of C, split into contiguous blocks
// over blas.Threads() goroutines (the one thread count of the training
// engine, --blas-threads) when the product is large; fn gets each block's
// row count and the matching views of A and C.
func gemmRows(transA bool, m, n, k int, a []float32, lda int, c []float32, ldc int, fn func(rows int, a, c []float32)) {
	if m <= 0 || n <= 0 {
		return
	}
	productFLOPs.Add(2 * uint64(m) * uint64(n) * uint64(max(k, 0)))
	p := blas.Threads()
	if p > 1 && m*n*k >= 2*gemmGrain && m >= 2*16 {
		p = min(p, m/16, m*n*k/gemmGrain)
	} else {
		p = 1
	}
	if p <= 1 || k == 0 {
		fn(m, a, c)
		return
	}
	chunk := (m + p - 1) / p
	aOff := func(i int) int { // where row i of op(A) starts
		if transA {
			return i
		}
		return i * lda
	}
	var wg sync.WaitGroup
	for lo := chunk; lo < m; lo += chunk {
		hi := min(lo+chunk, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(hi-lo, a[aOff(lo):], c[lo*ldc:])
		}()
	}
	fn(min(chunk, m), a, c)
	wg.Wait()
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
