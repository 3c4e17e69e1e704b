// Kernels of an inference roll-out of the Any-step Dynamics Model (issue
// 33, docs/device-rollout-plan.md): the GRU cell of one layer-step over
// many plans, after cuBLAS's products. Activations are feature-major: (row
// r, unit c) of a [rows, w] activation sits at c·ld + r with ld ≥ rows, so
// a packed prefix of rows is the same buffer with fewer rows, and each
// thread of a launch over n = rows·h walks a row of one unit (consecutive
// threads read consecutive addresses). The gates follow package models'
// GRULayer (PyTorch's equations and gate order r, z, n), as adm_gru_fwd:
//
//	r = σ(gi_r + bi_r + (gh_r + bh_r)), z likewise
//	n = tanh(gi_n + bi_n + r·(gh_n + bh_n)), h' = n + z·(h - n)
//
// with gi = x·Wi and gh = h·Wh; a first step (has_prev 0) has h = 0 and
// gh = 0, and reads neither.
#include "kernel.h"

// roll_gate: the new state of unit c of row r from its pre-activations
// without the input bias (gir, giz, gin); with has_prev it reads the
// recurrent products gh and the previous state hp ([rows, 3h] and [rows,
// h], feature-major, ld), else h = 0 and gh = 0.
__device__ float roll_gate(float gir, float giz, float gin, const float *__restrict__ bi,
                           const float *__restrict__ gh, const float *__restrict__ bh, const float *hp, int h,
                           int ld, int c, int r, int has_prev) {
	float br = bh[c], bz = bh[h + c], bn = bh[2 * h + c], prev = 0.0f;
	if (has_prev) {
		br = gh[c * ld + r] + br;
		bz = gh[(h + c) * ld + r] + bz;
		bn = gh[(2 * h + c) * ld + r] + bn;
		prev = hp[c * ld + r];
	}
	float rg = adm_sigmoid(gir + bi[c] + br);
	float z = adm_sigmoid(giz + bi[h + c] + bz);
	float nn = tanhf(gin + bi[2 * h + c] + rg * bn);
	return nn + z * (prev - nn);
}

// roll_gru0: layer 0's step over n = rows·h elements. p0 [rows, 3h]
// (feature-major, ld) is the observation part of x·Wi, obsN·Wi[:od]; the
// action part is added here from act (row-major [rows, ad] from element
// act_off) and wa = Wi[od:] (row-major [ad, 3h]), in Wi's row order after
// p0's terms. gh [rows, 3h] and hp [rows, h] (feature-major, ld) are h·Wh
// and h; hout [rows, h] (feature-major, ld) gets h' and may be hp.
KERNEL roll_gru0(int n, const float *__restrict__ p0, const float *__restrict__ act, const float *__restrict__ wa,
                 const float *__restrict__ bi, const float *__restrict__ gh, const float *__restrict__ bh,
                 const float *hp, float *hout, int h, int ld, int ad, int act_off, int has_prev) {
	int rows = n / h;
	GRID_STRIDE(i, n) {
		int c = i / rows, r = i - c * rows;
		float g[3];
		for (int q = 0; q < 3; q++) {
			int col = q * h + c;
			float s = p0[col * ld + r];
			for (int k = 0; k < ad; k++) {
				s += act[act_off + r * ad + k] * wa[k * 3 * h + col];
			}
			g[q] = s;
		}
		hout[c * ld + r] = roll_gate(g[0], g[1], g[2], bi, gh, bh, hp, h, ld, c, r, has_prev);
	}
}

// roll_gru: a layer ≥ 1 step over n = rows·h elements from two products, gi
// = x·Wi and gh = h·Wh ([rows, 3h], feature-major, ld), and the previous
// state hp; hout gets h' and may be hp.
KERNEL roll_gru(int n, const float *__restrict__ gi, const float *__restrict__ bi, const float *__restrict__ gh,
                const float *__restrict__ bh, const float *hp, float *hout, int h, int ld, int has_prev) {
	int rows = n / h;
	GRID_STRIDE(i, n) {
		int c = i / rows, r = i - c * rows;
		hout[c * ld + r] =
		    roll_gate(gi[c * ld + r], gi[(h + c) * ld + r], gi[(2 * h + c) * ld + r], bi, gh, bh, hp, h, ld, c, r, has_prev);
	}
}

