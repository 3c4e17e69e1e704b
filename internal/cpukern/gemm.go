package cpukern

// #include "cpukern.h"
import "C"

import (
	"fmt"
	"time"
)

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on row-major matrices, where
// op(A) is [m,k] (A itself, or Aᵀ when transA) and op(B) is [k,n]; lda, ldb
// and ldc are the row strides (OpenBLAS's cblas_sgemm with CblasRowMajor).
// beta 0 ignores C's old contents (NaNs included).
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, false, nil)
}

// SgemmMasked computes C = op(A)·op(B) where mask > 0 and +0 elsewhere,
// overwriting C, with ReluBackward's test of the mask (its bits, read as an
// int32, > 0: positive NaNs kept): the product's epilogue applies the mask as
// the tiles are stored. mask has C's layout (row stride ldc). With mask a
// ReLU layer's output y, it is the product followed by the ReLU's backward
// pass (g where y > 0), without a pass over memory of its own.
func SgemmMasked(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, mask []float32) {
	if m > 0 && n > 0 {
		checkMatrix("mask", mask, m, n, ldc)
	}
	sgemm(transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, nil, false, mask)
}

// Dense computes the dense layer C = op(A)·op(B) + bias (bias [n] added to
// every row; nil for none), then max(C, 0) when relu, overwriting C.
func Dense(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32, relu bool) {
	if bias != nil && len(bias) < n {
		panic(fmt.Sprintf("cpukern: bias has %d values for %d columns", len(bias), n))
	}
	sgemm(transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, bias, relu, nil)
}

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, bias []float32, relu bool, mask []float32) {
	if m <= 0 || n <= 0 {
		return
	}
	checkMatrix("C", c, m, n, ldc)
	if k > 0 {
		ar, ac := m, k
		if transA {
			ar, ac = k, m
		}
		br, bc := k, n
		if transB {
			br, bc = n, k
		}
		checkMatrix("A", a, ar, ac, lda)
		checkMatrix("B", b, br, bc, ldb)
	}
	C.cpukern_sgemm(b2i(transA), b2i(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		f32(a), C.int(lda), f32(b), C.int(ldb), C.float(beta), f32(c), C.int(ldc), f32(bias), b2i(relu), f32(mask))
}

// checkMatrix panics, like the reference BLAS, when s cannot hold a
// rows×cols row-major matrix with row stride ld: the C kernels must never
// read or write outside Go's slices.
func checkMatrix(name string, s []float32, rows, cols, ld int) {
	if ld < max(cols, 1) {
		panic(fmt.Sprintf("cpukern: sgemm: ld%s %d < %d columns", name, ld, cols))
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("cpukern: sgemm: %s has %d values, needs %d", name, len(s), need))
	}
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// PeakGFLOPS measures the active path on an n×n×n product (no transposes):
// the best of reps, in GFLOP/s.
func PeakGFLOPS(n, reps int) float64 {
	a := make([]float32, n*n)
	b := make([]float32, n*n)
	c := make([]float32, n*n)
	for i := range a {
		a[i] = float32(i%7) * 0.1
		b[i] = float32(i%5) * 0.1
	}
	best := 0.0
	for r := 0; r < reps; r++ {
		t := time.Now()
		Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		if g := 2 * float64(n) * float64(n) * float64(n) / time.Since(t).Seconds() / 1e9; g > best {
			best = g
		}
	}
	return best
}
