// Element-wise kernels on float32 vectors.
#include "kernel.h"

// fill: x[i] = v.
KERNEL fill(int n, float *x, float v) {
	GRID_STRIDE(i, n) { x[i] = v; }
}

// scale: x[i] *= a.
KERNEL scale(int n, float *x, float a) {
	GRID_STRIDE(i, n) { x[i] *= a; }
}

// axpy: y[i] += a·x[i] (cuBLAS's argument order).
KERNEL axpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
	GRID_STRIDE(i, n) { y[i] += a * x[i]; }
}

// polyak: dst[i] = (1-tau)·dst[i] + tau·src[i] (target networks; the same
// expression as package sac's CPU update).
KERNEL polyak(int n, float *__restrict__ dst, const float *__restrict__ src, float tau) {
	GRID_STRIDE(i, n) { dst[i] = (1.0f - tau) * dst[i] + tau * src[i]; }
}

// gather_rows: row r of dst (cols wide) is row idx[r] of src, which has
// src_rows rows; n = rows·cols. A row whose index is out of range becomes
// NaN, so a bad index shows in every result instead of reading stray memory.
KERNEL gather_rows(int n, float *__restrict__ dst, const float *__restrict__ src, const int *__restrict__ idx, int cols,
                   int src_rows) {
	GRID_STRIDE(i, n) {
		int r = i / cols, c = i - r * cols;
		int s = idx[r];
		dst[i] = (s >= 0 && s < src_rows) ? src[s * cols + c] : nanf("");
	}
}
