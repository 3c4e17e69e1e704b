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
	kernelTests["roll_plan_in"] = testRollPlanIn
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
// buffer, the other rows set to the sentinel: a kernel's input, or the
// expected feature-major output of a float64 reference.
func featureMajor[T float32 | float64](x []T, rows, w, ld int) []T {
	y := make([]T, ld*w)
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
		h1 := h.up(featureMajor[float32](nil, 0, hd, ld))
		step(one, one, h1, 0, 0)
		got1 := h.down(h1)
		compare(h.t, name+" first step", got1, featureMajor(gruRef(x(0), rows, in, wi, bi, nil, wh, bh, hd), rows, hd, ld), tol, tol)
		// A second step from the first's state: gh = h·Wh, h feature-major.
		gh := h.alloc(device.Float32, ld*3*hd)
		if err := h.d.Gemm(false, true, rows, 3*hd, hd, 1, h1, ld, whB, 3*hd, 0, gh, ld); err != nil {
			h.t.Fatal(err)
		}
		prev := rowMajor(got1, rows, hd, ld)
		want := featureMajor(gruRef(x(1), rows, in, wi, bi, prev, wh, bh, hd), rows, hd, ld)
		if layer0 {
			// In place, from the next step's actions.
			step(h1, gh, h1, 1, 1)
			compare(h.t, name+" second step in place", h.down(h1), want, tol, tol)
		} else {
			h2 := h.up(featureMajor[float32](nil, 0, hd, ld))
			step(h1, gh, h2, 0, 1)
			compare(h.t, name+" second step", h.down(h2), want, tol, tol)
		}
	}
}

// testRollPlanIn gathers n plans from a window of m = 5 states a row with
// lengths 0..m, as infer's ADMDirect builds its inputs: plan (slot, k)
// starts from the row's state l-k and takes its actions l-k..l-1, z-scored
// with models' normalisation; steps past k are zeros. Bad plans (slot out
// of range, k 0 or past the row's length, an empty row) get NaN inputs.
func testRollPlanIn(h h, r *rand.Rand, n int, tol float64) {
	const od, ad, m = 11, 3, 5
	rows := n/3 + 2
	lens := make([]int32, rows)
	for i := range lens {
		lens[i] = int32(1 + r.IntN(m))
	}
	lens[rows-1] = 0
	S, A := randn(r, rows*m*od, 1), randn(r, rows*m*ad, 1)
	mean := randn(r, od+ad, 1)
	std := make([]float32, od+ad)
	for i := range std {
		std[i] = float32(0.5 + 1.5*r.Float64())
	}
	slot, kk := make([]int32, n), make([]int32, n)
	for q := range n {
		slot[q] = int32(r.IntN(rows - 1))
		kk[q] = int32(1 + r.IntN(int(lens[slot[q]])))
	}
	if n >= 6 {
		slot[1] = int32(rows)           // past the window
		slot[2] = -1                    // negative
		slot[3] = int32(rows - 1)       // an empty row
		kk[4] = 0                       // k = 0
		kk[5] = lens[slot[5]] + 1       // k past the row's length
		slot[n-1], kk[n-1] = 0, lens[0] // the longest plan of row 0
	}
	obsN, actN := h.alloc(device.Float32, n*od), h.alloc(device.Float32, m*n*ad)
	h.launch("roll_plan_in", n, obsN, actN, h.up(S), h.up(A), h.upInt(lens), h.upInt(slot), h.upInt(kk), h.up(mean),
		h.up(std), od, ad, m, rows)
	wantObs, wantAct := make([]float64, n*od), make([]float64, m*n*ad)
	z := func(x float32, c int) float64 { return (float64(x) - float64(mean[c])) / float64(std[c]) }
	for q := range n {
		s, k := int(slot[q]), int(kk[q])
		l := 0
		if s >= 0 && s < rows {
			l = int(lens[s])
		}
		if l < 1 || k < 1 || k > l {
			for c := range od {
				wantObs[q*od+c] = math.NaN()
			}
			for j := range m {
				for c := range ad {
					wantAct[(j*n+q)*ad+c] = math.NaN()
				}
			}
			continue
		}
		for c := range od {
			wantObs[q*od+c] = z(S[(s*m+l-k)*od+c], c)
		}
		for j := range k {
			for c := range ad {
				wantAct[(j*n+q)*ad+c] = z(A[(s*m+l-k+j)*ad+c], od+c)
			}
		}
	}
	compare(h.t, "roll_plan_in obs", h.down(obsN), wantObs, tol, tol)
	compare(h.t, "roll_plan_in act", h.down(actN), wantAct, tol, tol)
}
