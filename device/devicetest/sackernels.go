package devicetest

import (
	"math"
	"math/rand/v2"

	"github.com/admpo/admpo/device"
)

// Float64 references of the SAC kernels (device/kernels/sac.cu), written
// from the math rather than from the kernels' operation order: the
// log-density's tanh correction as -2·log cosh x and its derivative as
// 2·tanh x.

const sacAD = 3 // action columns in the kernel tests

// sacLS is the soft clamp of the log-std into [-5, 2] as the kernels
// take it: (half, offset).
var sacLS = [2]float32{3.5, -1.5}

func init() {
	kernelTests["sac_head"] = testSACHead
	kernelTests["sac_head_grad"] = testSACHeadGrad
	kernelTests["sac_target"] = func(h h, r *rand.Rand, n int, tol float64) {
		rew, q1, q2, logp := randn(r, n, 1), randn(r, n, 3), randn(r, n, 3), randn(r, n, 2)
		term := make([]float32, n)
		for i := range term {
			if r.IntN(4) == 0 {
				term[i] = 1
			}
		}
		la := float32(math.Log(0.3))
		y := h.alloc(device.Float32, n)
		h.launch("sac_target", n, y, h.up(rew), h.up(term), h.up(q1), h.up(q2), h.up(logp), h.up([]float32{la}), float32(0.99))
		want := make([]float64, n)
		alpha := math.Exp(float64(la))
		for i := range want {
			v := math.Min(float64(q1[i]), float64(q2[i])) - alpha*float64(logp[i])
			want[i] = float64(rew[i]) + 0.99*(1-float64(term[i]))*v
		}
		compare(h.t, "sac_target", h.down(y), want, tol, tol*4)
	}
	kernelTests["sac_actor_loss"] = func(h h, r *rand.Rand, n int, tol float64) {
		q1, q2, logp := randn(r, n, 3), randn(r, n, 3), randn(r, n, 2)
		if n > 2 {
			q2[1] = q1[1] // a tie goes to q1
		}
		la := float32(math.Log(0.2))
		dq1, dq2, rl := h.alloc(device.Float32, n), h.alloc(device.Float32, n), h.alloc(device.Float32, n)
		inv := float32(1 / float64(n))
		h.launch("sac_actor_loss", n, h.up(q1), h.up(q2), h.up(logp), h.up([]float32{la}), dq1, dq2, rl, inv)
		alpha := math.Exp(float64(la))
		w1, w2, wl := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range wl {
			wl[i] = alpha*float64(logp[i]) - math.Min(float64(q1[i]), float64(q2[i]))
			if q1[i] <= q2[i] {
				w1[i] = -float64(inv)
			} else {
				w2[i] = -float64(inv)
			}
		}
		compare(h.t, "sac_actor_loss row_loss", h.down(rl), wl, tol, tol*4)
		compare(h.t, "sac_actor_loss dq1", h.down(dq1), w1, 0, 0)
		compare(h.t, "sac_actor_loss dq2", h.down(dq2), w2, 0, 0)
	}
	kernelTests["sac_alpha_grad"] = func(h h, r *rand.Rand, n int, tol float64) {
		if n != 1 {
			return // one element by definition
		}
		sum, la := float32(-0.75*256), float32(math.Log(0.2))
		g, loss := h.alloc(device.Float32, 1), h.alloc(device.Float32, 1)
		h.launch("sac_alpha_grad", 1, g, loss, h.up([]float32{sum}), h.up([]float32{la}), 256, float32(-3))
		m := -0.75 - 3
		compare(h.t, "sac_alpha_grad grad", h.down(g), []float64{-m}, tol, 0)
		compare(h.t, "sac_alpha_grad loss", h.down(loss), []float64{-float64(la) * m}, tol, 0)
	}
	kernelTests["concat_cols"] = func(h h, r *rand.Rand, n int, tol float64) {
		ca, cb := 4, 3
		rows := (n + 6) / 7
		a, b := randn(r, rows*ca, 1), randn(r, rows*cb, 1)
		dst := h.alloc(device.Float32, rows*(ca+cb))
		h.launch("concat_cols", rows*(ca+cb), dst, h.up(a), h.up(b), ca, cb)
		want := make([]float64, 0, rows*(ca+cb))
		for i := range rows {
			want = append(append(want, f64(a[i*ca:(i+1)*ca])...), f64(b[i*cb:(i+1)*cb])...)
		}
		compare(h.t, "concat_cols", h.down(dst), want, 0, 0)
	}
	kernelTests["take_cols"] = func(h h, r *rand.Rand, n int, tol float64) {
		w, scols, off := 3, 14, 11
		rows := (n + 2) / 3
		src, d0 := randn(r, rows*scols, 1), randn(r, rows*w, 1)
		for _, acc := range []int{0, 1} {
			dst := h.up(d0)
			h.launch("take_cols", rows*w, dst, h.up(src), w, scols, off, acc)
			want := make([]float64, rows*w)
			for i := range rows {
				for c := range w {
					want[i*w+c] = float64(src[i*scols+off+c]) + float64(acc)*float64(d0[i*w+c])
				}
			}
			compare(h.t, "take_cols", h.down(dst), want, tol, tol)
		}
	}
}

