// Kernels of the Any-step Dynamics Model's train step beyond a dense
// layer's: the GRU cell of one time step and its backward pass, the
// ResBlock's tail (bias, swish, dropout mask, residual, LayerNorm) and its
// backward pass in element-wise pieces, the Gaussian head (log-variance soft clamp, weighted
// negative log-likelihood and their gradients), the loss with the bounds'
// penalty, and dropout masks. They follow package models' ADM training graph
// (models/adm_graph.go and the fused ops of models/ops) operation for
// operation; the soft clamp and the likelihood run in double as there.
// Matrices are row-major; the GRU's rows are time-major (row t·b+i is step
// t of sequence i), and a step's kernels address their rows by offset.
#include "kernel.h"

// adm_sigmoid: 1/(1+e^-x).
__device__ float adm_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// adm_gru_fwd: one GRU step (PyTorch's equations, gate order r, z, n) over
// n = b·h elements of a batch of b rows. gi [R,3h] holds x·Wi of every
// step; row0 = t·b is this step's first row. gh [b,3h] is h_{t-1}·Wh; with
// has_prev 0 the previous state is zero and gh is not read. With the biases
// bi, bh [3h]:
//
//	r = σ(gi_r + bi_r + (gh_r + bh_r)), z likewise
//	n = tanh(gi_n + bi_n + r·(gh_n + bh_n)), h_t = n + z·(h_{t-1} - n)
//
// It writes r, z, n to gates [R,3h], gh_n + bh_n to ghn [R,h] and h_t to y
// [R,h] (rows row0..row0+b-1) and to hcur [b,h], which the next step's
// product reads; h_{t-1} is read from y's rows row0-b...
KERNEL adm_gru_fwd(int n, const float *__restrict__ gi, const float *__restrict__ bi, const float *__restrict__ gh,
                   const float *__restrict__ bh, float *__restrict__ gates, float *__restrict__ ghn, float *y,
                   float *__restrict__ hcur, int h, int row0, int has_prev) {
	int b = n / h;
	GRID_STRIDE(i, n) {
		int r = i / h, j = i - r * h;
		int g = row0 + r;
		const float *gir = gi + g * 3 * h;
		float ghr = bh[j], ghz = bh[h + j], ghnj = bh[2 * h + j], hp = 0.0f;
		if (has_prev) {
			ghr = gh[r * 3 * h + j] + ghr;
			ghz = gh[r * 3 * h + h + j] + ghz;
			ghnj = gh[r * 3 * h + 2 * h + j] + ghnj;
			hp = y[(g - b) * h + j];
		}
		float rg = adm_sigmoid(gir[j] + bi[j] + ghr);
		float z = adm_sigmoid(gir[h + j] + bi[h + j] + ghz);
		float nn = tanhf(gir[2 * h + j] + bi[2 * h + j] + rg * ghnj);
		float out = nn + z * (hp - nn);
		gates[g * 3 * h + j] = rg;
		gates[g * 3 * h + h + j] = z;
		gates[g * 3 * h + 2 * h + j] = nn;
		ghn[g * h + j] = ghnj;
		y[g * h + j] = out;
		hcur[i] = out;
	}
}

