// Element-wise kernels of package cpukern. Each is one plain loop, compiled
// three times (AVX-512, AVX2, plain) through the target attribute and picked
// by cpukern_isa. The package builds with -ffp-contract=off, so no path fuses
// a multiply and an add: all three give bit-identical results, equal to the
// same expressions evaluated in Go's float32 arithmetic.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpukern.h"


#if defined(__x86_64__)
#include <immintrin.h>
#define T512 __attribute__((target("avx512f,avx512vl,avx512dq,fma")))
#define T256 __attribute__((target("avx2,fma")))
#else
#define T512
#define T256
#endif

// positive(x) is 1 when x's bits, read as an int32, are > 0: x > 0 with
// +0 -> 0 and positive NaNs kept (the ReLU mask of package ops).
#define POSITIVE(x) (cpukern_bits(x) > 0)

static inline int32_t cpukern_bits(float x) {
	int32_t b;
	memcpy(&b, &x, 4);
	return b;
}

// DEFINE3 compiles the body (the variadic part) as name_512, name_256 and name_gen and defines the public
// name that picks one by cpukern_isa.
#define DEFINE3(name, params, args, ...)                   \
	static T512 void name##_512 params __VA_ARGS__         \
	static T256 void name##_256 params __VA_ARGS__         \
	static void name##_gen params __VA_ARGS__                \
	void name params {                                     \
		switch (cpukern_isa) {                             \
		case CPUKERN_AVX512: name##_512 args; return;      \
		case CPUKERN_AVX2: name##_256 args; return;        \
		default: name##_gen args; return;                  \
		}                                                  \
	}

DEFINE3(cpukern_relu_fwd, (int n, const float *restrict x, float *restrict y), (n, x, y), {
	for (int i = 0; i < n; i++) y[i] = POSITIVE(x[i]) ? x[i] : 0.0f;
})

DEFINE3(cpukern_relu_bwd, (int n, const float *restrict x, const float *restrict g, float *restrict d, int acc),
        (n, x, g, d, acc), {
	if (acc) {
		for (int i = 0; i < n; i++) d[i] += POSITIVE(x[i]) ? g[i] : 0.0f;
	} else {
		for (int i = 0; i < n; i++) d[i] = POSITIVE(x[i]) ? g[i] : 0.0f;
	}
})

DEFINE3(cpukern_colsum, (int rows, int cols, long ld, const float *restrict x, float *restrict y, int acc),
        (rows, cols, ld, x, y, acc), {
	if (!acc) memset(y, 0, sizeof(float) * (size_t)cols);
	for (int r = 0; r < rows; r++) {
		const float *row = x + (size_t)r * ld;
		for (int j = 0; j < cols; j++) y[j] += row[j];
	}
})

// Adam. GCC vectorises no sqrtf while errno may be set (and cgo refuses
// -fno-math-errno), so the wide paths are written with intrinsics; every path
// evaluates the same float32 operations in the same order.
//
// A new moment whose magnitude is below FLT_MIN (a subnormal) is stored as
// +0 and the step uses that +0. The moments of a parameter whose gradient
// stays 0 (the weights of a dead ReLU unit) decay geometrically into the
// subnormal range, where x86 multiplies and divides take microcode assists:
// a trained SAC agent's Adam ran ~6x slower than a fresh one's. The step such
// a moment would give is below 1e-30, far under a weight's float32 spacing.
#define ADAM_FLUSH(x) (fabsf(x) < FLT_MIN ? 0.0f : (x))
#define ADAM_SCALAR(i)                                              \
	do {                                                            \
		float gi = wd != 0 ? g[i] + wd * p[i] : g[i];               \
		float mi = ADAM_FLUSH(b1 * m[i] + c1 * gi);                 \
		float vi = ADAM_FLUSH(b2 * v[i] + c2 * gi * gi);            \
		m[i] = mi;                                                  \
		v[i] = vi;                                                  \
		p[i] -= step * mi / (sqrtf(vi) / bc2 + eps);                \
	} while (0)
#define ADAM_CONSTANTS \
	const float b1 = h[0], c1 = h[1], b2 = h[2], c2 = h[3], step = h[4], bc2 = h[5], eps = h[6], wd = h[7]

