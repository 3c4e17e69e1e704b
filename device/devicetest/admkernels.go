package devicetest

import (
	"math"
	"math/rand/v2"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/internal/cpukern"
)

// Float64 references of the ADM kernels (device/kernels/adm.cu), written
// from the math: the GRU's equations and their derivatives, LayerNorm's
// backward pass as the projection of gamma ⊙ gy, the soft clamp's
// derivatives as products of logistic factors. Dropout masks are compared
// bit for bit with the CPU's generator (internal/cpukern.DropoutMask).

func init() {
	kernelTests["adm_gru_fwd"] = testADMGRUFwd
	kernelTests["adm_gru_bwd"] = testADMGRUBwd
	kernelTests["adm_swish_res"] = testADMSwishRes
	kernelTests["adm_center"] = testADMCenter
	kernelTests["adm_norm"] = testADMNorm
	kernelTests["adm_norm_terms"] = testADMNormTerms
	kernelTests["adm_res_grad"] = testADMResGrad
	kernelTests["adm_head"] = testADMHead
	kernelTests["adm_loss"] = testADMLoss
	kernelTests["dropout_mask"] = testDropoutMask
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// softplus64 is log(1+e^z), stable for large |z|.
func softplus64(z float64) float64 { return max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) }

// admGRUSize is the hidden width of the GRU kernel tests; n elements are
// b = ceil(n/h) rows.
const admGRUSize = 5

func testADMGRUFwd(h h, r *rand.Rand, n int, tol float64) {
	hd := admGRUSize
	b := (n + hd - 1) / hd
	n = b * hd
	rows := 3 * b // steps 0..2; step 1 has a previous state, step 2 runs with none
	gi, bi, bh := randn(r, rows*3*hd, 1), randn(r, 3*hd, 0.5), randn(r, 3*hd, 0.5)
	gh, y0 := randn(r, b*3*hd, 1), randn(r, rows*hd, 1)
	giB, biB, ghB, bhB := h.up(gi), h.up(bi), h.up(gh), h.up(bh)
	gates, ghn, y := h.alloc(device.Float32, rows*3*hd), h.alloc(device.Float32, rows*hd), h.up(y0)
	hcur := h.alloc(device.Float32, n)
	wantGates, wantGhn := make([]float64, rows*3*hd), make([]float64, rows*hd)
	wantY := f64(y0)
	for _, step := range []struct{ row0, prev int }{{b, 1}, {2 * b, 0}} {
		h.launch("adm_gru_fwd", n, giB, biB, ghB, bhB, gates, ghn, y, hcur, hd, step.row0, step.prev)
		wantH := make([]float64, n)
		for i := range b {
			g := step.row0 + i
			for j := range hd {
				var ghr, ghz, ghnj, hp float64
				if step.prev != 0 {
					ghr, ghz, ghnj = float64(gh[i*3*hd+j]), float64(gh[i*3*hd+hd+j]), float64(gh[i*3*hd+2*hd+j])
					hp = float64(y0[(g-b)*hd+j])
				}
				ghr, ghz, ghnj = ghr+float64(bh[j]), ghz+float64(bh[hd+j]), ghnj+float64(bh[2*hd+j])
				rg := sigmoid(float64(gi[g*3*hd+j]) + float64(bi[j]) + ghr)
				z := sigmoid(float64(gi[g*3*hd+hd+j]) + float64(bi[hd+j]) + ghz)
				nn := math.Tanh(float64(gi[g*3*hd+2*hd+j]) + float64(bi[2*hd+j]) + rg*ghnj)
				out := (1-z)*nn + z*hp
				wantGates[g*3*hd+j], wantGates[g*3*hd+hd+j], wantGates[g*3*hd+2*hd+j] = rg, z, nn
				wantGhn[g*hd+j], wantY[g*hd+j], wantH[i*hd+j] = ghnj, out, out
			}
		}
		compare(h.t, "adm_gru_fwd hcur", h.down(hcur), wantH, tol, tol)
	}
	compare(h.t, "adm_gru_fwd gates", h.down(gates), wantGates, tol, tol)
	compare(h.t, "adm_gru_fwd ghn", h.down(ghn), wantGhn, tol, tol)
	compare(h.t, "adm_gru_fwd y", h.down(y), wantY, tol, tol)
}