// adm_gru_bwd: the backward pass of the step adm_gru_fwd ran at row0, over
// n = b·h elements. gy [R,h] is the gradient of the layer's output y, dh
// [b,h] that of h_t through the later steps; it becomes h_{t-1}'s (the host
// then adds dgh·Whᵀ). It writes the gradients of the pre-activations
// (x·Wi + bi) to dgi [R,3h] at rows row0.. and of (h·Wh + bh) to dgh [R,3h]
// at rows drow.. and to dghs [b,3h] (the next product's operand).
KERNEL adm_gru_bwd(int n, const float *__restrict__ gates, const float *__restrict__ ghn, const float *__restrict__ y,
                   const float *__restrict__ gy, float *__restrict__ dh, float *__restrict__ dgi,
                   float *__restrict__ dgh, float *__restrict__ dghs, int h, int row0, int drow, int has_prev) {
	int b = n / h;
	GRID_STRIDE(i, n) {
		int r = i / h, j = i - r * h;
		int g = row0 + r;
		float d = dh[i] + gy[g * h + j];
		float rg = gates[g * 3 * h + j], z = gates[g * 3 * h + h + j], nn = gates[g * 3 * h + 2 * h + j];
		float hp = has_prev ? y[(g - b) * h + j] : 0.0f;
		float dnp = d * (1.0f - z) * (1.0f - nn * nn);
		float dzp = d * (hp - nn) * z * (1.0f - z);
		float drp = dnp * ghn[g * h + j] * rg * (1.0f - rg);
		dgi[g * 3 * h + j] = drp;
		dgi[g * 3 * h + h + j] = dzp;
		dgi[g * 3 * h + 2 * h + j] = dnp;
		int k = (drow + r) * 3 * h;
		dgh[k + j] = drp;
		dgh[k + h + j] = dzp;
		dgh[k + 2 * h + j] = dnp * rg;
		dghs[r * 3 * h + j] = drp;
		dghs[r * 3 * h + h + j] = dzp;
		dghs[r * 3 * h + 2 * h + j] = dnp * rg;
		dh[i] = d * z;
	}
}

// The ResBlock's tail, y = LayerNorm(x + mask ⊙ swish(u + bias)), and its
// backward pass run as element-wise kernels over n = rows·c elements of
// [rows, c] matrices, every element in its own thread; the row sums that
// LayerNorm needs are matrix products with a vector of ones between them
// (the host's), so no kernel walks a whole row. mask holds the dropout
// multipliers (0 or 1/(1-p); 1 without dropout).

// adm_swish_res: u += bias (kept for the backward pass), sig = σ(u),
// w = x + mask ⊙ u ⊙ sig.
KERNEL adm_swish_res(int n, float *__restrict__ u, const float *__restrict__ bias, const float *__restrict__ x,
                     const float *__restrict__ mask, float *__restrict__ sig, float *__restrict__ w, int c) {
	GRID_STRIDE(i, n) {
		float v = u[i] + bias[i % c];
		float s = adm_sigmoid(v);
		u[i] = v;
		sig[i] = s;
		w[i] = x[i] + mask[i] * v * s;
	}
}

// adm_center: with the mean rowsum[r]/c of w's row, xc = w - mean and
// sq = xc² (whose row sums give the population variance).
KERNEL adm_center(int n, const float *__restrict__ w, const float *__restrict__ rowsum, float *__restrict__ xc,
                  float *__restrict__ sq, int c) {
	GRID_STRIDE(i, n) {
		float d = w[i] - rowsum[i / c] / (float)c;
		xc[i] = d;
		sq[i] = d * d;
	}
}

// adm_norm: with the variance sqsum[r]/c of the row, inv = 1/sqrt(var+eps)
// (into inv[r] [rows]), xhat = xc·inv in place of xc, y = xhat·gamma + beta.
KERNEL adm_norm(int n, float *xhat, const float *__restrict__ sqsum, const float *__restrict__ gamma,
                const float *__restrict__ beta, float *__restrict__ inv, float *__restrict__ y, int c, float eps) {
	GRID_STRIDE(i, n) {
		int r = i / c, j = i - r * c;
		float is = 1.0f / sqrtf(sqsum[r] / (float)c + eps);
		float xh = xhat[i] * is;
		xhat[i] = xh;
		y[i] = xh * gamma[j] + beta[j];
		if (j == 0) {
			inv[r] = is;
		}
	}
}

