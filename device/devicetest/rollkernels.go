package devicetest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/admpo/admpo/device"
)

// Float64 references of the roll-out's GRU kernels (device/kernels/roll.cu),
// written from package models' GRULayer equations (PyTorch's, gate order r,
// z, n) on the whole input x and the previous state h:
//
//	r = σ(x·Wi_r + bi_r + h·Wh_r + bh_r), z likewise
//	n = tanh(x·Wi_n + bi_n + r·(h·Wh_n + bh_n)), h' = (1-z)·n + z·h
//
// The device side runs the roll-out's launches: cuBLAS-style products into
// feature-major [rows, 3h] buffers ((row r, unit c) at c·ld + r), then the
// kernel. Each test takes a first step from a zero state (the recurrent
// operands then are 1-element buffers: never read, and the registry does
// not ask for more) and a second from the first's result, for hidden sizes
// 1, 7 and 200, with ld = rows and ld > rows; the rows past rows of every
// unit must keep their sentinel.

func init() {
	kernelTests["roll_gru0"] = func(h h, r *rand.Rand, n int, tol float64) { testRollGRU(h, r, n, tol, true) }
	kernelTests["roll_gru"] = func(h h, r *rand.Rand, n int, tol float64) { testRollGRU(h, r, n, tol, false) }
}

// rollSentinel fills the unused rows of feature-major outputs.
const rollSentinel = 7.25

// gruRef is one GRU step in float64: x [rows, in] and prev [rows, hd]
// (nil: a zero state) row-major, wi [in, 3hd] and wh [hd, 3hd] row-major;
// it returns h' [rows, hd] row-major.
func gruRef(x []float32, rows, in int, wi, bi []float32, prev, wh, bh []float32, hd int) []float64 {
	out := make([]float64, rows*hd)
	gi, gh := make([]float64, 3*hd), make([]float64, 3*hd)
	for i := range rows {
		for c := range 3 * hd {
			s := 0.0
			for k := range in {
				s += float64(x[i*in+k]) * float64(wi[k*3*hd+c])
			}
			gi[c] = s + float64(bi[c])
			s = 0
			if prev != nil {
				for k := range hd {
					s += float64(prev[i*hd+k]) * float64(wh[k*3*hd+c])
				}
			}
			gh[c] = s + float64(bh[c])
		}
		for c := range hd {
			rg := sigmoid(gi[c] + gh[c])
			z := sigmoid(gi[hd+c] + gh[hd+c])
			nn := math.Tanh(gi[2*hd+c] + rg*gh[2*hd+c])
			hp := 0.0
			if prev != nil {
				hp = float64(prev[i*hd+c])
			}
			out[i*hd+c] = (1-z)*nn + z*hp
		}
	}
	return out
}

// featureMajor returns row-major x [rows, w] at c·ld + r of an ld·w
// buffer, the other rows set to the sentinel.
func featureMajor(x []float32, rows, w, ld int) []float32 {
	y := make([]float32, ld*w)
	for i := range y {
		y[i] = rollSentinel
	}
	for i := range rows {
		for c := range w {
			y[c*ld+i] = x[i*w+c]
		}
	}
	return y
}

// rowMajor is featureMajor's inverse.
func rowMajor(y []float32, rows, w, ld int) []float32 {
	x := make([]float32, rows*w)
	for i := range rows {
		for c := range w {
			x[i*w+c] = y[c*ld+i]
		}
	}
	return x
}

// wantFM is the expected feature-major output: ref [rows, w] row-major,
// the sentinel past rows.
func wantFM(ref []float64, rows, w, ld int) []float64 {
	y := make([]float64, ld*w)
	for i := range y {
		y[i] = rollSentinel
	}
	for i := range rows {
		for c := range w {
			y[c*ld+i] = ref[i*w+c]
		}
	}
	return y
}