static void cpukern_adam_gen(int n, float *restrict p, const float *restrict g, float *restrict m,
                             float *restrict v, const float *restrict h) {
	ADAM_CONSTANTS;
	for (int i = 0; i < n; i++) ADAM_SCALAR(i);
}

#if defined(__x86_64__)
// ADAM_WIDE defines the vector loop for one register width W (512 or 256).
// FLUSH is ADAM_FLUSH for one vector (NaNs kept: the comparison is ordered).
#define ADAM_WIDE(T, W, L, PS, FLUSH)                                                                     \
	static T void cpukern_adam_##W(int n, float *restrict p, const float *restrict g, float *restrict m, \
	                               float *restrict v, const float *restrict h) {                         \
		ADAM_CONSTANTS;                                                                                   \
		const __m##W vb1 = PS(set1_ps)(b1), vc1 = PS(set1_ps)(c1), vb2 = PS(set1_ps)(b2);                  \
		const __m##W vc2 = PS(set1_ps)(c2), vstep = PS(set1_ps)(step), vbc2 = PS(set1_ps)(bc2);            \
		const __m##W veps = PS(set1_ps)(eps), vwd = PS(set1_ps)(wd), vmin = PS(set1_ps)(FLT_MIN);          \
		int i = 0;                                                                                        \
		for (; i + L <= n; i += L) {                                                                      \
			__m##W gi = PS(loadu_ps)(g + i);                                                              \
			if (wd != 0) gi = PS(add_ps)(gi, PS(mul_ps)(vwd, PS(loadu_ps)(p + i)));                      \
			__m##W mi = PS(add_ps)(PS(mul_ps)(vb1, PS(loadu_ps)(m + i)), PS(mul_ps)(vc1, gi));            \
			__m##W vi = PS(add_ps)(PS(mul_ps)(vb2, PS(loadu_ps)(v + i)), PS(mul_ps)(PS(mul_ps)(vc2, gi), gi)); \
			mi = FLUSH(mi, vmin);                                                                         \
			vi = FLUSH(vi, vmin);                                                                         \
			__m##W den = PS(add_ps)(PS(div_ps)(PS(sqrt_ps)(vi), vbc2), veps);                             \
			PS(storeu_ps)(m + i, mi);                                                                     \
			PS(storeu_ps)(v + i, vi);                                                                     \
			PS(storeu_ps)(p + i, PS(sub_ps)(PS(loadu_ps)(p + i), PS(div_ps)(PS(mul_ps)(vstep, mi), den))); \
		}                                                                                                 \
		for (; i < n; i++) ADAM_SCALAR(i);                                                                \
	}
#define PS512(op) _mm512_##op
#define PS256(op) _mm256_##op
#define FLUSH512(x, vmin) \
	_mm512_mask_blend_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(x), vmin, _CMP_LT_OQ), x, _mm512_setzero_ps())
#define FLUSH256(x, vmin) \
	_mm256_andnot_ps(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), vmin, _CMP_LT_OQ), x)
ADAM_WIDE(T512, 512, 16, PS512, FLUSH512)
ADAM_WIDE(T256, 256, 8, PS256, FLUSH256)
#else
#define cpukern_adam_512 cpukern_adam_gen
#define cpukern_adam_256 cpukern_adam_gen
#endif

void cpukern_adam(int n, float *p, const float *g, float *m, float *v, const float *h) {
	switch (cpukern_isa) {
	case CPUKERN_AVX512: cpukern_adam_512(n, p, g, m, v, h); return;
	case CPUKERN_AVX2: cpukern_adam_256(n, p, g, m, v, h); return;
	default: cpukern_adam_gen(n, p, g, m, v, h); return;
	}
}

DEFINE3(cpukern_polyak, (int n, float *restrict dst, const float *restrict src, float tau), (n, dst, src, tau), {
	const float keep = 1.0f - tau;
	for (int i = 0; i < n; i++) dst[i] = keep * dst[i] + tau * src[i];
})