// adm_norm_terms: the terms of LayerNorm's backward pass from the output's
// gradient gy: g = gy ⊙ gamma, gx = g ⊙ xhat (the row sums of g and gx
// feed adm_res_grad) and prod = gy ⊙ xhat (its column sums are gamma's
// gradient, gy's are beta's).
KERNEL adm_norm_terms(int n, const float *__restrict__ gy, const float *__restrict__ gamma,
                      const float *__restrict__ xhat, float *__restrict__ g, float *__restrict__ gx,
                      float *__restrict__ prod, int c) {
	GRID_STRIDE(i, n) {
		float v = gy[i] * gamma[i % c];
		g[i] = v;
		gx[i] = v * xhat[i];
		prod[i] = gy[i] * xhat[i];
	}
}

// adm_res_grad: with s1 = gsum[r]/c and s2 = gxsum[r]/c (row means of
// adm_norm_terms' g and gx), the gradient of w, dx = inv·(g - s1 - xhat·s2)
// (the residual's; the host adds du·Wᵀ), and of u, du = dx ⊙ swish'(u) ⊙
// mask with swish'(u) = sig·(1 + u·(1-sig)).
KERNEL adm_res_grad(int n, const float *__restrict__ g, const float *__restrict__ gsum,
                    const float *__restrict__ gxsum, const float *__restrict__ xhat, const float *__restrict__ inv,
                    const float *__restrict__ u, const float *__restrict__ sig, const float *__restrict__ mask,
                    float *__restrict__ dx, float *__restrict__ du, int c) {
	GRID_STRIDE(i, n) {
		int r = i / c;
		float dw = inv[r] * (g[i] - gsum[r] / (float)c - xhat[i] * (gxsum[r] / (float)c));
		float s = sig[i];
		dx[i] = dw;
		du[i] = dw * s * (1.0f + u[i] * (1.0f - s)) * mask[i];
	}
}

// adm_softplus: softplus(z) = log(1+e^z), and σ(z) into *sig, from one
// exponential (models/ops' softplusLogistic).
__device__ double adm_softplus(double z, double *sig) {
	double ez = exp(-fabs(z));
	*sig = z >= 0.0 ? 1.0 / (1.0 + ez) : ez / (1.0 + ez);
	return (z > 0.0 ? z : 0.0) + log1p(ez);
}

// adm_head_row is adm_head's row r, with mx and mn the bounds and norm =
// Σw·d of the row's model (ens_head runs it for every member's rows).
__device__ void adm_head_row(int r, const float *__restrict__ o, const float *__restrict__ mx,
                             const float *__restrict__ mn, const float *__restrict__ tg, const float *__restrict__ w,
                             double norm, float *__restrict__ lv, float *__restrict__ dout, float *__restrict__ tmax,
                             float *__restrict__ tmin, float *__restrict__ rowloss, int d) {
	double wr = (double)w[r];
	double c = norm != 0.0 ? wr / norm : 0.0;
	double rs = 0.0;
	for (int j = 0; j < d; j++) {
		double s1, s2;
		double raw = (double)o[r * 2 * d + d + j];
		double a = (double)mx[j] - adm_softplus((double)mx[j] - raw, &s1);
		float l = (float)((double)mn[j] + adm_softplus(a - (double)mn[j], &s2));
		lv[r * d + j] = l;
		double e = (double)o[r * 2 * d + j] - (double)tg[r * d + j];
		double iv = exp(-(double)l);
		rs += e * e * iv + (double)l;
		float dlv = (float)(c * (1.0 - e * e * iv));
		double gl = (double)dlv;
		dout[r * 2 * d + j] = (float)(c * 2.0 * e * iv);
		dout[r * 2 * d + d + j] = (float)(gl * s2 * s1);
		tmax[r * d + j] = (float)(gl * s2 * (1.0 - s1));
		tmin[r * d + j] = (float)(gl * (1.0 - s2));
	}
	rowloss[r] = wr != 0.0 ? (float)(wr * rs) : 0.0f;
}