// roll_plan_in: the inputs of n plans (one per thread). Plan q starts from
// state l-k of window row r = slot[q] (l = lens[r] states of the row's m,
// k = kk[q] in 1..l) and takes that row's actions l-k..l-1. The window is
// s [rows, m, od] and a [rows, m, ad] (row-major, oldest first); the
// inputs are z-scored with mean and std [od+ad] (states', then actions'
// columns, models' ADM normalisation): obs_n [n, od] and act_n [m][n][ad]
// (row-major; steps k.. are zeros). A plan whose slot, length or k is out
// of range gets NaN inputs.
KERNEL roll_plan_in(int n, float *__restrict__ obs_n, float *__restrict__ act_n, const float *__restrict__ s,
                    const float *__restrict__ a, const int *__restrict__ lens, const int *__restrict__ slot,
                    const int *__restrict__ kk, const float *__restrict__ mean, const float *__restrict__ std, int od,
                    int ad, int m, int rows) {
	GRID_STRIDE(q, n) {
		int r = slot[q], k = kk[q];
		int l = r >= 0 && r < rows ? lens[r] : 0;
		int ok = l >= 1 && l <= m && k >= 1 && k <= l;
		int j0 = l - k;
		for (int c = 0; c < od; c++) {
			obs_n[q * od + c] = ok ? (s[(r * m + j0) * od + c] - mean[c]) / std[c] : nanf("");
		}
		for (int j = 0; j < m; j++) {
			for (int c = 0; c < ad; c++) {
				float v = 0.0f;
				if (!ok) {
					v = nanf("");
				} else if (j < k) {
					v = (a[(r * m + j0 + j) * ad + c] - mean[od + c]) / std[od + c];
				}
				act_n[(j * n + q) * ad + c] = v;
			}
		}
	}
}

// roll_splitmix is SplitMix64's output function of state z (infer's
// splitmix64, cpukern's generator).
__device__ unsigned long long roll_splitmix(unsigned long long z) {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// roll_drop_base: the MC-dropout generator state of n plans (one per
// thread), infer's dropoutBase(seed, step, row0+row[q], k[q]) with seed =
// seed_hi<<32 | seed_lo (as uint32 halves):
//
//	z = splitmix(seed + golden), then z = splitmix(z ^ (v + golden))
//	for v = step, start row, k (each as Go's uint64(int))
//
// written to base [2n] as the low and high 32 bits.
KERNEL roll_drop_base(int n, int *__restrict__ base, const int *__restrict__ row, const int *__restrict__ kk,
                      int seed_lo, int seed_hi, int step, int row0) {
	const unsigned long long golden = 0x9e3779b97f4a7c15ULL;
	unsigned long long seed = ((unsigned long long)(unsigned)seed_hi << 32) | (unsigned long long)(unsigned)seed_lo;
	GRID_STRIDE(q, n) {
		long long v[3] = {(long long)step, (long long)row0 + (long long)row[q], (long long)kk[q]};
		unsigned long long z = roll_splitmix(seed + golden);
		for (int j = 0; j < 3; j++) {
			z = roll_splitmix(z ^ ((unsigned long long)v[j] + golden));
		}
		base[2 * q] = (int)(unsigned)(z & 0xffffffffULL);
		base[2 * q + 1] = (int)(unsigned)(z >> 32);
	}
}

// roll_keep: the keep flag of unit e of a plan's mask from its state base,
// as cpukern.DropoutFill decides it: half e%2 (the low 32 bits for even e)
// of splitmix(base + (e/2+1)·golden), dropped when below thr.
__device__ int roll_keep(unsigned long long base, int e, unsigned thr) {
	unsigned long long z = roll_splitmix(base + (unsigned long long)(e / 2 + 1) * 0x9e3779b97f4a7c15ULL);
	unsigned bits = (unsigned)((e % 2 ? z >> 32 : z) & 0xffffffffULL);
	return bits >= thr;
}

// roll_resblock: ResBlock blk's tail over n rows (one per thread) of
// feature-major [rows, h] activations (ld): x gets
//
//	w = x + keep·swish(u + b)·scale, y = (w - μ)/sqrt(σ² + eps)·γ + β
//
// (models' ResBlock; μ and the population σ² over the row's h units, summed
// in double from the row's first w). u = x·W is the block's product. With
// drop 1 the keep flag of unit c is roll_keep(base of the row, blk·h + c,
// thr) (base [2·rows] from roll_drop_base, thr the uint32 threshold's bits)
// and scale is 1/(1-p); with drop 0 every unit is kept and base is not read.
KERNEL roll_resblock(int n, float *x, const float *__restrict__ u, const float *__restrict__ b,
                     const float *__restrict__ gamma, const float *__restrict__ beta, const int *__restrict__ base,
                     int h, int ld, int blk, int thr, float scale, float eps, int drop) {
	GRID_STRIDE(r, n) {
		unsigned long long bs = 0;
		if (drop) {
			bs = ((unsigned long long)(unsigned)base[2 * r + 1] << 32) | (unsigned long long)(unsigned)base[2 * r];
		}
		double w0 = 0.0, s1 = 0.0, s2 = 0.0;
		for (int c = 0; c < h; c++) {
			float v = u[c * ld + r] + b[c];
			float s = v * adm_sigmoid(v);
			if (drop) {
				s = roll_keep(bs, blk * h + c, (unsigned)thr) ? s * scale : 0.0f;
			}
			float w = x[c * ld + r] + s;
			x[c * ld + r] = w;
			if (c == 0) {
				w0 = (double)w;
			}
			double d = (double)w - w0;
			s1 += d;
			s2 += d * d;
		}
		double m1 = s1 / (double)h;
		double var = s2 / (double)h - m1 * m1;
		double mu = w0 + m1;
		double inv = 1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps);
		for (int c = 0; c < h; c++) {
			double w = (double)x[c * ld + r];
			x[c * ld + r] = (float)((w - mu) * inv) * gamma[c] + beta[c];
		}
	}
}

