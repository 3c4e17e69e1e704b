// Matrix products of package cpukern. Placeholder: a plain, correct
// implementation on every path, replaced by the per-ISA kernels.
#include "cpukern.h"

void cpukern_sgemm(int transA, int transB, int m, int n, int k, float alpha,
                   const float *a, int lda, const float *b, int ldb, float beta,
                   float *c, int ldc, const float *bias, int relu) {
	for (int i = 0; i < m; i++) {
		for (int j = 0; j < n; j++) {
			float s = 0;
			for (int p = 0; p < k; p++) {
				float x = transA ? a[p * lda + i] : a[i * lda + p];
				float y = transB ? b[j * ldb + p] : b[p * ldb + j];
				s += x * y;
			}
			float v = alpha * s;
			if (beta != 0) v += beta * c[i * ldc + j];
			if (bias) v += bias[j];
			if (relu && !(v > 0)) v = 0;
			c[i * ldc + j] = v;
		}
	}
}
