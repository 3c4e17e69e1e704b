package devicetest

import (
	"math"
	"math/rand/v2"

	"github.com/admpo/admpo/device"
)

// Float64 references of the BC and ensemble kernels (device/kernels/bc.cu
// and ensemble.cu), from the math: the derivative of tanh as 1/cosh² and
// swish's as σ(u) + u·σ(u)·(1-σ(u)).

func init() {
	kernelTests["bc_head"] = testBCHead
	kernelTests["ens_swish_grad"] = testEnsSwishGrad
}

// testBCHead checks bc_head over n elements (the rows of sacAD actions
// that cover them).
func testBCHead(h h, r *rand.Rand, n int, tol float64) {
	const ad = sacAD
	rows := (n + ad - 1) / ad
	m := rows * ad
	out, target := randn(r, rows*2*ad, 1.5), randn(r, m, 1)
	scale, bias := []float32{1, 1.5, 0.5}, []float32{0, -0.5, 0.5}
	// Stale values where bc_head must write zeros.
	dout := h.up(randn(r, rows*2*ad, 1))
	action, sq := h.alloc(device.Float32, m), h.alloc(device.Float32, m)
	coef := float32(1 / float64(m))
	h.launch("bc_head", m, h.up(out), h.up(target), h.up(scale), h.up(bias), action, sq, dout, ad, coef)
	wa, ws, wd := make([]float64, m), make([]float64, m), make([]float64, rows*2*ad)
	for i := range m {
		row, j := i/ad, i%ad
		u := float64(out[row*2*ad+j])
		a := math.Tanh(u)*float64(scale[j]) + float64(bias[j])
		e := a - float64(target[i])
		wa[i], ws[i] = a, e*e
		ch := math.Cosh(u)
		wd[row*2*ad+j] = float64(coef) * 2 * e * float64(scale[j]) / (ch * ch)
	}
	compare(h.t, "bc_head action", h.down(action), wa, tol, tol)
	compare(h.t, "bc_head sq", h.down(sq), ws, 4*tol, 4*tol)
	compare(h.t, "bc_head dout", h.down(dout), wd, 4*tol, 4*tol*float64(coef))
}

// testEnsSwishGrad checks ens_swish_grad with σ(u) as the forward pass
// keeps it (float32, as adm_swish_res writes it).
func testEnsSwishGrad(h h, r *rand.Rand, n int, tol float64) {
	u, g := randn(r, n, 3), randn(r, n, 1)
	sig := make([]float32, n)
	for i, v := range u {
		sig[i] = float32(sigmoid(float64(v)))
	}
	dy := h.up(g)
	h.launch("ens_swish_grad", n, dy, h.up(u), h.up(sig))
	want := make([]float64, n)
	for i, v := range u {
		s := sigmoid(float64(v))
		want[i] = float64(g[i]) * (s + float64(v)*s*(1-s))
	}
	compare(h.t, "ens_swish_grad", h.down(dy), want, 4*tol, 4*tol)
}