func testADMGRUBwd(h h, r *rand.Rand, n int, tol float64) {
	hd := admGRUSize
	b := (n + hd - 1) / hd
	n = b * hd
	rows := 2 * b
	gates := make([]float32, rows*3*hd)
	for i := range rows {
		for j := range hd {
			k := i * 3 * hd
			gates[k+j] = float32(sigmoid(r.NormFloat64()))
			gates[k+hd+j] = float32(sigmoid(r.NormFloat64()))
			gates[k+2*hd+j] = float32(math.Tanh(r.NormFloat64()))
		}
	}
	ghn, y, gy := randn(r, rows*hd, 1), randn(r, rows*hd, 1), randn(r, rows*hd, 1)
	gB, ghnB, yB, gyB := h.up(gates), h.up(ghn), h.up(y), h.up(gy)
	dgi, dgh := h.alloc(device.Float32, rows*3*hd), h.alloc(device.Float32, rows*3*hd)
	wantDgi, wantDgh := make([]float64, rows*3*hd), make([]float64, rows*3*hd)
	// Step 1 (a previous state) writes dgh's rows 0.., step 0 (none) rows
	// b.., as admdev rotates them.
	for _, step := range []struct{ row0, drow, prev int }{{b, 0, 1}, {0, b, 0}} {
		dh0 := randn(r, n, 1)
		dh, dghs := h.up(dh0), h.alloc(device.Float32, b*3*hd)
		h.launch("adm_gru_bwd", n, gB, ghnB, yB, gyB, dh, dgi, dgh, dghs, hd, step.row0, step.drow, step.prev)
		wantDh, wantDghs := make([]float64, n), make([]float64, b*3*hd)
		for i := range b {
			g := step.row0 + i
			for j := range hd {
				k := g * 3 * hd
				rg, z, nn := float64(gates[k+j]), float64(gates[k+hd+j]), float64(gates[k+2*hd+j])
				hp := 0.0
				if step.prev != 0 {
					hp = float64(y[(g-b)*hd+j])
				}
				// h' = (1-z)·n + z·h: the gradient d of h' flows to n, z
				// and h; n = tanh(a_n), a_n = gi_n + r·ghn; r, z = σ(·).
				d := float64(dh0[i*hd+j]) + float64(gy[g*hd+j])
				dan := d * (1 - z) * (1 - nn*nn)
				daz := d * (hp - nn) * z * (1 - z)
				dar := dan * float64(ghn[g*hd+j]) * rg * (1 - rg)
				wantDgi[k+j], wantDgi[k+hd+j], wantDgi[k+2*hd+j] = dar, daz, dan
				kd := (step.drow + i) * 3 * hd
				wantDgh[kd+j], wantDgh[kd+hd+j], wantDgh[kd+2*hd+j] = dar, daz, dan*rg
				wantDghs[i*3*hd+j], wantDghs[i*3*hd+hd+j], wantDghs[i*3*hd+2*hd+j] = dar, daz, dan*rg
				wantDh[i*hd+j] = d * z
			}
		}
		compare(h.t, "adm_gru_bwd dh", h.down(dh), wantDh, tol, tol)
		compare(h.t, "adm_gru_bwd dghs", h.down(dghs), wantDghs, tol, tol)
	}
	compare(h.t, "adm_gru_bwd dgi", h.down(dgi), wantDgi, tol, tol)
	compare(h.t, "adm_gru_bwd dgh", h.down(dgh), wantDgh, tol, tol)
}

// admMask returns dropout multipliers (0 or 1/(1-p), p = 0.25).
func admMask(r *rand.Rand, n int) []float32 {
	m := make([]float32, n)
	for i := range m {
		if r.IntN(4) != 0 {
			m[i] = 1 / 0.75
		}
	}
	return m
}

// admResCols is the columns of the ResBlock kernel tests; n elements are
// ceil(n/c) rows.
const admResCols = 7

func admRows(n int) (rows, c int) { return (n + admResCols - 1) / admResCols, admResCols }

