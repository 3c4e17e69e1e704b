package emu

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/rolldev/rolldevtest"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/models"
)

// TestRollDropoutKeepMatchesInfer: the keep flags roll_resblock applies,
// from roll_drop_base's states, are infer.DropoutKeep's bit for bit, for
// several seeds, roll-out steps, chunk rows and k, every block of 4 at
// hidden 200, p 0.1 and 0.5. The flags are read back exactly: with x 0,
// x·W + b = 10 (swish ≈ 10), γ 1 and β 0 a kept unit normalises above 0
// and a dropped one below. At p 0 (threshold 0) the masked launch equals
// the unmasked one bit for bit. The device's states are checked against
// rollout.DropoutBase, the keying infer.DropoutKeep draws from.
func TestRollDropoutKeepMatchesInfer(t *testing.T) {
	const hd, blocks, rows = 200, 4, 9
	d := New()
	defer d.Close()
	tb := testBufs{t, d}
	must, up, upInt := tb.must, tb.up, tb.upInt
	fill := func(n int, v float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = v
		}
		return x
	}
	ten, one, zero := up(fill(rows*hd, 10)), up(fill(hd, 1)), up(fill(hd, 0))
	for _, c := range []struct {
		seed       int64
		step, row0 int
		p          float64
	}{{0, 0, 0, 0.1}, {42, 3, 8192, 0.1}, {-5, 14, 32768 * 3, 0.5}, {math.MaxInt64, 1, 1 << 30, 0.1}, {7, 2, 100, 0}} {
		row := []int32{0, 1, 2, 5, 5, 5, 8, 3, 4}
		k := []int32{1, 2, 3, 1, 2, 5, 4, 1, 1}
		base, err := d.Alloc(device.Int32, 2*rows)
		must(err)
		must(d.Launch("roll_drop_base", rows, base, upInt(row), upInt(k), int32(uint32(c.seed)), int32(uint32(uint64(c.seed)>>32)),
			c.step, c.row0))
		bs := make([]int32, 2*rows)
		must(d.DownloadInt32(bs, base))
		for q := range rows {
			got := uint64(uint32(bs[2*q])) | uint64(uint32(bs[2*q+1]))<<32
			if want := rollout.DropoutBase(c.seed, c.step, c.row0+int(row[q]), int(k[q])); got != want {
				t.Errorf("seed %d step %d row %d k %d: base %#x, rollout.DropoutBase %#x", c.seed, c.step, c.row0+int(row[q]), k[q], got, want)
			}
		}
		thr := int32(rollout.DropThreshold(c.p))
		scale := float32(1 / (1 - c.p))
		keep := make([]float32, blocks*hd)
		for blk := range blocks {
			x := up(make([]float32, rows*hd))
			must(d.Launch("roll_resblock", rows, x, ten, zero, one, zero, base, hd, rows, blk, thr, scale, float32(1e-5), 1))
			y := make([]float32, rows*hd)
			must(d.Download(y, x))
			if c.p == 0 {
				x0 := up(make([]float32, rows*hd))
				must(d.Launch("roll_resblock", rows, x0, ten, zero, one, zero, base, hd, rows, blk, thr, scale, float32(1e-5), 0))
				y0 := make([]float32, rows*hd)
				must(d.Download(y0, x0))
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(y0[i]) {
						t.Fatalf("p 0, block %d: masked y[%d] = %v, unmasked %v", blk, i, y[i], y0[i])
					}
				}
				continue
			}
			for q := range rows {
				infer.DropoutKeep(c.seed, c.step, c.row0+int(row[q]), int(k[q]), c.p, keep)
				bad := 0
				for u := range hd {
					if got, want := y[u*rows+q] > 0, keep[blk*hd+u] == 1; got != want {
						if bad++; bad <= 3 {
							t.Errorf("seed %d step %d row %d k %d p %g: block %d unit %d kept %v, infer.DropoutKeep %v",
								c.seed, c.step, c.row0+int(row[q]), k[q], c.p, blk, u, got, want)
						}
					}
				}
			}
		}
	}
}