// logCosh is log(cosh x), stable for large |x|.
func logCosh(x float64) float64 {
	a := math.Abs(x)
	return a + math.Log1p(math.Exp(-2*a)) - math.Ln2
}

func testSACHead(h h, r *rand.Rand, n int, tol float64) {
	ad := sacAD
	out, eps := randn(r, n*2*ad, 1.5), randn(r, n*ad, 1)
	scale, bias := []float32{1, 2, 0.5}, []float32{0, -0.5, 0.25}
	half, off := sacLS[0], sacLS[1]
	lc := float32(float64(ad) * (-0.5*math.Log(2*math.Pi) - 2*math.Ln2))
	action, logp := h.alloc(device.Float32, n*ad), h.alloc(device.Float32, n)
	xs, ths := h.alloc(device.Float32, n*ad), h.alloc(device.Float32, n*ad)
	h.launch("sac_head", n, h.up(out), h.up(eps), h.up(scale), h.up(bias), action, logp, xs, ths, ad, half, off, lc)
	wa, wl, wx, wt := make([]float64, n*ad), make([]float64, n), make([]float64, n*ad), make([]float64, n*ad)
	for i := range n {
		s := -float64(ad) * 0.5 * math.Log(2*math.Pi)
		for j := range ad {
			u, t, e := float64(out[i*2*ad+j]), float64(out[i*2*ad+ad+j]), float64(eps[i*ad+j])
			ls := -5 + 3.5*(math.Tanh(t)+1)
			x := u + math.Exp(ls)*e
			wa[i*ad+j] = math.Tanh(x)*float64(scale[j]) + float64(bias[j])
			wx[i*ad+j], wt[i*ad+j] = x, math.Tanh(t)
			// log N(x; u, std) - log(1 - tanh²x), 1 - tanh²x = 1/cosh²x.
			s += -e*e/2 - ls + 2*logCosh(x)
		}
		wl[i] = s
	}
	compare(h.t, "sac_head action", h.down(action), wa, tol, tol*4)
	compare(h.t, "sac_head x", h.down(xs), wx, tol, tol*4)
	compare(h.t, "sac_head th", h.down(ths), wt, tol, tol)
	compare(h.t, "sac_head logp", h.down(logp), wl, tol, tol*50)
}

func testSACHeadGrad(h h, r *rand.Rand, n int, tol float64) {
	ad := sacAD
	dact, eps, x := randn(r, n*ad, 1), randn(r, n*ad, 1), randn(r, n*ad, 2)
	th := randn(r, n*ad, 1)
	for i := range th {
		th[i] = float32(math.Tanh(float64(th[i])))
	}
	scale := []float32{1, 2, 0.5}
	half, off := sacLS[0], sacLS[1]
	la := float32(math.Log(0.1))
	inv := float32(1.0 / 256)
	dout := h.alloc(device.Float32, n*2*ad)
	h.launch("sac_head_grad", n, h.up(dact), h.up(eps), h.up(scale), h.up(x), h.up(th), h.up([]float32{la}), dout,
		ad, half, off, inv)
	g := math.Exp(float64(la)) * float64(inv) // d loss / d logp per row
	want := make([]float64, n*2*ad)
	for i := range n {
		for j := range ad {
			k := i*ad + j
			xv, t, e := float64(x[k]), float64(th[k]), float64(eps[k])
			y := math.Tanh(xv)
			// logp = ... - logstd + 2·log cosh x: d/dx = 2·tanh x.
			dx := float64(dact[k])*float64(scale[j])*(1-y*y) + g*2*y
			ls := t*float64(half) + float64(off)
			dls := dx*math.Exp(ls)*e - g
			want[i*2*ad+j] = dx
			want[i*2*ad+ad+j] = dls * float64(half) * (1 - t*t)
		}
	}
	compare(h.t, "sac_head_grad", h.down(dout), want, tol, tol*10)
}