// rowSums returns the sums of x's rows of c columns as the host's product
// would give them.
func rowSums(x []float32, c int) []float32 {
	s := make([]float32, len(x)/c)
	for r := range s {
		v := 0.0
		for j := range c {
			v += float64(x[r*c+j])
		}
		s[r] = float32(v)
	}
	return s
}

func testADMSwishRes(h h, r *rand.Rand, n int, tol float64) {
	rows, c := admRows(n)
	n = rows * c
	u0, x, mask, bias := randn(r, n, 1.5), randn(r, n, 1), admMask(r, n), randn(r, c, 0.5)
	u, sig, w := h.up(u0), h.alloc(device.Float32, n), h.alloc(device.Float32, n)
	h.launch("adm_swish_res", n, u, h.up(bias), h.up(x), h.up(mask), sig, w, c)
	wu, ws, ww := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		v := float64(u0[i]) + float64(bias[i%c])
		// swish(v) = v·σ(v), dropped out by the mask, plus the residual.
		wu[i], ws[i], ww[i] = v, sigmoid(v), float64(x[i])+float64(mask[i])*v*sigmoid(v)
	}
	compare(h.t, "adm_swish_res u", h.down(u), wu, tol, tol)
	compare(h.t, "adm_swish_res sig", h.down(sig), ws, tol, tol)
	compare(h.t, "adm_swish_res w", h.down(w), ww, tol, tol)
}

func testADMCenter(h h, r *rand.Rand, n int, tol float64) {
	rows, c := admRows(n)
	n = rows * c
	w := randn(r, n, 2)
	for i := range w {
		w[i] += 3 // rows with a mean far from 0
	}
	sums := rowSums(w, c)
	xc, sq := h.alloc(device.Float32, n), h.alloc(device.Float32, n)
	h.launch("adm_center", n, h.up(w), h.up(sums), xc, sq, c)
	wx, wq := make([]float64, n), make([]float64, n)
	for i := range n {
		d := float64(w[i]) - float64(sums[i/c])/float64(c)
		wx[i], wq[i] = d, d*d
	}
	// Differences of values near 3: their rounding, relative to 3.
	compare(h.t, "adm_center xc", h.down(xc), wx, tol, 4*tol)
	compare(h.t, "adm_center sq", h.down(sq), wq, 10*tol, 10*tol)
}

func testADMNorm(h h, r *rand.Rand, n int, tol float64) {
	rows, c := admRows(n)
	n = rows * c
	const eps = 1e-5
	xc, gamma, beta := randn(r, n, 2), randn(r, c, 1), randn(r, c, 1)
	sq := make([]float32, n)
	for i, v := range xc {
		sq[i] = v * v
	}
	sqsum := rowSums(sq, c)
	xhat, inv, y := h.up(xc), h.alloc(device.Float32, rows), h.alloc(device.Float32, n)
	h.launch("adm_norm", n, xhat, h.up(sqsum), h.up(gamma), h.up(beta), inv, y, c, float32(eps))
	wx, wi, wy := make([]float64, n), make([]float64, rows), make([]float64, n)
	for i := range n {
		is := 1 / math.Sqrt(float64(sqsum[i/c])/float64(c)+eps)
		wi[i/c] = is
		wx[i] = float64(xc[i]) * is
		wy[i] = wx[i]*float64(gamma[i%c]) + float64(beta[i%c])
	}
	compare(h.t, "adm_norm xhat", h.down(xhat), wx, tol, tol)
	compare(h.t, "adm_norm inv", h.down(inv), wi, tol, 0)
	compare(h.t, "adm_norm y", h.down(y), wy, tol, tol)
}

func testADMNormTerms(h h, r *rand.Rand, n int, tol float64) {
	rows, c := admRows(n)
	n = rows * c
	gy, xh, gamma := randn(r, n, 1), randn(r, n, 1), randn(r, c, 1)
	g, gx, prod := h.alloc(device.Float32, n), h.alloc(device.Float32, n), h.alloc(device.Float32, n)
	h.launch("adm_norm_terms", n, h.up(gy), h.up(gamma), h.up(xh), g, gx, prod, c)
	wg, wgx, wp := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		wg[i] = float64(gy[i]) * float64(gamma[i%c])
		wgx[i] = wg[i] * float64(xh[i])
		wp[i] = float64(gy[i]) * float64(xh[i])
	}
	compare(h.t, "adm_norm_terms g", h.down(g), wg, tol, tol)
	compare(h.t, "adm_norm_terms gx", h.down(gx), wgx, tol, tol)
	compare(h.t, "adm_norm_terms prod", h.down(prod), wp, tol, tol)
}

