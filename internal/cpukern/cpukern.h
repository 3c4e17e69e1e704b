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
// op(A) is [m,k], op(B) is [k,n]; bias may be NULL. beta 0 ignores C's contents.
void cpukern_sgemm(int transA, int transB, int m, int n, int k, float alpha,
                   const float *a, int lda, const float *b, int ldb, float beta,
                   float *c, int ldc, const float *bias, int relu);

#endif