// adm_head: the Gaussian head over n rows. o [n,2d] is the output layer's:
// the mean (columns 0..d-1) and the raw log-variance, soft-clamped into
// lv [n,d] with the bounds mx, mn [d]:
//
//	a = mx - softplus(mx - raw), lv = mn + softplus(a - mn)
//
// The loss NLL = Σ_r w_r Σ_j [(μ-y)²·e^{-lv} + lv] / (d·Σw) (0 when Σw is
// 0; wsum [1] holds Σw) gets its row terms w_r·Σ_j in rowloss [n]; its
// gradients with respect to the mean and the raw log-variance go to dout
// [n,2d], and each row's terms of the bounds' gradients to tmax, tmin [n,d]
// (their column sums are the likelihood's gradients with respect to mx and
// mn). tg [n,d] is the target, w [n] the weights.
KERNEL adm_head(int n, const float *__restrict__ o, const float *__restrict__ mx, const float *__restrict__ mn,
                const float *__restrict__ tg, const float *__restrict__ w, const float *__restrict__ wsum,
                float *__restrict__ lv, float *__restrict__ dout, float *__restrict__ tmax, float *__restrict__ tmin,
                float *__restrict__ rowloss, int d) {
	double norm = (double)wsum[0] * (double)d;
	GRID_STRIDE(r, n) { adm_head_row(r, o, mx, mn, tg, w, norm, lv, dout, tmax, tmin, rowloss, d); }
}

// adm_loss_one is adm_loss's work (ens_loss runs it for every member).
__device__ void adm_loss_one(const float *__restrict__ rowloss, const float *__restrict__ wsum,
                             const float *__restrict__ mx, const float *__restrict__ mn, float *__restrict__ out,
                             int rows, int d, float coef) {
	double s = 0.0, sx = 0.0, sn = 0.0;
	for (int r = 0; r < rows; r++) {
		s += (double)rowloss[r];
	}
	for (int j = 0; j < d; j++) {
		sx += (double)mx[j];
		sn += (double)mn[j];
	}
	double norm = (double)wsum[0] * (double)d;
	float nll = norm != 0.0 ? (float)(s / norm) : 0.0f;
	float pen = (float)((double)coef * sx) + (float)((double)-coef * sn);
	out[0] = nll + pen;
	out[1] = nll;
}

// adm_loss: the loss NLL + coef·Σmx - coef·Σmn into out[0] and the NLL
// into out[1], from adm_head's rowloss [rows] and wsum; n is 1. Sums run in
// double and each term is rounded to float as models' graph rounds it.
KERNEL adm_loss(int n, const float *__restrict__ rowloss, const float *__restrict__ wsum,
                const float *__restrict__ mx, const float *__restrict__ mn, float *__restrict__ out, int rows, int d,
                float coef) {
	GRID_STRIDE(i, n) { adm_loss_one(rowloss, wsum, mx, mn, out, rows, d, coef); }
}

// dropout_mask: inverted dropout multipliers over n elements from the
// SplitMix64 stream whose state is (hi<<32 | lo) with lo = state[2·at],
// hi = state[2·at+1] (read from the device, so that a recorded graph
// replays with the current states), as package internal/cpukern's
// DropoutMask draws them: element i takes 16 bits of the stream's draw
// i/4 + 1 (bits 16·(i%4) up) and is 0 when they are below thr, else keep.
// The stream is counter-based, so every element is drawn independently; the
// host advances the state by ceil(n/4) draws.
KERNEL dropout_mask(int n, float *__restrict__ mask, const int *__restrict__ state, int at, int thr, float keep) {
	unsigned long long s = ((unsigned long long)(unsigned)state[2 * at + 1] << 32) |
	                       (unsigned long long)(unsigned)state[2 * at];
	GRID_STRIDE(i, n) {
		unsigned long long z = s + (unsigned long long)(i / 4 + 1) * 0x9e3779b97f4a7c15ULL;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z = z ^ (z >> 31);
		int bits = (int)((z >> (16 * (i % 4))) & 0xffffULL);
		mask[i] = bits < thr ? 0.0f : keep;
	}
}