func testADMResGrad(h h, r *rand.Rand, n int, tol float64) {
	rows, c := admRows(n)
	n = rows * c
	gy, xh, u, mask := randn(r, n, 1), randn(r, n, 1), randn(r, n, 1.5), admMask(r, n)
	gamma := randn(r, c, 1)
	inv, sig, g, gx := make([]float32, rows), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range inv {
		inv[i] = float32(0.5 + r.Float64())
	}
	for i := range n {
		sig[i] = float32(sigmoid(float64(u[i])))
		g[i] = gy[i] * gamma[i%c]
		gx[i] = g[i] * xh[i]
	}
	dx, du := h.alloc(device.Float32, n), h.alloc(device.Float32, n)
	h.launch("adm_res_grad", n, h.up(g), h.up(rowSums(g, c)), h.up(rowSums(gx, c)), h.up(xh), h.up(inv), h.up(u),
		h.up(sig), h.up(mask), dx, du, c)
	wdx, wdu := make([]float64, n), make([]float64, n)
	for i := range rows {
		// y = gamma ⊙ xhat + beta, xhat = (w - mean)·inv: the gradient of w
		// is inv·(g - mean(g) - xhat·mean(g ⊙ xhat)) for g = gamma ⊙ gy.
		m1, m2 := 0.0, 0.0
		for j := range c {
			k := i*c + j
			gk := float64(gy[k]) * float64(gamma[j])
			m1 += gk / float64(c)
			m2 += gk * float64(xh[k]) / float64(c)
		}
		for j := range c {
			k := i*c + j
			gk := float64(gy[k]) * float64(gamma[j])
			dw := float64(inv[i]) * (gk - m1 - float64(xh[k])*m2)
			// swish'(u) = σ(u) + u·σ(u)(1-σ(u)).
			s := sigmoid(float64(u[k]))
			wdx[k] = dw
			wdu[k] = dw * (s + float64(u[k])*s*(1-s)) * float64(mask[k])
		}
	}
	compare(h.t, "adm_res_grad dx", h.down(dx), wdx, 10*tol, 10*tol)
	compare(h.t, "adm_res_grad du", h.down(du), wdu, 10*tol, 10*tol)
}

func testADMHead(h h, r *rand.Rand, n int, tol float64) {
	const d = 4
	o, tg := randn(r, n*2*d, 2), randn(r, n*d, 1)
	for i := range n {
		for j := range d {
			o[i*2*d+d+j] = float32(r.NormFloat64()*4 - 2) // the raw log-variance, past both bounds at times
		}
	}
	mx, mn := []float32{0.5, 1, 0.2, 0.5}, []float32{-10, -3, -1, -5}
	w := make([]float32, n)
	wsum := float32(0)
	for i := range w {
		w[i] = []float32{0, 1, 1, 0.5}[r.IntN(4)]
		wsum += w[i]
	}
	lv, dout := h.alloc(device.Float32, n*d), h.alloc(device.Float32, n*2*d)
	tmax, tmin, rl := h.alloc(device.Float32, n*d), h.alloc(device.Float32, n*d), h.alloc(device.Float32, n)
	h.launch("adm_head", n, h.up(o), h.up(mx), h.up(mn), h.up(tg), h.up(w), h.up([]float32{wsum}),
		lv, dout, tmax, tmin, rl, d)
	wl, wd, wx, wn, wr := admHeadRef(o, mx, mn, tg, w, wsum, n, d)
	norm := float64(wsum) * d
	compare(h.t, "adm_head lv", h.down(lv), wl, tol, tol)
	// Gradients are c ~ 1/(d·Σw) times values of order one.
	gs := tol / max(norm, 1)
	compare(h.t, "adm_head dout", h.down(dout), wd, 10*tol, 10*gs)
	compare(h.t, "adm_head tmax", h.down(tmax), wx, 10*tol, 10*gs)
	compare(h.t, "adm_head tmin", h.down(tmin), wn, 10*tol, 10*gs)
	compare(h.t, "adm_head rowloss", h.down(rl), wr, 10*tol, 10*tol)
}