// roll_finish_next is plan i's mean next state in dimension c: the plan's
// start state (state l-k of window row r) plus the output layer's mean
// column, o + ob, in float as the ADM graph adds them.
__device__ float roll_finish_next(const float *__restrict__ o, const float *__restrict__ ob,
                                  const float *__restrict__ s, int i, int r, int j0, int c, int od, int m) {
	return s[(r * m + j0) * od + c] + (o[i * 2 * (od + 1) + c] + ob[c]);
}

// roll_finish: the head's tail after the output layer's product, one
// thread per output row q (n rows). Row q continues window row r = slot[q]
// (l = lens[r] states) with the drawn k = kd[q]; its plan for k' sits at
// row pidx[q·m + k'-1] of o [plans, 2d] (d = od+1, row-major: the mean's d
// columns, then the raw log-variance's; no bias, ob [2d] is added here).
// A plan's mean next state is its start state plus the mean's first od
// columns; the reward's mean is column od. With want_u the row's
// uncertainty is infer's UADM over its plans k' = 1..l (the population
// variance over k' of each dimension in double, averaged over od, square
// root; 0 for l = 1); without it only the drawn plan is read and u is 0.
// For the drawn plan the log-variance is soft-clamped in double (models'
// splitGaussian: a = mx - softplus(mx - raw), lv = mn + softplus(a - mn),
// rounded to float), and with eps [n, d] (row-major) the sample is
//
//	next = mean + float(exp(lv/2)·eps), rew = rmean + float(exp(lv_od/2)·eps_od) - beta·u
//
// Row q's outputs go to row out_off+q of next and mean [.., od] (the
// sample and the mean), rew, u and fin (1 when the sampled next state is
// finite). A bad slot, length, k or plan index gives NaN and fin 0.
KERNEL roll_finish(int n, const float *__restrict__ o, const float *__restrict__ ob, const float *__restrict__ mx,
                   const float *__restrict__ mn, const float *__restrict__ s, const int *__restrict__ lens,
                   const int *__restrict__ slot, const int *__restrict__ kd, const int *__restrict__ pidx,
                   const float *__restrict__ eps, float *__restrict__ next, float *__restrict__ rew,
                   float *__restrict__ u, float *__restrict__ mean, int *__restrict__ fin, int od, int m, int rows,
                   int plans, int want_u, int out_off, float beta) {
	int d = od + 1;
	GRID_STRIDE(q, n) {
		int r = slot[q], k = kd[q];
		int l = r >= 0 && r < rows ? lens[r] : 0;
		int ok = l >= 1 && l <= m && k >= 1 && k <= l;
		int lo = want_u ? 1 : k, hi = want_u ? l : k;
		for (int j = lo; ok && j <= hi; j++) {
			int i = pidx[q * m + j - 1];
			ok = i >= 0 && i < plans;
		}
		int t = out_off + q;
		if (!ok) {
			for (int c = 0; c < od; c++) {
				next[t * od + c] = nanf("");
				mean[t * od + c] = nanf("");
			}
			rew[t] = nanf("");
			u[t] = nanf("");
			fin[t] = 0;
			continue;
		}
		float uf = 0.0f;
		if (want_u && l > 1) {
			double total = 0.0;
			for (int c = 0; c < od; c++) {
				double sum = 0.0;
				for (int j = 1; j <= l; j++) {
					sum += (double)roll_finish_next(o, ob, s, pidx[q * m + j - 1], r, l - j, c, od, m);
				}
				double mu = sum / (double)l, v = 0.0;
				for (int j = 1; j <= l; j++) {
					double e = (double)roll_finish_next(o, ob, s, pidx[q * m + j - 1], r, l - j, c, od, m) - mu;
					v += e * e;
				}
				total += v / (double)l;
			}
			uf = (float)sqrt(total / (double)od);
		}
		int i = pidx[q * m + k - 1];
		int f = 1;
		for (int c = 0; c <= od; c++) {
			double s1, s2;
			double raw = (double)(o[i * 2 * d + d + c] + ob[d + c]);
			double a = (double)mx[c] - adm_softplus((double)mx[c] - raw, &s1);
			float lv = (float)((double)mn[c] + adm_softplus(a - (double)mn[c], &s2));
			float sd = (float)(exp(0.5 * (double)lv) * (double)eps[q * d + c]);
			if (c < od) {
				float mc = roll_finish_next(o, ob, s, i, r, l - k, c, od, m);
				float x = mc + sd;
				mean[t * od + c] = mc;
				next[t * od + c] = x;
				f = f && isfinite(x);
			} else {
				float rw = (o[i * 2 * d + od] + ob[od]) + sd;
				if (want_u) {
					float pen = beta * uf;
					rw = rw - pen;
				}
				rew[t] = rw;
			}
		}
		u[t] = uf;
		fin[t] = f;
	}
}

