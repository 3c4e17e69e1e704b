package devicetest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/window"
)

// Float64 references of the roll-out's head kernels (device/kernels/roll.cu):
// the MC-dropout key base of a plan and its keep flags from internal/rollout
// (DropoutBase, DropoutKeep: what infer's engines use), and models' ResBlock
// y = LayerNorm(x + keep·Swish(x·W + b)/(1-p)) in float64; the tail's U^ADM
// as rollout.UADM (population variance over k in double) and its sample as
// infer's Rollout draws it.

func init() {
	kernelTests["roll_drop_base"] = testRollDropBase
	kernelTests["roll_resblock"] = testRollResBlock
	kernelTests["roll_finish"] = testRollFinish
	kernelTests["roll_gather_cols"] = testRollGatherCols
	kernelTests["roll_push"] = testRollPush
	kernelTests["roll_act"] = testRollAct
	kernelTests["roll_done"] = testRollDone
}

// downInt downloads an int32 buffer.
func (h h) downInt(b device.Buffer) []int32 {
	h.t.Helper()
	x := make([]int32, b.Len())
	if err := h.d.DownloadInt32(x, b); err != nil {
		h.t.Fatalf("download int32: %v", err)
	}
	return x
}

// rollDropBases launches roll_drop_base for plans (row, k) and returns the
// device buffer.
func rollDropBases(h h, seed int64, step, row0 int, row, k []int32) device.Buffer {
	base := h.alloc(device.Int32, 2*len(row))
	h.launch("roll_drop_base", len(row), base, h.upInt(row), h.upInt(k), int32(uint32(seed)), int32(uint32(uint64(seed)>>32)),
		step, row0)
	return base
}

// testRollDropBase checks roll_drop_base bit for bit against
// rollout.DropoutBase over n plans, for several seeds (negative, past 32
// bits) and steps.
func testRollDropBase(h h, r *rand.Rand, n int, _ float64) {
	for _, c := range []struct {
		seed      int64
		step, row int
	}{{0, 0, 0}, {1, 3, 8192}, {-7, 14, 0}, {r.Int64(), 9, 131072 * 5}, {math.MaxInt64, 1 << 20, 1<<31 - 1 - n}} {
		row, k := make([]int32, n), make([]int32, n)
		for q := range n {
			row[q], k[q] = int32(r.IntN(n+1)), int32(1+r.IntN(5))
		}
		got := h.downInt(rollDropBases(h, c.seed, c.step, c.row, row, k))
		bad := 0
		for q := range n {
			want := rollout.DropoutBase(c.seed, c.step, c.row+int(row[q]), int(k[q]))
			g := uint64(uint32(got[2*q])) | uint64(uint32(got[2*q+1]))<<32
			if g != want {
				if bad++; bad <= 5 {
					h.t.Errorf("roll_drop_base seed %d step %d row %d k %d: %#x, want %#x", c.seed, c.step,
						c.row+int(row[q]), k[q], g, want)
				}
			}
		}
		if bad > 5 {
			h.t.Errorf("roll_drop_base seed %d step %d: %d of %d differ", c.seed, c.step, bad, n)
		}
	}
}

// resBlockRef is ResBlock blk's tail in float64 on row-major x, u [rows,
// hd]: w = x + mult·swish(u+b), y = (w-μ)/sqrt(σ²+eps)·γ+β with the
// population σ²; mult [rows, hd] (nil: 1) holds the row's dropout
// multipliers.
func resBlockRef(x, u, b, gamma, beta, mult []float32, rows, hd int, eps float64) []float64 {
	y := make([]float64, rows*hd)
	w := make([]float64, hd)
	for i := range rows {
		mu := 0.0
		for c := range hd {
			v := float64(u[i*hd+c]) + float64(b[c])
			s := v / (1 + math.Exp(-v))
			if mult != nil {
				s *= float64(mult[i*hd+c])
			}
			w[c] = float64(x[i*hd+c]) + s
			mu += w[c]
		}
		mu /= float64(hd)
		v := 0.0
		for c := range hd {
			v += (w[c] - mu) * (w[c] - mu)
		}
		inv := 1 / math.Sqrt(v/float64(hd)+eps)
		for c := range hd {
			y[i*hd+c] = (w[c]-mu)*inv*float64(gamma[c]) + float64(beta[c])
		}
	}
	return y
}

