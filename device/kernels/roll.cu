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

// roll_gate: one unit's new state from its pre-activations without the
// input bias (gir, giz, gin), the recurrent products (ghr, ghz, ghn; read
// only with has_prev) and the previous state hp (0 without has_prev).
__device__ float roll_gate(float gir, float giz, float gin, const float *__restrict__ bi,
                           const float *__restrict__ bh, float ghr, float ghz, float ghn, float hp, int h, int c,
                           int has_prev) {
	float br = bh[c], bz = bh[h + c], bn = bh[2 * h + c];
	if (has_prev) {
		br = ghr + br;
		bz = ghz + bz;
		bn = ghn + bn;
	}
	float rg = adm_sigmoid(gir + bi[c] + br);
	float z = adm_sigmoid(giz + bi[h + c] + bz);
	float nn = tanhf(gin + bi[2 * h + c] + rg * bn);
	return nn + z * (hp - nn);
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
		float ghr = 0.0f, ghz = 0.0f, ghn = 0.0f, prev = 0.0f;
		if (has_prev) {
			ghr = gh[c * ld + r];
			ghz = gh[(h + c) * ld + r];
			ghn = gh[(2 * h + c) * ld + r];
			prev = hp[c * ld + r];
		}
		hout[c * ld + r] = roll_gate(g[0], g[1], g[2], bi, bh, ghr, ghz, ghn, prev, h, c, has_prev);
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
		float ghr = 0.0f, ghz = 0.0f, ghn = 0.0f, prev = 0.0f;
		if (has_prev) {
			ghr = gh[c * ld + r];
			ghz = gh[(h + c) * ld + r];
			ghn = gh[(2 * h + c) * ld + r];
			prev = hp[c * ld + r];
		}
		hout[c * ld + r] = roll_gate(gi[c * ld + r], gi[(h + c) * ld + r], gi[(2 * h + c) * ld + r], bi, bh, ghr,
		                             ghz, ghn, prev, h, c, has_prev);
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