// Dropout masks from a SplitMix64 stream: each 64-bit draw decides four
// entries by 16 bits each (drop when below thr); integer work, so all paths
// agree bit for bit with package models' Go generator it replaces.
static inline uint64_t cpukern_splitmix(uint64_t *state) {
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void cpukern_dropout_mask(int n, float *mask, uint64_t *state, int thr, float keep) {
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		uint64_t bits = cpukern_splitmix(state);
		for (int j = 0; j < 4; j++, bits >>= 16) mask[i + j] = ((int32_t)(bits & 0xffff) < thr) ? 0.0f : keep;
	}
	if (i < n) {
		uint64_t bits = cpukern_splitmix(state);
		for (; i < n; i++, bits >>= 16) mask[i] = ((int32_t)(bits & 0xffff) < thr) ? 0.0f : keep;
	}
}

// The tanh-squashed Gaussian head (package ops' SquashedGaussian) in float32.
// exp, log1p and tanh are Cephes' single-precision polynomials written as
// plain expressions and selects, so that the element loop vectorises; the
// package builds without contraction, so every path gives the same bits.
// k = {LogStdMin, (LogStdMax-LogStdMin)/2, act·(-log(2π)/2 - 2 log 2)}.
// st holds 4 planes of rows·act values: tanh(t), exp(logstd), tanh(x), σ(-2x);
// tmp (3 planes of rows·act) is scratch.

// sq_sel is c ? a : b through the bits: GCC if-converts (and so vectorises)
// no float select whose arm is the compared value.
static inline float sq_sel(int c, float a, float b) {
	union { float f; int32_t i; } x = {.f = a}, y = {.f = b}, r;
	int32_t m = -(int32_t)(c != 0);
	r.i = (x.i & m) | (y.i & ~m);
	return r.f;
}

// sq_abs is |x| (the sign bit cleared).
static inline float sq_abs(float x) {
	union { float f; int32_t i; } u = {.f = x};
	u.i &= 0x7fffffff;
	return u.f;
}

// sq_exp is e^x (Cephes expf; inputs clamped to [-87, 88], NaN kept).
static inline float sq_exp(float x) {
	float c = sq_sel(x < -87.0f, -87.0f, x);
	c = sq_sel(c > 88.0f, 88.0f, c);
	float fx = c * 1.44269504088896341f;
	int n = (int)(fx + sq_sel(fx >= 0, 0.5f, -0.5f));
	float fn = (float)n;
	float r = c - fn * 0.693359375f - fn * -2.12194440e-4f;
	float z = r * r;
	float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
	            1.6666665459e-1f) * r + 5.0000001201e-1f) * z + r + 1.0f;
	union { int32_t i; float f; } s = {.i = (int32_t)((uint32_t)(n + 127) << 23)};
	return sq_sel(x != x, x, p * s.f);
}

// sq_log1p is log(1+e) for e in [0, 1] (Cephes logf's polynomial on e itself
// below sqrt(2)-1, else on (1+e)/2 - 1).
static inline float sq_log1p(float e) {
	int hi = e >= 0.41421356f;
	float x = sq_sel(hi, (1.0f + e) * 0.5f - 1.0f, e);
	float fe = sq_sel(hi, 1.0f, 0.0f);
	float z = x * x;
	float y = ((((((((7.0376836292e-2f * x - 1.1514610310e-1f) * x + 1.1676998740e-1f) * x - 1.2420140846e-1f) * x +
	               1.4249322787e-1f) * x - 1.6668057665e-1f) * x + 2.0000714765e-1f) * x - 2.4999993993e-1f) * x +
	          3.3333331174e-1f) * x * z;
	y = y + fe * -2.12194440e-4f;
	y = y + -0.5f * z;
	return x + y + fe * 0.693359375f;
}

// sq_tanh is tanh(a) given e = e^(-2|a|) (Cephes tanhf: a polynomial below 0.625).
static inline float sq_tanh(float a, float e) {
	float z = a * a;
	float p = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
	           3.33332819422e-1f) * z * a + a;
	float q = 1.0f - 2.0f * e / (1.0f + e);
	return sq_sel(sq_abs(a) < 0.625f, p, sq_sel(a < 0, -q, q));
}