// testRollResBlock checks roll_resblock against resBlockRef over about n
// elements per case: hidden 1, 7 and 200, ld = rows and > rows, p 0 (no
// masks) and 0.1 (keep flags from rollout.DropoutKeep for the plan's key,
// unit blk·h+c, multiplier 1/(1-p)), blocks 0 and 3. Rows past rows keep
// their sentinel. For p 0.1 and h 200 it also reads the flags back exactly:
// with x 0, swish ≈ 10 and γ 1, β 0, a kept unit normalises above 0 and a
// dropped one below.
func testRollResBlock(h h, r *rand.Rand, n int, tol float64) {
	const eps = 1e-5
	const blocks = 4
	seed, step, row0 := r.Int64(), 1+r.IntN(20), r.IntN(1<<20)
	for _, hd := range []int{1, 7, 200} {
		rows := max(1, n/hd)
		for _, p := range []float64{0, 0.1} {
			for _, blk := range []int{0, 3} {
				ld := rows + 2
				if hd == 7 {
					ld = rows
				}
				x, u := randn(r, rows*hd, 1), randn(r, rows*hd, 1.5)
				b, gamma, beta := randn(r, hd, 0.3), randn(r, hd, 0.5), randn(r, hd, 0.2)
				for c := range gamma {
					gamma[c]++
				}
				row, k := make([]int32, rows), make([]int32, rows)
				for q := range rows {
					row[q], k[q] = int32(r.IntN(rows)), int32(1+r.IntN(5))
				}
				name := fmt.Sprintf("roll_resblock h=%d p=%g blk=%d", hd, p, blk)
				run := func(x, u, b, gamma, beta []float32) ([]float32, []float32) {
					var mult []float32
					base := h.alloc(device.Int32, 1)
					drop, thr, scale := 0, rollout.DropThreshold(p), float32(1)
					if p > 0 {
						drop, scale = 1, float32(1/(1-p))
						base = rollDropBases(h, seed, step, row0, row, k)
						mult = make([]float32, rows*hd)
						keep := make([]float32, blocks*hd)
						for q := range rows {
							rollout.DropoutKeep(seed, step, row0+int(row[q]), int(k[q]), p, keep)
							for c := range hd {
								mult[q*hd+c] = keep[blk*hd+c] * scale
							}
						}
					}
					xb := h.up(featureMajor(x, rows, hd, ld))
					h.launch("roll_resblock", rows, xb, h.up(featureMajor(u, rows, hd, ld)), h.up(b), h.up(gamma), h.up(beta), base,
						hd, ld, blk, int32(thr), scale, float32(eps), drop)
					return h.down(xb), mult
				}
				got, mult := run(x, u, b, gamma, beta)
				compare(h.t, name, got, featureMajor(resBlockRef(x, u, b, gamma, beta, mult, rows, hd, eps), rows, hd, ld), tol, tol)
				if p == 0 || hd != 200 {
					continue
				}
				// The flags themselves.
				ten, one, zero := make([]float32, rows*hd), make([]float32, hd), make([]float32, hd)
				for i := range ten {
					ten[i] = 10
				}
				for i := range one {
					one[i] = 1
				}
				got, mult = run(make([]float32, rows*hd), ten, zero, one, zero)
				bad := 0
				for q := range rows {
					for c := range hd {
						if g, w := got[c*ld+q] > 0, mult[q*hd+c] != 0; g != w {
							if bad++; bad <= 5 {
								h.t.Errorf("%s: row %d unit %d kept %v, rollout.DropoutKeep %v", name, q, c, g, w)
							}
						}
					}
				}
			}
		}
	}
}