// roll_gather_cols: compacts feature-major rows, over n = rows·w elements:
// dst (row r, column c) at c·ldd + r gets src's row idx[r] at c·lds +
// idx[r] (src has rows_src rows); a negative index gives 0 (a zero GRU
// state: the incremental roll-out's fresh plans), an index past rows_src
// NaN. dst must not overlap src.
KERNEL roll_gather_cols(int n, float *__restrict__ dst, const float *__restrict__ src, const int *__restrict__ idx,
                        int w, int ldd, int lds, int rows_src) {
	int rows = n / w;
	GRID_STRIDE(i, n) {
		int c = i / rows, r = i - c * rows;
		int j = idx[r];
		dst[c * ldd + r] = j < 0 ? 0.0f : j < rows_src ? src[c * lds + j] : nanf("");
	}
}

// roll_push: the window update of n rows (one per thread), package
// internal/window's Push on the device. Row q with cont[q] != 0 appends
// next row next_off+q ([.., od]) as window row r = slot[q]'s new current
// state: a full row (lens[r] = m) first drops its oldest state and action
// (states and actions 1.. move down one, the last action slot keeps its
// value). s [rows, m, od], a [rows, m, ad] and lens [rows] are the window;
// rows of slot must be distinct. A slot outside [0, rows) or a length
// outside [1, m] leaves the window as it is.
KERNEL roll_push(int n, float *s, float *a, int *lens, const int *__restrict__ slot, const float *__restrict__ next,
                 const int *__restrict__ cont, int od, int ad, int m, int rows, int next_off) {
	GRID_STRIDE(q, n) {
		int r = slot[q];
		if (!cont[q] || r < 0 || r >= rows) {
			continue;
		}
		int l = lens[r];
		if (l < 1 || l > m) {
			continue;
		}
		if (l == m) {
			for (int j = 0; j + 1 < m; j++) {
				for (int c = 0; c < od; c++) {
					s[(r * m + j) * od + c] = s[(r * m + j + 1) * od + c];
				}
				for (int c = 0; c < ad; c++) {
					a[(r * m + j) * ad + c] = a[(r * m + j + 1) * ad + c];
				}
			}
			l--;
		}
		for (int c = 0; c < od; c++) {
			s[(r * m + l) * od + c] = next[(next_off + q) * od + c];
		}
		lens[r] = l + 1;
	}
}