// testRollGRU checks roll_gru0 (layer 0: obs through a product, the
// actions' ad terms in the kernel) or roll_gru (a layer ≥ 1 from two
// products) over about n elements per hidden size.
func testRollGRU(h h, r *rand.Rand, n int, tol float64, layer0 bool) {
	const od, ad = 11, 3
	for _, hd := range []int{1, 7, 200} {
		rows := max(1, n/hd)
		ld := rows + 3
		if hd == 7 {
			ld = rows
		}
		in := hd
		if layer0 {
			in = od + ad
		}
		wi, bi := randn(r, in*3*hd, 1/math.Sqrt(float64(in))), randn(r, 3*hd, 0.5)
		wh, bh := randn(r, hd*3*hd, 1/math.Sqrt(float64(hd))), randn(r, 3*hd, 0.5)
		// x [rows, in] row-major for the reference; layer 0's actions of
		// step j are rows j·rows.. of acts, as actN [m][n][ad].
		obs, acts := randn(r, rows*od, 1), randn(r, 2*rows*ad, 1)
		xin := randn(r, rows*hd, 1)
		x := func(step int) []float32 {
			if !layer0 {
				return xin
			}
			x := make([]float32, rows*in)
			for i := range rows {
				copy(x[i*in:], obs[i*od:(i+1)*od])
				copy(x[i*in+od:], acts[(step*rows+i)*ad:(step*rows+i+1)*ad])
			}
			return x
		}
		wiB, biB, whB, bhB := h.up(wi), h.up(bi), h.up(wh), h.up(bh)
		gi := h.alloc(device.Float32, ld*3*hd)
		var actB, waB device.Buffer
		if layer0 {
			// p0 = obs·Wi[:od]: obs row-major is obsᵀ column-major.
			actB, waB = h.up(acts), h.up(wi[od*3*hd:])
			if err := h.d.Gemm(true, true, rows, 3*hd, od, 1, h.up(obs), od, h.up(wi[:od*3*hd]), 3*hd, 0, gi, ld); err != nil {
				h.t.Fatal(err)
			}
		} else {
			// gi = x·Wi with x feature-major.
			if err := h.d.Gemm(false, true, rows, 3*hd, hd, 1, h.up(featureMajor(xin, rows, hd, ld)), ld, wiB, 3*hd, 0, gi, ld); err != nil {
				h.t.Fatal(err)
			}
		}
		step := func(prev, gh, out device.Buffer, s, hasPrev int) {
			if layer0 {
				h.launch("roll_gru0", rows*hd, gi, actB, waB, biB, gh, bhB, prev, out, hd, ld, ad, s*rows*ad, hasPrev)
			} else {
				h.launch("roll_gru", rows*hd, gi, biB, gh, bhB, prev, out, hd, ld, hasPrev)
			}
		}
		name := "roll_gru"
		if layer0 {
			name = "roll_gru0"
		}
		name += fmt.Sprintf(" h=%d", hd)
		// A first step: zero state, the recurrent operands never read.
		one := h.up([]float32{float32(math.NaN())})
		h1 := h.up(featureMajor(nil, 0, hd, ld))
		step(one, one, h1, 0, 0)
		got1 := h.down(h1)
		compare(h.t, name+" first step", got1, wantFM(gruRef(x(0), rows, in, wi, bi, nil, wh, bh, hd), rows, hd, ld), tol, tol)
		// A second step from the first's state: gh = h·Wh, h feature-major.
		gh := h.alloc(device.Float32, ld*3*hd)
		if err := h.d.Gemm(false, true, rows, 3*hd, hd, 1, h1, ld, whB, 3*hd, 0, gh, ld); err != nil {
			h.t.Fatal(err)
		}
		prev := rowMajor(got1, rows, hd, ld)
		want := wantFM(gruRef(x(1), rows, in, wi, bi, prev, wh, bh, hd), rows, hd, ld)
		if layer0 {
			// In place, from the next step's actions.
			step(h1, gh, h1, 1, 1)
			compare(h.t, name+" second step in place", h.down(h1), want, tol, tol)
		} else {
			h2 := h.up(featureMajor(nil, 0, hd, ld))
			step(h1, gh, h2, 0, 1)
			compare(h.t, name+" second step", h.down(h2), want, tol, tol)
		}
	}
}
