// Matrix products of package cpukern (see cpukern.h), single-threaded.
//
// Design, BLIS-like with vectors along n (rows of C):
//  - Blocked path: k in blocks of at most KC, n in blocks of at most NCF/KC
//    (the packed op(B) block stays in L2), m in blocks of MC rows (packed op(A)).
//    For each MR-row micro-panel of op(A) (L1) the NR-column micro-panels of
//    op(B) are swept by a register-blocked micro-kernel that broadcasts op(A)
//    values and FMAs them into MR x NR accumulators: AVX-512 12x32, AVX2 6x16,
//    generic 4x8 (the compiler's vectors). Packing (per k, MR or NR
//    consecutive values), panel by panel, handles the transposes, with 4x4
//    SSE transposes where the source is strided (AVX-512: four at a time in
//    a register's 128-bit lanes, and 16-float masked copies). An operand already contiguous per k (op(A)
//    when transA, op(B) when !transB) that is reused little is read in place.
//  - One micro-kernel instantiation per tile height (AVX-512 up to 14, so
//    that m = 13 or 14 is one tile); edge columns use masked loads and
//    stores; tiles of few accumulators split k over several accumulator sets
//    to hide the FMA latency; for m <= 2 the AVX-512 tile is 128 wide.
//  - The epilogue (alpha, beta on the first k block, bias and relu on the
//    last) is applied as the tile is stored; beta 0 never reads C.
//  - Small n (or tiny m with transB) with op(A) rows contiguous: dot products
//    vectorised over k, op(B)'s columns packed as rows when needed.
//  - Small n with transA: Cᵀ = op(B)ᵀ·op(A)ᵀ (both read in place) goes to a
//    buffer, and the epilogue transposes it into C.
//  - One row of C over op(B) in place (AVX-512): op(B) streamed row after row
//    into an L1 accumulator row (column sums, Cᵀ of n = 1).
// No shared mutable state, so calls may run concurrently: packed blocks live
// in a per-thread buffer (freed at thread exit), small-path buffers on the
// stack or malloc'ed per call.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpukern.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { KC = 256, NCF = 160 * 1024, MC = 192, MRMAX = 14, ROWMAX = 4096 };

// epi is the epilogue of one k block of a tile.
struct epi {
	float alpha, beta; // beta is 1 after the first k block
	const float *bias; // at the tile's first column; NULL before the last block
	int relu;
	// mask, if not NULL (last block only), keeps C[i][j] where the mask's
	// bits, read as an int32, are > 0 (mask > 0, positive NaNs kept: the
	// ReLU backward pass of elementwise.c) and stores +0 elsewhere, after
	// bias and relu: mask has C's layout, the entry of the element at c
	// being mask[c - cbase].
	const float *mask, *cbase;
};

// A tile function computes the mr x nr tile C = epi(op(A)·op(B)) over kc
// values of k: op(A)[i][p] = a[p*sa + i], op(B)[p][j] = b[p*sb + j].
typedef void tile_fn(int kc, const float *a, long sa, const float *b, long sb,
                     float *c, long ldc, int mr, int nr, const struct epi *e);
// A row function computes the single row C[0][j] = epi(Σp a[p*sa]·b[p*ldb + j]), n <= ROWMAX.
typedef void row_fn(int n, int k, const float *a, long sa, const float *b, long ldb, float *c,
                    const struct epi *e);
// A dot function computes C[i][j] = epi(Σp a[i*lda + p]·bt[j*ldbt + p]).
typedef void dot_fn(int m, int n, int k, const float *a, long lda, const float *bt,
                    long ldbt, float *c, long ldc, const struct epi *e);

// A packt function copies the rows x kc matrix src (row stride ld)
// transposed to dst[p*w + r]; a copyp function copies kc rows of n <= w
// floats (source row stride ld) to dst[p*w + j], zeros in columns n..w-1.
typedef void packt_fn(float *restrict dst, int w, const float *src, long ld, int rows, int kc);
typedef void copyp_fn(float *restrict dst, int w, const float *src, long ld, int n, int kc);

struct path {
	int mr, nr;
	int mrx;     // tallest tile: a last panel up to mrx rows is not split
	int nrw;     // tile width for m <= 2 with op(B) in place (long rows of B)
	int inplace; // the tile function takes unpadded operands with any stride
	tile_fn *tile;
	dot_fn *dot; // NULL: no dot-product path
	int dotn;    // largest n for the dot-product path
	row_fn *row; // NULL: no single-row path
	packt_fn *packt; // transposing panel pack (pack_t or its ISA's)
	copyp_fn *copyp; // copying panel pack (copy_panel or its ISA's)
};

static inline int imin(int a, int b) { return a < b ? a : b; }

static inline int keep(const float *m) {
	int32_t b;
	memcpy(&b, m, sizeof b);
	return b > 0;
}

static inline float epi1(float s, const float *c, const struct epi *e, int j) {
	float v = e->alpha * s;
	if (e->beta != 0) v += e->beta * *c;
	if (e->bias) v += e->bias[j];
	if (e->relu && !(v > 0)) v = 0;
	if (e->mask && !keep(e->mask + (c - e->cbase))) v = 0;
	return v;
}

