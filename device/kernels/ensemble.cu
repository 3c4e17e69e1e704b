// Kernels of the probabilistic ensemble's train step (MBPO's swish MLPs,
// models/ensemble_graph.go, device/ensdev): a hidden layer's forward pass
// is adm_swish_res's with a zero residual and a mask of ones, which keeps
// σ(u) for the backward pass here, and the head and the loss are the
// ADM's (adm_head_row, adm_loss_one), run for all members at once.
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

// The kernels below run the layers of all members at once. The members'
// matrices are stacked member-major: member m's [rows, c] block starts at
// m·rows·c (each layer's batched product writes them so), and its vector
// [c] of a parameter at m·c.

// ens_swish: every member's hidden layer forward pass over n = members·rows·c
// elements: u += bias of the row's member (kept for the backward pass),
// sig = σ(u), act = u·sig. It is adm_swish_res with a zero residual and a
// mask of ones (whose w = 0 + 1·u·sig rounds as u·sig).
KERNEL ens_swish(int n, float *__restrict__ u, const float *__restrict__ bias, float *__restrict__ sig,
                 float *__restrict__ act, int c, int rows) {
	GRID_STRIDE(i, n) {
		int m = i / (rows * c);
		float v = u[i] + bias[m * c + i % c];
		float s = adm_sigmoid(v);
		u[i] = v;
		sig[i] = s;
		act[i] = v * s;
	}
}

// ens_bias_add: y[i] += the bias of the row's member over n = members·rows·c
// elements (bias_add for stacked members).
KERNEL ens_bias_add(int n, float *__restrict__ y, const float *__restrict__ bias, int c, int rows) {
	GRID_STRIDE(i, n) { y[i] += bias[(i / (rows * c)) * c + i % c]; }
}

// ens_head: adm_head over n = members·rows rows of stacked members: row r's
// member m = r / rows has bounds mx, mn at m·d and its Σw at wsum[m].
KERNEL ens_head(int n, const float *__restrict__ o, const float *__restrict__ mx, const float *__restrict__ mn,
                const float *__restrict__ tg, const float *__restrict__ w, const float *__restrict__ wsum,
                float *__restrict__ lv, float *__restrict__ dout, float *__restrict__ tmax, float *__restrict__ tmin,
                float *__restrict__ rowloss, int d, int rows) {
	GRID_STRIDE(r, n) {
		int m = r / rows;
		double norm = (double)wsum[m] * (double)d;
		adm_head_row(r, o, mx + m * d, mn + m * d, tg, w, norm, lv, dout, tmax, tmin, rowloss, d);
	}
}

// ens_loss: adm_loss for each of n members, one thread each: member m's
// rowloss at m·rows, Σw at wsum[m], bounds at m·d, and its loss and NLL
// into out[2m], out[2m+1].
KERNEL ens_loss(int n, const float *__restrict__ rowloss, const float *__restrict__ wsum,
                const float *__restrict__ mx, const float *__restrict__ mn, float *__restrict__ out, int rows, int d,
                float coef) {
	GRID_STRIDE(m, n) { adm_loss_one(rowloss + m * rows, wsum + m, mx + m * d, mn + m * d, out + 2 * m, rows, d, coef); }
}