// roll_act: sets the action of n rows (one per thread) in the window: row q
// (window row r = slot[q], l = lens[r] states) gets act [n, ad] row q as
// the action of its current state, a[(r·m + l-1)·ad ..] (internal/window's
// SetAction). A slot outside [0, rows) or a length outside [1, m] leaves
// the window as it is.
KERNEL roll_act(int n, float *__restrict__ a, const int *__restrict__ lens, const int *__restrict__ slot,
                const float *__restrict__ act, int ad, int m, int rows) {
	GRID_STRIDE(q, n) {
		int r = slot[q];
		if (r < 0 || r >= rows) {
			continue;
		}
		int l = lens[r];
		if (l < 1 || l > m) {
			continue;
		}
		for (int c = 0; c < ad; c++) {
			a[(r * m + l - 1) * ad + c] = act[q * ad + c];
		}
	}
}

// roll_done_holds reports whether x meets a DoneSpec range's bounds (flags:
// 1 abs, 2 has_lo, 4 has_hi, 8 lo inclusive, 16 hi inclusive), as
// rollout.Range.holds: a NaN meets no bound.
__device__ int roll_done_holds(float x, int flags, float lo, float hi) {
	if (flags & 1) {
		x = fabsf(x);
	}
	if ((flags & 2) && !(lo < x || ((flags & 8) && lo == x))) {
		return 0;
	}
	if ((flags & 4) && !(x < hi || ((flags & 16) && x == hi))) {
		return 0;
	}
	return 1;
}

// roll_done: the termination of n rows (one per thread) after roll_finish.
// Row q ends (done[q] = 1, cont[q] = 0) when its sampled next state was not
// finite (fin[q] = 0), when use_host and hdone[q] != 0 (a host Done func's
// verdict), or when its next state next [n, od] fails the DoneSpec: with
// finite, any NaN or ±Inf; or any of nr ranges, range i holding dimensions
// [spec_i[3i], spec_i[3i+1]) with flags spec_i[3i+2] (roll_done_holds) and
// bounds spec_f[2i], spec_f[2i+1] (rollout.DoneSpec.Eval). Dimensions are
// clipped to [0, od).
KERNEL roll_done(int n, int *__restrict__ done, int *__restrict__ cont, const int *__restrict__ fin,
                 const float *__restrict__ next, const int *__restrict__ hdone, const int *__restrict__ spec_i,
                 const float *__restrict__ spec_f, int od, int nr, int finite, int use_host) {
	GRID_STRIDE(q, n) {
		int d = !fin[q];
		if (use_host && hdone[q]) {
			d = 1;
		}
		for (int c = 0; finite && !d && c < od; c++) {
			d = !isfinite(next[q * od + c]);
		}
		for (int i = 0; !d && i < nr; i++) {
			int lo = spec_i[3 * i] < 0 ? 0 : spec_i[3 * i], hi = spec_i[3 * i + 1] > od ? od : spec_i[3 * i + 1];
			for (int c = lo; !d && c < hi; c++) {
				d = !roll_done_holds(next[q * od + c], spec_i[3 * i + 2], spec_f[2 * i], spec_f[2 * i + 1]);
			}
		}
		done[q] = d;
		cont[q] = !d;
	}
}