static void *xmalloc(size_t floats) {
	size_t bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
	void *p = aligned_alloc(64, bytes ? bytes : 64);
	if (!p) abort(); // as Go does when out of memory
	return p;
}

// The packed operands are kept per thread (a fresh large malloc per call
// costs page faults), and freed when the thread exits.
static pthread_key_t pack_key;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;
static _Thread_local float *pack_buf;
static _Thread_local size_t pack_len;

static void pack_key_init(void) { pthread_key_create(&pack_key, free); }

static float *pack_buffer(size_t floats) {
	if (floats > pack_len) {
		pthread_once(&pack_once, pack_key_init);
		free(pack_buf);
		pack_buf = xmalloc(floats);
		pack_len = floats;
		pthread_setspecific(pack_key, pack_buf);
	}
	return pack_buf;
}

// copy moves n floats; on x86-64 in 16-byte steps that the compiler may not
// turn into a memcpy call (the empty asm), slow for the short runs of packing.
static inline void copy(float *restrict d, const float *restrict s, int n) {
	int j = 0;
#if defined(__x86_64__)
	for (; j + 4 <= n; j += 4) {
		__m128 x = _mm_loadu_ps(s + j);
		__asm__("" : "+x"(x));
		_mm_storeu_ps(d + j, x);
	}
#else
	for (; j + 4 <= n; j += 4) memcpy(d + j, s + j, 16);
#endif
	if (j < n) d[j] = s[j];
	if (j + 1 < n) d[j + 1] = s[j + 1];
	if (j + 2 < n) d[j + 2] = s[j + 2];
}

// pack_t copies the rows x kc matrix src (row stride ld) transposed to
// dst[p*w + r]: 4x4 blocks through SSE registers where available.
static void pack_t(float *restrict dst, int w, const float *src, long ld, int rows, int kc) {
	int r = 0;
#if defined(__x86_64__)
	for (; r + 4 <= rows; r += 4) {
		const float *s0 = src + r * ld, *s1 = s0 + ld, *s2 = s1 + ld, *s3 = s2 + ld;
		int p = 0;
		for (; p + 4 <= kc; p += 4) {
			__m128 x0 = _mm_loadu_ps(s0 + p), x1 = _mm_loadu_ps(s1 + p);
			__m128 x2 = _mm_loadu_ps(s2 + p), x3 = _mm_loadu_ps(s3 + p);
			_MM_TRANSPOSE4_PS(x0, x1, x2, x3);
			float *d = dst + (long)p * w + r;
			_mm_storeu_ps(d, x0);
			_mm_storeu_ps(d + w, x1);
			_mm_storeu_ps(d + 2 * w, x2);
			_mm_storeu_ps(d + 3 * w, x3);
		}
		for (; p < kc; p++) {
			float *d = dst + (long)p * w + r;
			d[0] = s0[p], d[1] = s1[p], d[2] = s2[p], d[3] = s3[p];
		}
	}
#endif
	for (; r < rows; r++)
		for (int p = 0; p < kc; p++) dst[(long)p * w + r] = src[r * ld + p];
}

// copy_panel copies kc rows of n <= w floats (row stride ld) to dst[p*w + j],
// zeros in columns n..w-1: the destination is written in order.
static void copy_panel(float *restrict dst, int w, const float *src, long ld, int n, int kc) {
	for (int p = 0; p < kc; p++, dst += w, src += ld) {
		copy(dst, src, n);
		for (int j = n; j < w; j++) dst[j] = 0;
	}
}

// pack_a copies the rows [i0, i0+mc) of op(A)[:, p0:p0+kc] as panels of the
// heights panel() gives, each [p*w + i] with w = mr, or MR zero-padded if pad;
// panel ir starts at dst + (ir-i0)*kc.
static void pack_a(const struct path *s, float *restrict dst, const float *a, int lda, int tA, int m,
                   int i0, int mc, int p0, int kc, int MR, int mrx, int pad) {
	for (int ir = i0, mr; ir < i0 + mc; ir += mr) {
		mr = m - ir <= mrx ? m - ir : MR;
		int w = pad ? MR : mr;
		float *d = dst + (long)(ir - i0) * kc;
		if (tA) { // rows of op(A)ᵀ: panel by panel, the destination in order
			s->copyp(d, w, a + (long)p0 * lda + ir, lda, mr, kc);
			continue;
		}
		s->packt(d, w, a + (long)ir * lda + p0, lda, mr, kc);
		for (int i = mr; i < w; i++)
			for (int p = 0; p < kc; p++) d[(long)p * w + i] = 0;
	}
}

// pack_b copies op(B)[p0:p0+kc, j0:j0+nc] into panels of w columns,
// panel q at dst + q*kc*w holding [p*w + j], zero-padded to w columns.
static void pack_b(const struct path *s, float *restrict dst, int w, const float *b, int ldb, int tB,
                   int p0, int kc, int j0, int nc) {
	for (int jr = 0; jr < nc; jr += w) {
		int nr = imin(w, nc - jr);
		float *d = dst + (long)jr * kc;
		if (!tB) {
			s->copyp(d, w, b + (long)p0 * ldb + j0 + jr, ldb, nr, kc);
			continue;
		}
		s->packt(d, w, b + (long)(j0 + jr) * ldb + p0, ldb, nr, kc);
		if (nr < w)
			for (int p = 0; p < kc; p++)
				for (int j = nr; j < w; j++) d[(long)p * w + j] = 0;
	}
}