// admHeadRef is adm_head's float64 reference over n rows with bounds mx, mn
// [d] and Σw wsum: lv, dout, tmax, tmin and rowloss.
func admHeadRef(o, mx, mn, tg, w []float32, wsum float32, n, d int) (wl, wd, wx, wn, wr []float64) {
	wl, wd, wx, wn, wr = make([]float64, n*d), make([]float64, n*2*d), make([]float64, n*d), make([]float64, n*d), make([]float64, n)
	norm := float64(wsum) * float64(d)
	for i := range n {
		c := 0.0
		if norm != 0 {
			c = float64(w[i]) / norm
		}
		for j := range d {
			raw, hi, lo := float64(o[i*2*d+d+j]), float64(mx[j]), float64(mn[j])
			a := hi - softplus64(hi-raw)
			l := lo + softplus64(a-lo)
			e := float64(o[i*2*d+j]) - float64(tg[i*d+j])
			iv := math.Exp(-l)
			wl[i*d+j] = l
			wr[i] += float64(w[i]) * (e*e*iv + l)
			// d lv/d raw = σ(a-lo)·σ(hi-raw), d lv/d hi = σ(a-lo)·(1-σ(hi-raw)),
			// d lv/d lo = 1-σ(a-lo).
			glv := c * (1 - e*e*iv)
			wd[i*2*d+j] = c * 2 * e * iv
			wd[i*2*d+d+j] = glv * sigmoid(a-lo) * sigmoid(hi-raw)
			wx[i*d+j] = glv * sigmoid(a-lo) * (1 - sigmoid(hi-raw))
			wn[i*d+j] = glv * (1 - sigmoid(a-lo))
		}
	}
	return wl, wd, wx, wn, wr
}

// admLossRef is adm_loss's float64 reference: the loss and the NLL.
func admLossRef(rl []float32, wsum float32, mx, mn []float32, coef float64) []float64 {
	d := len(mx)
	nll := 0.0
	if wsum != 0 {
		for _, v := range rl {
			nll += float64(v) / (float64(wsum) * float64(d))
		}
	}
	pen := 0.0
	for j := range d {
		pen += coef*float64(mx[j]) - coef*float64(mn[j])
	}
	return []float64{nll + pen, nll}
}

func testADMLoss(h h, r *rand.Rand, n int, tol float64) {
	if n != 1 {
		return // one element by definition
	}
	const rows, d, coef = 300, 4, 0.01
	rl, mx, mn := randn(r, rows, 3), randn(r, d, 1), randn(r, d, 3)
	for _, wsum := range []float32{217.5, 0} {
		out := h.alloc(device.Float32, 2)
		h.launch("adm_loss", 1, h.up(rl), h.up([]float32{wsum}), h.up(mx), h.up(mn), out, rows, d, float32(coef))
		compare(h.t, "adm_loss", h.down(out), admLossRef(rl, wsum, mx, mn, coef), tol, tol)
	}
}

func testDropoutMask(h h, r *rand.Rand, n int, tol float64) {
	for _, p := range []float64{0.1, 0.5} {
		state := r.Uint64() | 1<<63 // hi's sign bit set
		want := make([]float32, n)
		s := state
		cpukern.DropoutMask(want, &s, p)
		if adv := state + uint64((n+3)/4)*0x9e3779b97f4a7c15; s != adv {
			h.t.Fatalf("DropoutMask advanced the state to %#x, want %#x (ceil(n/4) draws)", s, adv)
		}
		mask := h.alloc(device.Float32, n)
		// The state at index 1 of a buffer of two.
		st := h.upInt([]int32{-1, -1, int32(uint32(state)), int32(uint32(state >> 32))})
		h.launch("dropout_mask", n, mask, st, 1, int32(p*65536), float32(1/(1-p)))
		compare(h.t, "dropout_mask", h.down(mask), f64(want), 0, 0)
	}
}
