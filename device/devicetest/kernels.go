package devicetest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/admpo/admpo/device"
)

// Options tunes the suite to an implementation.
type Options struct {
	// Tol is the relative tolerance of float32 results against the float64
	// references (1e-5 on emu; a GPU may fuse multiply-adds and order sums
	// differently).
	Tol float64
	// Large is the largest element count of the kernel tests (besides 1
	// and 257): on a GPU more than one pass of a capped grid covers
	// (1<<20 + 3 by default); emu gains nothing from a large one.
	Large int
}

// kernelTests checks each kernel of device.Kernels over n elements.
var kernelTests = map[string]func(h h, r *rand.Rand, n int, tol float64){
	"fill": func(h h, r *rand.Rand, n int, tol float64) {
		x := h.up(randn(r, n, 1))
		h.launch("fill", n, x, float32(-2.5))
		want := make([]float64, n)
		for i := range want {
			want[i] = -2.5
		}
		compare(h.t, "fill", h.down(x), want, 0, 0)
	},
	"scale": func(h h, r *rand.Rand, n int, tol float64) {
		x0 := randn(r, n, 1)
		x := h.up(x0)
		h.launch("scale", n, x, float32(0.37))
		want := make([]float64, n)
		for i, v := range x0 {
			want[i] = float64(v) * float64(float32(0.37))
		}
		compare(h.t, "scale", h.down(x), want, tol, 0)
	},
	"axpy": func(h h, r *rand.Rand, n int, tol float64) {
		x0, y0 := randn(r, n, 1), randn(r, n, 1)
		x, y := h.up(x0), h.up(y0)
		h.launch("axpy", n, float32(-1.75), x, y)
		want := make([]float64, n)
		for i := range want {
			want[i] = float64(y0[i]) - 1.75*float64(x0[i])
		}
		compare(h.t, "axpy", h.down(y), want, tol, tol)
		compare(h.t, "axpy x", h.down(x), f64(x0), 0, 0)
	},
	"polyak": func(h h, r *rand.Rand, n int, tol float64) {
		d0, s0 := randn(r, n, 1), randn(r, n, 1)
		dst, src := h.up(d0), h.up(s0)
		tau := float32(0.005)
		h.launch("polyak", n, dst, src, tau)
		want := make([]float64, n)
		for i := range want {
			want[i] = (1-float64(tau))*float64(d0[i]) + float64(tau)*float64(s0[i])
		}
		compare(h.t, "polyak", h.down(dst), want, tol, tol*1e-2)
		compare(h.t, "polyak src", h.down(src), f64(s0), 0, 0)
	},
	"gather_rows": func(h h, r *rand.Rand, n int, tol float64) {
		cols := 3
		rows := (n + cols - 1) / cols
		srcRows := rows/2 + 5
		s0 := randn(r, srcRows*cols, 1)
		idx := make([]int32, rows)
		for i := range idx {
			idx[i] = int32(r.IntN(srcRows))
		}
		// Out-of-range indices give NaN rows.
		idx[rows-1] = int32(srcRows)
		if rows > 2 {
			idx[rows/2] = -1
		}
		src, ib, dst := h.up(s0), h.upInt(idx), h.alloc(device.Float32, rows*cols)
		h.launch("gather_rows", rows*cols, dst, src, ib, int32(cols), int32(srcRows))
		want := make([]float64, rows*cols)
		for i := range rows {
			for c := range cols {
				if s := int(idx[i]); s >= 0 && s < srcRows {
					want[i*cols+c] = float64(s0[s*cols+c])
				} else {
					want[i*cols+c] = math.NaN()
				}
			}
		}
		compare(h.t, "gather_rows", h.down(dst), want, 0, 0)
	},
	"bias_add": func(h h, r *rand.Rand, n int, tol float64) {
		cols := 7
		rows := (n + cols - 1) / cols
		y0, b0 := randn(r, rows*cols, 1), randn(r, cols, 1)
		y, b := h.up(y0), h.up(b0)
		h.launch("bias_add", rows*cols, y, b, cols)
		want := make([]float64, rows*cols)
		for i := range want {
			want[i] = float64(y0[i]) + float64(b0[i%cols])
		}
		compare(h.t, "bias_add", h.down(y), want, tol, tol)
	},
	"bias_relu": func(h h, r *rand.Rand, n int, tol float64) {
		cols := 5
		rows := (n + cols - 1) / cols
		y0, b0 := randn(r, rows*cols, 1), randn(r, cols, 1)
		y, b := h.up(y0), h.up(b0)
		h.launch("bias_relu", rows*cols, y, b, int32(cols))
		want := make([]float64, rows*cols)
		for i := range want {
			want[i] = max(0, float64(y0[i])+float64(b0[i%cols]))
		}
		compare(h.t, "bias_relu", h.down(y), want, tol, tol)
	},
	"relu_grad": func(h h, r *rand.Rand, n int, tol float64) {
		dy0, y0 := randn(r, n, 1), randn(r, n, 1)
		for i := range y0 {
			if y0[i] < 0 || i%11 == 0 {
				y0[i] = 0 // a ReLU's output: zero or positive
			}
		}
		dy, y := h.up(dy0), h.up(y0)
		h.launch("relu_grad", n, dy, y)
		want := make([]float64, n)
		for i := range want {
			if y0[i] > 0 {
				want[i] = float64(dy0[i])
			}
		}
		compare(h.t, "relu_grad", h.down(dy), want, 0, 0)
	},
	"col_sum": func(h h, r *rand.Rand, n int, tol float64) {
		cols := min(n, 300)
		rows := max(1, n/cols)
		x0 := randn(r, rows*cols, 1)
		x, out := h.up(x0), h.up(randn(r, cols, 1))
		h.launch("col_sum", cols, x, out, rows)
		want := make([]float64, cols)
		for i := range rows {
			for c := range cols {
				want[c] += float64(x0[i*cols+c])
			}
		}
		// Sums of rows terms of size ~1: the error grows with rows.
		compare(h.t, "col_sum", h.down(out), want, tol, tol*math.Sqrt(float64(rows)))
	},
	"mse_grad": func(h h, r *rand.Rand, n int, tol float64) {
		p0, t0 := randn(r, n, 1), randn(r, n, 1)
		p, tg, g := h.up(p0), h.up(t0), h.alloc(device.Float32, n)
		scale := float32(2 / float64(n))
		h.launch("mse_grad", n, p, tg, g, scale)
		want := make([]float64, n)
		for i := range want {
			want[i] = float64(scale) * (float64(p0[i]) - float64(t0[i]))
		}
		compare(h.t, "mse_grad", h.down(g), want, tol, tol*float64(scale))
	},
	"sq_err": func(h h, r *rand.Rand, n int, tol float64) {
		p0, t0 := randn(r, n, 1), randn(r, n, 1)
		p, tg, o := h.up(p0), h.up(t0), h.alloc(device.Float32, n)
		h.launch("sq_err", n, p, tg, o)
		want := make([]float64, n)
		for i := range want {
			d := float64(p0[i]) - float64(t0[i])
			want[i] = d * d
		}
		compare(h.t, "sq_err", h.down(o), want, tol, tol)
	},
	"adam": func(h h, r *rand.Rand, n int, tol float64) {
		for _, wd := range []float64{0, 0.01} {
			testAdam(h, r, n, tol, wd, false)
		}
		testAdamFlush(h, n, false)
	},
	"adam_k": func(h h, r *rand.Rand, n int, tol float64) {
		for _, wd := range []float64{0, 0.01} {
			testAdam(h, r, n, tol, wd, true)
		}
		testAdamFlush(h, n, true)
	},
}