static void blocked(const struct path *s, int tA, int tB, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc, const float *bias, int relu, const float *mask) {
	const int MR = s->mr, NR = s->nr;
	// In place only if contiguous per k and little reused: packed panels stay
	// in L1/L2 where long strides would conflict in the caches.
	const int packA = !tA || !s->inplace || n > 2 * NR, packB = tB || !s->inplace || m > 2 * MR;
	// Even blocks: KC at most, the op(B) block NCF floats at most (640 KB of
	// L2: fewer n blocks mean fewer repacks of op(A)); m in blocks of MC rows
	// (whole panels).
	int kb = (k + KC - 1) / KC, kcb = (k + kb - 1) / kb;
	int nc_max = imin(n, NCF / kcb / NR * NR);
	int nb = (n + nc_max - 1) / nc_max, ncb = ((n + nb - 1) / nb + NR - 1) / NR * NR;
	size_t blen = packB ? ((size_t)kcb * ncb + 15) & ~(size_t)15 : 0;
	float *bp = packA || packB ? pack_buffer(blen + (packA ? (size_t)(MC + MRMAX) * kcb : 0)) : NULL;
	float *ap = bp ? bp + blen : NULL;
	const int NRT = !packB && m <= 2 ? s->nrw : NR; // tile width
	for (int jc = 0; jc < n; jc += ncb) {
		int nc = imin(ncb, n - jc);
		for (int pc = 0; pc < k; pc += kcb) {
			int kc = imin(kcb, k - pc), last = pc + kc == k;
			if (packB) pack_b(s, bp, NR, b, ldb, tB, pc, kc, jc, nc);
			for (int ic = 0, mc; ic < m; ic += mc) {
				mc = m - ic <= MC + s->mrx - MR ? m - ic : MC;
				if (packA) pack_a(s, ap, a, lda, tA, m, ic, mc, pc, kc, MR, s->mrx, !s->inplace);
				for (int ir = ic, mr; ir < ic + mc; ir += mr) {
					mr = m - ir <= s->mrx ? m - ir : MR;
					const float *pa = packA ? ap + (long)(ir - ic) * kc : a + (long)pc * lda + ir;
					long sa = !packA ? lda : s->inplace ? mr : MR;
					for (int jr = 0; jr < nc; jr += NRT) {
						struct epi e = {alpha, pc == 0 ? beta : 1.0f,
						                last && bias ? bias + jc + jr : NULL, last && relu,
						                last ? mask : NULL, c};
						const float *pb = packB ? bp + (long)jr * kc : b + (long)pc * ldb + jc + jr;
						s->tile(kc, pa, sa, pb, packB ? NR : ldb, c + (long)ir * ldc + jc + jr,
						        ldc, mr, imin(NRT, nc - jr), &e);
					}
				}
			}
		}
	}
}

// Generic path: the compiler vectorises the 4x8 tile with baseline SIMD.
enum { GMR = 4, GNR = 8 };

static void tile_generic(int kc, const float *a, long sa, const float *b, long sb, float *c,
                         long ldc, int mr, int nr, const struct epi *e) {
	float acc[GMR][GNR] = {{0}};
	for (int p = 0; p < kc; p++, a += sa, b += sb)
		for (int i = 0; i < GMR; i++)
			for (int j = 0; j < GNR; j++) acc[i][j] += a[i] * b[j];
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++) c[i * ldc + j] = epi1(acc[i][j], c + i * ldc + j, e, j);
}

static const struct path path_generic = {GMR, GNR, GMR, GNR, 0, tile_generic, NULL, 0, NULL, pack_t, copy_panel};

#if defined(__x86_64__)
#define INL inline __attribute__((always_inline))
#define T512 __attribute__((target("avx512f,avx512vl,avx512dq,fma")))
#define T256 __attribute__((target("avx2,fma")))

// ---- AVX-512: 12x32 tiles (up to 14 rows; 1 or 2 rows up to 128 wide), 4x4 dot blocks.

static inline __mmask16 mask16(int r) {
	return r >= 16 ? 0xFFFF : r <= 0 ? 0 : (__mmask16)((1u << r) - 1);
}