DEFINE3(cpukern_squash_fwd,
        (int rows, int ad, const float *restrict out, const float *restrict eps, const float *restrict scale,
         const float *restrict bias, const float *restrict k, float *restrict y, float *restrict st,
         float *restrict tmp),
        (rows, ad, out, eps, scale, bias, k, y, st, tmp), {
	const float lmin = k[0], half = k[1], c = k[2];
	const int n = rows * ad;
	float *restrict us = tmp, *restrict ts = tmp + n, *restrict term = tmp + 2 * n;
	float *restrict tht = st, *restrict sd = st + n, *restrict ty = st + 2 * n, *restrict sig = st + 3 * n;
	for (int r = 0; r < rows; r++)
		for (int j = 0; j < ad; j++) {
			us[r * ad + j] = out[(size_t)r * 2 * ad + j];
			ts[r * ad + j] = out[(size_t)r * 2 * ad + ad + j];
		}
	for (int i = 0; i < n; i++) {
		float t = ts[i], e = eps[i];
		float th = sq_tanh(t, sq_exp(-2.0f * sq_abs(t)));
		float logstd = lmin + half * (th + 1.0f);
		float s = sq_exp(logstd);
		float x = us[i] + s * e;
		float z = -2.0f * x;
		float ez = sq_exp(-sq_abs(z)); // e^(-|z|)
		float sp = sq_sel(z > 0, z, 0.0f) + sq_log1p(ez);
		tht[i] = th, sd[i] = s, ty[i] = sq_tanh(x, ez);
		sig[i] = sq_sel(z >= 0, 1.0f, ez) / (1.0f + ez);
		term[i] = -0.5f * e * e - logstd + 2.0f * x + 2.0f * sp;
	}
	for (int r = 0; r < rows; r++) {
		float *dst = y + (size_t)r * (ad + 1);
		float lp = c;
		for (int j = 0; j < ad; j++) {
			dst[j] = ty[r * ad + j] * scale[j] + bias[j];
			lp += term[r * ad + j];
		}
		dst[ad] = lp;
	}
})

// Its backward pass: d [rows, 2·act] = the gradients with respect to out of
// the gradients g [rows, act+1] of (action, logp).
DEFINE3(cpukern_squash_bwd,
        (int rows, int ad, const float *restrict eps, const float *restrict scale, float half,
         const float *restrict g, const float *restrict st, float *restrict d),
        (rows, ad, eps, scale, half, g, st, d), {
	const int n = rows * ad;
	for (int r = 0; r < rows; r++) {
		const float *gr = g + (size_t)r * (ad + 1);
		float *dr = d + (size_t)r * 2 * ad;
		const float gl = gr[ad];
		for (int j = 0; j < ad; j++) {
			int i = r * ad + j;
			float th = st[i], s = st[n + i], ty = st[2 * n + i], sg = st[3 * n + i];
			// d logp/dx = 2 - 4σ(-2x); d action/dx = scale·(1 - tanh²x).
			float dx = gr[j] * scale[j] * (1.0f - ty * ty) + gl * (2.0f - 4.0f * sg);
			dr[j] = dx;
			dr[ad + j] = (dx * s * eps[i] - gl) * half * (1.0f - th * th);
		}
	}
})

// Swish, y = x·σ(x) with σ(x) = 1/(1 + e^-x), exactly as package ops
// computed it in Go float32 before (actExp32: x = n·ln2 + r, e^r by a
// degree-7 Taylor polynomial, 2^n through the exponent bits; e^x = 0 for
// x <= -87.3 and float64 exp, rounded, for x >= 88 or NaN). The polynomial
// runs on every lane with the argument clamped into its range; lanes whose
// argument is >= 88 or NaN (σ of x <= -88) are redone after the vector loop.
static inline float sw_exp(float x) {
	const float magic = 12582912.0f; // 1.5·2^23: adding it rounds to an integer
	float c = sq_sel(x > -87.3f, x, 0.0f);
	c = sq_sel(c < 88.0f, c, 0.0f);
	float n = c * 1.44269504088896341f + magic;
	n -= magic;
	float r = c - n * 0.693359375f - n * -2.12194440e-4f;
	float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
	union { int32_t i; float f; } s = {.i = (int32_t)((uint32_t)((int32_t)n + 127) << 23)};
	return sq_sel(x <= -87.3f, 0.0f, p * s.f);
}

// sw_far reports an argument of sw_exp that the polynomial does not cover.
// (x >= 88 or NaN).
static inline int sw_far(float x) { return !(x < 88.0f) && !(x <= -87.3f); }

static inline float sw_sig_far(float v) { return 1.0f / (1.0f + (float)exp(-(double)v)); }

