// Vectorisable float32 kernels for the GRU cell and the ResBlock's swish,
// called from cgo.go. Every function is compiled for AVX-512, AVX2
// and baseline x86-64 (target_clones, chosen at load time). The exp below
// clamps to to [-87.3, 88], x = n ln2 + r,
// degree-7 Taylor polynomial, scale by 2^n through the exponent bits.
// No FP traps are assumed so that the clamps if-convert and the loops
// vectorise (cgo does not accept -fno-trapping-math as a flag).
#pragma GCC optimize("no-trapping-math")

#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include <math.h>
#include "cell_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ADM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ADM_CLONES
#endif

static inline float adm_exp(float x) {
	x = x < -87.3f ? -87.3f : x;
	x = x > 88.0f ? 88.0f : x;
	const float magic = 12582912.0f;
	float t = x * 1.44269504088896341f + magic;
	float n = t - magic;
	float r = x - n * 0.693359375f - n * -2.12194440e-4f;
	float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
	int32_t e = ((int32_t)n + 127) << 23;
	float s;
	memcpy(&s, &e, sizeof s);
	return p * s;
}

ADM_CLONES
void adm_gru_cell_fwd(int rows, int h, const float *restrict gi, const float *restrict bi, const float *restrict gh,
                      const float *restrict prev, float *restrict gates, float *restrict ghn, float *restrict out) {
	for (int r = 0; r < rows; r++) {
		const float *gir = gi + (size_t)r * 3 * h, *ghr = gh + (size_t)r * 3 * h;
		float *gt = gates + (size_t)r * 3 * h, *hn = ghn + (size_t)r * h, *o = out + (size_t)r * h;
		const float *pr = prev ? prev + (size_t)r * h : NULL;
		for (int j = 0; j < h; j++) {
			float rg = 1.0f / (1.0f + adm_exp(-(gir[j] + bi[j] + ghr[j])));
			float z = 1.0f / (1.0f + adm_exp(-(gir[h + j] + bi[h + j] + ghr[h + j])));
			float ghnj = ghr[2 * h + j];
			float n = 2.0f / (1.0f + adm_exp(-2.0f * (gir[2 * h + j] + bi[2 * h + j] + rg * ghnj))) - 1.0f;
			float hp = pr ? pr[j] : 0.0f;
			o[j] = n + z * (hp - n);
			gt[j] = rg;
			gt[h + j] = z;
			gt[2 * h + j] = n;
			hn[j] = ghnj;
		}
	}
}

ADM_CLONES
void adm_gru_cell_bwd(int rows, int h, const float *restrict gates, const float *restrict ghn, const float *restrict prev,
                      const float *restrict g, float *restrict dh, float *restrict dgi, float *restrict dgh) {
	for (int r = 0; r < rows; r++) {
		const float *gt = gates + (size_t)r * 3 * h, *hn = ghn + (size_t)r * h, *gr = g + (size_t)r * h;
		const float *pr = prev ? prev + (size_t)r * h : NULL;
		float *dhr = dh + (size_t)r * h, *di = dgi + (size_t)r * 3 * h, *dg = dgh + (size_t)r * 3 * h;
		for (int j = 0; j < h; j++) {
			float d = dhr[j] + gr[j];
			float rg = gt[j], z = gt[h + j], n = gt[2 * h + j];
			float hp = pr ? pr[j] : 0.0f;
			float dnp = d * (1.0f - z) * (1.0f - n * n);
			float dzp = d * (hp - n) * z * (1.0f - z);
			float drp = dnp * hn[j] * rg * (1.0f - rg);
			di[j] = drp;
			di[h + j] = dzp;
			di[2 * h + j] = dnp;
			dg[j] = drp;
			dg[h + j] = dzp;
			dg[2 * h + j] = dnp * rg;
			dhr[j] = d * z;
		}
	}
}

ADM_CLONES
void adm_swish_res_fwd(int n, const float *restrict u, const float *restrict x, const float *restrict mask, float *restrict sig, float *restrict w) {
	if (mask) {
		for (int i = 0; i < n; i++) {
			float s = 1.0f / (1.0f + adm_exp(-u[i]));
			sig[i] = s;
			w[i] = x[i] + mask[i] * u[i] * s;
		}
	} else {
		for (int i = 0; i < n; i++) {
			float s = 1.0f / (1.0f + adm_exp(-u[i]));
			sig[i] = s;
			w[i] = x[i] + u[i] * s;
		}
	}
}

ADM_CLONES
void adm_swish_bwd(int n, const float *restrict u, const float *restrict sig, const float *restrict dw, const float *restrict mask, float *restrict du) {
	for (int i = 0; i < n; i++) {
		float s = sig[i];
		float d = dw[i] * s * (1.0f + u[i] * (1.0f - s));
		du[i] = mask ? d * mask[i] : d;
	}
}

ADM_CLONES
void adm_swish(int n, float *y) {
	for (int i = 0; i < n; i++) {
		y[i] = y[i] / (1.0f + adm_exp(-y[i]));
	}
}

ADM_CLONES
void adm_exp_n(int n, const float *restrict x, float *restrict y) {
	for (int i = 0; i < n; i++) {
		y[i] = adm_exp(x[i]);
	}
}

// LayerNorm over rows of c columns. The row sums may be reassociated
// (vectorised); results then differ from a sequential sum in the last bits.
#define ADM_REASSOC __attribute__((optimize("associative-math", "no-signed-zeros")))

ADM_CLONES ADM_REASSOC
void adm_layernorm_fwd(int rows, int c, const float *w, const float *restrict gamma,
                       const float *restrict beta, float *y, float *restrict xhat, float *restrict inv, float eps) {
	for (int r = 0; r < rows; r++) {
		const float *wr = w + (size_t)r * c;
		float *yr = y + (size_t)r * c, *xr = xhat + (size_t)r * c;
		float mean = 0.0f;
		for (int j = 0; j < c; j++) mean += wr[j];
		mean /= (float)c;
		float var = 0.0f;
		for (int j = 0; j < c; j++) {
			float d = wr[j] - mean;
			var += d * d;
		}
		var /= (float)c;
		float is = 1.0f / sqrtf(var + eps);
		inv[r] = is;
		for (int j = 0; j < c; j++) {
			float xh = (wr[j] - mean) * is;
			xr[j] = xh;
			yr[j] = xh * gamma[j] + beta[j];
		}
	}
}

ADM_CLONES ADM_REASSOC
void adm_layernorm_bwd(int rows, int c, const float *gy, const float *restrict gamma, const float *restrict xhat,
                       const float *restrict inv, float *dw, float *restrict prod) {
	for (int r = 0; r < rows; r++) {
		const float *gr = gy + (size_t)r * c, *xr = xhat + (size_t)r * c;
		float *dr = dw + (size_t)r * c, *pr = prod + (size_t)r * c;
		float s1 = 0.0f, s2 = 0.0f;
		for (int j = 0; j < c; j++) {
			float dxh = gr[j] * gamma[j];
			s1 += dxh;
			s2 += dxh * xr[j];
			pr[j] = gr[j] * xr[j];
		}
		s1 /= (float)c;
		s2 /= (float)c;
		float is = inv[r];
		for (int j = 0; j < c; j++) {
			dr[j] = is * (gr[j] * gamma[j] - s1 - xr[j] * s2);
		}
	}
}