T512 static INL void k512(const int MR, const int NV, int kc, const float *a, long sa,
                          const float *b, long sb, float *c, long ldc, int nr,
                          const struct epi *e) {
	const int KU = MR * NV >= 8 ? 1 : MR * NV >= 4 ? 2 : 4;
	__m512 acc[4][MRMAX][8];
	__mmask16 mk[8];
#pragma GCC unroll 8
	for (int v = 0; v < NV; v++) mk[v] = mask16(nr - 16 * v);
#pragma GCC unroll 4
	for (int u = 0; u < KU; u++)
#pragma GCC unroll 16
		for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++) acc[u][i][v] = _mm512_setzero_ps();
	int p = 0;
	for (; p + KU <= kc; p += KU, a += KU * sa, b += KU * sb) {
#pragma GCC unroll 4
		for (int u = 0; u < KU; u++) {
			__m512 bv[8];
			if (NV > 1) // op(B) a few rows ahead: helps as tiles switch panels
#pragma GCC unroll 8
				for (int v = 0; v < NV; v++)
					_mm_prefetch((const char *)(b + (u + (NV == 8 ? 4 : 8)) * sb + 16 * v), _MM_HINT_T0);
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++) bv[v] = _mm512_maskz_loadu_ps(mk[v], b + u * sb + 16 * v);
#pragma GCC unroll 16
			for (int i = 0; i < MR; i++) {
				__m512 av = _mm512_set1_ps(a[u * sa + i]);
#pragma GCC unroll 8
				for (int v = 0; v < NV; v++) acc[u][i][v] = _mm512_fmadd_ps(av, bv[v], acc[u][i][v]);
			}
		}
	}
	for (; p < kc; p++, a += sa, b += sb) {
		__m512 bv[8];
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++) bv[v] = _mm512_maskz_loadu_ps(mk[v], b + 16 * v);
#pragma GCC unroll 16
		for (int i = 0; i < MR; i++) {
			__m512 av = _mm512_set1_ps(a[i]);
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++) acc[0][i][v] = _mm512_fmadd_ps(av, bv[v], acc[0][i][v]);
		}
	}
#pragma GCC unroll 4
	for (int u = 1; u < KU; u++)
#pragma GCC unroll 16
		for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++) acc[0][i][v] = _mm512_add_ps(acc[0][i][v], acc[u][i][v]);
	// One branch per step, not per register.
#define EACH(stmt)                      \
	_Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) \
		_Pragma("GCC unroll 8") for (int v = 0; v < NV; v++) stmt
	if (e->alpha != 1) {
		const __m512 alpha = _mm512_set1_ps(e->alpha);
		EACH(acc[0][i][v] = _mm512_mul_ps(alpha, acc[0][i][v]));
	}
	if (e->beta != 0) {
		const __m512 beta = _mm512_set1_ps(e->beta);
		EACH(acc[0][i][v] = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(mk[v], c + i * ldc + 16 * v), acc[0][i][v]));
	}
	if (e->bias) {
		__m512 bias[8];
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++) bias[v] = _mm512_maskz_loadu_ps(mk[v], e->bias + 16 * v);
		EACH(acc[0][i][v] = _mm512_add_ps(acc[0][i][v], bias[v]));
	}
	if (e->relu) // max(x, 0) gives 0 for NaN, as the scalar epilogue
		EACH(acc[0][i][v] = _mm512_max_ps(acc[0][i][v], _mm512_setzero_ps()));
	if (e->mask) {
		const float *m = e->mask + (c - e->cbase);
		EACH(acc[0][i][v] = _mm512_maskz_mov_ps(
		         _mm512_cmpgt_epi32_mask(_mm512_castps_si512(_mm512_maskz_loadu_ps(mk[v], m + i * ldc + 16 * v)),
		                                 _mm512_setzero_si512()),
		         acc[0][i][v]));
	}
	EACH(_mm512_mask_storeu_ps(c + i * ldc + 16 * v, mk[v], acc[0][i][v]));
}

T512 static void tile512(int kc, const float *a, long sa, const float *b, long sb, float *c,
                         long ldc, int mr, int nr, const struct epi *e) {
#define K512(R)                                                         \
	case R:                                                             \
		if (nr > 16) k512(R, 2, kc, a, sa, b, sb, c, ldc, nr, e);       \
		else k512(R, 1, kc, a, sa, b, sb, c, ldc, nr, e);               \
		break;
#define K512W(R)                                                  \
	case R:                                                       \
		if (nr > 32) k512(R, 8, kc, a, sa, b, sb, c, ldc, nr, e); \
		else if (nr > 16) k512(R, 2, kc, a, sa, b, sb, c, ldc, nr, e); \
		else k512(R, 1, kc, a, sa, b, sb, c, ldc, nr, e);          \
		break;
	switch (mr) {
		K512W(1) K512W(2) K512(3) K512(4) K512(5) K512(6) K512(7)
		K512(8) K512(9) K512(10) K512(11) K512(12) K512(13) K512(14)
	}
#undef K512
#undef K512W
}

