package devicetest

import (
	"math/rand/v2"

	"github.com/admpo/admpo/device"
)

// Float64 references of the kernels that run all of an ensemble's members
// at once (device/kernels/ensemble.cu): each member's block is checked
// against the single-model reference (adm_swish_res's math, admHeadRef,
// admLossRef) with that member's parameters, so a wrong member offset
// fails.

func init() {
	kernelTests["ens_swish"] = testEnsSwish
	kernelTests["ens_bias_add"] = testEnsBiasAdd
	kernelTests["ens_head"] = testEnsHead
	kernelTests["ens_loss"] = testEnsLoss
}

// ensRows and ensCols are the [rows, c] block of a member in the stacked kernel tests:
// n elements are ceil(n/(rows·c)) members.
const ensRows, ensCols = 5, 7

func ensMembers(n int) int { return (n + ensRows*ensCols - 1) / (ensRows * ensCols) }

func testEnsSwish(h h, r *rand.Rand, n int, tol float64) {
	members := ensMembers(n)
	n = members * ensRows * ensCols
	u0, bias := randn(r, n, 1.5), randn(r, members*ensCols, 0.5)
	u, sig, act := h.up(u0), h.alloc(device.Float32, n), h.alloc(device.Float32, n)
	h.launch("ens_swish", n, u, h.up(bias), sig, act, ensCols, ensRows)
	wu, ws, wa := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		m, j := i/(ensRows*ensCols), i%ensCols
		v := float64(u0[i]) + float64(bias[m*ensCols+j])
		wu[i], ws[i], wa[i] = v, sigmoid(v), v*sigmoid(v)
	}
	compare(h.t, "ens_swish u", h.down(u), wu, tol, tol)
	compare(h.t, "ens_swish sig", h.down(sig), ws, tol, tol)
	compare(h.t, "ens_swish act", h.down(act), wa, tol, tol)
}

func testEnsBiasAdd(h h, r *rand.Rand, n int, tol float64) {
	members := ensMembers(n)
	n = members * ensRows * ensCols
	y0, bias := randn(r, n, 1), randn(r, members*ensCols, 1)
	y := h.up(y0)
	h.launch("ens_bias_add", n, y, h.up(bias), ensCols, ensRows)
	want := make([]float64, n)
	for i := range n {
		want[i] = float64(y0[i]) + float64(bias[(i/(ensRows*ensCols))*ensCols+i%ensCols])
	}
	compare(h.t, "ens_bias_add", h.down(y), want, tol, tol)
}

// testEnsHead checks ens_head over n rows of up to three members with
// their own bounds and Σw (one member's weights all 0 when there are
// three).
func testEnsHead(h h, r *rand.Rand, n int, tol float64) {
	const d = 4
	members := min(n, 3)
	rows := n / members
	n = members * rows
	o, tg := randn(r, n*2*d, 2), randn(r, n*d, 1)
	for i := range n {
		for j := range d {
			o[i*2*d+d+j] = float32(r.NormFloat64()*4 - 2)
		}
	}
	mx, mn := make([]float32, members*d), make([]float32, members*d)
	for i := range mx {
		mx[i] = float32(0.2 + r.Float64())
		mn[i] = float32(-1 - 9*r.Float64())
	}
	w, wsum := make([]float32, n), make([]float32, members)
	for i := range w {
		m := i / rows
		if m != 1 {
			w[i] = []float32{0, 1, 1, 0.5}[r.IntN(4)]
		}
		wsum[m] += w[i]
	}
	lv, dout := h.alloc(device.Float32, n*d), h.alloc(device.Float32, n*2*d)
	tmax, tmin, rl := h.alloc(device.Float32, n*d), h.alloc(device.Float32, n*d), h.alloc(device.Float32, n)
	h.launch("ens_head", n, h.up(o), h.up(mx), h.up(mn), h.up(tg), h.up(w), h.up(wsum),
		lv, dout, tmax, tmin, rl, d, rows)
	glv, gdout, gtmax, gtmin, grl := h.down(lv), h.down(dout), h.down(tmax), h.down(tmin), h.down(rl)
	for m := range members {
		a, b := m*rows, (m+1)*rows
		wl, wd, wx, wn, wr := admHeadRef(o[a*2*d:b*2*d], mx[m*d:(m+1)*d], mn[m*d:(m+1)*d], tg[a*d:b*d], w[a:b],
			wsum[m], rows, d)
		gs := tol / max(float64(wsum[m])*d, 1)
		compare(h.t, "ens_head lv", glv[a*d:b*d], wl, tol, tol)
		compare(h.t, "ens_head dout", gdout[a*2*d:b*2*d], wd, 10*tol, 10*gs)
		compare(h.t, "ens_head tmax", gtmax[a*d:b*d], wx, 10*tol, 10*gs)
		compare(h.t, "ens_head tmin", gtmin[a*d:b*d], wn, 10*tol, 10*gs)
		compare(h.t, "ens_head rowloss", grl[a:b], wr, 10*tol, 10*tol)
	}
}

// testEnsLoss checks ens_loss over n members (300 rows of d = 4 each, or
// 2 rows of d = 2 past 257 members), every third with Σw = 0.
func testEnsLoss(h h, r *rand.Rand, n int, tol float64) {
	const coef = 0.01
	rows, d := 300, 4
	if n > 257 {
		rows, d = 2, 2
	}
	rl, mx, mn := randn(r, n*rows, 3), randn(r, n*d, 1), randn(r, n*d, 3)
	wsum := make([]float32, n)
	for m := range wsum {
		if m%3 != 2 {
			wsum[m] = float32(1 + r.IntN(400))
		}
	}
	out := h.alloc(device.Float32, 2*n)
	h.launch("ens_loss", n, h.up(rl), h.up(wsum), h.up(mx), h.up(mn), out, rows, d, float32(coef))
	want := make([]float64, 0, 2*n)
	for m := range n {
		want = append(want, admLossRef(rl[m*rows:(m+1)*rows], wsum[m], mx[m*d:(m+1)*d], mn[m*d:(m+1)*d], coef)...)
	}
	compare(h.t, "ens_loss", h.down(out), want, tol, tol)
}