// testAdamFlush checks that a new moment below the smallest normal float32
// is stored as +0 and one at or above it is kept (the CPU's Adam does the
// same, internal/cpukern): zero gradients, moments that one decay step takes
// just below or keeps just above the smallest normal, subnormal ones.
func testAdamFlush(h h, n int, fromBuffer bool) {
	const minNormal = 0x1p-126
	seeds := []float32{1.05 * minNormal, -1.05 * minNormal, 2 * minNormal, -2 * minNormal, 0x1p-130, 1e-30}
	m0, v0, p0 := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range m0 {
		m0[i] = seeds[i%len(seeds)]
		v0[i] = float32(math.Abs(float64(seeds[(i+2)%len(seeds)])))
		p0[i] = 1
	}
	p, g, m, v := h.up(p0), h.alloc(device.Float32, n), h.up(m0), h.up(v0)
	if err := h.d.Upload(g, make([]float32, n)); err != nil {
		h.t.Fatal(err)
	}
	c := device.AdamK(7, 1e-3)
	if fromBuffer {
		h.launch("adam_k", n, p, g, m, v, h.up(c))
	} else {
		h.launch("adam", n, p, g, m, v, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
	}
	want := func(x0, beta float32) float32 {
		x := beta * x0
		if math.Abs(float64(x)) < minNormal {
			return 0
		}
		return x
	}
	gm, gv := h.down(m), h.down(v)
	for i := range gm {
		if wm, wv := want(m0[i], c[0]), want(v0[i], c[2]); math.Float32bits(gm[i]) != math.Float32bits(wm) || math.Float32bits(gv[i]) != math.Float32bits(wv) {
			h.t.Fatalf("adam flush, element %d: moments %g, %g from %g, %g; want %g, %g", i, gm[i], gv[i], m0[i], v0[i], wm, wv)
		}
	}
}

// testAdam takes three Adam steps with PyTorch's formula in float64:
// m̂ = m/(1-β1^t), v̂ = v/(1-β2^t), p -= lr·m̂/(sqrt(v̂)+eps); with
// fromBuffer through adam_k, each step's constants uploaded first.
func testAdam(h h, r *rand.Rand, n int, tol, wd float64, fromBuffer bool) {
	const lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8
	p0 := randn(r, n, 1)
	p, g := h.up(p0), h.alloc(device.Float32, n)
	m, v := h.alloc(device.Float32, n), h.alloc(device.Float32, n)
	pr, mr, vr := f64(p0), make([]float64, n), make([]float64, n)
	for t := 1; t <= 3; t++ {
		g0 := randn(r, n, 1)
		// Some gradients as small as eps, so that eps shows in the step.
		for i := 0; i < n; i += 5 {
			g0[i] *= 1e-8
		}
		if err := h.d.Upload(g, g0); err != nil {
			h.t.Fatal(err)
		}
		c := device.AdamK(t, lr) // β1 0.9, β2 0.999, eps 1e-8, as b1, b2, eps here
		c[7] = float32(wd)
		if fromBuffer {
			h.launch("adam_k", n, p, g, m, v, h.up(c))
		} else {
			h.launch("adam", n, p, g, m, v, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
		}
		for i := range pr {
			gi := float64(g0[i]) + wd*pr[i]
			mr[i] = b1*mr[i] + (1-b1)*gi
			vr[i] = b2*vr[i] + (1-b2)*gi*gi
			mh := mr[i] / (1 - math.Pow(b1, float64(t)))
			vh := vr[i] / (1 - math.Pow(b2, float64(t)))
			pr[i] -= lr * mh / (math.Sqrt(vh) + eps)
		}
	}
	// Each step moves p by about lr: allow tol of that per step, plus the
	// rounding of p itself to float32.
	got := h.down(p)
	compare(h.t, "adam p", got, pr, 3e-7, 3*lr*tol)
	compare(h.t, "adam m", h.down(m), mr, tol, tol*1e-2)
	compare(h.t, "adam v", h.down(v), vr, tol, tol*1e-3)
}

// testKernels runs kernelTests and fails for a kernel without a test.
func testKernels(t *testing.T, d device.Device, o Options) {
	for _, k := range device.Kernels() {
		test, ok := kernelTests[k.Name]
		if !ok {
			t.Errorf("kernel %s has no test in devicetest", k.Name)
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(k.Name))))
			large := o.Large
			if large == 0 {
				large = 1<<20 + 3
			}
			for _, n := range []int{1, 257, large} {
				t.Run(sizeName(n), func(t *testing.T) { test(h{t, d}, r, n, o.Tol) })
			}
		})
	}
}