// d512 is one RB x JB block of dot products; few accumulators (JB <= 2) are
// doubled over alternate k vectors to hide the FMA latency.
T512 static INL void d512(const int RB, const int JB, int k, const float *a, long lda,
                          const float *bt, long ldbt, float *c, long ldc, const struct epi *e) {
	const int KS = JB <= 2 ? 2 : 1;
	__m512 acc[2][4][4];
#pragma GCC unroll 2
	for (int u = 0; u < KS; u++)
#pragma GCC unroll 4
		for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
			for (int j = 0; j < JB; j++) acc[u][i][j] = _mm512_setzero_ps();
	for (int p = 0; p < k; p += 16 * KS) {
#pragma GCC unroll 2
		for (int u = 0; u < KS; u++) {
			__mmask16 mk = mask16(k - p - 16 * u);
			__m512 bv[4];
#pragma GCC unroll 4
			for (int j = 0; j < JB; j++) bv[j] = _mm512_maskz_loadu_ps(mk, bt + j * ldbt + p + 16 * u);
			if (JB <= 2) // few columns: bound by reading A, fetch the next rows
#pragma GCC unroll 4
				for (int i = 0; i < RB; i++)
					_mm_prefetch((const char *)(a + (i + RB) * lda + p + 16 * u), _MM_HINT_T0);
#pragma GCC unroll 4
			for (int i = 0; i < RB; i++) {
				__m512 av = _mm512_maskz_loadu_ps(mk, a + i * lda + p + 16 * u);
#pragma GCC unroll 4
				for (int j = 0; j < JB; j++) acc[u][i][j] = _mm512_fmadd_ps(av, bv[j], acc[u][i][j]);
			}
		}
	}
	if (JB == 4) { // four sums of a row at once, and a 4-wide epilogue
#pragma GCC unroll 4
		for (int i = 0; i < RB; i++) {
			__m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(acc[0][i][0], acc[0][i][1]),
			                           _mm512_unpackhi_ps(acc[0][i][0], acc[0][i][1]));
			__m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(acc[0][i][2], acc[0][i][3]),
			                           _mm512_unpackhi_ps(acc[0][i][2], acc[0][i][3]));
			__m512 s4 = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
			                          _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
			__m256 h = _mm256_add_ps(_mm512_castps512_ps256(s4), _mm512_extractf32x8_ps(s4, 1));
			__m128 x = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
			x = _mm_mul_ps(_mm_set1_ps(e->alpha), x);
			if (e->beta != 0) x = _mm_fmadd_ps(_mm_set1_ps(e->beta), _mm_loadu_ps(c + i * ldc), x);
			if (e->bias) x = _mm_add_ps(x, _mm_loadu_ps(e->bias));
			if (e->relu) x = _mm_max_ps(x, _mm_setzero_ps());
			if (e->mask)
				x = _mm_and_ps(x, _mm_castsi128_ps(_mm_cmpgt_epi32(
				                      _mm_loadu_si128((const __m128i *)(e->mask + (c + i * ldc - e->cbase))),
				                      _mm_setzero_si128())));
			_mm_storeu_ps(c + i * ldc, x);
		}
		return;
	}
#pragma GCC unroll 4
	for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
		for (int j = 0; j < JB; j++) {
			__m512 x = KS == 2 ? _mm512_add_ps(acc[0][i][j], acc[KS - 1][i][j]) : acc[0][i][j];
			c[i * ldc + j] = epi1(_mm512_reduce_add_ps(x), c + i * ldc + j, e, j);
		}
}

T512 static void dot512(int m, int n, int k, const float *a, long lda, const float *bt,
                        long ldbt, float *c, long ldc, const struct epi *e) {
	for (int i = 0; i < m; i += 4)
		for (int j = 0; j < n; j += 4) {
			struct epi ej = *e;
			if (ej.bias) ej.bias += j;
			const float *ai = a + i * lda, *bj = bt + j * ldbt;
			float *cij = c + i * ldc + j;
#define D512(R, J) \
	case (R - 1) * 4 + J - 1: d512(R, J, k, ai, lda, bj, ldbt, cij, ldc, &ej); break;
			switch ((imin(4, m - i) - 1) * 4 + imin(4, n - j) - 1) {
				D512(1, 1) D512(1, 2) D512(1, 3) D512(1, 4) D512(2, 1) D512(2, 2) D512(2, 3) D512(2, 4)
				D512(3, 1) D512(3, 2) D512(3, 3) D512(3, 4) D512(4, 1) D512(4, 2) D512(4, 3) D512(4, 4)
			}
#undef D512
		}
}