DEFINE3(cpukern_swish_fwd, (int n, const float *restrict x, float *restrict y), (n, x, y), {
	int far = 0;
	for (int i = 0; i < n; i++) {
		float v = x[i];
		far |= sw_far(-v);
		y[i] = v * (1.0f / (1.0f + sw_exp(-v)));
	}
	if (far)
		for (int i = 0; i < n; i++)
			if (sw_far(-x[i])) y[i] = x[i] * sw_sig_far(x[i]);
})

DEFINE3(cpukern_swish_bwd, (int n, const float *restrict x, const float *restrict g, float *restrict d, int acc),
        (n, x, g, d, acc), {
	int far = 0;
	if (acc) {
		for (int i = 0; i < n; i++) {
			float v = x[i];
			far |= sw_far(-v);
			float s = 1.0f / (1.0f + sw_exp(-v));
			float t = g[i] * s * (1.0f + v * (1.0f - s));
			d[i] = sq_sel(sw_far(-v), d[i], d[i] + t); // far lanes: added below
		}
	} else {
		for (int i = 0; i < n; i++) {
			float v = x[i];
			far |= sw_far(-v);
			float s = 1.0f / (1.0f + sw_exp(-v));
			d[i] = g[i] * s * (1.0f + v * (1.0f - s));
		}
	}
	if (far)
		for (int i = 0; i < n; i++)
			if (sw_far(-x[i])) {
				float v = x[i], s = sw_sig_far(v), t = g[i] * s * (1.0f + v * (1.0f - s));
				if (acc) d[i] += t; else d[i] = t;
			}
})

// MC dropout keep flags from a counter-based SplitMix64 generator (infer's
// dropoutFill): flag e is half e%2 (low 32 bits for even e) of the output
// for state base + (e/2+1)·golden, 0 when below thr, else 1; flag e goes to
// dst[(e/width)·stride + e%width]. Each block of width flags is one run of
// whole draws (two flags each) after a leading odd flag when the block
// starts in the middle of a draw. The AVX-512 run draws 8 states per vector
// (16 flags), the AVX2 run 4 (8 flags, the 64-bit products from 32-bit
// ones); all paths are integer work and agree bit for bit.
#define DF_GOLDEN 0x9e3779b97f4a7c15ULL
#define DF_M1 0xbf58476d1ce4e5b9ULL
#define DF_M2 0x94d049bb133111ebULL

static inline uint64_t df_mix(uint64_t z) {
	z = (z ^ (z >> 30)) * DF_M1;
	z = (z ^ (z >> 27)) * DF_M2;
	return z ^ (z >> 31);
}

static inline float df_flag(uint32_t r, uint32_t thr) { return r < thr ? 0.0f : 1.0f; }

// df_run_gen writes m flags into d from the draws of states s, s+golden, ...
// (two flags a draw, low half first).
static void df_run_gen(uint64_t s, uint32_t thr, float *restrict d, long m) {
	long i = 0;
	for (; i + 1 < m; i += 2, s += DF_GOLDEN) {
		uint64_t b = df_mix(s);
		d[i] = df_flag((uint32_t)b, thr);
		d[i + 1] = df_flag((uint32_t)(b >> 32), thr);
	}
	if (i < m) d[i] = df_flag((uint32_t)df_mix(s), thr);
}

#if defined(__x86_64__)
static T512 void df_run_512(uint64_t s, uint32_t thr, float *restrict d, long m) {
	const __m512i step = _mm512_set1_epi64((long long)(8 * DF_GOLDEN));
	const __m512i m1 = _mm512_set1_epi64((long long)DF_M1), m2 = _mm512_set1_epi64((long long)DF_M2);
	const __m512i vthr = _mm512_set1_epi32((int)thr);
	const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
	__m512i st = _mm512_add_epi64(_mm512_set1_epi64((long long)s),
	                              _mm512_setr_epi64(0, (long long)DF_GOLDEN, (long long)(2 * DF_GOLDEN),
	                                                (long long)(3 * DF_GOLDEN), (long long)(4 * DF_GOLDEN),
	                                                (long long)(5 * DF_GOLDEN), (long long)(6 * DF_GOLDEN),
	                                                (long long)(7 * DF_GOLDEN)));
	for (long i = 0; i < m; i += 16, st = _mm512_add_epi64(st, step)) {
		__m512i z = st;
		z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
		z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
		z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
		// The 16 32-bit lanes are flags i..i+15: lane 2k the low half of draw k.
		__mmask16 drop = _mm512_cmplt_epu32_mask(z, vthr);
		__m512 f = _mm512_mask_blend_ps(drop, one, zero);
		if (m - i >= 16)
			_mm512_storeu_ps(d + i, f);
		else
			_mm512_mask_storeu_ps(d + i, (__mmask16)((1u << (m - i)) - 1), f);
	}
}