// TestRollHeadMatchesModels runs a roll-out's head launches from the GRU's
// top states: per ResBlock a cuBLAS-style product into feature-major u and
// roll_resblock in place (keep flags from roll_drop_base's states), the
// output product into row-major o [n, 2d], then roll_finish (one plan a
// row, its start state from a one-state window). It must match package
// models' ADM.HeadDropout on the same weights (perturbed LayerNorms and
// bounds) with infer.DropoutKeep's flags times 1/(1-p), and infer's sample
// next = start + mean + exp(lv/2)·eps (the reward without the start),
// within 1e-5; for p 0 and 0.1.
func TestRollHeadMatchesModels(t *testing.T) {
	const od, ad, hd, blocks, n = 11, 3, 24, 3, 29
	const dd = od + 1
	for _, p := range []float64{0, 0.1} {
		// Perturbed LayerNorms and bounds, log-variances at the soft bounds.
		adm, err := rolldevtest.NewModel(models.ADMConfig{ObsDim: od, ActDim: ad, Hidden: hd, Layers: 2, ResBlocks: blocks, M: 4}, 11)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(12))
		randn := func(c int, s float64) []float32 {
			x := make([]float32, c)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * s)
			}
			return x
		}
		st := adm.NewState(n)
		start := randn(n*od, 1)
		if err := adm.GRUStep(st, start, randn(n*ad, 1)); err != nil {
			t.Fatal(err)
		}
		top := append([]float32(nil), st.H[len(st.H)-1]...)
		// Plan q is row row0+q's k-step plan.
		seed, step, row0 := rng.Int63(), 4, 1000
		row, kk := make([]int32, n), make([]int32, n)
		for q := range n {
			row[q], kk[q] = int32(q), int32(1+rng.Intn(5))
		}
		var mult []float32
		if p > 0 {
			mult = make([]float32, blocks*n*hd)
			keep := make([]float32, blocks*hd)
			for q := range n {
				infer.DropoutKeep(seed, step, row0+q, int(kk[q]), p, keep)
				for b := range blocks {
					for c := range hd {
						mult[(b*n+q)*hd+c] = keep[b*hd+c] * float32(1/(1-p))
					}
				}
			}
		}
		mean, lv := make([]float32, n*dd), make([]float32, n*dd)
		if err := adm.HeadDropout(st, mult, mean, lv); err != nil {
			t.Fatal(err)
		}
		eps := randn(n*dd, 1)

		d := New()
		tb := testBufs{t, d}
		must, up, upInt := tb.must, tb.up, tb.upInt
		alloc := func(ty device.Type, c int) device.Buffer {
			b, err := d.Alloc(ty, c)
			must(err)
			return b
		}
		fm := make([]float32, n*hd)
		for i := range n {
			for c := range hd {
				fm[c*n+i] = top[i*hd+c]
			}
		}
		x, u := up(fm), alloc(device.Float32, n*hd)
		base := alloc(device.Int32, 2*n)
		must(d.Launch("roll_drop_base", n, base, upInt(row), upInt(kk), int32(uint32(seed)), int32(uint32(uint64(seed)>>32)), step, row0))
		drop := 0
		if p > 0 {
			drop = 1
		}
		for b := range blocks {
			blk := &adm.Blocks[b]
			must(d.Gemm(false, true, n, hd, hd, 1, x, n, up(blk.Lin.W), hd, 0, u, n))
			must(d.Launch("roll_resblock", n, x, u, up(blk.Lin.B), up(blk.Norm.Gamma), up(blk.Norm.Beta), base, hd, n, b,
				int32(rollout.DropThreshold(p)), float32(1/(1-p)), blk.Norm.Eps, drop))
		}
		o := alloc(device.Float32, n*2*dd)
		must(d.Gemm(false, true, 2*dd, n, hd, 1, up(adm.Out.W), 2*dd, x, n, 0, o, 2*dd))
		ones, pidx := make([]int32, n), make([]int32, n)
		for q := range n {
			ones[q], pidx[q] = 1, int32(q)
		}
		next, mn, rew, uu := alloc(device.Float32, n*od), alloc(device.Float32, n*od), alloc(device.Float32, n), alloc(device.Float32, n)
		fin := alloc(device.Int32, n)
		must(d.Launch("roll_finish", n, o, up(adm.Out.B), up(adm.Bounds.Max), up(adm.Bounds.Min), up(start), upInt(ones),
			upInt(pidx), upInt(ones), upInt(pidx), up(eps), next, rew, uu, mn, fin, od, 1, n, n, 0, 0, float32(0)))
		down := func(b device.Buffer) []float32 {
			y := make([]float32, b.Len())
			must(d.Download(y, b))
			return y
		}
		gotNext, gotMean, gotRew := down(next), down(mn), down(rew)
		bad := 0
		check := func(what string, q, c int, g float32, w float64) {
			if math.Abs(float64(g)-w) > 1e-5*(1+math.Abs(w)) {
				if bad++; bad <= 5 {
					t.Errorf("p %g: %s row %d dim %d: %.9g, want %.9g", p, what, q, c, g, w)
				}
			}
		}
		for q := range n {
			for c := range od {
				m := float64(start[q*od+c]) + float64(mean[q*dd+c])
				check("mean next", q, c, gotMean[q*od+c], m)
				check("next", q, c, gotNext[q*od+c], m+math.Exp(0.5*float64(lv[q*dd+c]))*float64(eps[q*dd+c]))
			}
			check("reward", q, od, gotRew[q], float64(mean[q*dd+od])+math.Exp(0.5*float64(lv[q*dd+od]))*float64(eps[q*dd+od]))
		}
		must(d.Close())
	}
}