// row512 streams op(B) row after row (sequential reads) into t, which stays
// in L1, four rows per pass over t.
T512 static void row512(int n, int k, const float *a, long sa, const float *b, long ldb, float *c,
                        const struct epi *e) {
	float t[ROWMAX] __attribute__((aligned(64)));
	for (int j = 0; j < n; j += 16) _mm512_store_ps(t + j, _mm512_setzero_ps());
	int p = 0;
	for (; p + 4 <= k; p += 4) {
		const float *b0 = b + p * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
		__m512 a0 = _mm512_set1_ps(a[p * sa]), a1 = _mm512_set1_ps(a[(p + 1) * sa]);
		__m512 a2 = _mm512_set1_ps(a[(p + 2) * sa]), a3 = _mm512_set1_ps(a[(p + 3) * sa]);
		for (int j = 0; j < n; j += 16) {
			__mmask16 mk = mask16(n - j);
			_mm_prefetch((const char *)(b0 + 4 * ldb + j), _MM_HINT_T0); // the next four rows
			_mm_prefetch((const char *)(b1 + 4 * ldb + j), _MM_HINT_T0);
			_mm_prefetch((const char *)(b2 + 4 * ldb + j), _MM_HINT_T0);
			_mm_prefetch((const char *)(b3 + 4 * ldb + j), _MM_HINT_T0);
			__m512 x = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(mk, b0 + j), _mm512_load_ps(t + j));
			x = _mm512_fmadd_ps(a1, _mm512_maskz_loadu_ps(mk, b1 + j), x);
			x = _mm512_fmadd_ps(a2, _mm512_maskz_loadu_ps(mk, b2 + j), x);
			x = _mm512_fmadd_ps(a3, _mm512_maskz_loadu_ps(mk, b3 + j), x);
			_mm512_store_ps(t + j, x);
		}
	}
	for (; p < k; p++) {
		const float *b0 = b + p * ldb;
		__m512 a0 = _mm512_set1_ps(a[p * sa]);
		for (int j = 0; j < n; j += 16)
			_mm512_store_ps(t + j, _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(mask16(n - j), b0 + j),
			                                       _mm512_load_ps(t + j)));
	}
	for (int j = 0; j < n; j += 16) {
		__mmask16 mk = mask16(n - j);
		__m512 x = _mm512_mul_ps(_mm512_set1_ps(e->alpha), _mm512_load_ps(t + j));
		if (e->beta != 0) x = _mm512_fmadd_ps(_mm512_set1_ps(e->beta), _mm512_maskz_loadu_ps(mk, c + j), x);
		if (e->bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, e->bias + j));
		if (e->relu) x = _mm512_max_ps(x, _mm512_setzero_ps());
		if (e->mask)
			x = _mm512_maskz_mov_ps(
			    _mm512_cmpgt_epi32_mask(_mm512_castps_si512(_mm512_maskz_loadu_ps(mk, e->mask + (c + j - e->cbase))),
			                            _mm512_setzero_si512()),
			    x);
		_mm512_mask_storeu_ps(c + j, mk, x);
	}
}

// Packing: copies with 16-float (masked) loads and stores, and 4x4 transposes
// in each 128-bit lane, four at a time (p outer: the destination in order).
T512 static void copy_panel512(float *restrict dst, int w, const float *src, long ld, int n, int kc) {
	if (n > 32) {
		for (int p = 0; p < kc; p++, dst += w, src += ld) {
			int j = 0;
			for (; j + 16 <= n; j += 16) _mm512_storeu_ps(dst + j, _mm512_loadu_ps(src + j));
			for (; j < w; j += 16)
				_mm512_mask_storeu_ps(dst + j, mask16(w - j), _mm512_maskz_loadu_ps(mask16(n - j), src + j));
		}
		return;
	}
	const __mmask16 n0 = mask16(n), n1 = mask16(n - 16), w0 = mask16(w), w1 = mask16(w - 16);
	if (w <= 16)
		for (int p = 0; p < kc; p++, dst += w, src += ld) _mm512_mask_storeu_ps(dst, w0, _mm512_maskz_loadu_ps(n0, src));
	else
		for (int p = 0; p < kc; p++, dst += w, src += ld) {
			_mm512_mask_storeu_ps(dst, w0, _mm512_maskz_loadu_ps(n0, src));
			_mm512_mask_storeu_ps(dst + 16, w1, _mm512_maskz_loadu_ps(n1, src + 16));
		}
}

T512 static void pack_t512(float *restrict dst, int w, const float *src, long ld, int rows, int kc) {
	if (w < 16) { // op(A)'s 12-14 row panels: the 4x4 SSE order was faster (11.8 vs 12.7 µs at 256²)
		pack_t(dst, w, src, ld, rows, kc);
		return;
	}
	const int r4 = rows & ~3;
	int p = 0;
	for (; p + 16 <= kc; p += 16) {
		float *d = dst + (long)p * w;
		for (int r = 0; r < r4; r += 4) {
			const float *s0 = src + r * ld + p, *s1 = s0 + ld, *s2 = s1 + ld, *s3 = s2 + ld;
			__m512 x0 = _mm512_loadu_ps(s0), x1 = _mm512_loadu_ps(s1);
			__m512 x2 = _mm512_loadu_ps(s2), x3 = _mm512_loadu_ps(s3);
			__m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(x0, x1)), t1 = _mm512_castps_pd(_mm512_unpackhi_ps(x0, x1));
			__m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(x2, x3)), t3 = _mm512_castps_pd(_mm512_unpackhi_ps(x2, x3));
			// y[c], lane l: rows r..r+3 at p + 4l + c
			__m512 y[4] = {_mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2)), _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2)),
			               _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3)), _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3))};
			float *dr = d + r;
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++) {
				_mm_storeu_ps(dr + (long)c * w, _mm512_castps512_ps128(y[c]));
				_mm_storeu_ps(dr + (long)(4 + c) * w, _mm512_extractf32x4_ps(y[c], 1));
				_mm_storeu_ps(dr + (long)(8 + c) * w, _mm512_extractf32x4_ps(y[c], 2));
				_mm_storeu_ps(dr + (long)(12 + c) * w, _mm512_extractf32x4_ps(y[c], 3));
			}
		}
		for (int r = r4; r < rows; r++)
			for (int q = 0; q < 16; q++) d[(long)q * w + r] = src[r * ld + p + q];
	}
	if (p < kc) pack_t(dst + (long)p * w, w, src + p, ld, rows, kc - p);
}

