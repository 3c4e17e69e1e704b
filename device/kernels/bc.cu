// Kernels of behaviour cloning's step beyond a dense layer's: the
// deterministic action of the SAC actor's mean and the mean squared error's
// gradient (models/bc_graph.go).
#include "kernel.h"

// bc_head: over n = rows·ad elements of the actor's output out [rows, 2·ad]
// (the mean u in columns 0..ad-1, the raw log-std after), with the data's
// action target [rows, ad]:
//
//	action = tanh(u)·scale + bias, sq = (action - target)²
//	dout[:, :ad] = coef·2·(action - target)·scale·(1 - tanh²(u)), dout[:, ad:] = 0
//
// coef = 1/(rows·ad) makes dout the gradient of the mean of sq (whose sum
// col_sum takes); the log-std columns get none.
KERNEL bc_head(int n, const float *__restrict__ out, const float *__restrict__ target,
               const float *__restrict__ scale, const float *__restrict__ bias, float *__restrict__ action,
               float *__restrict__ sq, float *__restrict__ dout, int ad, float coef) {
	GRID_STRIDE(i, n) {
		int r = i / ad, j = i - r * ad;
		float th = tanhf(out[r * 2 * ad + j]);
		float a = th * scale[j] + bias[j];
		float e = a - target[i];
		action[i] = a;
		sq[i] = e * e;
		dout[r * 2 * ad + j] = coef * 2.0f * e * scale[j] * (1.0f - th * th);
		dout[r * 2 * ad + ad + j] = 0.0f;
	}
}
