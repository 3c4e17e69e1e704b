// Kernels of Soft Actor-Critic's update beyond a dense layer's: the
// tanh-squashed Gaussian actor head and its backward pass, the critics'
// target, the actor's loss gradient and the entropy temperature's gradient.
// They follow package models' SAC graphs (models/sac_graph.go) and package
// sac's update operation for operation. α is read on the device as
// exp(log_alpha[0]), formed in double and rounded once as sac.Agent.Alpha
// does, so no update needs it on the host.
#include "kernel.h"

// sac_alpha: α = exp(log α), rounded once from double.
__device__ float sac_alpha(const float *log_alpha) { return (float)exp((double)log_alpha[0]); }

// sac_softplus: Gorgonia's float32 softplus (log1p(exp(x)) in double, 0
// below -103, x above 14).
__device__ float sac_softplus(float x) {
	if (x < -103.0f) {
		return 0.0f;
	}
	if (x > 14.0f) {
		return x;
	}
	return (float)log1p(exp((double)x));
}

// sac_head: the actor head over n rows. out [n, 2·ad] is the network's
// output: the mean u (columns 0..ad-1) and the raw log-std t (ad..2ad-1).
// With eps [n, ad] standard normal noise:
//
//	th = tanh(t), logstd = th·ls_half + ls_off  (soft clamp into [min, max])
//	x = u + exp(logstd)·eps, action = tanh(x)·scale + bias
//	logp = Σ_j [(-eps²/2 - logstd) - (-2x - 2·softplus(-2x))] + logp_const
//
// with ls_half = (max-min)/2, ls_off = min + ls_half and logp_const =
// ad·(-log(2π)/2 - 2·log 2). It keeps x and th [n, ad] for sac_head_grad.
KERNEL sac_head(int n, const float *__restrict__ out, const float *__restrict__ eps, const float *__restrict__ scale,
                const float *__restrict__ bias, float *__restrict__ action, float *__restrict__ logp,
                float *__restrict__ xs, float *__restrict__ ths, int ad, float ls_half, float ls_off,
                float logp_const) {
	GRID_STRIDE(r, n) {
		float s = 0.0f;
		for (int j = 0; j < ad; j++) {
			float u = out[r * 2 * ad + j], t = out[r * 2 * ad + ad + j], e = eps[r * ad + j];
			float th = tanhf(t);
			float ls = th * ls_half + ls_off;
			float x = u + expf(ls) * e;
			action[r * ad + j] = tanhf(x) * scale[j] + bias[j];
			xs[r * ad + j] = x;
			ths[r * ad + j] = th;
			float m2x = x * -2.0f;
			float corr = m2x - sac_softplus(m2x) * 2.0f;
			s += (e * e * -0.5f - ls) - corr;
		}
		logp[r] = s + logp_const;
	}
}

// sac_head_grad: the actor head's backward pass over n rows for the loss
// mean(α·logp - Q(action)): dact [n, ad] is the loss's gradient with
// respect to the action (through the critics), each logp has the gradient
// α·inv_batch, and dout [n, 2·ad] receives the gradients of u and t.
KERNEL sac_head_grad(int n, const float *__restrict__ dact, const float *__restrict__ eps,
                     const float *__restrict__ scale, const float *__restrict__ xs, const float *__restrict__ ths,
                     const float *__restrict__ log_alpha, float *__restrict__ dout, int ad, float ls_half,
                     float ls_off, float inv_batch) {
	float glogp = sac_alpha(log_alpha) * inv_batch;
	GRID_STRIDE(r, n) {
		for (int j = 0; j < ad; j++) {
			float x = xs[r * ad + j], th = ths[r * ad + j], e = eps[r * ad + j];
			float y = tanhf(x);
			// d logp/dx = 2 - 4·sigmoid(-2x), from -(-2x - 2·softplus(-2x)).
			float sig = 1.0f / (1.0f + expf(2.0f * x));
			float dx = dact[r * ad + j] * scale[j] * (1.0f - y * y) + glogp * (2.0f - 4.0f * sig);
			float ls = th * ls_half + ls_off;
			float dls = dx * expf(ls) * e - glogp;
			dout[r * 2 * ad + j] = dx;
			dout[r * 2 * ad + ad + j] = dls * ls_half * (1.0f - th * th);
		}
	}
}

// sac_target: the critics' target y = rew + gamma·(1-term)·(min(q1, q2) -
// α·logp) over n rows (the next state's sample and target critics).
KERNEL sac_target(int n, float *__restrict__ y, const float *__restrict__ rew, const float *__restrict__ term,
                  const float *__restrict__ q1, const float *__restrict__ q2, const float *__restrict__ logp,
                  const float *__restrict__ log_alpha, float gamma) {
	float alpha = sac_alpha(log_alpha);
	GRID_STRIDE(i, n) {
		float m = q1[i] < q2[i] ? q1[i] : q2[i];
		float v = m - alpha * logp[i];
		y[i] = rew[i] + gamma * (1.0f - term[i]) * v;
	}
}

// sac_actor_loss: per row of the actor loss mean(α·logp - min(q1, q2)),
// row_loss = α·logp - min(q1, q2), and the gradients of the mean with
// respect to q1 and q2: -inv_batch to the smaller (q1 on a tie), 0 to the
// other.
KERNEL sac_actor_loss(int n, const float *__restrict__ q1, const float *__restrict__ q2,
                      const float *__restrict__ logp, const float *__restrict__ log_alpha, float *__restrict__ dq1,
                      float *__restrict__ dq2, float *__restrict__ row_loss, float inv_batch) {
	float alpha = sac_alpha(log_alpha);
	GRID_STRIDE(i, n) {
		int first = q1[i] <= q2[i];
		float m = first ? q1[i] : q2[i];
		row_loss[i] = alpha * logp[i] - m;
		dq1[i] = first ? -inv_batch : 0.0f;
		dq2[i] = first ? 0.0f : -inv_batch;
	}
}

// sac_alpha_grad: the temperature's loss -log α·(mean logp + H) and its
// gradient -(mean logp + H), from logp_sum (one element, Σ logp over count
// rows) and the target entropy H, in double as package sac forms them; n
// is 1.
KERNEL sac_alpha_grad(int n, float *__restrict__ grad, float *__restrict__ loss, const float *__restrict__ logp_sum,
                      const float *__restrict__ log_alpha, int count, float target_entropy) {
	GRID_STRIDE(i, n) {
		double m = (double)logp_sum[0] / (double)count + (double)target_entropy;
		grad[0] = (float)-m;
		loss[0] = (float)(-(double)log_alpha[0] * m);
	}
}

// concat_cols: dst [rows, ca+cb] = [a [rows, ca], b [rows, cb]];
// n = rows·(ca+cb).
KERNEL concat_cols(int n, float *__restrict__ dst, const float *__restrict__ a, const float *__restrict__ b, int ca,
                   int cb) {
	GRID_STRIDE(i, n) {
		int w = ca + cb;
		int r = i / w, c = i - r * w;
		dst[i] = c < ca ? a[r * ca + c] : b[r * cb + c - ca];
	}
}

// take_cols: dst [rows, w] = columns off..off+w-1 of src [rows, scols],
// added to dst when acc is not 0; n = rows·w.
KERNEL take_cols(int n, float *__restrict__ dst, const float *__restrict__ src, int w, int scols, int off, int acc) {
	GRID_STRIDE(i, n) {
		int r = i / w, c = i - r * w;
		float v = src[r * scols + off + c];
		dst[i] = acc ? dst[i] + v : v;
	}
}
