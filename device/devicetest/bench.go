package devicetest

import (
	"math/rand/v2"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/internal/rollout"
)

// BenchSteps times step on d: two untimed calls first (the kernels' JIT,
// cuBLAS's heuristics, a device graph's recording), then b.N calls, with
// the device synchronised before and after the timed ones; it reports the
// milliseconds per call as the metric "ms/"+unit.
func BenchSteps(b *testing.B, d device.Device, unit string, step func() error) {
	for range 2 {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/"+unit)
}

// BenchRollKernels times the roll-out's GRU kernels at hidden 200 over rows
// rows (ld = rows), a step from a previous state, and reports the bytes each
// launch must move per second as "GB/s": roll_gru reads gi and gh [rows,
// 3h] and h, and writes h' (8h floats a row); roll_gru0 reads p0 instead of
// gi and the row's ad = 3 actions (8h+3); roll_resblock (p 0.1) reads x
// and u and writes x, then reads and writes x again (5h floats and the
// row's 2-int32 base); roll_finish with U^ADM over m = 5 plans a row (od
// 11, d = 12) reads each plan's 2d outputs and od start values, the row's
// d eps, m plan indices, slot, k and length, and writes 2·od + 3 values.
func BenchRollKernels(b *testing.B, d device.Device, rows int) {
	const hd, ad = 200, 3
	hh := h{b, d}
	r := rand.New(rand.NewPCG(3, 3))
	gi, gh := hh.up(randn(r, rows*3*hd, 1)), hh.up(randn(r, rows*3*hd, 1))
	bi, bh := hh.up(randn(r, 3*hd, 0.5)), hh.up(randn(r, 3*hd, 0.5))
	hp, out := hh.up(randn(r, rows*hd, 0.5)), hh.alloc(device.Float32, rows*hd)
	act, wa := hh.up(randn(r, rows*ad, 1)), hh.up(randn(r, ad*3*hd, 0.5))
	// roll_resblock's operands: x in place, u = x·W, the block's vectors.
	ones := make([]float32, hd)
	for i := range ones {
		ones[i] = 1
	}
	rx, ru, rb := hh.up(randn(r, rows*hd, 1)), hh.up(randn(r, rows*hd, 1)), hh.up(randn(r, hd, 0.3))
	rg, rbeta := hh.up(ones), hh.up(randn(r, hd, 0.2))
	planRow, planK := make([]int32, rows), make([]int32, rows)
	for q := range rows {
		planRow[q], planK[q] = int32(q), int32(1+r.IntN(5))
	}
	base := rollDropBases(hh, 7, 1, 0, planRow, planK)
	thr := int32(rollout.DropThreshold(0.1))
	// roll_finish's: every row has m plans, plan q·m+k-1 its k.
	const od, m = 11, 5
	const dd = od + 1
	lens, pidx := make([]int32, rows), make([]int32, rows*m)
	for q := range rows {
		lens[q] = m
		for k := range m {
			pidx[q*m+k] = int32(q*m + k)
		}
	}
	fo, fob := hh.up(randn(r, rows*m*2*dd, 1)), hh.up(randn(r, 2*dd, 0.3))
	fmx, fmn := hh.up(filled(dd, 0.5)), hh.up(filled(dd, -10))
	fs, feps := hh.up(randn(r, rows*m*od, 1)), hh.up(randn(r, rows*dd, 1))
	flens, fslot, fk, fpidx := hh.upInt(lens), hh.upInt(planRow), hh.upInt(planK), hh.upInt(pidx)
	fnext, fmean := hh.alloc(device.Float32, rows*od), hh.alloc(device.Float32, rows*od)
	frew, fu, ffin := hh.alloc(device.Float32, rows), hh.alloc(device.Float32, rows), hh.alloc(device.Int32, rows)
	for _, k := range []struct {
		name  string
		bytes float64
		step  func() error
	}{
		{"roll_gru", 4 * 8 * hd * float64(rows), func() error {
			return d.Launch("roll_gru", rows*hd, gi, bi, gh, bh, hp, out, hd, rows, 1)
		}},
		{"roll_gru0", 4 * (8*hd + ad) * float64(rows), func() error {
			return d.Launch("roll_gru0", rows*hd, gi, act, wa, bi, gh, bh, hp, out, hd, rows, ad, 0, 1)
		}},
		{"roll_resblock", (4*5*hd + 8) * float64(rows), func() error {
			return d.Launch("roll_resblock", rows, rx, ru, rb, rg, rbeta, base, hd, rows, 0, thr, float32(1/0.9), float32(1e-5), 1)
		}},
		{"roll_finish", 4 * float64(m*(2*dd+od)+dd+m+3+2*od+3) * float64(rows), func() error {
			return d.Launch("roll_finish", rows, fo, fob, fmx, fmn, fs, flens, fslot, fk, fpidx, feps, fnext, frew, fu, fmean, ffin,
				od, m, rows, rows*m, 1, 0, float32(1))
		}},
	} {
		b.Run(k.name, func(b *testing.B) {
			BenchSteps(b, d, "launch", k.step)
			b.ReportMetric(k.bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
