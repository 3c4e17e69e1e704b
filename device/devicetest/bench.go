package devicetest

import (
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