static const struct path path_avx512 = {12, 32, 14, 128, 1, tile512, dot512, 16, row512, pack_t512, copy_panel512};

// ---- AVX2: 6x16 tiles, 3x3 dot blocks.

T256 static INL __m256i mask8(int r) {
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

T256 static INL __m256 ld8(int full, __m256i mk, const float *p) {
	return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mk);
}

// k256 is k512 on 8 lanes; FULL (tile of full width) avoids the slower masked
// loads and stores of AVX2.
T256 static INL void k256(const int MR, const int NV, const int FULL, int kc, const float *a,
                          long sa, const float *b, long sb, float *c, long ldc, int nr,
                          const struct epi *e) {
	const int KU = MR * NV >= 8 ? 1 : MR * NV >= 4 ? 2 : 4;
	__m256 acc[4][6][2];
	__m256i mk[2];
#pragma GCC unroll 2
	for (int v = 0; v < NV; v++) mk[v] = mask8(nr - 8 * v);
#pragma GCC unroll 4
	for (int u = 0; u < KU; u++)
#pragma GCC unroll 6
		for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
			for (int v = 0; v < NV; v++) acc[u][i][v] = _mm256_setzero_ps();
	int p = 0;
	for (; p + KU <= kc; p += KU, a += KU * sa, b += KU * sb) {
#pragma GCC unroll 4
		for (int u = 0; u < KU; u++) {
			__m256 bv[2];
#pragma GCC unroll 2
			for (int v = 0; v < NV; v++) bv[v] = ld8(FULL, mk[v], b + u * sb + 8 * v);
#pragma GCC unroll 6
			for (int i = 0; i < MR; i++) {
				__m256 av = _mm256_broadcast_ss(a + u * sa + i);
#pragma GCC unroll 2
				for (int v = 0; v < NV; v++) acc[u][i][v] = _mm256_fmadd_ps(av, bv[v], acc[u][i][v]);
			}
		}
	}
	for (; p < kc; p++, a += sa, b += sb) {
		__m256 bv[2];
#pragma GCC unroll 2
		for (int v = 0; v < NV; v++) bv[v] = ld8(FULL, mk[v], b + 8 * v);
#pragma GCC unroll 6
		for (int i = 0; i < MR; i++) {
			__m256 av = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 2
			for (int v = 0; v < NV; v++) acc[0][i][v] = _mm256_fmadd_ps(av, bv[v], acc[0][i][v]);
		}
	}
#pragma GCC unroll 4
	for (int u = 1; u < KU; u++)
#pragma GCC unroll 6
		for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
			for (int v = 0; v < NV; v++) acc[0][i][v] = _mm256_add_ps(acc[0][i][v], acc[u][i][v]);
	if (e->alpha != 1) {
		const __m256 alpha = _mm256_set1_ps(e->alpha);
		EACH(acc[0][i][v] = _mm256_mul_ps(alpha, acc[0][i][v]));
	}
	if (e->beta != 0) {
		const __m256 beta = _mm256_set1_ps(e->beta);
		EACH(acc[0][i][v] = _mm256_fmadd_ps(beta, ld8(FULL, mk[v], c + i * ldc + 8 * v), acc[0][i][v]));
	}
	if (e->bias) {
		__m256 bias[2];
#pragma GCC unroll 2
		for (int v = 0; v < NV; v++) bias[v] = ld8(FULL, mk[v], e->bias + 8 * v);
		EACH(acc[0][i][v] = _mm256_add_ps(acc[0][i][v], bias[v]));
	}
	if (e->relu) EACH(acc[0][i][v] = _mm256_max_ps(acc[0][i][v], _mm256_setzero_ps()));
	if (e->mask) {
		const float *m = e->mask + (c - e->cbase);
		EACH(acc[0][i][v] = _mm256_and_ps(acc[0][i][v],
		                                  _mm256_castsi256_ps(_mm256_cmpgt_epi32(
		                                      _mm256_castps_si256(ld8(FULL, mk[v], m + i * ldc + 8 * v)),
		                                      _mm256_setzero_si256()))));
	}
	if (FULL) EACH(_mm256_storeu_ps(c + i * ldc + 8 * v, acc[0][i][v]));
	else EACH(_mm256_maskstore_ps(c + i * ldc + 8 * v, mk[v], acc[0][i][v]));
}

T256 static void tile256(int kc, const float *a, long sa, const float *b, long sb, float *c,
                         long ldc, int mr, int nr, const struct epi *e) {
#define K256(R)                                                                   \
	case R:                                                                       \
		if (nr == 16) k256(R, 2, 1, kc, a, sa, b, sb, c, ldc, nr, e);             \
		else if (nr > 8) k256(R, 2, 0, kc, a, sa, b, sb, c, ldc, nr, e);          \
		else if (nr == 8) k256(R, 1, 1, kc, a, sa, b, sb, c, ldc, nr, e);         \
		else k256(R, 1, 0, kc, a, sa, b, sb, c, ldc, nr, e);                      \
		break;
	switch (mr) { K256(1) K256(2) K256(3) K256(4) K256(5) K256(6) }
#undef K256
}

