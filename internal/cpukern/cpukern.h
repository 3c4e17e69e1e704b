// Declarations of the C kernels of package cpukern (see doc.go).
#ifndef ADMPO_CPUKERN_H
#define ADMPO_CPUKERN_H

// Instruction-set paths, in increasing order of capability.
enum { CPUKERN_GENERIC = 0, CPUKERN_AVX2 = 1, CPUKERN_AVX512 = 2 };

// cpukern_detect returns the best path this CPU (and OS) supports.
int cpukern_detect(void);
// cpukern_isa is the path in use; set by cpukern_set_isa (Go's init and Use).
extern int cpukern_isa;
void cpukern_set_isa(int isa);

// Matrix product on row-major matrices:
//   C = alpha·op(A)·op(B) + beta·C (+ bias[j] on every row) (then max(.,0) if relu)
//   (then +0 where mask[i*ldc + j] is not > 0 as an int32: cpukern_relu_bwd's test)
// op(A) is [m,k], op(B) is [k,n]; bias and mask may be NULL; mask has C's
// layout. beta 0 ignores C's contents.
void cpukern_sgemm(int transA, int transB, int m, int n, int k, float alpha,
                   const float *a, int lda, const float *b, int ldb, float beta,
                   float *c, int ldc, const float *bias, int relu, const float *mask);

// Element-wise kernels (elementwise.c); acc 1 adds into the output.
// y = relu(x); d (+)= g where x > 0 (bitwise: +0 and negative values give 0).
void cpukern_relu_fwd(int n, const float *x, float *y);
void cpukern_relu_bwd(int n, const float *x, const float *g, float *d, int acc);
// y = x·σ(x); d (+)= g·σ(x)(1 + x(1-σ(x))): package ops' float32 Swish, bit for bit.
void cpukern_swish_fwd(int n, const float *x, float *y);
void cpukern_swish_bwd(int n, const float *x, const float *g, float *d, int acc);
// y[j] (+)= sum over rows of x[r, j] (x row-major [rows, cols], row stride ld),
// row after row.
void cpukern_colsum(int rows, int cols, long ld, const float *x, float *y, int acc);
// One Adam step over n values; h = {beta1, 1-beta1, beta2, 1-beta2, lr/(1-beta1^t),
// sqrt(1-beta2^t), eps, weight decay}.
void cpukern_adam(int n, float *p, const float *g, float *m, float *v, const float *h);
// dst = (1-tau)·dst + tau·src.
void cpukern_polyak(int n, float *dst, const float *src, float tau);

// The tanh-squashed Gaussian head, forward and backward (see SquashForward
// and SquashBackward in elementwise.go); k = {LogStdMin, half range, row constant}.
void cpukern_squash_fwd(int rows, int ad, const float *out, const float *eps, const float *scale,
                        const float *bias, const float *k, float *y, float *st, float *tmp);
void cpukern_squash_bwd(int rows, int ad, const float *eps, const float *scale, float half,
                        const float *g, const float *st, float *d);

// Inverted-dropout mask: 0 where a 16-bit draw falls below thr, else keep;
// state is a SplitMix64 state, advanced by one draw per four entries.
#include <stdint.h>
void cpukern_dropout_mask(int n, float *mask, uint64_t *state, int thr, float keep);
// MC dropout keep flags (infer's dropoutFill): flag e (0 <= e < n) is half
// e%2 (the low 32 bits for even e) of the SplitMix64 output of base +
// (e/2+1)·golden, 0.0f when below thr (unsigned) else 1.0f, stored at
// dst[(e/width)·stride + e%width]. width >= 1.
void cpukern_dropout_fill(uint64_t base, uint32_t thr, float *dst, long n, long width, long stride);

#endif