// testRollFinish checks roll_finish over about n/od output rows against
// the closed form: row q continues window row slot[q] (m = 5 states of od
// = 11, lengths 1..m) with the drawn k; its plans (k' = 1..l with U^ADM,
// else the drawn one) sit at shuffled rows of o, the other plan indices
// -1 (never read). Plan means are the start state l-k' plus o + ob in
// float32; U is rollout.UADM over them; the drawn plan's log-variance is
// soft-clamped in double and the sample is mean + float32(exp(lv/2)·eps),
// the reward's likewise minus beta·U. Outputs start at row 3, the rows
// before keep their sentinel. Bad rows (slot past the window, k 0, a plan
// index past plans) get NaN and fin 0; an eps of 3.4e38 overflows a row's
// sample to +Inf, so fin 0.
func testRollFinish(h h, r *rand.Rand, n int, tol float64) {
	const od, m, off = 11, 5, 3
	const d = od + 1
	nq := max(1, n/od)
	rows := nq + 1
	lens := make([]int32, rows)
	for i := range lens {
		lens[i] = int32(1 + r.IntN(m))
	}
	S := randn(r, rows*m*od, 1)
	slot, kd := make([]int32, nq), make([]int32, nq)
	for q, p := range r.Perm(nq) {
		slot[q] = int32(p)
		kd[q] = int32(1 + r.IntN(int(lens[p])))
	}
	ob := randn(r, 2*d, 0.3)
	mx, mn := make([]float32, d), make([]float32, d)
	for c := range d {
		mx[c] = float32(0.5 + 0.5*r.Float64())
		mn[c] = float32(-10 + 2*r.Float64())
	}
	eps := randn(r, nq*d, 1)
	const beta = 0.7
	for _, wantU := range []int{0, 1} {
		// The plans and their rows of o, shuffled.
		pidx := make([]int32, nq*m)
		for i := range pidx {
			pidx[i] = -1
		}
		var plans int
		for q := range nq {
			lo, hi := int(kd[q]), int(kd[q])
			if wantU == 1 {
				lo, hi = 1, int(lens[slot[q]])
			}
			for k := lo; k <= hi; k++ {
				pidx[q*m+k-1] = int32(plans)
				plans++
			}
		}
		perm := r.Perm(plans)
		for i, v := range pidx {
			if v >= 0 {
				pidx[i] = int32(perm[v])
			}
		}
		o := randn(r, plans*2*d, 1)
		for i := range plans {
			for c := range d {
				o[i*2*d+d+c] = float32(r.NormFloat64() * 4)
			}
		}
		e := append([]float32(nil), eps...)
		sl, kk := append([]int32(nil), slot...), append([]int32(nil), kd...)
		if nq >= 5 {
			sl[1] = int32(rows + 2)
			kk[2] = 0
			pidx[3*m+int(kk[3])-1] = int32(plans)
			e[4*d] = 3.4e38
			o[int(pidx[4*m+int(kk[4])-1])*2*d+d] = 100 // lv at mx: exp(lv/2) > 1
		}
		const sent = rollSentinel
		next, mean := h.up(filled(off*od+nq*od, sent)), h.up(filled(off*od+nq*od, sent))
		rew, u := h.up(filled(off+nq, sent)), h.up(filled(off+nq, sent))
		fin := h.upInt(make([]int32, off+nq))
		h.launch("roll_finish", nq, h.up(o), h.up(ob), h.up(mx), h.up(mn), h.up(S), h.upInt(lens), h.upInt(sl), h.upInt(kk),
			h.upInt(pidx), h.up(e), next, rew, u, mean, fin, od, m, rows, plans, wantU, off, float32(beta))
		wNext, wMean := make([]float64, (off+nq)*od), make([]float64, (off+nq)*od)
		wRew, wU := make([]float64, off+nq), make([]float64, off+nq)
		wFin := make([]int32, off+nq)
		for i := range off * od {
			wNext[i], wMean[i] = sent, sent
		}
		for i := range off {
			wRew[i], wU[i] = sent, sent
		}
		plan := func(i, r, j0, c int) float32 { return S[(r*m+j0)*od+c] + (o[i*2*d+c] + ob[c]) }
		preds := make([]float32, m*od)
		for q := range nq {
			t := off + q
			row, k := int(sl[q]), int(kk[q])
			l := 0
			if row < rows {
				l = int(lens[row])
			}
			ok := k >= 1 && k <= l
			lo, hi := k, k
			if wantU == 1 {
				lo, hi = 1, l
			}
			for j := lo; ok && j <= hi; j++ {
				ok = pidx[q*m+j-1] >= 0 && int(pidx[q*m+j-1]) < plans
			}
			if !ok {
				for c := range od {
					wNext[t*od+c], wMean[t*od+c] = math.NaN(), math.NaN()
				}
				wRew[t], wU[t] = math.NaN(), math.NaN()
				continue
			}
			var uf float32
			if wantU == 1 {
				for j := 1; j <= l; j++ {
					for c := range od {
						preds[(j-1)*od+c] = plan(int(pidx[q*m+j-1]), row, l-j, c)
					}
				}
				uf = float32(rollout.UADM(preds[:l*od], l, od))
			}
			i := int(pidx[q*m+k-1])
			f := int32(1)
			for c := range d {
				mxc, mnc := float64(mx[c]), float64(mn[c])
				a := mxc - softplus64(mxc-float64(o[i*2*d+d+c]+ob[d+c]))
				lv := float32(mnc + softplus64(a-mnc))
				sd := float32(math.Exp(0.5*float64(lv)) * float64(e[q*d+c]))
				if c < od {
					mc := plan(i, row, l-k, c)
					x := mc + sd
					wMean[t*od+c], wNext[t*od+c] = float64(mc), float64(x)
					if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
						f = 0
					}
					continue
				}
				rw := (o[i*2*d+od] + ob[od]) + sd
				if wantU == 1 {
					rw -= beta * uf
				}
				wRew[t] = float64(rw)
			}
			wU[t], wFin[t] = float64(uf), f
		}
		name := fmt.Sprintf("roll_finish want_u=%d", wantU)
		compare(h.t, name+" next", h.down(next), wNext, tol, tol)
		compare(h.t, name+" mean", h.down(mean), wMean, tol, tol)
		compare(h.t, name+" rew", h.down(rew), wRew, tol, tol)
		compare(h.t, name+" u", h.down(u), wU, tol, tol)
		gotFin := h.downInt(fin)
		for q := range wFin {
			if gotFin[q] != wFin[q] {
				h.t.Errorf("%s fin[%d] = %d, want %d", name, q, gotFin[q], wFin[q])
			}
		}
		if nq >= 5 && wFin[off+4] != 0 {
			h.t.Errorf("%s: the overflowing row's reference is finite", name)
		}
	}
}

