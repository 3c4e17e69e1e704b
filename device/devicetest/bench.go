package devicetest

import (
	"math/rand/v2"
	"testing"

	"github.com/admpo/admpo/device"
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
// gi and the row's ad = 3 actions (8h+3).
func BenchRollKernels(b *testing.B, d device.Device, rows int) {
	const hd, ad = 200, 3
	hh := h{b, d}
	r := rand.New(rand.NewPCG(3, 3))
	gi, gh := hh.up(randn(r, rows*3*hd, 1)), hh.up(randn(r, rows*3*hd, 1))
	bi, bh := hh.up(randn(r, 3*hd, 0.5)), hh.up(randn(r, 3*hd, 0.5))
	hp, out := hh.up(randn(r, rows*hd, 0.5)), hh.alloc(device.Float32, rows*hd)
	act, wa := hh.up(randn(r, rows*ad, 1)), hh.up(randn(r, ad*3*hd, 0.5))
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
	} {
		b.Run(k.name, func(b *testing.B) {
			BenchSteps(b, d, "launch", k.step)
			b.ReportMetric(k.bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
