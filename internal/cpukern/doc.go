// Package cpukern holds admpo's CPU kernels: single-precision matrix
// products and the element-wise work around them in training (activations,
// column sums, Adam, Polyak averaging, dropout masks), and the roll-out
// engines' MC dropout keep flags, written in C with one code path per
// instruction set (AVX-512, AVX2 with FMA, plain C) and chosen at run time by
// the CPU's features, so training speed does not depend on how OpenBLAS was
// configured (OPENBLAS_CORETYPE).
//
// Every path computes the same arithmetic; element-wise kernels give
// bit-identical results on all paths, matrix products agree within float32
// rounding (FMA contraction and summation order differ). Use forces a path,
// for tests and benchmarks; Active reports the one in use.
//
// The package imports nothing of admpo; it links only libm.
package cpukern
