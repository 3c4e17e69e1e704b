// Adam with PyTorch's semantics (torch.optim.Adam, amsgrad off), the same
// arithmetic as models.Adam.StepGrads. The host forms the step's constants
// in float64 and rounds them once: c1 = 1-β1, c2 = 1-β2,
// step = lr/(1-β1^t), bc2_sqrt = sqrt(1-β2^t).
#include "kernel.h"

// adam_at steps element i.
__device__ __forceinline__ void adam_at(int i, float *__restrict__ p, const float *__restrict__ g,
                                        float *__restrict__ m, float *__restrict__ v, float b1, float c1, float b2,
                                        float c2, float step, float bc2_sqrt, float eps, float wd) {
	float gi = g[i];
	if (wd != 0.0f) {
		gi += wd * p[i];
	}
	float mi = b1 * m[i] + c1 * gi;
	float vi = b2 * v[i] + c2 * gi * gi;
	// A new moment below the smallest normal float32 is stored as +0, as on
	// the CPU (internal/cpukern: subnormal moments cost x86 microcode assists).
	if (fabsf(mi) < 1.17549435e-38f) {
		mi = 0.0f;
	}
	if (fabsf(vi) < 1.17549435e-38f) {
		vi = 0.0f;
	}
	m[i] = mi;
	v[i] = vi;
	p[i] -= step * mi / (sqrtf(vi) / bc2_sqrt + eps);
}

// adam: one step over n parameters p with gradients g and moments m, v.
KERNEL adam(int n, float *__restrict__ p, const float *__restrict__ g, float *__restrict__ m, float *__restrict__ v,
            float b1, float c1, float b2, float c2, float step, float bc2_sqrt, float eps, float wd) {
	GRID_STRIDE(i, n) {
		adam_at(i, p, g, m, v, b1, c1, b2, c2, step, bc2_sqrt, eps, wd);
	}
}

// adam_k is adam with the step's constants read from the device: k holds
// b1, c1, b2, c2, step, bc2_sqrt, eps, wd. The host uploads them before each
// step, so a recorded sequence of launches (a CUDA graph) replays with the
// current step's bias corrections.
KERNEL adam_k(int n, float *__restrict__ p, const float *__restrict__ g, float *__restrict__ m,
              float *__restrict__ v, const float *__restrict__ k) {
	const float b1 = k[0], c1 = k[1], b2 = k[2], c2 = k[3], step = k[4], bc2_sqrt = k[5], eps = k[6], wd = k[7];
	GRID_STRIDE(i, n) {
		adam_at(i, p, g, m, v, b1, c1, b2, c2, step, bc2_sqrt, eps, wd);
	}
}