// filled returns n copies of v.
func filled(n int, v float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// testRollGatherCols checks roll_gather_cols over about n elements per
// width (1, 7, 200): rows gathered from a larger feature-major source (lds
// > rows_src) by indices with repeats, into ldd = rows and > rows; a
// negative index gives 0, one past rows_src NaN, the rows past rows keep
// their sentinel. It is a copy: exact.
func testRollGatherCols(h h, r *rand.Rand, n int, _ float64) {
	for _, w := range []int{1, 7, 200} {
		rows := max(1, n/w)
		rs := rows + 5
		lds, ldd := rs+1, rows+2
		if w == 7 {
			ldd = rows
		}
		src := randn(r, lds*w, 1)
		idx := make([]int32, rows)
		for i := range idx {
			idx[i] = int32(r.IntN(rs))
		}
		if rows >= 3 {
			idx[1], idx[2] = -1, int32(rs)
		}
		dst := h.up(filled(ldd*w, rollSentinel))
		h.launch("roll_gather_cols", rows*w, dst, h.up(src), h.upInt(idx), w, ldd, lds, rs)
		want := make([]float64, ldd*w)
		for i := range want {
			want[i] = rollSentinel
		}
		for c := range w {
			for i, j := range idx {
				if j < 0 {
					want[c*ldd+i] = 0
					continue
				}
				if int(j) >= rs {
					want[c*ldd+i] = math.NaN()
					continue
				}
				want[c*ldd+i] = float64(src[c*lds+int(j)])
			}
		}
		compare(h.t, fmt.Sprintf("roll_gather_cols w=%d", w), h.down(dst), want, 0, 0)
	}
}

// testRollPush checks roll_push exactly against internal/window's Push:
// a window of about n/3 rows (m 5, od 11, ad 3) with lengths 1..m (full
// rows shift), rows pushed in shuffled order, some with cont 0; bad slots
// (negative, past the window) and a row of length 0 change nothing.
func testRollPush(h h, r *rand.Rand, n int, _ float64) {
	const od, ad, m, off = 11, 3, 5, 2
	rows := n/3 + 2
	w := window.New(rows, m, od, ad)
	copy(w.S, randn(r, len(w.S), 1))
	copy(w.A, randn(r, len(w.A), 1))
	lens := make([]int32, rows)
	for i := range lens {
		w.Len[i] = 1 + r.IntN(m)
		if i%4 == 0 {
			w.Len[i] = m
		}
	}
	w.Len[rows-1] = 0
	for i := range lens {
		lens[i] = int32(w.Len[i])
	}
	S, A := h.up(w.S), h.up(w.A)
	L := h.upInt(lens)
	nq := rows
	slot, cont := make([]int32, nq), make([]int32, nq)
	for q, p := range r.Perm(rows) {
		slot[q] = int32(p)
		if r.IntN(5) > 0 {
			cont[q] = 1
		}
	}
	if nq >= 3 {
		slot[0], cont[0] = -1, 1
		slot[1], cont[1] = int32(rows+1), 1
	}
	next := randn(r, (off+nq)*od, 1)
	h.launch("roll_push", nq, S, A, L, h.upInt(slot), h.up(next), h.upInt(cont), od, ad, m, rows, off)
	for q := range nq {
		p := int(slot[q])
		if cont[q] == 0 || p < 0 || p >= rows || w.Len[p] < 1 {
			continue
		}
		w.Push(p, next[(off+q)*od:(off+q+1)*od])
	}
	compare(h.t, "roll_push s", h.down(S), f64(w.S), 0, 0)
	compare(h.t, "roll_push a", h.down(A), f64(w.A), 0, 0)
	got := h.downInt(L)
	for i := range rows {
		if int(got[i]) != w.Len[i] {
			h.t.Errorf("roll_push lens[%d] = %d, window %d", i, got[i], w.Len[i])
		}
	}
}

// testRollAct checks roll_act exactly against internal/window's SetAction:
// a window of about n/3 rows (m 5, ad 3) with lengths 1..m, rows set in
// shuffled order; bad slots and a row of length 0 change nothing.
func testRollAct(h h, r *rand.Rand, n int, _ float64) {
	const od, ad, m = 2, 3, 5
	rows := n/3 + 2
	w := window.New(rows, m, od, ad)
	copy(w.A, randn(r, len(w.A), 1))
	lens := make([]int32, rows)
	for i := range lens {
		w.Len[i] = 1 + r.IntN(m)
	}
	w.Len[rows-1] = 0
	for i := range lens {
		lens[i] = int32(w.Len[i])
	}
	A := h.up(w.A)
	slot := make([]int32, rows)
	for q, p := range r.Perm(rows) {
		slot[q] = int32(p)
	}
	if rows >= 3 {
		slot[0], slot[1] = -1, int32(rows+1)
	}
	act := randn(r, rows*ad, 1)
	h.launch("roll_act", rows, A, h.upInt(lens), h.upInt(slot), h.up(act), ad, m, rows)
	for q, p := range slot {
		if p >= 0 && int(p) < rows && w.Len[p] >= 1 {
			w.SetAction(int(p), act[q*ad:(q+1)*ad])
		}
	}
	compare(h.t, "roll_act a", h.down(A), f64(w.A), 0, 0)
}

// testRollDone checks roll_done exactly against !fin || host || spec.Eval
// over n rows of 6 values drawn about random specs' bounds: exactly at
// them (inclusive and not), either side, NaN and ±Inf, with a spec of
// every kind of range (abs, to the end, lo or hi or both), with and
// without Finite and the host's verdicts.
func testRollDone(h h, r *rand.Rand, n int, _ float64) {
	const od = 6
	spec := rollout.DoneSpec{Finite: r.IntN(2) == 0, Ranges: []rollout.Range{
		{Dim: 0, Lo: -1, Hi: 1, HasLo: true, HasHi: true},
		{Dim: 1, Lo: -0.5, HasLo: true, LoIncl: true},
		{Dim: 2, Hi: 0.25, HasHi: true, HiIncl: true},
		{Dim: 3, ToEnd: true, Abs: true, Hi: 2, HasHi: true},
	}}
	special := []float32{-1, 1, -0.5, 0.25, 2, -2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Nextafter32(1, 2), math.Nextafter32(-0.5, -1), math.Nextafter32(2, 0)}
	next := make([]float32, n*od)
	for i := range next {
		if r.IntN(20) == 0 {
			next[i] = special[r.IntN(len(special))]
		} else {
			next[i] = float32(r.NormFloat64() * 0.8)
		}
	}
	fin, host := make([]int32, n), make([]int32, n)
	for q := range n {
		if r.IntN(10) > 0 {
			fin[q] = 1
		}
		if r.IntN(10) == 0 {
			host[q] = 1
		}
	}
	var ints []int32
	var floats []float32
	for _, rg := range spec.Ranges {
		end, flags := rg.Dim+1, 0
		if rg.ToEnd {
			end = od
		}
		for i, f := range []bool{rg.Abs, rg.HasLo, rg.HasHi, rg.LoIncl, rg.HiIncl} {
			if f {
				flags |= 1 << i
			}
		}
		ints, floats = append(ints, int32(rg.Dim), int32(end), int32(flags)), append(floats, rg.Lo, rg.Hi)
	}
	finite := 0
	if spec.Finite {
		finite = 1
	}
	for useHost := range 2 {
		done, cont := h.alloc(device.Int32, n), h.alloc(device.Int32, n)
		h.launch("roll_done", n, done, cont, h.upInt(fin), h.up(next), h.upInt(host), h.upInt(ints), h.up(floats), od,
			len(spec.Ranges), finite, useHost)
		gd, gc := h.downInt(done), h.downInt(cont)
		bad := 0
		for q := range n {
			want := fin[q] == 0 || useHost == 1 && host[q] != 0 || spec.Eval(next[q*od:(q+1)*od])
			if (gd[q] != 0) != want || (gc[q] != 0) == want {
				if bad++; bad <= 5 {
					h.t.Errorf("roll_done row %d (fin %d, host %d, use_host %d, %v): done %d cont %d, want done %v",
						q, fin[q], host[q], useHost, next[q*od:(q+1)*od], gd[q], gc[q], want)
				}
			}
		}
	}
}
