package rolldevtest

import (
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
)

// Bench times Predict (no dropout) and PredictDropout (p 0.1) on d at
// hopper's size (Hopper) over plans plans with lengths 1..m, uploads,
// host sort and downloads included, and reports "plans/s" beside
// devicetest.BenchSteps' ms per call.
func Bench(b *testing.B, d device.Device, plans int) {
	m, err := NewModel(Hopper, 1)
	if err != nil {
		b.Fatal(err)
	}
	in := RandomInputs(m, plans, rand.New(rand.NewSource(2)))
	for _, c := range []struct {
		name string
		p    float64
	}{{"plain", 0}, {"dropout", 0.1}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := NewDirect(d, m, c.p, plans)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			out := newOutputs(plans, Hopper.ObsDim)
			devicetest.BenchSteps(b, d, "call", func() error { return predictInto(e, in, out) })
			b.ReportMetric(float64(plans)*float64(b.N)/b.Elapsed().Seconds(), "plans/s")
		})
	}
}