// df_mul256 is the 64-bit product of each lane of x by c (c_lo, c_hi: c's
// 32-bit halves broadcast): x_lo·c_lo + ((x_hi·c_lo + x_lo·c_hi) << 32).
static inline T256 __m256i df_mul256(__m256i x, __m256i c_lo, __m256i c_hi) {
	__m256i lo = _mm256_mul_epu32(x, c_lo);
	__m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), c_lo), _mm256_mul_epu32(x, c_hi));
	return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

static T256 void df_run_256(uint64_t s, uint32_t thr, float *restrict d, long m) {
	const __m256i step = _mm256_set1_epi64x((long long)(4 * DF_GOLDEN));
	const __m256i m1l = _mm256_set1_epi64x((long long)(DF_M1 & 0xffffffffu)), m1h = _mm256_set1_epi64x((long long)(DF_M1 >> 32));
	const __m256i m2l = _mm256_set1_epi64x((long long)(DF_M2 & 0xffffffffu)), m2h = _mm256_set1_epi64x((long long)(DF_M2 >> 32));
	// r < thr unsigned is (thr ^ 2^31) > (r ^ 2^31) signed.
	const __m256i sign = _mm256_set1_epi32((int)0x80000000u), vthr = _mm256_set1_epi32((int)(thr ^ 0x80000000u));
	const __m256i one = _mm256_castps_si256(_mm256_set1_ps(1.0f));
	__m256i st = _mm256_add_epi64(_mm256_set1_epi64x((long long)s),
	                              _mm256_setr_epi64x(0, (long long)DF_GOLDEN, (long long)(2 * DF_GOLDEN),
	                                                 (long long)(3 * DF_GOLDEN)));
	long i = 0;
	for (; i + 8 <= m; i += 8, st = _mm256_add_epi64(st, step)) {
		__m256i z = st;
		z = df_mul256(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), m1l, m1h);
		z = df_mul256(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), m2l, m2h);
		z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
		__m256i drop = _mm256_cmpgt_epi32(vthr, _mm256_xor_si256(z, sign));
		_mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_andnot_si256(drop, one)));
	}
	df_run_gen(s + (uint64_t)(i / 2) * DF_GOLDEN, thr, d + i, m - i);
}
#else
#define df_run_512 df_run_gen
#define df_run_256 df_run_gen
#endif

// DF_FILL walks the blocks: the odd flag that starts a block in the middle
// of a draw, then the block's whole draws by the path's run.
#define DF_FILL(T, W)                                                                               \
	static T void cpukern_dropout_fill_##W(uint64_t base, uint32_t thr, float *dst, long n, long width, \
	                                       long stride) {                                             \
		for (long e = 0, off = 0; e < n; e += width, off += stride) {                                 \
			float *d = dst + off;                                                                     \
			long m = n - e < width ? n - e : width, i = 0;                                            \
			if (e & 1) {                                                                              \
				d[0] = df_flag((uint32_t)(df_mix(base + (uint64_t)(e / 2 + 1) * DF_GOLDEN) >> 32), thr); \
				i = 1;                                                                                \
			}                                                                                         \
			df_run_##W(base + (uint64_t)((e + i) / 2 + 1) * DF_GOLDEN, thr, d + i, m - i);           \
		}                                                                                             \
	}
DF_FILL(T512, 512)
DF_FILL(T256, 256)
DF_FILL(, gen)

void cpukern_dropout_fill(uint64_t base, uint32_t thr, float *dst, long n, long width, long stride) {
	switch (cpukern_isa) {
	case CPUKERN_AVX512: cpukern_dropout_fill_512(base, thr, dst, n, width, stride); return;
	case CPUKERN_AVX2: cpukern_dropout_fill_256(base, thr, dst, n, width, stride); return;
	default: cpukern_dropout_fill_gen(base, thr, dst, n, width, stride); return;
	}
}