T256 static INL float hsum256(__m256 v) {
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

T256 static INL void d256(const int RB, const int JB, int k, const float *a, long lda,
                          const float *bt, long ldbt, float *c, long ldc, const struct epi *e) {
	__m256 acc[3][3];
#pragma GCC unroll 3
	for (int i = 0; i < RB; i++)
#pragma GCC unroll 3
		for (int j = 0; j < JB; j++) acc[i][j] = _mm256_setzero_ps();
	int p = 0;
	for (; p + 8 <= k; p += 8) {
		__m256 bv[3];
#pragma GCC unroll 3
		for (int j = 0; j < JB; j++) bv[j] = _mm256_loadu_ps(bt + j * ldbt + p);
#pragma GCC unroll 3
		for (int i = 0; i < RB; i++) {
			__m256 av = _mm256_loadu_ps(a + i * lda + p);
#pragma GCC unroll 3
			for (int j = 0; j < JB; j++) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
		}
	}
	if (p < k) {
		__m256i mk = mask8(k - p);
		__m256 bv[3];
#pragma GCC unroll 3
		for (int j = 0; j < JB; j++) bv[j] = _mm256_maskload_ps(bt + j * ldbt + p, mk);
#pragma GCC unroll 3
		for (int i = 0; i < RB; i++) {
			__m256 av = _mm256_maskload_ps(a + i * lda + p, mk);
#pragma GCC unroll 3
			for (int j = 0; j < JB; j++) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
		}
	}
#pragma GCC unroll 3
	for (int i = 0; i < RB; i++)
#pragma GCC unroll 3
		for (int j = 0; j < JB; j++) c[i * ldc + j] = epi1(hsum256(acc[i][j]), c + i * ldc + j, e, j);
}

T256 static void dot256(int m, int n, int k, const float *a, long lda, const float *bt,
                        long ldbt, float *c, long ldc, const struct epi *e) {
	for (int i = 0; i < m; i += 3)
		for (int j = 0; j < n; j += 3) {
			struct epi ej = *e;
			if (ej.bias) ej.bias += j;
			const float *ai = a + i * lda, *bj = bt + j * ldbt;
			float *cij = c + i * ldc + j;
#define D256(R, J) \
	case (R - 1) * 3 + J - 1: d256(R, J, k, ai, lda, bj, ldbt, cij, ldc, &ej); break;
			switch ((imin(3, m - i) - 1) * 3 + imin(3, n - j) - 1) {
				D256(1, 1) D256(1, 2) D256(1, 3) D256(2, 1) D256(2, 2) D256(2, 3) D256(3, 1) D256(3, 2) D256(3, 3)
			}
#undef D256
		}
}

static const struct path path_avx2 = {6, 16, 6, 16, 1, tile256, dot256, 12, NULL, pack_t, copy_panel};
#undef EACH
#endif

static const struct path *active_path(void) {
#if defined(__x86_64__)
	if (cpukern_isa == CPUKERN_AVX512) return &path_avx512;
	if (cpukern_isa == CPUKERN_AVX2) return &path_avx2;
#endif
	return &path_generic;
}

// product is the blocked path, or the row path for one row of C over op(B)
// read in place.
static void product(const struct path *s, int tA, int tB, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc, const float *bias, int relu, const float *mask) {
	if (s->row && m == 1 && !tB && n <= ROWMAX) {
		const struct epi e = {alpha, beta, bias, relu, mask, c};
		s->row(n, k, a, tA ? lda : 1, b, ldb, c, &e);
		return;
	}
	blocked(s, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, relu, mask);
}

void cpukern_sgemm(int transA, int transB, int m, int n, int k, float alpha,
                   const float *a, int lda, const float *b, int ldb, float beta,
                   float *c, int ldc, const float *bias, int relu, const float *mask) {
	if (m <= 0 || n <= 0) return;
	const struct epi e = {alpha, beta, bias, relu, mask, c};
	if (k <= 0) {
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++) c[(long)i * ldc + j] = epi1(0, c + (long)i * ldc + j, &e, j);
		return;
	}
	const struct path *s = active_path();
	float small[4096] __attribute__((aligned(64))); // buffers of small calls
	if (s->dot && !transA && (n <= s->dotn || (transB && m <= 4))) {
		if (transB) {
			s->dot(m, n, k, a, lda, b, ldb, c, ldc, &e);
			return;
		}
		float *bt = (long)n * k <= 4096 ? small : xmalloc((size_t)n * k);
		pack_t(bt, k, b, ldb, k, n); // bt[j*k + p] = b[p*ldb + j]
		s->dot(m, n, k, a, lda, bt, k, c, ldc, &e);
		if (bt != small) free(bt);
		return;
	}
	if (s->inplace && transA && n <= s->mr && m > n) {
		float *t = (long)n * m <= 4096 ? small : xmalloc((size_t)n * m);
		product(s, !transB, 0, n, m, k, alpha, b, ldb, a, lda, 0, t, m, NULL, 0, NULL);
		const struct epi e1 = {1, beta, bias, relu, mask, c};
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				c[(long)i * ldc + j] = epi1(t[(long)j * m + i], c + (long)i * ldc + j, &e1, j);
		if (t != small) free(t);
		return;
	}
	product(s, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, relu, mask);
}
