// Kernels of the probabilistic ensemble's train step (MBPO's swish MLPs,
// models/ensemble_graph.go) beyond the dense layers and the ADM's Gaussian
// head (adm_head, adm_loss), which the ensemble shares: a hidden layer's
// forward pass is adm_swish_res with a zero residual and a mask of ones,
// which keeps σ(u) for the backward pass here.
#include "kernel.h"

// ens_swish_grad: the gradient through y = swish(u) = u·σ(u) over n
// elements, in place: dy *= sig·(1 + u·(1 - sig)) with sig = σ(u) as the
// forward pass kept it.
KERNEL ens_swish_grad(int n, float *__restrict__ dy, const float *__restrict__ u, const float *__restrict__ sig) {
	GRID_STRIDE(i, n) {
		float s = sig[i];
		dy[i] *= s * (1.0f + u[i] * (1.0f - s));
	}
}
